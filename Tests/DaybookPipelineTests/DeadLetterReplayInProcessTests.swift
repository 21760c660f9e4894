import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookPublish
import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

/// `DeadLetterReplay` in process: dead letters made by a real `Projector` in real shard
/// files, replayed to the embedded broker over TCP, projected again.
@Suite(.serialized) struct DeadLetterReplayInProcessTests {
    typealias P = PublisherTests

    /// A broker holding ana's good samples and one poison event for her (-250 steps), a
    /// projection of it in `data`, and the poison event's dead letter.
    static func poisoned(_ data: TemporaryDirectory) throws -> (EmbeddedBroker, StoredDeadLetter) {
        let broker = try P.broker()
        let publisher = try EventPublisher(connection: P.connection(broker))
        #expect(try publisher.publish([P.day[0], P.day[1]]).allSatisfy(\.isDelivered))
        try publisher.close()
        // The publisher refuses it, so it goes in raw, as a buggy producer would send it.
        let poison = Self.phone(-250).jsonLine
        var failures = 0
        let raw = try KafkaProducer(connection: P.connection(broker), logger: .silent) { if $0.error != nil { failures += 1 } }
        try raw.send(topic: P.topic, key: Array("ana".utf8), value: Array(poison.utf8), id: 0)
        try raw.flush(timeoutMilliseconds: 10_000)
        #expect(failures == 0)
        let summary = try P.project(broker, into: data.path)
        #expect(summary.applied == 2 && summary.deadLetters == 1)
        let letters = try ShardReader(directory: data.path).deadLetters(.init(topic: P.topic, includeReplayed: true, withPayloads: true))
        #expect(letters.count == 1)
        guard let letter = letters.first else { throw CancellationError() }
        return (broker, letter)
    }

    static func phone(_ value: Double) -> Event {
        P.steps("ana", "p2", "phone", "2024-03-02T10:00:00Z", "2024-03-02T10:30:00Z", value)
    }

    static func fixes(_ lines: [String]) -> DeadLetterReplay.FixFile {
        var file = DeadLetterReplay.FixFile()
        for (n, line) in lines.enumerated() {
            var line = line
            line.withUTF8 { file.add(line: n + 1, bytes: $0, limit: 1 << 20) }
        }
        return file
    }

    @Test func aRepairedDeadLetterIsPublishedMarkedAndCountedOnce() throws {
        let data = TemporaryDirectory()
        let (broker, letter) = try Self.poisoned(data)
        // Before: watch 09:00–10:00 1000, phone 09:00–10:00 800 under it (0): 1000.
        #expect(try P.stepsOf("ana", in: data.path) == ["2024-03-02": 1_000])

        // As stored, the payload still fails: nothing to publish, the reason named.
        var request = DeadLetterReplay.Request(dataDirectory: data.path)
        let asStored = try DeadLetterReplay.plan(request)
        #expect(asStored.candidates.isEmpty && asStored.refusals.isEmpty)
        #expect(asStored.invalid.map(\.id) == [letter.id] && asStored.invalid.first?.error.field == "sample.value")

        request.fixes = Self.fixes([#"{"id":"\#(letter.id)","event":\#(Self.phone(250).jsonLine)}"#])
        var plan = try DeadLetterReplay.plan(request)
        #expect(plan.candidates.map(\.id) == [letter.id] && plan.refusals.isEmpty && plan.invalid.isEmpty)
        try DeadLetterReplay.order(&plan, request, access: ReplayOrderInProcessTests.access(broker), timeout: .seconds(10))
        #expect(plan.ordered && plan.superseded.isEmpty)
        let outcome = try DeadLetterReplay.run(plan, request, connection: P.connection(broker), producer: ProducerConfiguration(),
                                               connectTimeout: .seconds(10))
        #expect(outcome.failed.isEmpty && outcome.unmarked.isEmpty && outcome.markFailures.isEmpty)
        let landed = outcome.landed[0] ?? nil
        // Keyed by ana under murmur2: the partition her other events are in.
        #expect(landed?.partition == letter.id.partition)

        // The repair now counts: 1000 + 250 (alone from 10:00) = 1250; the naive sum of the
        // valid samples is 2050, the max 1000.
        _ = try P.project(broker, into: data.path)
        #expect(try P.stepsOf("ana", in: data.path) == ["2024-03-02": 1_250])
        let marked = try ShardReader(directory: data.path).deadLetters(.init(topic: P.topic, includeReplayed: true))
        #expect(marked.count == 1 && marked.first?.replay?.landedAt == landed)

        // The same fix again: skipped, nothing published.
        let again = try DeadLetterReplay.plan(request)
        #expect(again.candidates.isEmpty && again.skipped.map(\.id) == [letter.id])
        let none = try DeadLetterReplay.run(again, request, connection: P.connection(broker), producer: ProducerConfiguration())
        #expect(none.landed.isEmpty && none.failed.isEmpty)
    }

    @Test func anyRefusalPublishesNothing() throws {
        let data = TemporaryDirectory()
        let (broker, letter) = try Self.poisoned(data)
        let other = DeadLetterID(partition: letter.id.partition, offset: letter.id.offset + 100)
        var request = DeadLetterReplay.Request(dataDirectory: data.path)
        request.only = [letter.id, other]
        request.fixes = Self.fixes([
            #"{"id":"\#(letter.id)","event":\#(Self.phone(250).jsonLine)}"#,
            #"{"id":"\#(letter.id)","event":\#(Self.phone(260).jsonLine)}"#,
            #"{"id":"9:9","event":\#(Self.phone(250).jsonLine)}"#,
            #"{"id":"\#(letter.id)","evnt":{}}"#,
            #"{"id":"\#(letter.id)","event":\#(Self.phone(-1).jsonLine)}"#,
        ])
        let plan = try DeadLetterReplay.plan(request)
        let decoderError = (try? EventDecoder().decode(Self.phone(-1).jsonLine)) == nil
        #expect(decoderError)
        guard plan.refusals.count == 5 else {
            Issue.record("\(plan.refusals)")
            return
        }
        #expect(plan.refusals[0] == .noSuchDeadLetter(other))
        #expect(plan.refusals[1] == .fixRepeated(line: 2, letter.id, firstLine: 1))
        #expect(plan.refusals[2] == .fixForNoDeadLetter(line: 3, DeadLetterID(partition: 9, offset: 9)))
        #expect(plan.refusals[3] == .fixLine(line: 4, .unknownMember("evnt")))
        guard case .fixLine(5, .invalidEvent(let e)) = plan.refusals[4] else {
            Issue.record("\(plan.refusals[4])")
            return
        }
        #expect(e.field == "sample.value")

        let outcome = try DeadLetterReplay.run(plan, request, connection: P.connection(broker), producer: ProducerConfiguration())
        #expect(outcome.landed.isEmpty && outcome.failed.isEmpty)
        let consumer = try KafkaConsumer(connection: P.connection(broker), configuration: ConsumerConfiguration(), logger: .silent)
        defer { consumer.close() }
        var total: Int64 = 0
        for p in Int32(0)..<4 { total += try consumer.watermarks(TopicPartition(P.topic, p)).high }
        #expect(total == 3) // the two good events and the poison one: nothing was replayed
        #expect(try ShardReader(directory: data.path).deadLetters(.init(topic: P.topic)).count == 1)
    }

    @Test func aMissingDataDirectoryIsItsOwnError() {
        let request = DeadLetterReplay.Request(dataDirectory: "/nonexistent/daybook-\(UUID().uuidString)")
        #expect {
            _ = try DeadLetterReplay.plan(request)
        } throws: { ($0 as? DeadLetterReplay.ReplayError)?.kind == .noDataDirectory }
    }

    @Test func anUnreachableClusterPublishesAndMarksNothing() throws {
        let data = TemporaryDirectory()
        let (_, letter) = try Self.poisoned(data)
        var request = DeadLetterReplay.Request(dataDirectory: data.path)
        request.fixes = Self.fixes([#"{"id":"\#(letter.id)","event":\#(Self.phone(250).jsonLine)}"#])
        var plan = try DeadLetterReplay.plan(request)
        #expect(plan.candidates.count == 1)
        // Unordered, the plan is refused before anything is sent: it could rewind an edit.
        do {
            _ = try DeadLetterReplay.run(plan, request, connection: KafkaConnection(bootstrapServers: "127.0.0.1:9"),
                                         producer: ProducerConfiguration(), connectTimeout: .seconds(2))
            Issue.record("published an unordered plan")
        } catch {
            #expect(error.kind == .configuration)
        }
        // And the cluster it would be ordered against does not answer.
        let nowhere = LogAccess(connection: KafkaConnection(bootstrapServers: "127.0.0.1:9"), consumer: ConsumerConfiguration(),
                                producer: ProducerConfiguration())
        #expect {
            try DeadLetterReplay.order(&plan, request, access: nowhere, timeout: .seconds(2))
        } throws: { ($0 as? ProjectorError)?.kind == .kafka }
        #expect(!plan.ordered)
        #expect(try ShardReader(directory: data.path).deadLetters(.init(topic: P.topic)).count == 1)
    }
}
