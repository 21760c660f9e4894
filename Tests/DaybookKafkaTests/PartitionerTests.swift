@testable import DaybookKafka
import Foundation
import Testing

/// `Partitioner` against librdkafka itself: keyed messages produced through the embedded
/// broker under each `partitioner` setting land exactly where the Swift function says.
@Suite(.serialized) struct PartitionerTests {
    /// Keys of every length from 1 to 40 bytes (each tail of murmur2's 4-byte blocks),
    /// ASCII and multi-byte UTF-8, the shapes user ids take.
    static let keys: [String] = {
        var keys: [String] = []
        for n in 1...40 { keys.append(String(repeating: "k", count: n)) }
        for i in 0..<300 { keys.append("user-\(i)") }
        for i in 0..<60 { keys.append(UUID(uuidString: String(format: "00000000-0000-4000-8000-%012x", i * 7_919))!.uuidString.lowercased()) }
        keys += ["ana", "bo", "dana", "zoë", "日本語のユーザー", "Ω", "a b", "emoji-🏃‍♀️", "0", "-1"]
        return keys
    }()

    @Test(arguments: Partitioner.allCases, [1, 7, 12])
    func matchesLibrdkafka(_ partitioner: Partitioner, partitions: Int) throws {
        let topic = "placed"
        let broker = try EmbeddedBroker(topics: [TopicDefinition(name: topic, partitions: partitions, replicationFactor: 1)])
        var configuration = ProducerConfiguration()
        configuration.partitioner = partitioner
        var reported: [Int: Int32] = [:]
        var failures = 0
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers),
                                         configuration: configuration, logger: .silent) { report in
            if report.error == nil { reported[report.id] = report.partition } else { failures += 1 }
        }
        for (i, key) in Self.keys.enumerated() {
            try producer.send(topic: topic, key: Array(key.utf8), value: Array("\(i)".utf8), id: i)
        }
        try producer.flush(timeoutMilliseconds: 30_000)
        #expect(failures == 0)
        #expect(reported.count == Self.keys.count)
        for (i, key) in Self.keys.enumerated() {
            #expect(reported[i] == partitioner.partition(ofKey: key.utf8, count: partitions), "\(partitioner.rawValue), \(partitions) partitions: key \(key)")
        }
        // And where the broker stored them, read back.
        var stored: [String: Int32] = [:]
        var config = ConsumerConfiguration()
        config.groupID = "placed-\(UUID().uuidString)"
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent)
        defer { consumer.close() }
        let all = (0..<Int32(partitions)).map { TopicPartition(topic, $0) }
        try consumer.assign(all, startingAt: Dictionary(uniqueKeysWithValues: all.map { ($0, Int64(0)) }))
        let deadline = ContinuousClock.now + .seconds(30)
        while stored.count < Self.keys.count, ContinuousClock.now < deadline {
            for case .message(let m) in consumer.poll(maxMessages: 1_000, timeoutMilliseconds: 200) {
                stored[String(decoding: m.key, as: UTF8.self)] = m.topicPartition.partition
            }
        }
        #expect(stored.count == Set(Self.keys).count)
        for key in Self.keys {
            #expect(stored[key] == partitioner.partition(ofKey: key.utf8, count: partitions), "stored: \(partitioner.rawValue), key \(key)")
        }
    }

    /// The two partitioners disagree for most keys: a check under the wrong one is no check.
    @Test func partitionersDiffer() {
        let differing = Self.keys.filter {
            Partitioner.murmur2Random.partition(ofKey: $0.utf8, count: 12) != Partitioner.consistentRandom.partition(ofKey: $0.utf8, count: 12)
        }
        #expect(differing.count > Self.keys.count / 2)
    }

    /// Published values: Kafka's own murmur2 test vectors (as signed Java ints) and CRC-32's check value.
    @Test func knownValues() {
        let murmur: [(String, Int32)] = [
            ("21", -973_932_308), ("foobar", -790_332_482), ("a-little-bit-long-string", -985_981_536),
            ("a-little-bit-longer-string", -1_486_304_829), ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
            ("abc", 479_470_107),
        ]
        for (key, value) in murmur {
            #expect(Int32(bitPattern: Partitioner.murmur2(Array(key.utf8))) == value, "murmur2(\(key))")
        }
        #expect(Partitioner.crc32(Array("123456789".utf8)) == 0xcbf4_3926)
    }

    @Test func producerSetsTheConfiguredPartitioner() throws {
        var configuration = ProducerConfiguration()
        #expect(try configuration.properties(for: KafkaConnection())["partitioner"] == "murmur2_random")
        configuration.partitioner = .consistentRandom
        #expect(try configuration.properties(for: KafkaConnection())["partitioner"] == "consistent_random")
        // A passthrough property may not put producers on another partitioner than the check's.
        #expect(throws: KafkaError.self) {
            try configuration.properties(for: KafkaConnection(properties: ["partitioner": "murmur2_random"]))
        }
    }
}
