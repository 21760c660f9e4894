import DaybookBench
import DaybookKafka
import DaybookTestSupport
import Foundation
import Testing
@testable import daybook

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

    @Test func aBenchFailureExitsByWhatFixesItAndNamesTheOptions() {
        // The bench says "more partitions (e.g. 12)"; the command line names --partitions.
        let retention = CLIError(bench: BenchError(.retention(step: "daybook publish", kept: 900, dropped: 100, events: 1_000, suggestedPartitions: 12),
                                                   "after daybook publish the embedded broker holds only 900 of 1000 events"))
        #expect(retention.code == 76)
        #expect(retention.message.hasSuffix("dropped 100. Run with more --partitions (e.g. --partitions 12) or fewer --events."), "\(retention.message)")
        let config = CLIError(bench: BenchError(.unreadableConfiguration(path: "small.json", reason: "no such file"), "…"))
        #expect(config.code == 66 && config.message == "--config small.json: no such file")
        // A daybook child's own code (65-78) is the bench's; a kcat failure or a signal is 70.
        #expect(CLIError(bench: BenchError(.stepFailed(exitCode: 74), "")).code == 74)
        #expect(CLIError(bench: BenchError(.stepFailed(exitCode: 1), "")).code == 70)
        #expect(CLIError(bench: BenchError(.stepFailed(exitCode: nil), "")).code == 70)
        #expect(CLIError(bench: BenchError(.toolMissing("kcat"), "")).code == 69)
    }
}
