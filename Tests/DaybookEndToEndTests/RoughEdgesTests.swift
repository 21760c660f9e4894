import DaybookTestSupport
import DaybookCore
import DaybookStore
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
        ("[]", "(top level): must be a JSON object with the members priority, kafka, state, freshness, metrics, got an array"),
        ("5", "(top level): must be a JSON object with the members priority, kafka, state, freshness, metrics, got 5"),
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
        #expect(r.stderr.contains("kafka.secrets.sasl.password: must be a non-blank string, got 7"))
        // Commands that talk to Kafka still need them.
        let publish = try Daybook.run(["publish", "--config", config, events])
        #expect(publish.status == 78)
        #expect(publish.stderr.contains("kafka.secrets.sasl.password: the environment variable it names is not set"), "\(publish.stderr)")
    }

    // MARK: 2. Exit codes

    /// A projected one-partition log in a fresh data directory, and its broker.
    func projected() throws -> (broker: BrokerProcess, data: String) { try Self.projected(in: scratch) }

    /// `oneSample` published to a new broker of `partitions` partitions and projected into a
    /// fresh data directory in `scratch`.
    static func projected(partitions: Int = 1, in scratch: TemporaryDirectory) throws -> (broker: BrokerProcess, data: String) {
        let broker = try BrokerProcess(arguments: ["--partitions", "\(partitions)"])
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(Self.oneSample)]).status == 0)
        let data = scratch.newPath("data")
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        return (broker, data)
    }

    @Test func aShardBuiltUnderAnotherPriorityExits78AskingForARebuild() throws {
        let (broker, data) = try projected()
        defer { _ = broker.stop() }
        let config = try scratch.file(#"{"priority":{"default":["phone","watch"]}}"#, suffix: ".json")
        for mode in [["--solo"], ["--group", "rough-priority"]] {
            let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--config", config, "--until-caught-up"] + mode)
            #expect(r.status == 78, "\(mode): \(r.stderr)")
            #expect(r.stderr.contains("was built with source priority default=watch>phone>manual, not default=phone>watch: open it under the order it was built with, or rebuild the projection under this one. Put the order it was built with in --config, or rebuild every partition under yours: daybook rebuild --data DIR --config FILE"), "\(r.stderr)")
        }
    }

    /// A shard whose steps rows were made under another aggregation (its recorded catalogue
    /// says so) is refused: 78, naming the metric and the rebuild.
    @Test func aShardBuiltUnderAnotherMetricCatalogueExits78AskingForARebuild() throws {
        let (broker, data) = try projected()
        defer { _ = broker.stop() }
        let shard = data + "/health-samples-0000.sqlite"
        let recorded = MetricCatalogue.record(Metric.definitions)
        let other = recorded.replacingOccurrences(of: "steps:priority_sum:", with: "steps:sum:")
        let db = try Database(path: shard)
        try db.execute("UPDATE meta SET value = '\(other)' WHERE key = 'metrics'")
        #expect(db.changes == 1)
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("was built under other metric catalogue entries (metric 0 was steps:sum:count, is steps:priority_sum:count)"), "\(r.stderr)")
        #expect(r.stderr.contains("daybook rebuild --data DIR --config FILE"), "\(r.stderr)")
        // Readers refuse it too: its rows were made by the other rule.
        let totals = try Daybook.run(["totals", "--data", data])
        #expect(totals.status == 78 && totals.stderr.contains("metric 0 was steps:sum:count"), "\(totals.stderr)")
    }

    @Test func aFileThatIsNotAShardExits65NamingIt() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        let data = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let shard = data + "/health-samples-0000.sqlite"
        try Data("these are not the bytes of an SQLite database, just garbage\n".utf8).write(to: URL(fileURLWithPath: shard))
        let project = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(project.status == 65, "\(project.stderr)")
        #expect(project.stderr.contains("\(shard) is not a Daybook shard (file is not a database). Move it away"), "\(project.stderr)")
        let totals = try Daybook.run(["totals", "--data", data])
        #expect(totals.status == 65, "\(totals.stderr)")
        #expect(totals.stderr.contains("\(shard) is not a Daybook shard"), "\(totals.stderr)")
        let notADirectory = try Daybook.run(["totals", "--data", shard])
        #expect(notADirectory.status == 66, "\(notADirectory.stderr)")
    }

    @Test(.timeLimit(.minutes(2))) func aShardHeldByAnotherProcessExits75() throws {
        let (broker, data) = try projected()
        defer { _ = broker.stop() }
        // The shard lock is an flock on <shard>.lock; hold it as another projector would.
        let fd = open(data + "/health-samples-0000.sqlite.lock", O_RDWR | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(r.status == 75, "\(r.stderr)")
        #expect(r.stderr.contains("another projector holds this shard"))
    }

    @Test func foundationErrorsAreToldAsPathAndSystemReason() throws {
        let file = try scratch.file("not a directory")
        let cases: [(arguments: [String], status: Int32, text: String)] = [
            (["project", "--brokers", "127.0.0.1:1", "--data", file + "/data"], 74, "\(file)/data: Not a directory"),
            (["rollup", scratch.path], 66, "\(scratch.path): cannot be read: Is a directory"),
            (["rollup", try scratch.file(Self.oneSample), "--config", scratch.path], 66, "\(scratch.path): cannot be read: Is a directory"),
            (["broker", "--bootstrap-file", file + "/bootstrap"], 74, "\(file)/bootstrap: cannot write the bootstrap address: Not a directory"),
            (["demo", "--data", file + "/demo"], 74, "Not a directory"),
        ]
        for c in cases {
            let r = try Daybook.run(c.arguments)
            #expect(r.status == c.status, "\(c.arguments): \(r.stderr)")
            #expect(r.stderr.contains(c.text), "\(c.arguments): \(r.stderr)")
            for foundation in ["NSCocoaErrorDomain", "NSPOSIXErrorDomain", "The operation could not be completed", "UserInfo"] {
                #expect(!r.stderr.contains(foundation), "\(c.arguments): \(r.stderr)")
            }
        }
    }

    @Test func everyCommandDocumentsItsExitCodesFromTheReadmeList() throws {
        let readme = try String(contentsOf: Daybook.root.appendingPathComponent("README.md"), encoding: .utf8)
        let documented = Set(readme.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix("| "), let code = Int(line.dropFirst(2).prefix { $0 != " " }) else { return nil }
            return code
        })
        #expect(documented == [0, 1, 3, 64, 65, 66, 69, 70, 74, 75, 76, 78])
        let help = try Daybook.run(["help"])
        let commands = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != "COMMANDS:" }.dropFirst()
            .prefix { !$0.isEmpty }.compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(commands.count >= 12 && commands.contains("rebuild") && commands.contains("verify") && commands.contains("dlq") && commands.contains("replay"), "\(help.stdout)")
        for command in commands {
            let r = try Daybook.run([command, "--help"])
            #expect(r.status == 0)
            guard let range = r.stdout.range(of: "EXIT CODES:") else {
                Issue.record("daybook \(command) --help lists no exit codes")
                continue
            }
            let text = String(r.stdout[range.upperBound...]).components(separatedBy: "\n\n")[0]
            let codes = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            #expect(codes.contains(0) && codes.contains(64), "\(command): \(text)")
            for code in codes { #expect(documented.contains(code), "daybook \(command) --help: exit \(code) is not in the README list") }
        }
    }

    // MARK: 3. help and version

    @Test func helpForAnUnknownCommandIsAUsageError() throws {
        let r = try Daybook.run(["help", "nosuch"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("'nosuch' is not a command"))
        #expect(r.stdout.isEmpty)
        #expect(try Daybook.run(["help", "rollup", "extra"]).status == 64)
        let known = try Daybook.run(["help", "rollup"])
        #expect(known.status == 0 && known.stdout.contains("USAGE: daybook rollup"))
    }

    @Test func versionIsPrintedBothWays() throws {
        let flag = try Daybook.run(["--version"])
        #expect(flag.status == 0, "\(flag.stderr)")
        #expect(flag.stdout.wholeMatch(of: /daybook \d+\.\d+\.\d+\n/) != nil, "\(flag.stdout)")
        let word = try Daybook.run(["version"])
        #expect(word.status == 0 && word.stdout == flag.stdout)
        #expect(try Daybook.run(["--version", "x"]).status == 64)
        #expect(try Daybook.run(["help"]).stdout.contains("daybook --version"))
    }

    // MARK: 4. Topic names

    @Test func topicNamesAreCheckedBeforeAnythingIsWritten() throws {
        let events = try scratch.file(Self.oneSample)
        let data = scratch.newPath("data")
        let commands: [(topic: String, arguments: [String])] = [
            ("../../escaped", ["publish", "--brokers", "127.0.0.1:1", events]),
            ("../../escaped", ["project", "--brokers", "127.0.0.1:1", "--data", data, "--solo", "--until-caught-up"]),
            ("..", ["project", "--brokers", "127.0.0.1:1", "--data", data, "--solo", "--until-caught-up"]),
        ]
        for (topic, arguments) in commands {
            let r = try Daybook.run(arguments + ["--topic", topic])
            #expect(r.status == 64, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains("--topic \"\(topic)\" is not a Kafka topic name"), "\(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: data))
        let outside = URL(fileURLWithPath: data).deletingLastPathComponent().deletingLastPathComponent().path
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).allSatisfy { !$0.hasPrefix("escaped") })
    }

    // MARK: 5. Control characters in user strings

    /// Control characters (C0 but line feed, DEL, C1) in `text`.
    static func rawControls(_ text: String) -> [String] {
        text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }.map { "U+" + String($0.value, radix: 16) }
    }

    /// A user id that retitles the window and a source that moves the cursor (C1 CSI) and
    /// fakes a line break, as JSON escapes in the log.
    static let hostileUser = "evil\u{1B}]0;pwned\u{07},\"x\""
    static let hostileLines = #"""
    {"type":"sample-added","user":"evil\u001b]0;pwned\u0007,\"x\"","sample":{"uuid":"w1\u007f","metric":"steps","source":"phone\u009b2J\r\nfake","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00+01:00","value":3000,"unit":"count","zone":"Europe/Berlin"}}
    {"type":"sample-added","user":"evil\u001b]0;pwned\u0007,\"x\"","sample":{"uuid":"w2","metric":"steps","source":"watch","start":"2024-03-02T09:15:00+01:00","end":"2024-03-02T10:15:00+01:00","value":5400,"unit":"count","zone":"Europe/Berlin"}}

    """#

    @Test func controlCharactersNeverReachTheTerminal() throws {
        let events = try scratch.file(Self.hostileLines)
        // JSON: escaped as JSON escapes them, DEL and C1 included.
        let rollup = try Daybook.run(["rollup", events])
        #expect(rollup.status == 0, "\(rollup.stderr)")
        #expect(Self.rawControls(rollup.stdout).isEmpty, "\(Self.rawControls(rollup.stdout))")
        #expect(rollup.stdout.contains(#""user":"evil\u001b]0;pwned\u0007,\"x\"""#), "\(rollup.stdout)")

        let explain = try Daybook.run(["explain", events, "--user", Self.hostileUser, "--metric", "steps", "--day", "2024-03-02"])
        #expect(explain.status == 0, "\(explain.stderr)")
        #expect(Self.rawControls(explain.stdout).isEmpty, "\(Self.rawControls(explain.stdout))")
        #expect(explain.stdout.contains(#"evil\u{1B}]0;pwned\u{7},"x" · steps"#), "\(explain.stdout)")
        #expect(explain.stdout.contains(#"phone\u{9B}2J\u{D}\u{A}fake w1\u{7F}"#), "\(explain.stdout)")

        let demo = try Daybook.run(["demo", "--events", events, "--data", scratch.newPath("demo")])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(Self.rawControls(demo.stdout).isEmpty, "\(Self.rawControls(demo.stdout))")
        #expect(demo.stdout.contains(#"evil\u{1B}]0;pwned\u{7}"#), "\(demo.stdout)")

        // Error messages: a raw ESC outside a string, and an unknown command.
        let garbage = try Daybook.run(["rollup", try scratch.file("\u{1B}[2J and the rest is not JSON either\n")])
        #expect(garbage.status == 65)
        #expect(garbage.stderr.contains("line 1: malformed JSON: unexpected byte 0x1B at byte 1"), "\(garbage.stderr)")
        #expect(Self.rawControls(garbage.stderr).isEmpty)
        let command = try Daybook.run(["\u{1B}[2Jfake"])
        #expect(command.status == 64)
        #expect(command.stderr.contains(#"'\u{1B}[2Jfake' is not a command"#), "\(command.stderr)")
        #expect(Self.rawControls(command.stderr).isEmpty)
    }

    @Test func totalsTableEscapesControlsAndCSVQuotesFields() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(Self.hostileLines)]).status == 0)
        let data = scratch.newPath("data")
        #expect(try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"]).status == 0)
        let table = try Daybook.run(["totals", "--data", data])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(Self.rawControls(table.stdout).isEmpty, "\(Self.rawControls(table.stdout))")
        #expect(table.stdout.contains(#"evil\u{1B}]0;pwned\u{7},"x" · steps (count)"#), "\(table.stdout)")
        #expect(table.stdout.contains(#"watch 5400, phone\u{9B}2J\u{D}\u{A}fake"#), "\(table.stdout)")
        // CSV is for programs and spreadsheets, not terminals: RFC 4180, the bytes kept (an
        // escape would make two ids print alike), fields with a comma, quote, CR or LF quoted.
        let csv = try Daybook.run(["totals", "--data", data, "--format", "csv"])
        #expect(csv.stdout.contains("\"evil\u{1B}]0;pwned\u{07},\"\"x\"\"\",steps,2024-03-02,"), "\(csv.stdout)")
        #expect(csv.stdout.hasSuffix(",steps,2024-03-02,6900,,,,,\"watch=5400;phone\u{9B}2J\r\nfake=1500\",,\n"), "\(csv.stdout)")
    }

    // MARK: 6. Input strictness seen from the command line

    @Test func aByteOrderMarkIsSkippedAtTheStartOfAFileAndNamedElsewhere() throws {
        let bom = "\u{FEFF}"
        let first = try Daybook.run(["rollup", try scratch.file(bom + Self.oneSample)])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains(#""value":3000"#))
        let second = try Daybook.run(["rollup", try scratch.file(Self.oneSample + bom + Self.oneSample)])
        #expect(second.status == 65)
        #expect(second.stderr.contains("line 2: malformed JSON: unexpected byte order mark (EF BB BF): it is accepted only at the start of a file"), "\(second.stderr)")
        let config = try scratch.file(bom + #"{"priority":{"default":["phone","watch"]}}"#, suffix: ".json")
        #expect(try Daybook.run(["rollup", try scratch.file(Self.oneSample), "--config", config]).status == 0)
    }

    @Test func invalidUTF8AndRepeatedMembersAreReportedByLine() throws {
        var bytes = Array(Self.oneSample.replacingOccurrences(of: "\"ana\"", with: "\"an?\"").utf8)
        if let i = bytes.firstIndex(of: UInt8(ascii: "?")) { bytes[i] = 0xFF }
        bytes += Array(#"{"type":"sample-deleted","user":"ana","uuid":"w1","uuid":"w2"}"#.utf8) + [10]
        let path = scratch.path + "/mixed.jsonl"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try Daybook.run(["rollup", path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("line 1: user: not valid UTF-8: byte 0xFF at byte 34 of the line; encode text as UTF-8"), "\(r.stderr)")
        #expect(r.stderr.contains("line 2: uuid: appears twice in one object at byte 51 of the line"), "\(r.stderr)")
    }

    // MARK: 7. Standard input is streamed

    /// `daybook ARGS` with a pipe for stdin that the test writes at its own pace, and
    /// stdout and stderr in files (read while the process runs).
    final class StreamingProcess {
        let process = Process()
        let input = Pipe()
        let stdoutPath: String, stderrPath: String

        init(_ arguments: [String], in scratch: TemporaryDirectory) throws {
            stdoutPath = scratch.newPath("stdout")
            stderrPath = scratch.newPath("stderr")
            for path in [stdoutPath, stderrPath] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            process.executableURL = Daybook.binary
            process.arguments = arguments
            process.standardInput = input
            process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
            process.standardError = FileHandle(forWritingAtPath: stderrPath)
            try process.run()
        }

        func write(_ text: String) { input.fileHandleForWriting.write(Data(text.utf8)) }
        var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

        /// Waits up to `seconds` for `condition`; true if it came.
        func wait(seconds: Double, until condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition(), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            return condition()
        }

        /// The peak resident memory so far, in KiB (Linux /proc), or nil.
        var peakKiB: Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }

        func finish() -> Int32 {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            return process.terminationStatus
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    }

    @Test func standardInputIsAnsweredLineByLineBeforeItEnds() throws {
        let p = try StreamingProcess(["rollup", "-"], in: scratch)
        p.write("not json\n")
        // Reported while stdin is still open: the command did not wait for the end.
        #expect(p.wait(seconds: 20) { p.stderr.contains("line 1: malformed JSON") }, "stderr: \(p.stderr)")
        p.write("\n" + Self.oneSample)
        #expect(p.finish() == 65)
        #expect(p.stdout.contains(#""value":3000"#), "\(p.stdout)")
        #expect(p.stderr.contains("1 lines accepted, 1 rejected"), "\(p.stderr)")
    }

    @Test func standardInputIsReadWithBoundedMemory() throws {
        let p = try StreamingProcess(["rollup", "-"], in: scratch)
        // 192 MiB of blank lines: a reader that keeps its input would hold all of it.
        let blank = Data((String(repeating: " ", count: 1_023) + "\n").utf8)
        let mebibyte = Data((0..<1_024).flatMap { _ in blank })
        for _ in 0..<192 { p.input.fileHandleForWriting.write(mebibyte) }
        Thread.sleep(forTimeInterval: 0.3)
        let peak = try #require(p.peakKiB)
        #expect(peak < 96 * 1_024, "peak resident memory \(peak) KiB after 192 MiB of input")
        p.write(Self.oneSample)
        #expect(p.finish() == 0, "\(p.stderr)")
        #expect(p.stdout.contains(#""value":3000"#))
    }

    @Test func streamedLinesKeepTheirNumbersAcrossChunksAndMatchTheFile() throws {
        // About 2.5 MB: several 1 MiB reads, with blank lines, CRLF endings, a bad line deep
        // inside, and one line too long to keep.
        let generated = try Daybook.run(["bench", "generate", "--samples", "8000", "--users", "4", "--seed", "3"])
        var lines = generated.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count > 7_000)
        for i in stride(from: 50, to: lines.count, by: 97) { lines[i] += "\r" }
        for i in stride(from: 40, to: lines.count, by: 301).reversed() { lines.insert("  ", at: i) }
        let bad = lines.count - 100
        lines[bad] = "{oops"
        lines.insert(String(repeating: "x", count: 1_100_000), at: 5_000)
        let text = lines.joined(separator: "\n") + "\n"
        let file = try scratch.file(text)
        let fromFile = try Daybook.run(["rollup", file])
        let fromStdin = try Daybook.run(["rollup", "-"], stdin: text)
        #expect(fromFile.status == 65 && fromStdin.status == 65)
        #expect(fromStdin.stdout == fromFile.stdout)
        #expect(fromStdin.stderr == fromFile.stderr)
        #expect(fromStdin.stderr.contains("line 5001: the line is longer than 1 MiB and was not read"), "\(fromStdin.stderr)")
        #expect(fromStdin.stderr.contains("line \(bad + 2): malformed JSON"), "\(fromStdin.stderr)")
        #expect(fromStdin.stderr.split(separator: "\n").count == 3, "\(fromStdin.stderr)")
    }

    @Test func tinyInputsAreReadCorrectly() throws {
        // Inputs of a few bytes used to be decoded from memory already released.
        for input in ["nope\n", "nope", "{}\n"] {
            let expected = input.hasPrefix("{") ? "line 1: type: missing" : "line 1: malformed JSON: invalid literal at byte 1"
            let stdin = try Daybook.run(["rollup", "-"], stdin: input)
            #expect(stdin.stderr.hasPrefix(expected), "\(input.debugDescription): \(stdin.stderr)")
            let file = try Daybook.run(["rollup", try scratch.file(input)])
            #expect(file.stderr.hasPrefix(expected), "\(input.debugDescription): \(file.stderr)")
        }
    }
}
