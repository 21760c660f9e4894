import DaybookTestSupport
import DaybookCore
import DaybookKafka
import DaybookStore
import Foundation
import Testing

/// `daybook replay` as an operator runs it: processes against `daybook broker`.
@Suite(.serialized) struct ReplayTests {
    let scratch = TemporaryDirectory()

    func dataDirectory() -> String { scratch.newPath("data") }

    /// Steps samples of users u0…u11 (spread over the partitions by key), uuids `wave-i`.
    static func wave(_ name: String, day: String) -> [String] {
        (0..<12).map { i in
            HardeningTests.steps("\(name)-\(i)", i % 2 == 0 ? "watch" : "phone", "\(day)T09:00:00Z", "\(day)T10:00:00Z", "\(100 + i)", user: "u\(i)")
        }
    }

    func publish(_ lines: [String], to broker: BrokerProcess) throws {
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 0, "\(r.stderr)")
    }

    static func now() -> Instant { Instant(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9)) }

    /// partition → start offset, from `--dry-run`'s lines; and each line's shard offset and log end.
    static func dryRun(_ stdout: String) -> [Int32: (shard: Int64, start: Int64, end: Int64)] {
        var out: [Int32: (Int64, Int64, Int64)] = [:]
        for line in stdout.split(separator: "\n") {
            // partition 0: shard offset 12, start offset 4, log end 12: would re-read offsets 4..<12 (8 events …), then apply 0 new
            let words = line.replacingOccurrences(of: ":", with: " ").replacingOccurrences(of: ",", with: " ").split(separator: " ")
            guard words.count > 9, words[0] == "partition", let p = Int32(words[1]), words[2] == "shard", let shard = Int64(words[4]),
                  let i = words.firstIndex(of: "start"), let start = Int64(words[i + 2]),
                  let e = words.firstIndex(of: "end"), let end = Int64(words[e + 1]) else { continue }
            out[p] = (shard, start, end)
        }
        return out
    }

    /// Runs SQL that writes, with Python's sqlite3 (what an operator's hand edit would use).
    static func edit(_ path: String, _ sql: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", path, sql]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(sql)")
    }

    static func totalsJSON(_ dir: String) throws -> String { try totals(dir, format: "json") }

    static func totals(_ dir: String, format: String) throws -> String {
        let r = try Daybook.run(["totals", "--data", dir, "--format", format])
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout
    }

    // MARK: (b) --from-time and --by-duration pick the first offset of a later wave

    @Test func fromTimeBetweenWavesStartsAtTheFirstOffsetOfTheLaterWave() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "3"])
        defer { _ = broker.stop() }
        // `daybook publish` cannot set timestamps: the producer stamps each message when it
        // sends it, so waves published apart in time are told apart by wall-clock times.
        try publish(Self.wave("a", day: "2024-03-02"), to: broker)
        let afterA = Self.now()
        Thread.sleep(forTimeInterval: 5) // room for a --by-duration whole number of seconds
        let beforeB = Self.now()
        try publish(Self.wave("b", day: "2024-03-03"), to: broker)
        let afterB = Self.now()
        Thread.sleep(forTimeInterval: 0.3)
        try publish(Self.wave("c", day: "2024-03-04"), to: broker)
        let betweenAB = Instant(nanoseconds: afterA.nanoseconds + 50_000_000)
        let betweenBC = Instant(nanoseconds: afterB.nanoseconds + 50_000_000)

        // Where each wave starts in each partition, from the messages read back.
        let messages = try broker.read("health-samples", partitions: 3, count: 36)
        #expect(messages.count == 36)
        var first: [String: [Int32: Int64]] = [:]
        for m in messages {
            let wave = String(try EventDecoder().decode(String(decoding: m.value, as: UTF8.self)).uuid?.prefix(1) ?? "")
            first[wave, default: [:]][m.topicPartition.partition] = min(first[wave]?[m.topicPartition.partition] ?? .max, m.offset)
        }
        try #require(first["b"]?.count == 3 && first["c"]?.count == 3, "a wave missed a partition: \(first)")

        let dir = dataDirectory()
        let p = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(p.status == 0, "\(p.stderr)")
        let before = try Self.totalsJSON(dir)

        for (time, wave) in [(betweenAB, "b"), (betweenBC, "c")] {
            let r = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-time", "\(time)", "--dry-run"])
            #expect(r.status == 0, "\(r.stderr)")
            let plan = Self.dryRun(r.stdout)
            #expect(plan.count == 3, "\(r.stdout)")
            for (partition, offset) in first[wave] ?? [:] {
                #expect(plan[partition]?.start == offset, "--from-time \(time): partition \(partition) should start at wave \(wave)'s \(offset): \(r.stdout)")
                #expect(plan[partition]?.shard == plan[partition]?.end, "\(r.stdout)")
            }
        }

        // --by-duration D: now - D between waves a and b (5 s apart), whatever the time taken so far.
        let elapsedSinceA = Double(Self.now().nanoseconds - afterA.nanoseconds) / 1e9
        let d = Int(elapsedSinceA.rounded(.down)) - 1
        try #require(Double(Self.now().nanoseconds - beforeB.nanoseconds) / 1e9 < Double(d) - 0.5, "too slow to place now - \(d)s between the waves")
        let byDuration = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--by-duration", "\(d)s", "--dry-run"])
        #expect(byDuration.status == 0, "\(byDuration.stderr)")
        let plan = Self.dryRun(byDuration.stdout)
        for (partition, offset) in first["b"] ?? [:] {
            #expect(plan[partition]?.start == offset, "--by-duration \(d)s: partition \(partition): \(byDuration.stdout)")
        }

        // The replay itself re-reads exactly wave c and leaves the totals as they were.
        let r = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-time", "\(betweenBC)"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("re-read 12 below the shards' offsets, newly applied 0"), "\(r.stderr)")
        #expect(r.stderr.contains("caught up"))
        #expect(try Self.totalsJSON(dir) == before)
    }

    // MARK: (c) a hand-edited totals row comes back; a consistent projection is unchanged

    @Test func replayRestoresHandEditedRowsAndChangesNothingElse() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let lines = try ProjectorTests.log(samples: 3_000, users: 6, seed: 21)
        try publish(lines, to: broker)
        let dir = dataDirectory()
        let p = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(p.status == 0, "\(p.stderr)")
        let expected = try Self.totalsJSON(dir)
        let expectedCSV = try Self.totals(dir, format: "csv")
        #expect(expected.split(separator: "\n").map(String.init).sorted() == (try ProjectorTests.rollup(lines)).sorted())

        // On a consistent projection, a replay of everything changes nothing.
        let again = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "0"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("re-read \(lines.count) below the shards' offsets, newly applied 0"), "\(again.stderr)")
        #expect(try Self.totalsJSON(dir) == expected)

        // Hand edits in partition 1's shard (found where readers find it): a value, a
        // per-source share, a heart-rate row, and a row deleted outright.
        let shard = try DataLayout.read(dir).path(topic: "health-samples", partition: 1)
        let pick = "SELECT user, metric, day FROM totals WHERE metric = '%@' ORDER BY user, day LIMIT 1 OFFSET %d"
        try Self.edit(shard, """
            UPDATE totals SET value = value + 1000 WHERE (user, metric, day) = (\(String(format: pick, "steps", 0)));
            UPDATE total_sources SET value = 1 WHERE (user, metric, day) = (\(String(format: pick, "steps", 1)));
            UPDATE totals SET max = 250, count = count + 1 WHERE (user, metric, day) = (\(String(format: pick, "heart_rate", 0)));
            DELETE FROM total_sources WHERE (user, metric, day) = (\(String(format: pick, "steps", 2)));
            DELETE FROM totals WHERE (user, metric, day) = (\(String(format: pick, "steps", 2)));
            """)
        // json has no per-source shares: two rows changed, one gone; csv shows the share too.
        let edited = try Self.totalsJSON(dir)
        let changed = Set(edited.split(separator: "\n")).symmetricDifference(Set(expected.split(separator: "\n")))
        #expect(changed.count == 5, "\(changed)")
        #expect(try Self.totals(dir, format: "csv") != expectedCSV)

        // Partition 0 is not touched; partition 1 is re-read from 0 and its rows come back exactly.
        let other = try DataLayout.read(dir).path(topic: "health-samples", partition: 0)
        let otherBytes = try Data(contentsOf: URL(fileURLWithPath: other))
        let r = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "0", "--partition", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("partition 1: re-reading offsets 0..<"), "\(r.stderr)")
        #expect(!r.stderr.contains("partition 0"), "\(r.stderr)")
        #expect(try Self.totalsJSON(dir) == expected)
        #expect(try Self.totals(dir, format: "csv") == expectedCSV)
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == otherBytes)
    }

    // MARK: --dry-run touches nothing; a start above the shard's offset

    @Test func aDryRunTouchesNothingAndAStartAboveTheShardStartsAtTheShard() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        try publish(Self.wave("a", day: "2024-03-02"), to: broker)
        let dir = dataDirectory()
        #expect(try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"]).status == 0)
        try publish(Self.wave("b", day: "2024-03-03"), to: broker) // not projected yet
        let snapshot = { () throws -> [String: Data] in
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
            }
            return files
        }
        let before = try snapshot()
        let r = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "1000", "--dry-run"])
        #expect(r.status == 0, "\(r.stderr)")
        // The shards are byte for byte as they were. Like 'daybook totals', reading a WAL
        // database leaves SQLite's reader files (-shm, an empty -wal) beside it, nothing else.
        let after = try snapshot()
        #expect(after.filter { $0.key.hasSuffix(".sqlite") } == before.filter { $0.key.hasSuffix(".sqlite") })
        for (name, bytes) in after where before[name] != bytes && !name.hasSuffix(".sqlite") {
            #expect(name.hasSuffix(".sqlite-shm") || (name.hasSuffix(".sqlite-wal") && bytes.isEmpty), "\(name) changed")
        }
        let plan = Self.dryRun(r.stdout)
        #expect(plan.count == 2, "\(r.stdout)")
        for (partition, line) in plan {
            #expect(line.start == line.shard && line.end > line.shard, "partition \(partition): \(r.stdout)")
            #expect(r.stdout.contains("would re-read offsets \(line.shard)..<\(line.shard) (0 events below the shard's offset), then apply \(line.end - line.shard) new"))
            #expect(r.stderr.contains("health-samples[\(partition)]: start offset 1000 is above the shard's offset \(line.shard)"), "\(r.stderr)")
        }
        // Run for real, it applies wave b and nothing is re-read.
        let run = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "1000"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("re-read 0 below the shards' offsets, newly applied 12"), "\(run.stderr)")
    }

    // MARK: (d) exit codes

    @Test func aRunningProjectorMakesReplayAndItsDryRunExit75BeforeAPlan() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        try publish(HardeningTests.goodPair, to: broker)
        let dir = dataDirectory()
        let projector = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo"])
        defer { projector.kill9() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, (try? HardeningTests.stepsOn(dir)) == nil { Thread.sleep(forTimeInterval: 0.1) }
        #expect(try HardeningTests.stepsOn(dir) != nil)
        let r = try HardeningTests.runWithin(30, ["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "0"])
        #expect(r.status == 75, "\(r.stderr)")
        #expect(r.stderr.contains("another projector holds this shard") && r.stderr.contains("stop the projector for these partitions first"), "\(r.stderr)")
        #expect(r.seconds < 20)
        // Refused before it says what it would re-read ("nothing was re-read" after a plan read as if it had started).
        #expect(!r.stderr.contains("re-reading offsets"), "\(r.stderr)")
        // A dry run only reads, but its plan could not be carried out: refused the same way.
        let dry = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "0", "--dry-run", "--connect-timeout", "20"])
        #expect(dry.status == 75, "\(dry.stderr)")
        #expect(dry.stdout.isEmpty, "\(dry.stdout)")
        #expect(dry.stderr.contains("another projector holds this shard") && dry.stderr.contains("stop the projector for these partitions first"), "\(dry.stderr)")
    }

    @Test func usageErrorsExit64AndAMissingDataDirectory66() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let dir = dataDirectory()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let base = ["replay", "--brokers", broker.bootstrap, "--data", dir]
        let cases: [([String], Int32, String)] = [
            (base + ["--from-offset", "0", "--partition", "99"], 64, "health-samples has no partition 99: it has 2 (0…1)"),
            (base, 64, "replay needs where to start: --from-offset N, --from-time T"),
            (base + ["--from-offset", "0", "--by-duration", "6h"], 64, "not --from-offset and --by-duration"),
            (base + ["--by-duration", "7w"], 64, "--by-duration '7w' is not a duration: give a whole number from 1 and a unit, s, m, h or d (e.g. 90s, 15m, 6h, 7d)"),
            (base + ["--from-time", "2024-03-25"], 64, "--from-time '2024-03-25' is not an RFC 3339 instant: give an RFC 3339 instant with a UTC offset, e.g. 2024-03-25T00:00:00Z"),
            (base + ["--from-offset", "-1"], 64, "--from-offset '-1' is not an offset"),
            (base + ["--from-offset", "0", "--partition", "one"], 64, "--partition 'one' is not a partition number"),
            (["replay", "--brokers", broker.bootstrap, "--data", dir + "-missing", "--from-offset", "0"], 66, "no such data directory"),
        ]
        for (arguments, status, message) in cases {
            let r = try Daybook.run(arguments)
            #expect(r.status == status, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(arguments): \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "-missing"))
        let help = try Daybook.run(["replay", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("EXIT CODES") && help.stdout.contains("EXAMPLES") && help.stdout.contains("stop the projector"))
        #expect(try Daybook.run(["help"]).stdout.contains("replay"))
    }
}
