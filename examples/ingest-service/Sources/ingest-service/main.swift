// ingest-service: reads a phone's sync batches, one JSON line each,
//
//     {"user": "ana", "anchor": "17", "added": [sample, …], "deleted": ["uuid", …]}
//
// (samples as the "sample" of a sample-added event, topics/README.md), publishes each batch
// through Daybook's EventPublisher and answers on standard output:
//
//     ack <anchor>              every event of the batch was delivered: the phone may move
//                               its anchor past it
//     reject <anchor> <reason>  the batch cannot be accepted as it is (an invalid sample:
//                               nothing of it was published)
//
// An undelivered batch gets no answer: the program says why on standard error and exits 69,
// and the phone, still holding its anchor, sends the batch again later. That is safe: the
// same events twice change no total. Batches are answered in order, and nothing after an
// undelivered batch is published, so an ack never jumps over a batch that is not in the log.
//
//     swift run --package-path examples/ingest-service ingest-service --brokers B [FILE]
//
// Exit codes: 0 every batch acked; 65 some batches rejected (the others acked); 69 the
// cluster was unreachable or a batch was not delivered; 64 usage; 66 FILE missing.

import DaybookCore
import DaybookKafka
import DaybookPublish
import Foundation

/// A batch of one sync, decoded and validated: its events in the order they are published.
struct SyncBatch {
    var anchor: String
    var events: [Event]
}

/// Why a line is not a batch we can publish; `anchor` when it could be read.
struct BatchProblem: Error {
    var anchor: String?
    var reason: String
}

/// Decodes one line: every sample is checked by Daybook's own decoder (as the projector will
/// check it), so a batch that decodes is one the projector applies whole.
func decodeBatch(_ line: String) -> Result<SyncBatch, BatchProblem> {
    var text = line
    var integers: [String: Int64]? = [:]
    let parsed: Result<JSONValue, JSONSyntaxError> = text.withUTF8 { bytes in
        Result { () throws(JSONSyntaxError) in try JSONParser.parse(bytes, exactIntegers: &integers) }
    }
    guard case .success(let json) = parsed, case .object(let batch) = json else {
        return .failure(BatchProblem(anchor: nil, reason: "not a JSON object {\"user\":…,\"anchor\":…,\"added\":[…],\"deleted\":[…]}"))
    }
    let anchor: String
    switch batch["anchor"] {
    case .string(let s)? where !s.isEmpty && !s.contains(where: \.isWhitespace): anchor = s
    case .number(let n)? where n >= 0 && n == n.rounded() && n < 9e15: anchor = String(Int64(n))
    default: return .failure(BatchProblem(anchor: nil, reason: "anchor: missing, or not a number or a string without spaces"))
    }
    guard case .string(let user)? = batch["user"] else {
        return .failure(BatchProblem(anchor: anchor, reason: "user: missing or not a string"))
    }
    var events: [Event] = []
    let decoder = EventDecoder()
    switch batch["added"] ?? .array([]) {
    case .array(let samples):
        for (i, sample) in samples.enumerated() {
            let event = JSONValue.object(["type": .string("sample-added"), "user": .string(user), "sample": sample])
            var exact: [String: Int64] = [:]
            if let version = integers?["added[\(i)].version"] { exact["sample.version"] = version }
            do {
                events.append(try decoder.decode(event, exactIntegers: exact))
            } catch {
                // The decoder names fields of an event ("sample.value"); the phone sent "added[i].value".
                let field = error.field.map { $0.hasPrefix("sample.") ? "added[\(i)]." + $0.dropFirst(7) : $0 } ?? "added[\(i)]"
                return .failure(BatchProblem(anchor: anchor, reason: "\(field): \(error.message)"))
            }
        }
    default:
        return .failure(BatchProblem(anchor: anchor, reason: "added: must be an array of samples"))
    }
    switch batch["deleted"] ?? .array([]) {
    case .array(let uuids):
        for (i, uuid) in uuids.enumerated() {
            guard case .string(let uuid) = uuid, !uuid.isEmpty else {
                return .failure(BatchProblem(anchor: anchor, reason: "deleted[\(i)]: must be a sample's uuid, a non-empty string"))
            }
            events.append(.sampleDeleted(user: user, uuid: uuid))
        }
    default:
        return .failure(BatchProblem(anchor: anchor, reason: "deleted: must be an array of uuids"))
    }
    return .success(SyncBatch(anchor: anchor, events: events))
}

func fail(_ code: Int32, _ message: String) -> Never {
    FileHandle.standardError.write(Data("ingest-service: \(message)\n".utf8))
    exit(code)
}

func answer(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8)) // unbuffered: the phone waits for this line
}

// MARK: arguments

var brokers: String?
var topic = "health-samples"
var configuration = ProducerConfiguration()
var connectTimeout = Duration.seconds(30)
var path: String?
var arguments = CommandLine.arguments.dropFirst()
let usage = "usage: ingest-service --brokers B [--topic T] [--partitioner murmur2_random|consistent_random] [--delivery-timeout-ms N] [--connect-timeout S] [FILE]"
while let argument = arguments.popFirst() {
    func value() -> String {
        guard let v = arguments.popFirst() else { fail(64, "\(argument) needs a value\n\(usage)") }
        return v
    }
    switch argument {
    case "--brokers": brokers = value()
    case "--topic": topic = value()
    case "--partitioner":
        let name = value()
        guard let p = Partitioner(rawValue: name) else { fail(64, "--partitioner \(name): give murmur2_random or consistent_random (kafka.partitioner of the projector)") }
        configuration.partitioner = p
    case "--delivery-timeout-ms":
        guard let ms = Int(value()), ms > 0 else { fail(64, "--delivery-timeout-ms takes a positive number") }
        configuration.messageTimeoutMilliseconds = ms
    case "--connect-timeout":
        guard let s = Int(value()), s > 0 else { fail(64, "--connect-timeout takes a positive number of seconds") }
        connectTimeout = .seconds(s)
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        guard path == nil, argument == "-" || !argument.hasPrefix("-") else { fail(64, "unexpected \(argument)\n\(usage)") }
        path = argument
    }
}
guard let brokers else { fail(64, "--brokers is required\n\(usage)") }
if let path, path != "-" {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0, dup2(fd, 0) == 0 else { fail(66, "\(path): cannot be read: \(String(cString: strerror(errno)))") }
    close(fd)
}

// MARK: the service

let publisher: EventPublisher
do {
    publisher = try EventPublisher(connection: KafkaConnection(bootstrapServers: brokers), configuration: configuration,
                                   topic: topic, connectTimeout: connectTimeout)
    try publisher.connect()
} catch {
    fail(error.kind == .configuration ? 78 : 69, "\(error)")
}

var rejected = 0
var number = 0
while let line = readLine() {
    number += 1
    guard !line.allSatisfy(\.isWhitespace) else { continue }
    let batch: SyncBatch
    switch decodeBatch(line) {
    case .success(let b): batch = b
    case .failure(let problem):
        rejected += 1
        if let anchor = problem.anchor {
            answer("reject \(anchor) \(problem.reason)")
        } else {
            // No anchor to answer to: the phone cannot be told, so the operator is.
            FileHandle.standardError.write(Data("ingest-service: line \(number): \(problem.reason); not answered\n".utf8))
        }
        continue
    }
    let outcomes: [EventPublisher.Outcome]
    do {
        outcomes = try publisher.publish(batch.events)
    } catch {
        // Invalid events were refused by decodeBatch already; this is the cluster.
        fail(69, "batch \(batch.anchor) (line \(number)) not delivered: \(error); not acknowledged, so the phone sends it again")
    }
    var refusal: PublishError?
    for outcome in outcomes {
        switch outcome {
        case .delivered: continue
        case .rejected(let e): refusal = refusal ?? e
        case .undelivered(let e):
            fail(69, "batch \(batch.anchor) (line \(number)) not delivered: \(e); not acknowledged, so the phone sends it again")
        }
    }
    if let refusal {
        // The cluster refused an event for good (its size): sending the batch again cannot help.
        rejected += 1
        answer("reject \(batch.anchor) \(refusal)")
    } else {
        answer("ack \(batch.anchor)")
    }
}
do {
    try publisher.close()
} catch {
    fail(69, "\(error)")
}
exit(rejected == 0 ? 0 : 65)
