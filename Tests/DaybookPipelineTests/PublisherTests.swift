import DaybookCore
import DaybookFiles
import DaybookKafka
import DaybookPipeline
import DaybookPublish
import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

/// `EventPublisher` in process, against the embedded broker over TCP; totals are read from
/// real shard files written by a `Projector` in the same process.
@Suite(.serialized) struct PublisherTests {
    static let topic = "health-samples"

    static func broker(partitions: Int = 4) throws -> EmbeddedBroker {
        try EmbeddedBroker(topics: [
            TopicDefinition(name: topic, partitions: partitions, replicationFactor: 1),
            TopicDefinition(name: "health-samples.dlq", partitions: 1, replicationFactor: 1),
        ])
    }

    static func connection(_ broker: EmbeddedBroker) -> KafkaConnection { KafkaConnection(bootstrapServers: broker.bootstrapServers) }

    static func at(_ text: String) -> Instant { (try? Instant(rfc3339: text)) ?? Instant(seconds: 0) }

    static func steps(_ user: String, _ uuid: String, _ source: String, _ start: String, _ end: String, _ value: Double) -> Event {
        .sampleAdded(Sample(user: user, uuid: uuid, metric: .steps, source: source, start: at(start), end: at(end), value: value, zone: "UTC"))
    }

    /// ana's 2024-03-02 in steps: watch 09:00–10:00 1000 and 14:00–14:30 300; phone
    /// 09:00–10:00 800 (fully under the watch, which ranks higher: counts 0) and 10:00–10:30
    /// 250 (alone: counts). 1000 + 0 + 250 + 300 = 1550; the naive sum is 2350, the max 1000;
    /// published twice, still 1550 (naive 4700).
    static let day: [Event] = [
        steps("ana", "w1", "watch", "2024-03-02T09:00:00Z", "2024-03-02T10:00:00Z", 1_000),
        steps("ana", "p1", "phone", "2024-03-02T09:00:00Z", "2024-03-02T10:00:00Z", 800),
        steps("ana", "p2", "phone", "2024-03-02T10:00:00Z", "2024-03-02T10:30:00Z", 250),
        steps("ana", "w2", "watch", "2024-03-02T14:00:00Z", "2024-03-02T14:30:00Z", 300),
    ]

    /// Projects everything published so far into `data` (one shard per partition).
    static func project(_ broker: EmbeddedBroker, into data: String) throws -> ProjectorSummary {
        var options = ProjectorOptions(dataDirectory: data)
        options.solo = true
        options.connectTimeout = .seconds(10)
        let projector = try Projector(connection: connection(broker), consumer: ConsumerConfiguration(), producer: ProducerConfiguration(),
                                      priority: .builtIn, options: options, run: .live(untilCaughtUp: true), logger: .silent)
        return try projector.run(shouldStop: { false }, progress: { _ in })
    }

    static func stepsOf(_ user: String, in data: String) throws -> [String: Double] {
        var out: [String: Double] = [:]
        for row in try ShardReader(directory: data).totals(.init(user: user, metric: .steps)) {
            if case .cumulative(let value, _) = row.summary { out[row.key.day.description] = value }
        }
        return out
    }

    @Test(arguments: Partitioner.allCases)
    func everyEventLandsInItsUsersPartitionUnderTheConfiguredPartitioner(_ partitioner: Partitioner) throws {
        let broker = try Self.broker(partitions: 6)
        var configuration = ProducerConfiguration()
        configuration.partitioner = partitioner
        let publisher = try EventPublisher(connection: Self.connection(broker), configuration: configuration)
        let users = ["ana", "bo", "chidi", "dee", "eli", "fay", "gus", "hal"]
        let events: [Event] = users.map { .sampleDeleted(user: $0, uuid: "u-\($0)") }
        let outcomes = try publisher.publish(events)
        try publisher.close()
        #expect(outcomes.count == users.count)
        for (user, outcome) in zip(users, outcomes) {
            guard case .delivered(let partition, let offset) = outcome else {
                Issue.record("\(user): \(outcome)")
                continue
            }
            #expect(partition == partitioner.partition(ofKey: Array(user.utf8), count: 6), "\(user) under \(partitioner)")
            #expect(offset != nil)
        }
        #expect(publisher.tally == EventPublisher.Tally(delivered: 8, rejected: 0, undelivered: 0, inFlight: 0))
        // The two partitioners disagree on at least one of these users, so the check above
        // would catch a producer that ignored the configuration.
        let other: Partitioner = partitioner == .murmur2Random ? .consistentRandom : .murmur2Random
        #expect(users.contains { partitioner.partition(ofKey: Array($0.utf8), count: 6) != other.partition(ofKey: Array($0.utf8), count: 6) })
    }

    @Test func theSameBatchPublishedTwiceChangesNoTotal() throws {
        let broker = try Self.broker()
        let data = TemporaryDirectory()
        let publisher = try EventPublisher(connection: Self.connection(broker))
        #expect(try publisher.publish(Self.day).allSatisfy(\.isDelivered))
        let first = try Self.project(broker, into: data.path)
        #expect(first.applied == 4)
        #expect(try Self.stepsOf("ana", in: data.path) == ["2024-03-02": 1_550])

        // The phone did not hear the ack and uploads the same batch again.
        #expect(try publisher.publish(Self.day).allSatisfy(\.isDelivered))
        try publisher.close()
        _ = try Self.project(broker, into: data.path)
        #expect(try Self.stepsOf("ana", in: data.path) == ["2024-03-02": 1_550])
        #expect(publisher.tally.delivered == 8)
    }

    @Test func aBatchWithAnInvalidEventPublishesNothingOfIt() throws {
        let broker = try Self.broker()
        let publisher = try EventPublisher(connection: Self.connection(broker))
        var batch = Self.day
        batch[2] = Self.steps("ana", "p2", "phone", "2024-03-02T10:00:00Z", "2024-03-02T10:30:00Z", -250)
        #expect {
            _ = try publisher.publish(batch)
        } throws: { error in
            guard let error = error as? PublishError else { return false }
            return error.kind == .invalidEvent && error.eventError?.field == "sample.value"
                && error.message.hasPrefix("event 2 of 4: invalid event: sample.value: -250 is negative")
                && error.message.hasSuffix("nothing of the batch was published") && !error.isRetriable
        }
        try publisher.close()
        #expect(publisher.tally == EventPublisher.Tally(delivered: 0, rejected: 4, undelivered: 0, inFlight: 0))
        let consumer = try KafkaConsumer(connection: Self.connection(broker), configuration: ConsumerConfiguration(), logger: .silent)
        defer { consumer.close() }
        for p in Int32(0)..<4 { #expect(try consumer.watermarks(TopicPartition(Self.topic, p)).high == 0) }
    }

    @Test func anInvalidEventSentAloneIsRejectedAndTheOthersGo() throws {
        let broker = try Self.broker()
        var heard: [Int: EventPublisher.Outcome] = [:]
        let publisher = try EventPublisher(connection: Self.connection(broker)) { id, outcome in heard[id] = outcome }
        try publisher.send(Self.day[0], id: 1)
        #expect(throws: PublishError.self) { try publisher.send(.sampleDeleted(user: "", uuid: "u"), id: 2) }
        try publisher.send(Self.day[3], id: 3)
        try publisher.close()
        #expect(heard.keys.sorted() == [1, 3])
        #expect(heard.values.allSatisfy { $0.isDelivered })
        #expect(publisher.tally == EventPublisher.Tally(delivered: 2, rejected: 1, undelivered: 0, inFlight: 0))
    }

    @Test func anEventLargerThanTheClusterAcceptsIsRejectedAsOversized() throws {
        let broker = try Self.broker()
        let publisher = try EventPublisher(connection: Self.connection(broker))
        // Over message.max.bytes (1,000,000), under the decoder's 1 MiB: valid, but too large.
        let big = Event.sampleDeleted(user: "ana", uuid: String(repeating: "x", count: 1_010_000))
        do {
            try publisher.send(big, id: 0)
            Issue.record("an oversized event was queued")
        } catch {
            #expect(error.kind == .oversized && error.kafkaError?.errorCode == .messageSizeTooLarge && !error.isRetriable)
        }
        let outcomes = try publisher.publish([Self.day[0], big])
        #expect(outcomes.first?.isDelivered == true)
        guard case .rejected(let e)? = outcomes.last else {
            Issue.record("\(outcomes)")
            return
        }
        #expect(e.kind == .oversized)
        try publisher.close()
        #expect(publisher.tally == EventPublisher.Tally(delivered: 1, rejected: 2, undelivered: 0, inFlight: 0))
    }

    @Test func anUnreachableClusterFailsWithinTheConnectTimeout() throws {
        // Port 9 (discard) on loopback: nothing listens there.
        let publisher = try EventPublisher(connection: KafkaConnection(bootstrapServers: "127.0.0.1:9"), connectTimeout: .seconds(2))
        let start = ContinuousClock.now
        do {
            _ = try publisher.publish(Self.day)
            Issue.record("published to nowhere")
        } catch {
            #expect(error.kind == .unreachable && error.isRetriable)
            #expect(error.message.hasPrefix("cannot reach the Kafka cluster at 127.0.0.1:9 within 2"))
        }
        #expect(ContinuousClock.now - start < .seconds(20))
        #expect(publisher.tally == EventPublisher.Tally())
    }

    @Test func anEventTheClusterNeverAcknowledgesIsUndelivered() throws {
        let broker = try Self.broker()
        var configuration = ProducerConfiguration()
        configuration.messageTimeoutMilliseconds = 1_500
        let publisher = try EventPublisher(connection: Self.connection(broker), configuration: configuration)
        try publisher.connect()
        try broker.setBrokerDown(1)
        let outcomes = try publisher.publish([Self.day[0]])
        guard case .undelivered(let e)? = outcomes.first else {
            Issue.record("\(outcomes)")
            return
        }
        #expect(e.kind == .notDelivered && e.isRetriable)
        #expect(publisher.tally == EventPublisher.Tally(delivered: 0, rejected: 0, undelivered: 1, inFlight: 0))
    }

    @Test func aClosedPublisherRefusesToSend() throws {
        let broker = try Self.broker()
        let publisher = try EventPublisher(connection: Self.connection(broker))
        try publisher.close()
        #expect(throws: PublishError.self) { try publisher.send(Self.day[0], id: 0) }
        do { try publisher.send(Self.day[0], id: 0) } catch { #expect(error.kind == .closed) }
    }

    @Test func aFileOfLinesIsPublishedLineByLineWithEveryLineAccountedFor() throws {
        let broker = try Self.broker()
        defer { withExtendedLifetime(broker) {} }
        // Line 1: a byte order mark then ana's first sample; 2 blank; 3 not an event; 4-6 the
        // rest of the day, line 5 with CRLF. 4 events read and published, 1 rejected.
        let lines = ["\u{FEFF}" + Self.day[0].jsonLine, "", "{\"type\":\"sample-added\"}", Self.day[1].jsonLine,
                     Self.day[2].jsonLine + "\r", Self.day[3].jsonLine]
        var rejected: [(Int, String)] = []
        let report = try EventLines.publish(.bytes(Data(lines.joined(separator: "\n").utf8)), connection: Self.connection(broker),
                                            configuration: ProducerConfiguration(), topic: Self.topic) { rejected.append(($0, $1)) }
        #expect(report.read == 5 && report.published == 4 && report.rejected == 1)
        #expect(report.failedLines.isEmpty && report.tooLarge.isEmpty)
        #expect(rejected.map(\.0) == [3])
        // The four samples make ana's day as the publisher's own test does: 1000 + 0 + 250 + 300.
        let data = TemporaryDirectory()
        _ = try Self.project(broker, into: data.path)
        #expect(try Self.stepsOf("ana", in: data.path) == ["2024-03-02": 1_550])
    }
}
