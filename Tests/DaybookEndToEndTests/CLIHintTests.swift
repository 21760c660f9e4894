import DaybookKafka
import DaybookTestSupport
import Foundation
import Testing

/// The libraries say what went wrong in their own terms; the executable adds the command
/// or option that fixes it.
@Suite struct CLIHintTests {
    let scratch = TemporaryDirectory()

    @Test func aMissingTopicGetsTheCommandThatCreatesIt() throws {
        let broker = try EmbeddedBroker(brokers: 1, topics: [TopicDefinition(name: "health-samples", partitions: 1, replicationFactor: 1)])
        defer { withExtendedLifetime(broker) {} }
        let r = try Daybook.run(["project", "--brokers", broker.bootstrapServers, "--data", scratch.newPath("data"),
                                 "--topic", "no-such-topic", "--until-caught-up", "--solo"])
        #expect(r.status == 69, "\(r.stderr)")
        // The library's words, then the executable's hint.
        #expect(r.stderr.contains("topic no-such-topic does not exist; create it with 'daybook topics'"), "\(r.stderr)")
    }
}
