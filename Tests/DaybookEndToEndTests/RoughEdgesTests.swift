import DaybookCore
import Foundation
import Testing

/// Rough edges of the command line found in the hardening review, each reproduced first.
@Suite struct RoughEdgesTests {
    let scratch = TemporaryDirectory()

    static let oneSample = #"{"type":"sample-added","user":"ana","sample":{"uuid":"w1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00+01:00","value":3000,"unit":"count","zone":"Europe/Berlin"}}"# + "\n"

    // MARK: 1. Configuration

    @Test(arguments: [
        (#"{"priorty":{"default":["phone","watch"]}}"#, "priorty: unknown setting; use priority, kafka"),
        (#"{"priority":{"default":["phone"]},"kafak":{}}"#, "kafak: unknown setting; use priority, kafka"),
        (#"{"kafka":{"bootstrap.server":"x:1"}}"#, "kafka.bootstrap.server: unknown setting; use bootstrap.servers"),
        (#"{"kafka":{"producer":{"linger":5}}}"#, "kafka.producer.linger: unknown producer setting; use compression, linger.ms"),
        (#"{"kafka":{"consumer":{"group":"g"}}}"#, "kafka.consumer.group: unknown consumer setting; use group.id"),
        ("[]", "(top level): must be a JSON object with the members priority, kafka, got an array"),
        ("5", "(top level): must be a JSON object with the members priority, kafka, got 5"),
    ])
    func configurationTyposFailNamingTheKey(config: String, message: String) throws {
        let r = try Daybook.run(["rollup", try scratch.file(Self.oneSample), "--config", try scratch.file(config, suffix: ".json")])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func rollupAndExplainDoNotNeedKafkaSecrets() throws {
        let config = try scratch.file(#"{"priority":{"default":["phone","watch"]},"kafka":{"secrets":{"sasl.password":"DAYBOOK_TEST_UNSET_VARIABLE"}}}"#, suffix: ".json")
        let events = try scratch.file(Self.oneSample)
        let rollup = try Daybook.run(["rollup", events, "--config", config])
        #expect(rollup.status == 0, "\(rollup.stderr)")
        #expect(rollup.stdout.contains(#""value":3000"#))
        let explain = try Daybook.run(["explain", events, "--config", config, "--user", "ana", "--metric", "steps", "--day", "2024-03-02"])
        #expect(explain.status == 0, "\(explain.stderr)")
        // The variable names are still checked for shape.
        let bad = try scratch.file(#"{"kafka":{"secrets":{"sasl.password":7}}}"#, suffix: ".json")
        let r = try Daybook.run(["rollup", events, "--config", bad])
        #expect(r.status == 78)
        #expect(r.stderr.contains("kafka.secrets.sasl.password: must be a non-empty string, got 7"))
        // Commands that talk to Kafka still need them.
        let publish = try Daybook.run(["publish", "--config", config, events])
        #expect(publish.status == 78)
        #expect(publish.stderr.contains("DAYBOOK_TEST_UNSET_VARIABLE is not set"))
    }
}
