import DaybookTestSupport
import DaybookKafka
import Foundation
import Testing

/// The hostile tryout of the hardening issue, each item as a user hit it: the binary as a
/// process against `daybook broker` over TCP. Each of these failed on the code before it.
@Suite(.serialized) struct HardeningTests {
    let scratch = TemporaryDirectory()

    func dataDirectory() -> String { scratch.newPath("data") }

    /// One steps sample of `user` (UTC), `value` steps between the two times.
    static func steps(_ uuid: String, _ source: String, _ start: String, _ end: String, _ value: String,
                      user: String = "ana", extra: String = "") -> String {
        #"{"type":"sample-added","user":"\#(user)","sample":{"uuid":"\#(uuid)","metric":"steps","source":"\#(source)","start":"\#(start)","end":"\#(end)","value":\#(value),"unit":"count","zone":"UTC"}\#(extra)}"#
    }

    /// Watch 09:00–10:00 600 steps, phone 09:30–10:30 900 steps on 2024-03-02: the watch wins
    /// its hour, the phone keeps 10:00–10:30 = 450 → 1050 (naive sum 1500, max 900).
    static let goodPair = [
        steps("w1", "watch", "2024-03-02T09:00:00Z", "2024-03-02T10:00:00Z", "600"),
        steps("p1", "phone", "2024-03-02T09:30:00Z", "2024-03-02T10:30:00Z", "900"),
    ]
    static let year1 = steps("old", "watch", "0001-01-01T00:00:00Z", "0001-01-01T01:00:00Z", "5")

    /// Runs `daybook` and waits at most `seconds`: a command that hangs fails the test (and
    /// is killed) instead of hanging the suite. Returns (status or nil, seconds, stderr).
    static func runWithin(_ seconds: Double, _ arguments: [String]) throws -> (status: Int32?, seconds: Double, stderr: String) {
        let started = Date()
        let p = try DaybookProcess(arguments)
        let status = p.wait(seconds: seconds)
        if status == nil { p.kill9() }
        return (status, Date().timeIntervalSince(started), p.stderr)
    }

    static func stepsOn(_ dir: String, day: String = "2024-03-02") throws -> String? {
        let r = try Daybook.run(["totals", "--data", dir, "--format", "json", "--user", "ana", "--metric", "steps"])
        return r.stdout.split(separator: "\n").first { $0.contains(day) }.map(String.init)
    }

    /// Sends raw payloads keyed by user with our own producer: what any producer (kcat) can do
    /// without `daybook publish`'s validation.
    static func produceRaw(_ lines: [String], user: String = "ana", to broker: BrokerProcess, properties: [String: String] = [:]) throws {
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrap, properties: properties), logger: .silent) { _ in }
        for (i, line) in lines.enumerated() {
            try producer.send(topic: "health-samples", key: Array(user.utf8), value: Array(line.utf8), id: i)
        }
        try producer.flush(timeoutMilliseconds: 30_000)
    }

    // MARK: 1. Timestamps outside 1678–2261

    @Test func rollupRejectsAYear1TimestampByLineAndKeepsTheRest() throws {
        let file = try Daybook.temporaryFile(([Self.goodPair[0], Self.year1, Self.goodPair[1]]).joined(separator: "\n") + "\n")
        let r = try Daybook.run(["rollup", file])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("line 2: sample.start: \"0001-01-01T00:00:00Z\" is outside the accepted range 1900-01-01T00:00:00Z ..< 2200-01-01T00:00:00Z"), "\(r.stderr)")
        #expect(r.stdout.contains(#""value":1050"#), "\(r.stdout)")
        let explain = try Daybook.run(["explain", file, "--user", "ana", "--metric", "steps", "--day", "2024-03-02"])
        #expect(explain.status == 65 || explain.status == 0, "\(explain.stderr)")
        #expect(!explain.stderr.contains("Fatal"))
    }

    @Test func publishRejectsAYear1LineAndDeliversEveryValidOne() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        let file = try Daybook.temporaryFile(([Self.goodPair[0], Self.year1, Self.goodPair[1]]).joined(separator: "\n") + "\n")
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, file])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("line 2: sample.start"))
        #expect(r.stderr.contains("published 2, rejected 1"), "\(r.stderr)")
    }

    @Test func theProjectorDeadLettersAYear1EventAndGoesOn() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        try Self.produceRaw([Self.goodPair[0], Self.year1, Self.goodPair[1]], to: broker)
        let dir = dataDirectory()
        for mode in [["--solo"], ["--group", "hardening-year1"]] {
            let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--until-caught-up"] + mode)
            #expect(r.status == 0, "\(r.stderr)")
        }
        #expect(try Self.stepsOn(dir)?.contains(#""value":1050"#) == true)
        let shard = dir + "/health-samples-0000.sqlite"
        let letters = try Daybook.run(["totals", "--data", dir, "--format", "json"])
        #expect(letters.status == 0)
        #expect(FileManager.default.fileExists(atPath: shard))
        // The dead letter names the field and the range.
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sqlite.arguments = ["python3", "-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select offset, code, reason from dead_letters').fetchall())", shard]
        let out = Pipe()
        sqlite.standardOutput = out
        try sqlite.run()
        sqlite.waitUntilExit()
        let rows = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(rows.contains("(1, 'bad_time', 'sample.start:"), "\(rows)")
    }

    // MARK: 3. Sums that overflow to inf

    @Test func hugeValuesAreRejectedAndNothingPrintsInf() throws {
        let file = try Daybook.temporaryFile(([
            Self.steps("a", "watch", "2024-03-03T09:00:00Z", "2024-03-03T10:00:00Z", "1e308"),
            Self.steps("b", "watch", "2024-03-03T11:00:00Z", "2024-03-03T12:00:00Z", "1e308"),
        ] + Self.goodPair).joined(separator: "\n") + "\n")
        let r = try Daybook.run(["rollup", file])
        #expect(r.status == 65)
        #expect(r.stderr.contains("line 1: sample.value: 1e+308 count is more than one sample of steps can hold (at most 2000000 count)"), "\(r.stderr)")
        #expect(r.stderr.contains("line 2: sample.value"))
        #expect(!r.stdout.contains("inf") && !r.stdout.contains("nan"))
        #expect(r.stdout.contains(#""value":1050"#), "\(r.stdout)")
    }

    // MARK: 4. One oversized line

    @Test func anOversizedLineIsRejectedByNumberAndTheOthersAreDelivered() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        let pad = String(repeating: "x", count: 1_010_000) // over message.max.bytes (1,000,000), under the 1 MiB line limit
        let big = Self.steps("big", "watch", "2024-03-02T13:00:00Z", "2024-03-02T14:00:00Z", "7", extra: #","pad":"\#(pad)""#)
        let file = try Daybook.temporaryFile([Self.goodPair[0], big, Self.goodPair[1]].joined(separator: "\n") + "\n")
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, file])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("line 2: the event is larger than the cluster accepts"), "\(r.stderr)")
        #expect(r.stderr.contains("published 2, rejected 1"), "\(r.stderr)")
        let dir = dataDirectory()
        let p = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(p.status == 0, "\(p.stderr)")
        #expect(try Self.stepsOn(dir)?.contains(#""value":1050"#) == true)
    }

    // MARK: 2. Offset resets

    @Test func aShardFromAnotherLogStopsTheProjectorInsteadOfSkipping() throws {
        let dir = dataDirectory()
        let first = try BrokerProcess(arguments: ["--partitions", "1"])
        // Five events on the first broker: the shard's next offset becomes 5.
        try Self.produceRaw(Self.goodPair + [
            Self.steps("w2", "watch", "2024-03-03T09:00:00Z", "2024-03-03T10:00:00Z", "100"),
            Self.steps("w3", "watch", "2024-03-04T09:00:00Z", "2024-03-04T10:00:00Z", "100"),
            Self.steps("w4", "watch", "2024-03-05T09:00:00Z", "2024-03-05T10:00:00Z", "100"),
        ], to: first)
        let r1 = try Daybook.run(["project", "--brokers", first.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r1.status == 0, "\(r1.stderr)")
        _ = first.stop()
        // Another broker (a recreated topic, another cluster) with two events of its own.
        let second = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = second.stop() }
        try Self.produceRaw([Self.steps("n1", "watch", "2024-03-06T09:00:00Z", "2024-03-06T10:00:00Z", "7"),
                             Self.steps("n2", "watch", "2024-03-07T09:00:00Z", "2024-03-07T10:00:00Z", "7")], to: second)
        for mode in [["--solo"], ["--group", "hardening-other-log"]] {
            let r = try Daybook.run(["project", "--brokers", second.bootstrap, "--data", dir, "--until-caught-up"] + mode)
            #expect(r.status == 76, "\(mode): \(r.stderr)")
            #expect(r.stderr.contains("the log ends at offset 2") || r.stderr.contains("was built from the log of Kafka cluster"), "\(r.stderr)")
            #expect(!r.stderr.contains("caught up"))
        }
        // Without the recorded cluster id (a cluster that reports none), the offsets still
        // give it away: the shard needs offset 5, the new log ends at 2.
        let forget = Process()
        forget.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        forget.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"delete from meta where key='cluster_id'\"); c.commit()",
                            dir + "/health-samples-0000.sqlite"]
        try forget.run()
        forget.waitUntilExit()
        let r = try Daybook.run(["project", "--brokers", second.bootstrap, "--data", dir, "--until-caught-up", "--solo"])
        #expect(r.status == 76, "\(r.stderr)")
        #expect(r.stderr.contains("the log ends at offset 2, but") && r.stderr.contains("has already applied offsets up to 4"), "\(r.stderr)")
        // Nothing of the other log was applied.
        #expect(try Self.stepsOn(dir, day: "2024-03-06") == nil)
        #expect(try Self.stepsOn(dir)?.contains(#""value":1050"#) == true)
    }

    @Test func aLogWhoseStartWasDeletedByRetentionIsAGapNotAStart() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        // The mock keeps about 5 MiB per partition: 240 events of 40 KB of incompressible
        // padding (an unknown member, ignored) push the oldest out.
        // The padding is base64 of /dev/urandom (30,000 random bytes → 40,000 characters, none
        // to escape in JSON), read in one go: drawn a character at a time it cost seconds of a
        // debug build's CPU (a getrandom call per character).
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let bytes = random.readData(ofLength: 240 * 30_000)
        try random.close()
        try #require(bytes.count == 240 * 30_000)
        var lines: [String] = []
        for i in 0..<240 {
            let pad = bytes.subdata(in: (i * 30_000)..<((i + 1) * 30_000)).base64EncodedString()
            lines.append(Self.steps("r\(i)", "watch", "2024-03-02T09:00:00Z", "2024-03-02T09:01:00Z", "1", extra: #","pad":"\#(pad)""#))
        }
        try Self.produceRaw(lines, to: broker)
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrap), configuration: ConsumerConfiguration(), logger: .silent)
        let marks = try consumer.watermarks(TopicPartition("health-samples", 0))
        consumer.close()
        #expect(marks.low > 0 && marks.high == 240, "low \(marks.low) high \(marks.high)")
        let dir = dataDirectory()
        for mode in [["--solo"], ["--group", "hardening-gap"]] {
            let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--until-caught-up"] + mode)
            #expect(r.status == 76, "\(mode): \(r.stderr)")
            #expect(r.stderr.contains("the log starts at offset \(marks.low), but"), "\(r.stderr)")
            #expect(r.stderr.contains("needs offset 0 next"))
        }
        #expect(try Self.stepsOn(dir) == nil)
    }

    // MARK: 5. A second projector on the same --data

    @Test func aSecondProjectorOnTheSameDataExits75AtOnce() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "16"])
        defer { _ = broker.stop() }
        try Self.produceRaw(Self.goodPair, to: broker)
        let dir = dataDirectory()
        let first = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo"])
        defer { first.kill9() }
        // Wait until the first projector holds its shards (all 16 files exist and it applied).
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, (try? Self.stepsOn(dir)) == nil { Thread.sleep(forTimeInterval: 0.1) }
        #expect(try Self.stepsOn(dir) != nil)
        for mode in [["--solo"], ["--group", "hardening-second"]] {
            let r = try Self.runWithin(30, ["project", "--brokers", broker.bootstrap, "--data", dir, "--until-caught-up"] + mode)
            #expect(r.status == 75, "\(mode): \(r.stderr)")
            #expect(r.stderr.contains("another projector holds this shard"), "\(r.stderr)")
            #expect(r.seconds < 20, "took \(r.seconds) s")
        }
    }

    // MARK: 6. Unreachable and malformed brokers

    @Test func anUnreachableBrokerEndsInTimeWith69() throws {
        // A port nothing listens on. The four commands run side by side (each with a data
        // directory of its own), so their 3 s connect timeouts elapse together; each is timed
        // from when the first was started.
        let dir = dataDirectory()
        let commands = [["project", "--data", dir, "--until-caught-up"], ["project", "--data", dir + "-solo", "--until-caught-up", "--solo"],
                        ["project", "--data", dir + "-follow"], ["publish", try Daybook.temporaryFile(Self.goodPair.joined(separator: "\n") + "\n")]]
        let started = Date()
        let running = try commands.map { try DaybookProcess($0 + ["--brokers", "127.0.0.1:1", "--connect-timeout", "3"]) }
        for (args, p) in zip(commands, running) {
            let status = p.wait(seconds: max(0, 30 - Date().timeIntervalSince(started)))
            let seconds = Date().timeIntervalSince(started)
            if status == nil { p.kill9() }
            #expect(status == 69, "\(args): \(p.stderr)")
            #expect(p.stderr.contains("cannot reach the Kafka cluster"), "\(p.stderr)")
            #expect(seconds < 15, "\(args) took \(seconds) s")
        }
    }

    @Test(arguments: ["", "not a host", "localhost:99999", "localhost:9092,,x:1", "[::1"])
    func aMalformedBrokerAddressIsAUsageError(brokers: String) throws {
        for command in [["project", "--data", dataDirectory()], ["publish", "-"], ["topics"]] {
            let r = try Daybook.run(command + ["--brokers", brokers], stdin: "")
            #expect(r.status == 64, "\(command) '\(brokers)': \(r.stderr)")
            #expect(r.stderr.contains("--brokers '\(brokers)'"), "\(r.stderr)")
        }
    }

    // MARK: Found by a hostile review of the fixes above

    /// Runs a query on a shard with Python's sqlite3 and returns its rows as Python prints them.
    static func query(_ path: String, _ sql: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall())", path, sql]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func canonicallyEquivalentUserIdsAreNeverMerged() throws {
        // "\u00e9" (NFC) and "e\u0301" (NFD) are one string to Swift's ==: they used to be one
        // user (105 steps). The NFD spelling is now rejected by name; the NFC user keeps 100.
        let lines = [
            #"{"type":"sample-added","user":"\u00e9","sample":{"uuid":"x1","metric":"steps","source":"watch","start":"2024-03-01T00:00:00Z","end":"2024-03-01T00:10:00Z","value":100,"unit":"count","zone":"UTC"}}"#,
            #"{"type":"sample-added","user":"e\u0301","sample":{"uuid":"x2","metric":"steps","source":"phone","start":"2024-03-01T00:00:00Z","end":"2024-03-01T00:10:00Z","value":70,"unit":"count","zone":"UTC"}}"#,
            #"{"type":"sample-deleted","user":"e\u0301","uuid":"x1"}"#,
        ]
        let r = try Daybook.run(["rollup", try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 65)
        #expect(r.stderr.contains("line 2: user:") && r.stderr.contains("is not in Unicode normalization form C"), "\(r.stderr)")
        #expect(r.stderr.contains("line 3: user:"), "\(r.stderr)")
        #expect(r.stdout.contains(#""value":100"#), "\(r.stdout)")
    }

    @Test func aBlankConsumerGroupIsAUsageErrorNotACrash() throws {
        for group in ["", " "] {
            let r = try Daybook.run(["project", "--brokers", "127.0.0.1:1", "--data", dataDirectory(), "--group", group, "--until-caught-up"])
            #expect(r.status == 64, "'\(group)': \(r.stderr)")
            #expect(r.stderr.contains("--group"), "\(r.stderr)")
        }
        let config = try scratch.file(#"{"kafka":{"consumer":{"group.id":" "}}}"#)
        let r = try Daybook.run(["project", "--brokers", "127.0.0.1:1", "--data", dataDirectory(), "--config", config])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("kafka.consumer.group.id: must be a non-blank string"), "\(r.stderr)")
    }

    @Test func settingsTheProjectorReliesOnCannotBeChanged() throws {
        for property in [#""enable.partition.eof":false"#, #""partition.assignment.strategy":"cooperative-sticky""#] {
            let config = try scratch.file(#"{"kafka":{"properties":{\#(property)}}}"#)
            let r = try Daybook.run(["project", "--brokers", "127.0.0.1:1", "--data", dataDirectory(), "--config", config, "--until-caught-up"])
            #expect(r.status == 78, "\(property): \(r.stderr)")
            #expect(r.stderr.contains("is not allowed"), "\(r.stderr)")
        }
    }

    @Test func theWholeDeadLetterOutboxDrainsAndAForeignDatabaseIsNeverWritten() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        // 2,500 poison events: the outbox reads 1,000 rows at a time and used to stop after the first page.
        try Self.produceRaw((0..<2_500).map { #"{"type":"sample-added","user":"ana","sample":{"n":\#($0)}}"# }, to: broker)
        let dir = dataDirectory()
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        let shard = dir + "/health-samples-0000.sqlite"
        #expect(try Self.query(shard, "select forwarded, count(*) from dead_letters group by forwarded") == "[(1, 2500)]")
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: broker.bootstrap), configuration: ConsumerConfiguration(), logger: .silent)
        #expect(try consumer.watermarks(TopicPartition("health-samples.dlq", 0)).high == 2_500)
        consumer.close()

        // Someone else's SQLite file where a shard would go: exit 65, and it stays untouched.
        let foreign = dataDirectory()
        try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: true)
        _ = try Self.query(foreign + "/health-samples-0000.sqlite", "create table x(a)")
        let p = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", foreign, "--solo", "--until-caught-up"])
        #expect(p.status == 65, "\(p.stderr)")
        #expect(p.stderr.contains("is not a Daybook shard"), "\(p.stderr)")
        #expect(try Self.query(foreign + "/health-samples-0000.sqlite", "select name from sqlite_master") == "[('x',)]")
    }

    @Test func aKafkaMessageOverOneMiBIsADeadLetterAsRollupRejectsIt() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        let pad = String(repeating: "x", count: 1_100_000)
        let big = Self.steps("big", "watch", "2024-03-02T13:00:00Z", "2024-03-02T14:00:00Z", "7", extra: #","pad":"\#(pad)""#)
        try Self.produceRaw([Self.goodPair[0], big, Self.goodPair[1]], to: broker, properties: ["message.max.bytes": "5000000"])
        let dir = dataDirectory()
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        // 1050 as rollup computes it without the oversized line (which it rejects), not 1057.
        #expect(try Self.stepsOn(dir)?.contains(#""value":1050"#) == true)
        #expect(try Self.query(dir + "/health-samples-0000.sqlite", "select offset from dead_letters") == "[(1,)]")
    }

    @Test func anUntilCaughtUpRunEndsWith69WhenTheClusterGoesAway() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        try Self.produceRaw(Self.goodPair, to: broker)
        // Group mode: joining takes the mock a few seconds; the broker dies meanwhile.
        let p = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dataDirectory(), "--group", "hardening-gone",
                                    "--until-caught-up", "--connect-timeout", "3"])
        Thread.sleep(forTimeInterval: 1)
        _ = broker.stop()
        let status = p.wait(seconds: 30)
        if status == nil { p.kill9() }
        #expect(status == 69, "\(p.stderr)")
        #expect(p.stderr.contains("stopped answering") || p.stderr.contains("cannot reach"), "\(p.stderr)")
    }
}
