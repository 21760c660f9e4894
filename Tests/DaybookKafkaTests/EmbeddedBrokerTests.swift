@testable import DaybookKafka
import DaybookLog
import Foundation
import Testing

/// Integration tests over TCP against librdkafka's mock cluster.
@Suite(.serialized) struct EmbeddedBrokerTests {
    static let topic = "health-samples"

    static func broker(brokers: Int = 1, partitions: Int = 4) throws -> EmbeddedBroker {
        try EmbeddedBroker(brokers: brokers, topics: [
            TopicDefinition(name: topic, partitions: partitions, replicationFactor: 3),
            TopicDefinition(name: "health-samples.dlq", partitions: 1, replicationFactor: 3),
        ])
    }

    /// Sends `count` messages "user-N:i" keyed by user, and waits for every report.
    static func publish(_ producer: KafkaProducer, count: Int, users: Int = 20, from start: Int = 0, between: ((Int) throws -> Void)? = nil) throws {
        for i in start..<(start + count) {
            let user = "user-\(i % users)"
            try producer.send(topic: topic, key: Array(user.utf8), value: Array("\(user):\(i)".utf8), id: i)
            if i % 100 == 0 { producer.poll() }
            try between?(i)
        }
    }

    /// `publish` through a producer of its own, then waits until every message is delivered.
    static func publishAll(to broker: EmbeddedBroker, count: Int, users: Int) throws {
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { _ in }
        try publish(producer, count: count, users: users)
        try producer.flush(timeoutMilliseconds: 30_000)
    }

    /// Reads every partition from the start until each reaches its end.
    static func readAll(_ broker: EmbeddedBroker, partitions: Int, timeout: Duration = .seconds(30)) throws -> [ConsumedMessage] {
        var config = ConsumerConfiguration()
        config.groupID = "reader-\(UUID().uuidString)"
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent)
        defer { consumer.close() }
        let all = (0..<Int32(partitions)).map { TopicPartition(topic, $0) }
        var ends: [TopicPartition: Int64] = [:]
        for tp in all { ends[tp] = try consumer.watermarks(tp).high }
        try consumer.assign(all, startingAt: Dictionary(uniqueKeysWithValues: all.map { ($0, Int64(0)) }))
        var out: [ConsumedMessage] = []
        var done = Set(all.filter { ends[$0] == 0 })
        let deadline = ContinuousClock.now + timeout
        while done.count < all.count, ContinuousClock.now < deadline {
            for event in consumer.poll(maxMessages: 5_000, timeoutMilliseconds: 200) {
                if case .message(let m) = event {
                    out.append(m)
                    if m.offset + 1 >= ends[m.topicPartition]! { done.insert(m.topicPartition) }
                }
            }
        }
        #expect(done.count == all.count, "timed out reading back")
        return out
    }

    /// librdkafka's mock thread must never take SIGINT/SIGTERM: one delivered to it ends its
    /// poll loop (EINTR), and the cluster then neither answers nor shuts down — `daybook
    /// broker` sent SIGTERM while stopped hung for good after SIGCONT. Every `rdk:mock` thread
    /// of this process (other suites' clusters too) must have both blocked.
    @Test func mockClusterThreadBlocksTerminationSignals() throws {
        // Made from a thread that takes both, as `daybook broker`'s main thread does
        // (`Shutdown.install`); the test runner's threads block them already.
        var termination = sigset_t(), previous = sigset_t()
        sigemptyset(&termination)
        sigaddset(&termination, SIGINT)
        sigaddset(&termination, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &termination, &previous)
        let made = Result { try Self.broker() }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        let broker = try made.get()
        let wanted = (UInt64(1) << UInt64(SIGINT - 1)) | (UInt64(1) << UInt64(SIGTERM - 1))
        var mockThreads = 0
        withExtendedLifetime(broker) {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            for task in tasks {
                // A thread of another test may end while it is read: skip what cannot be read.
                guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                      name.hasPrefix("rdk:mock"),
                      let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8),
                      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
                      let blocked = UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16)
                else { continue }
                mockThreads += 1
                #expect(blocked & wanted == wanted, "rdk:mock thread \(task) does not block SIGINT and SIGTERM (SigBlk \(line.dropFirst(7)))")
            }
        }
        #expect(mockThreads >= 1, "no rdk:mock thread found in /proc/self/task")
    }

    @Test func roundTripKeepsEachUsersOrderInOnePartition() throws {
        let broker = try Self.broker(partitions: 4)
        var reports: [DeliveryReport] = []
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { reports.append($0) }
        try Self.publish(producer, count: 2_000)
        try producer.flush(timeoutMilliseconds: 30_000)
        #expect(reports.count == 2_000)
        #expect(reports.allSatisfy { $0.error == nil })

        let messages = try Self.readAll(broker, partitions: 4)
        #expect(messages.count == 2_000)
        var partitionOf: [String: Int32] = [:]
        var last: [String: Int] = [:]
        for m in messages {
            let key = String(decoding: m.key, as: UTF8.self)
            let parts = String(decoding: m.value, as: UTF8.self).split(separator: ":")
            #expect(String(parts[0]) == key)
            let seq = Int(parts[1])!
            #expect(partitionOf[key, default: m.topicPartition.partition] == m.topicPartition.partition, "\(key) in two partitions")
            partitionOf[key] = m.topicPartition.partition
            #expect(seq > last[key, default: -1], "\(key) out of order")
            last[key] = seq
            // Java clients place keys with murmur2: the same partition here.
            #expect(m.topicPartition.partition == Partitioner.murmur2Random.partition(ofKey: m.key, count: 4))
        }
        #expect(partitionOf.count == 20)
    }

    /// `wakeFetchers` asks one partition of each leader broker: here 3 brokers lead 6
    /// partitions, so it asks 3 (or as many as lead any), and it knows every partition's leader.
    @Test func wakingTheFetchersAsksOnePartitionOfEachLeader() throws {
        let broker = try Self.broker(brokers: 3, partitions: 6)
        var config = ConsumerConfiguration()
        config.groupID = "waker-\(UUID().uuidString)"
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent)
        defer { consumer.close() }
        let all = (0..<Int32(6)).map { TopicPartition(Self.topic, $0) }
        try consumer.assign(all, startingAt: Dictionary(uniqueKeysWithValues: all.map { ($0, Int64(0)) }))
        let leaders = try consumer.core.client.partitionLeaders(timeoutMilliseconds: 5_000)
        #expect(all.allSatisfy { leaders[$0] != nil }, "\(leaders)")
        let distinct = Set(all.compactMap { leaders[$0] })
        #expect(distinct.count > 1 && distinct.count <= 3, "\(leaders)")
        #expect(consumer.wakeFetchers(of: all, timeoutMilliseconds: 5_000) == distinct.count)
        // One partition: one broker asked.
        #expect(consumer.wakeFetchers(of: [all[0]], timeoutMilliseconds: 5_000) == 1)
        // In the background: started, and once it is done (the synchronous wake runs on the
        // same queue, after it) another starts.
        #expect(consumer.wakeFetchersInBackground(of: all, timeoutMilliseconds: 5_000))
        #expect(consumer.wakeFetchers(of: [all[0]], timeoutMilliseconds: 5_000) == 1)
        #expect(consumer.wakeFetchersInBackground(of: all, timeoutMilliseconds: 5_000))
        // Partition counts come from the same metadata.
        #expect(try consumer.partitionCount(Self.topic) == 6)
    }

    /// The watermarks of several partitions asked at once (two requests per leader) are the
    /// ones asked one partition at a time: 3 brokers lead 6 partitions holding 0 to ~300
    /// messages each (20 users keyed over 6 partitions; partition counts differ).
    @Test func watermarksOfSeveralPartitionsAtOnceAreThoseAskedOneByOne() throws {
        let broker = try Self.broker(brokers: 3, partitions: 6)
        try Self.publishAll(to: broker, count: 1_000, users: 5)
        var config = ConsumerConfiguration()
        config.groupID = "marks-\(UUID().uuidString)"
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent)
        defer { consumer.close() }
        let all = (0..<Int32(6)).map { TopicPartition(Self.topic, $0) }
        let together = try consumer.watermarks(of: all, timeoutMilliseconds: 5_000)
        #expect(together.count == 6)
        var total: Int64 = 0
        for tp in all {
            let alone = try consumer.watermarks(tp, timeoutMilliseconds: 5_000)
            #expect(together[tp]?.low == alone.low && together[tp]?.high == alone.high, "\(tp): \(String(describing: together[tp])) against \(alone)")
            total += alone.high - alone.low
        }
        // 5 users over 6 partitions: at least one partition is empty, and the rest hold all.
        #expect(total == 1_000)
        #expect(all.contains { together[$0]?.high == 0 })
        // A partition the topic does not have is an error naming it, not a guess.
        #expect(throws: KafkaError.self) { try consumer.watermarks(of: [all[0], TopicPartition(Self.topic, 9)], timeoutMilliseconds: 2_000) }
    }

    @Test func brokerDownDuringPublishLosesAndDuplicatesNothing() throws {
        let broker = try Self.broker(brokers: 3, partitions: 6)
        var delivered: [Int: Int] = [:]
        var failures = 0
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { r in
            if r.error == nil { delivered[r.id, default: 0] += 1 } else { failures += 1 }
        }
        try Self.publish(producer, count: 6_000) { i in
            if i == 2_000 {
                try producer.flush(timeoutMilliseconds: 30_000)
                try broker.setBrokerDown(2)
            }
            if i == 4_000 {
                // Keep sending while the broker is away, then bring it back.
                for _ in 0..<10 { producer.poll(); Thread.sleep(forTimeInterval: 0.1) }
                try broker.setBrokerUp(2)
            }
        }
        try producer.flush(timeoutMilliseconds: 60_000)
        #expect(failures == 0)
        #expect(delivered.count == 6_000 && delivered.values.allSatisfy { $0 == 1 })
        let ids = try Self.readAll(broker, partitions: 6).map { Int(String(decoding: $0.value, as: UTF8.self).split(separator: ":")[1])! }
        #expect(ids.count == 6_000, "\(ids.count) messages in the log")
        #expect(Set(ids).count == 6_000, "duplicates in the log")
    }

    @Test func injectedProduceErrorsAreRetriedWithoutDuplicates() throws {
        let broker = try Self.broker(brokers: 3, partitions: 3)
        broker.failNextProduceRequests([.notLeaderForPartition, .requestTimedOut, .notLeaderForPartition, .requestTimedOut,
                                        .requestTimedOut, .notLeaderForPartition])
        var ok = 0, failed = 0
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { r in
            if r.error == nil { ok += 1 } else { failed += 1 }
        }
        try Self.publish(producer, count: 3_000)
        try producer.flush(timeoutMilliseconds: 60_000)
        #expect(ok == 3_000 && failed == 0)
        let values = try Self.readAll(broker, partitions: 3).map { String(decoding: $0.value, as: UTF8.self) }
        #expect(values.count == 3_000)
        #expect(Set(values).count == 3_000)
    }

    @Test func allBrokersDownPastTheTimeoutReportsEveryMessageAsFailed() throws {
        let broker = try Self.broker(brokers: 3, partitions: 3)
        for id in Int32(1)...3 { try broker.setBrokerDown(id) }
        var config = ProducerConfiguration()
        config.messageTimeoutMilliseconds = 1_500
        var failed: [Int] = []
        var delivered = 0
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent) { r in
            if let e = r.error {
                failed.append(r.id)
                #expect(e.kind == .delivery && e.isRetriable)
            } else {
                delivered += 1
            }
        }
        try Self.publish(producer, count: 10)
        try producer.flush(timeoutMilliseconds: 20_000)
        #expect(delivered == 0)
        #expect(failed.sorted() == Array(0..<10))
        #expect(producer.inFlight == 0)
    }

    /// Records what the group hands out.
    final class Recorder: RebalanceHandler {
        var current: Set<TopicPartition> = []
        /// Assigned and not yet started (held by the consumer).
        var held: Set<TopicPartition> = []
        func assigned(_ partitions: [TopicPartition]) {
            current.formUnion(partitions)
            held.formUnion(partitions)
        }
        func revoked(_ partitions: [TopicPartition]) {
            current.subtract(partitions)
            held.subtract(partitions)
        }
    }

    @Test func rebalanceHandsEachPartitionToExactlyOneMember() throws {
        let broker = try Self.broker(partitions: 6)
        let connection = KafkaConnection(bootstrapServers: broker.bootstrapServers)
        var config = ConsumerConfiguration()
        config.groupID = "rebalance-test"
        config.sessionTimeoutMilliseconds = 6_000
        let a = try KafkaConsumer(connection: connection, configuration: config, logger: .silent)
        let b = try KafkaConsumer(connection: connection, configuration: config, logger: .silent)
        let ra = Recorder(), rb = Recorder()
        try a.subscribe([Self.topic], handler: ra)
        try b.subscribe([Self.topic], handler: rb)
        let all = Set((0..<Int32(6)).map { TopicPartition(Self.topic, $0) })
        let deadline = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < deadline {
            _ = a.poll(timeoutMilliseconds: 50)
            _ = b.poll(timeoutMilliseconds: 50)
            if !ra.current.isEmpty, !rb.current.isEmpty, ra.current.union(rb.current) == all, ra.current.isDisjoint(with: rb.current) { break }
        }
        #expect(!ra.current.isEmpty && !rb.current.isEmpty)
        #expect(ra.current.union(rb.current) == all)
        #expect(ra.current.isDisjoint(with: rb.current))
        #expect(Set(a.assignment) == ra.current && Set(b.assignment) == rb.current)
        // One member leaves: the other ends up with everything.
        b.close()
        let after = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < after, ra.current != all { _ = a.poll(timeoutMilliseconds: 100) }
        #expect(ra.current == all)
        a.close()
    }

    @Test func assignedPartitionsStartAtTheOffsetsTheHandlerReturns() throws {
        let broker = try Self.broker(partitions: 2)
        try Self.publishAll(to: broker, count: 200, users: 7)
        var config = ConsumerConfiguration()
        config.groupID = "seek-test"
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent)
        let recorder = Recorder()
        try consumer.subscribe([Self.topic], handler: recorder)
        var first: [Int32: Int64] = [:]
        var eof = Set<Int32>()
        var heldPolls = 0, messagesWhileHeld = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while eof.count < 2, ContinuousClock.now < deadline {
            let events = consumer.poll(timeoutMilliseconds: 100)
            if !recorder.held.isEmpty {
                // Held partitions deliver nothing, however long they wait.
                heldPolls += 1
                messagesWhileHeld += events.filter { if case .message = $0 { true } else { false } }.count
                if heldPolls < 10 { continue }
                try consumer.start(Dictionary(uniqueKeysWithValues: recorder.held.map { ($0, 10) }))
                recorder.held.removeAll()
            }
            for event in events {
                switch event {
                case .message(let m): if first[m.topicPartition.partition] == nil { first[m.topicPartition.partition] = m.offset }
                case .endOfPartition(let tp, _): eof.insert(tp.partition)
                case .error, .offsetOutOfRange: break
                }
            }
        }
        #expect(heldPolls == 10 && messagesWhileHeld == 0)
        #expect(first == [0: 10, 1: 10])
        // Watermarks: the two partitions hold all 200 messages.
        let highs = try (0..<Int32(2)).map { try consumer.watermarks(TopicPartition(Self.topic, $0)).high }
        #expect(highs.reduce(0, +) == 200)
        consumer.close()
    }

    @Test func pausedPartitionsDeliverNothingUntilResumed() throws {
        let broker = try Self.broker(partitions: 2)
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { _ in }
        try Self.publish(producer, count: 100, users: 9)
        try producer.flush(timeoutMilliseconds: 30_000)
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: ConsumerConfiguration(), logger: .silent)
        let p0 = TopicPartition(Self.topic, 0), p1 = TopicPartition(Self.topic, 1)
        try consumer.assign([p0, p1], startingAt: [p0: 0, p1: 0])
        try consumer.pause([p1])
        var seen = Set<Int32>()
        for _ in 0..<20 { for case .message(let m) in consumer.poll(timeoutMilliseconds: 50) { seen.insert(m.topicPartition.partition) } }
        #expect(seen == [0])
        try consumer.resume([p1])
        let deadline = ContinuousClock.now + .seconds(10)
        while !seen.contains(1), ContinuousClock.now < deadline {
            for case .message(let m) in consumer.poll(timeoutMilliseconds: 50) { seen.insert(m.topicPartition.partition) }
        }
        #expect(seen == [0, 1])
        consumer.close()
    }

    @Test func seekMovesTheReadPosition() throws {
        let broker = try Self.broker(partitions: 1)
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { _ in }
        try Self.publish(producer, count: 20, users: 2)
        try producer.flush(timeoutMilliseconds: 30_000)
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: ConsumerConfiguration(), logger: .silent)
        let p0 = TopicPartition(Self.topic, 0)
        try consumer.assign([p0], startingAt: [p0: 0])
        var first: Int64?
        let deadline = ContinuousClock.now + .seconds(10)
        while first == nil, ContinuousClock.now < deadline {
            for case .message(let m) in consumer.poll(maxMessages: 1, timeoutMilliseconds: 100) { first = m.offset }
        }
        #expect(first == 0)
        try consumer.seek([p0: 15])
        var next: Int64?
        while next == nil, ContinuousClock.now < deadline + .seconds(10) {
            for case .message(let m) in consumer.poll(maxMessages: 1, timeoutMilliseconds: 100) where next == nil { next = m.offset }
        }
        #expect(next == 15)
        consumer.close()
    }

    /// librdkafka before 2.1.0 takes the seek's timeout for microseconds: 10,000 ms asked is
    /// given as 10,000 × 1,000 = 10,000,000 there (waited as 10,000,000 µs = 10 s); 2.1.0 and
    /// later (0x020100ff) are given it as it is. 2.0.2 is 0x020002ff.
    @Test func aSeekWaitsAsLongAsAskedWhateverUnitLibrdkafkaWaitsIn() {
        #expect(RDKafkaConsumer.seekWait(10_000, libraryVersion: 0x0200_02ff) == 10_000_000)
        #expect(RDKafkaConsumer.seekWait(5_000, libraryVersion: 0x0200_02ff) == 5_000_000)
        #expect(RDKafkaConsumer.seekWait(10_000, libraryVersion: 0x0201_00ff) == 10_000)
        #expect(RDKafkaConsumer.seekWait(10_000, libraryVersion: 0x0206_01ff) == 10_000)
        // Beyond what an Int32 holds, the longest wait it can say (about 24.8 days).
        #expect(RDKafkaConsumer.seekWait(3_000_000, libraryVersion: 0x0200_02ff) == Int32.max)
    }

    /// Kafka's time index as `daybook replay --from-time` uses it. The mock cluster answers
    /// every lookup by timestamp with "none" (its ListOffsets handler has no time index), so
    /// the answer is checked against the log and found by reading message timestamps.
    @Test func offsetsByTimeFindTheFirstMessageOfALaterWave() throws {
        let broker = try Self.broker(partitions: 3)
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent) { _ in }
        try Self.publish(producer, count: 30)
        try producer.flush(timeoutMilliseconds: 30_000)
        Thread.sleep(forTimeInterval: 0.05)
        let between = Int64(Date().timeIntervalSince1970 * 1_000)
        Thread.sleep(forTimeInterval: 0.05)
        try Self.publish(producer, count: 30, from: 30)
        try producer.flush(timeoutMilliseconds: 30_000)

        // Where each partition's second wave starts, from what it holds.
        let messages = try Self.readAll(broker, partitions: 3)
        var firstLate: [Int32: Int64] = [:]
        for m in messages where Int(String(decoding: m.value, as: UTF8.self).split(separator: ":")[1])! >= 30 {
            firstLate[m.topicPartition.partition] = min(firstLate[m.topicPartition.partition] ?? .max, m.offset)
        }
        #expect(firstLate.count == 3)

        // Short fetch waits: each message read waits for the fetch in flight before it.
        let connection = KafkaConnection(bootstrapServers: broker.bootstrapServers, properties: ["fetch.wait.max.ms": "10"])
        let consumer = try KafkaConsumer(connection: connection, configuration: ConsumerConfiguration(), logger: .silent)
        defer { consumer.close() }
        let all = (0..<Int32(3)).map { TopicPartition(Self.topic, $0) }
        let indexed = try consumer.offsetsForTimes(all, milliseconds: between)
        #expect(indexed.count == 3 && indexed.values.allSatisfy { $0 == nil }, "the mock cluster learned to look up timestamps: \(indexed)")

        let found = try consumer.offsets(atOrAfter: between, in: all)
        for tp in all {
            #expect(found[tp] == KafkaConsumer.TimeOffset(offset: firstLate[tp.partition], byReading: true), "\(tp)")
        }
        // Before everything: the first offset; after everything: none, without a search.
        let start = try consumer.offsets(atOrAfter: 0, in: all)
        #expect(all.allSatisfy { start[$0]?.offset == 0 })
        let future = try consumer.offsets(atOrAfter: between + 3_600_000, in: all)
        #expect(all.allSatisfy { future[$0] == KafkaConsumer.TimeOffset(offset: nil, byReading: false) })
        // One message read back on its own, with its timestamp.
        let first = try consumer.firstMessage(all[0], from: 0)
        #expect(first?.offset == 0 && (first?.timestamp ?? 0) < between)
        #expect(try consumer.firstMessage(all[0], from: try consumer.watermarks(all[0]).high) == nil)
    }

    @Test func adminFindsTopicsThatExist() throws {
        let broker = try Self.broker(partitions: 5)
        let admin = try KafkaAdmin(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), logger: .silent)
        let definitions = try TopicDefinition.load(directory: Self.topicsDirectory)
        let first = try admin.ensureTopics(definitions)
        #expect(first["health-samples"] == .exists(partitions: 5))
        #expect(first["health-samples.dlq"] == .exists(partitions: 1))
        #expect(try admin.ensureTopics(definitions) == first)
    }

    static var topicsDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("topics").path
    }

    @Test func topicDefinitionsAreRead() throws {
        let topics = try TopicDefinition.load(directory: Self.topicsDirectory)
        #expect(topics.map(\.name) == ["health-samples", "health-samples.dlq"])
        #expect(topics[0].configs["retention.ms"] == "-1")
        #expect(topics[0].partitions == 8 && topics[0].replicationFactor == 3)
    }
}
