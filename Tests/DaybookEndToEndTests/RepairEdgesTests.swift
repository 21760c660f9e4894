import DaybookTestSupport
import Foundation
import Testing

/// Issue 25's edges of the command line, each reproduced first: an export destroyed
/// through standard input, `--out` onto links and FIFOs, a bad librdkafka property, replay
/// under a running projector, and the messages that said too little or too much.
@Suite struct RepairEdgesTests {
    let scratch = TemporaryDirectory()

    // MARK: 7. A property librdkafka refuses is a configuration error everywhere

    @Test func aBogusKafkaPropertyExits78FromEveryCommandThatTalksToKafka() throws {
        let config = try scratch.file(#"{"kafka":{"properties":{"bogus.property":"1"}}}"#, suffix: ".json")
        let data = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        // No broker is needed: librdkafka refuses the property before it connects.
        let kafka = ["--brokers", "127.0.0.1:1", "--config", config, "--connect-timeout", "2"]
        let commands: [[String]] = [
            ["status", "--data", data], ["locate", "--user", "ana"], ["rebuild", "--data", data],
            ["verify", "--data", data], ["diff", "--data", data], ["replay", "--data", data, "--from-offset", "0"],
            ["project", "--data", data, "--solo", "--until-caught-up"],
        ]
        for command in commands {
            let r = try Daybook.run(command + kafka)
            #expect(r.status == 78, "\(command[0]): \(r.stderr)")
            #expect(r.stderr.contains(#"bogus.property: No such configuration property: "bogus.property""#), "\(command[0]): \(r.stderr)")
        }
    }
}
