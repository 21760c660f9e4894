@testable import DaybookKafka
import Testing

@Suite struct ConfigurationTests {
    let connection = KafkaConnection(bootstrapServers: "b1:9092,b2:9092", clientID: "test")

    @Test func producerPropertiesAreIdempotentKeyedAndCompressed() throws {
        var c = ProducerConfiguration()
        c.lingerMilliseconds = 20
        let p = try c.properties(for: connection)
        #expect(p["bootstrap.servers"] == "b1:9092,b2:9092")
        #expect(p["client.id"] == "test")
        #expect(p["enable.idempotence"] == "true")
        #expect(p["acks"] == "all")
        #expect(p["partitioner"] == "murmur2_random")
        #expect(p["compression.codec"] == "lz4")
        #expect(p["linger.ms"] == "20")
        #expect(p["message.timeout.ms"] == "300000")
    }

    @Test func consumerNeverCommitsOrStoresOffsetsByItself() throws {
        var c = ConsumerConfiguration()
        c.groupID = "g"
        c.groupInstanceID = "projector-1"
        let p = try c.properties(for: connection)
        #expect(p["enable.auto.commit"] == "false")
        #expect(p["enable.auto.offset.store"] == "false")
        #expect(p["group.id"] == "g")
        #expect(p["group.instance.id"] == "projector-1")
        #expect(p["auto.offset.reset"] == "error")
        #expect(p["queued.min.messages"] == "1000000")
        #expect(p["queued.max.messages.kbytes"] == "16384") // 16 MiB / 1 KiB
        #expect(p["fetch.max.bytes"] == "1048576") // 16 MiB / 16 = 1 MiB, also the floor
    }

    @Test func prefetchIsOneBudgetForAllPartitions() throws {
        // One queue for every partition: librdkafka's kbytes limit is the total, and one
        // fetch response may add at most a 16th of it.
        var c = ConsumerConfiguration()
        c.prefetchBytes = 100 << 20
        let p = try c.properties(for: connection)
        #expect(p["queued.max.messages.kbytes"] == "102400")
        #expect(p["fetch.max.bytes"] == String(100 << 16))
    }

    @Test func passthroughAddsPropertiesButCannotUnlockSafety() throws {
        var conn = connection
        conn.properties = ["security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"]
        conn.secrets = ["sasl.password": "hunter2"]
        let p = try ProducerConfiguration().properties(for: conn)
        #expect(p["security.protocol"] == "SASL_SSL")
        #expect(p["sasl.password"] == "hunter2")
        #expect(!conn.description.contains("hunter2"))
        #expect(conn.description.contains("sasl.password=<redacted>"))

        conn.properties = ["enable.idempotence": "false"]
        #expect(throws: KafkaError.self) { try ProducerConfiguration().properties(for: conn) }
        conn.properties = ["enable.auto.commit": "true"]
        #expect(throws: KafkaError.self) { try ConsumerConfiguration().properties(for: conn) }
    }

    @Test func secretsInTheFileAreRefused() {
        var conn = connection
        conn.properties = ["sasl.password": "in-a-file"]
        do {
            _ = try ProducerConfiguration().properties(for: conn)
            Issue.record("accepted a password from the file")
        } catch {
            #expect(error.kind == .configuration)
            #expect(error.message.contains("secrets"))
            #expect(!error.description.contains("in-a-file"))
        }
    }

    @Test func librdkafkaRejectsUnknownProperties() {
        var conn = connection
        conn.properties = ["no.such.property": "1"]
        do {
            _ = try KafkaProducer(connection: conn, logger: .silent) { _ in }
            Issue.record("accepted an unknown property")
        } catch {
            #expect(error.kind == .configuration)
            #expect(error.message.contains("no.such.property"))
        }
    }
}

import DaybookLog
import Foundation

@Suite struct ClientErrorTests {
    /// librdkafka's client errors reach the logger and `lastClientError`, named by code.
    @Test func unreachableClusterIsLoggedAsAllBrokersDown() throws {
        let records = InMemoryLogHandler()
        let logger = Logger(label: "test", level: .warning, handler: records)
        var config = ProducerConfiguration()
        config.messageTimeoutMilliseconds = 1_000
        var failures = 0
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: "127.0.0.1:1"), configuration: config, logger: logger) { report in
            if report.error != nil { failures += 1 }
        }
        try producer.send(topic: "health-samples", key: Array("ana".utf8), value: Array("{}".utf8), id: 0)
        try producer.flush(timeoutMilliseconds: 10_000)
        #expect(failures == 1)
        #expect(records.records.contains { $0.level == .warning && $0.message.contains("ALL_BROKERS_DOWN") })
        #expect(producer.lastClientError?.isRetriable == true)
    }
}

@Suite struct PrefetchRangeReviewTests {
    /// `kafka.consumer.prefetch_mb` accepts 1…65536 (review): every accepted value must make a
    /// consumer (fails: librdkafka takes queued.max.messages.kbytes up to 2097151 only).
    @Test(arguments: [1, 2_047, 2_048, 65_536])
    func everyAcceptedPrefetchMakesAConsumer(megabytes: Int) throws {
        var c = ConsumerConfiguration()
        c.groupID = "g"
        c.prefetchBytes = megabytes << 20
        _ = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: "127.0.0.1:1"), configuration: c, logger: .silent)
    }
}
