@testable import DaybookKafka
import DaybookLog
import Foundation
import Testing

/// Errors of the Kafka layer carry typed codes (`KafkaError.Code`: librdkafka's, by name, from
/// its header) and speak of Kafka, not of the command line.
@Suite(.serialized) struct KafkaErrorCodeTests {
    @Test func aMissingTopicIsUnknownTopicOrPartitionAndNamesNoCommand() throws {
        let broker = try EmbeddedBroker(brokers: 1, topics: [TopicDefinition(name: "health-samples", partitions: 2, replicationFactor: 1)])
        defer { withExtendedLifetime(broker) {} }
        var config = ConsumerConfiguration()
        config.groupID = "codes-\(UUID().uuidString)"
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: config, logger: .silent)
        defer { consumer.close() }
        #expect(try consumer.partitionCount("health-samples") == 2)
        do {
            _ = try consumer.partitionCount("no-such-topic")
            Issue.record("a missing topic had a partition count")
        } catch {
            #expect(error.kind == .topic)
            #expect(error.errorCode == .unknownTopicOrPartition)
            #expect(error.description == "topic no-such-topic does not exist")
        }
    }

    @Test func anUnusableGroupNamesThePropertyNotAnOption() throws {
        var config = ConsumerConfiguration()
        config.groupID = ""
        do {
            _ = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: "127.0.0.1:1"), configuration: config, logger: .silent)
            Issue.record("an empty group.id was accepted")
        } catch {
            #expect(error.kind == .configuration)
            #expect(error.property == "group.id")
            #expect(!error.description.contains("--group"))
        }
    }

    @Test func codesAreTypedValues() {
        #expect(KafkaError(.delivery, "too big", code: 10).errorCode == .messageSizeTooLarge)
        #expect(KafkaError(.state, "ours").errorCode == .noError)
    }

    @Test func namedCodesAreLibrdkafkasValues() {
        // From rdkafka.h: RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE = 10,
        // RD_KAFKA_RESP_ERR__MSG_TIMED_OUT = -192, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART = 3.
        #expect(KafkaError.Code.messageSizeTooLarge.rawValue == 10)
        #expect(KafkaError.Code.messageTimedOut.rawValue == -192)
        #expect(KafkaError.Code.unknownTopicOrPartition.rawValue == 3)
        #expect(KafkaError.Code.noError.rawValue == 0)
    }

    @Test func anErrorsCodeMatchesByName() {
        let error = KafkaError(.delivery, "producing to t: Broker: Message size too large", code: 10, codeName: "MSG_SIZE_TOO_LARGE")
        var matched = false
        switch error.errorCode {
        case .messageSizeTooLarge: matched = true
        default: break
        }
        #expect(matched)
        #expect(error.errorCode != .messageTimedOut)
        #expect(KafkaError(.broker, "own").errorCode == .noError)
    }
}
