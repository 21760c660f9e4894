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

    @Test func aDataDirectoryThatIsAFileGetsTheOptionToGive() throws {
        let file = scratch.newPath("not-a-directory")
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let r = try Daybook.run(["totals", "--data", file])
        #expect(r.status == 66, "\(r.stderr)")
        // The store says "open the data directory the projector writes"; the executable names --data.
        #expect(r.stderr.contains("\(file): not a directory; give the --data directory the projector writes"), "\(r.stderr)")
    }
}
