// ingest-service: reads a phone's sync batches, one JSON line each,
//
//     {"user": "ana", "anchor": "17", "added": [sample, …], "deleted": ["uuid", …]}
//
// (samples as the "sample" of a sample-added event, topics/README.md), publishes each batch
// through Daybook's EventPublisher and answers on standard output:
//
//     ack <anchor>              every event of the batch was delivered: the phone may move
//                               its anchor past it
//     reject <anchor> <reason>  the batch cannot be accepted as it is (an invalid sample, a
//                               user or uuid the event format refuses, bytes that are not
//                               UTF-8, an event larger than the cluster accepts): nothing of
//                               it was published, and sending it again cannot help
//
// (control characters in an anchor are written escaped, \u{1B}, so an answer is one line).
// The batch contract — decode, validate every event before any is sent, publish whole — is
// DaybookPublish's SyncBatch; this program reads lines and writes answers.
//
// An undelivered batch gets no answer: the program says why on standard error and exits 69,
// and the phone, still holding its anchor, sends the batch again later. That is safe: the
// same events twice change no total. Batches are answered in order, and nothing after an
// undelivered batch is published, so an ack never jumps over a batch that is not in the log.
//
//     swift run --package-path examples/ingest-service ingest-service --brokers B [FILE]
//
// Exit codes: 0 every batch acked; 65 some batches rejected (the others acked); 69 the
// cluster was unreachable or a batch was not delivered; 64 usage; 66 FILE missing; 74 the
// input could not be read.

import DaybookCore
import DaybookFiles
import DaybookKafka
import DaybookPublish
import Foundation

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
let limit = SyncBatch.maximumMessageBytes(for: publisher.connection)
do {
    // Lines as bytes: a reader that turned bytes that are not UTF-8 into U+FFFD would make
    // two users' ids one. The library's decoder refuses them instead.
    try LineInput.forEachBatch(.stream(fd: 0, name: "standard input", close: false), maximumLineBytes: 64 << 20) { lines in
        for (number, bytes) in lines {
            guard let bytes else {
                rejected += 1
                FileHandle.standardError.write(Data("ingest-service: line \(number): longer than 64 MiB; not answered\n".utf8))
                continue
            }
            switch SyncBatch.decode(bytes, maximumMessageBytes: limit) {
            case .failure(let rejection):
                rejected += 1
                if let anchor = rejection.anchor {
                    answer("reject \(SyncBatch.escapedAnchor(anchor)) \(rejection)")
                } else {
                    // No anchor to answer to: the phone cannot be told, so the operator is.
                    FileHandle.standardError.write(Data("ingest-service: line \(number): \(rejection); not answered\n".utf8))
                }
            case .success(let batch):
                switch batch.publish(with: publisher) {
                case .accepted:
                    answer("ack \(SyncBatch.escapedAnchor(batch.anchor))")
                case .rejected(let rejection):
                    rejected += 1
                    answer("reject \(SyncBatch.escapedAnchor(batch.anchor)) \(rejection)")
                case .undelivered(let error):
                    let reason = error.message.hasPrefix("not delivered: ") ? String(error.message.dropFirst("not delivered: ".count)) : error.message
                    fail(69, "batch \(SyncBatch.escapedAnchor(batch.anchor)) (line \(number)) not delivered: \(reason); not acknowledged, so the phone sends it again")
                }
            }
        }
    }
} catch {
    fail(74, "reading standard input: \(error)")
}
do {
    try publisher.close()
} catch {
    fail(69, "\(error)")
}
exit(rejected == 0 ? 0 : 65)
