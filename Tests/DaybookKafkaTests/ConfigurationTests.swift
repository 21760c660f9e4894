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
        #expect(p["auto.offset.reset"] == "earliest")
        #expect(p["queued.min.messages"] == "1000000")
        #expect(p["queued.max.messages.kbytes"] == "262144")
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
