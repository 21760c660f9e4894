import DaybookKafka
import DaybookLog
import Foundation
import Testing

/// Errors of the Kafka layer carry typed codes and speak of Kafka, not of the command line.
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
            #expect(error.resultCode == .unknownTopicOrPartition)
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
        #expect(KafkaError(.delivery, "too big", code: 10).resultCode == .messageSizeTooLarge)
        #expect(KafkaError(.state, "ours").resultCode == .none)
    }
}
