import DaybookSupport
import DaybookTestSupport
import DaybookCore
import DaybookKafka
import DaybookStore
import Foundation
import Testing

/// `daybook dlq list` and `dlq replay` against the binary, an embedded broker and real shards.
@Suite(.serialized) struct DeadLetterReplayTests {
    let scratch = TemporaryDirectory()

    // Overlapping watch and phone samples, so that the right answer is neither the naive
    // sum nor the max of the sources (watch outranks phone):
    //   ana  2024-03-02 (Berlin): watch 09:00–09:30 3000; phone 09:15–10:15 5400 → the phone
    //        keeps 10:15−09:30 = 45 of its 60 min: 3000 + 5400 × 45/60 = 7050
    //        (naive 8400, max 5400).
    //   ben  2024-03-05 (UTC): watch 08:00–09:00 6000; phone 08:30–10:30 4000 → the phone
    //        keeps 09:00–10:30, 90 of 120 min: 6000 + 3000 = 9000 (naive 10000, max 6000).
    //   cara 2024-03-07 (UTC): phone 07:00–08:00 2000; watch 07:30–08:00 1500 → the phone
    //        keeps 07:00–07:30: 1000 + 1500 = 2500 (naive 3500, max 2000).
    // The second sample of each arrives broken and is repaired by `dlq replay --fix`.
    static func sample(_ user: String, _ uuid: String, _ source: String, _ start: String, _ end: String, _ value: String,
                       unit: String = "count", zone: String = "UTC") -> String {
        #"{"type":"sample-added","user":"\#(user)","sample":{"uuid":"\#(uuid)","metric":"steps","source":"\#(source)","start":"\#(start)","end":"\#(end)","value":\#(value),"unit":"\#(unit)","zone":"\#(zone)"}}"#
    }

    static let valid = [
        sample("ana", "w1", "watch", "2024-03-02T09:00:00+01:00", "2024-03-02T09:30:00+01:00", "3000", zone: "Europe/Berlin"),
        sample("ben", "bw", "watch", "2024-03-05T08:00:00Z", "2024-03-05T09:00:00Z", "6000"),
        sample("cara", "cp", "phone", "2024-03-07T07:00:00Z", "2024-03-07T08:00:00Z", "2000"),
    ]

    /// Published around the validator, as a buggy producer would: (key, payload, code).
    static let broken: [(key: String, payload: String, code: String)] = [
        ("ana", sample("ana", "p1", "phone", "2024-03-02T09:15:00+01:00", "2024-03-02T10:15:00+01:00", "5400", unit: "steps", zone: "Europe/Berlin"), "unit_mismatch"),
        ("ben", sample("ben", "bp", "phone", "2024-03-05T10:30:00Z", "2024-03-05T08:30:00Z", "4000"), "end_before_start"),
        ("cara", String(sample("cara", "cw", "watch", "2024-03-07T07:30:00Z", "2024-03-07T08:00:00Z", "1500").dropLast(20)), "malformed_json"),
        // Valid, but keyed by someone else: replayed as it is, keyed by its user.
        ("ana", sample("eve", "e1", "watch", "2024-03-02T09:00:00Z", "2024-03-02T09:30:00Z", "700"), "key_mismatch"),
        // Never repaired: stays pending.
        ("dan", #"{"schema":7,"type":"sample-deleted","user":"dan","uuid":"d1"}"#, "unsupported_schema"),
    ]

    /// The repairs, by the code of the dead letter each one repairs.
    static let repairs = [
        "unit_mismatch": sample("ana", "p1", "phone", "2024-03-02T09:15:00+01:00", "2024-03-02T10:15:00+01:00", "5400", zone: "Europe/Berlin"),
        "end_before_start": sample("ben", "bp", "phone", "2024-03-05T08:30:00Z", "2024-03-05T10:30:00Z", "4000"),
        "malformed_json": sample("cara", "cw", "watch", "2024-03-07T07:30:00Z", "2024-03-07T08:00:00Z", "1500"),
    ]

    /// A broker holding `valid` (through `daybook publish`) then `broken`, and a data
    /// directory the projector has caught up on.
    func setUp(partitions: Int) throws -> (broker: BrokerProcess, data: String) {
        let broker = try BrokerProcess(arguments: ["--partitions", "\(partitions)"])
        let published = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(Self.valid.joined(separator: "\n") + "\n")])
        #expect(published.status == 0, "\(published.stderr)")
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrap), logger: .silent) { _ in }
        for (i, b) in Self.broken.enumerated() {
            try producer.send(topic: "health-samples", key: Array(b.key.utf8), value: Array(b.payload.utf8), id: i)
        }
        try producer.flush(timeoutMilliseconds: 30_000)
        let data = scratch.newPath("data")
        let r = project(broker, data)
        #expect(r.stderr.contains("applied 3, dead letters 5"), "\(r.stderr)")
        return (broker, data)
    }

    @discardableResult
    func project(_ broker: BrokerProcess, _ data: String) -> Daybook.Result {
        let r = (try? Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--until-caught-up", "--solo"]))
            ?? Daybook.Result(status: -1, stdout: "", stderr: "did not run")
        #expect(r.status == 0, "\(r.stderr)")
        return r
    }

    /// `dlq list --format json` (with --all) as code → id.
    func ids(_ data: String) throws -> [String: String] {
        let r = try Daybook.run(["dlq", "list", "--data", data, "--all", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        var out: [String: String] = [:]
        for line in r.stdout.split(separator: "\n") {
            let json = try JSONParser.parse(String(line))
            guard case .string(let code)? = json["code"], case .string(let id)? = json["id"] else {
                Issue.record("no code or id in \(line)")
                continue
            }
            out[code] = id
        }
        return out
    }

    func fixFile(_ ids: [String: String], _ repairs: [String: String]) throws -> String {
        try scratch.file(repairs.keys.sorted().map { #"{"id":"\#(ids[$0] ?? "?")","event":\#(repairs[$0] ?? "")}"# }.joined(separator: "\n") + "\n")
    }

    @Test func repairedDeadLettersCountExactlyAsRollupPredictsAndASecondReplayPublishesNothing() throws {
        let (broker, data) = try setUp(partitions: 2)
        defer { _ = broker.stop() }

        // list: one line per dead letter, no payload unless asked for.
        let list = try Daybook.run(["dlq", "list", "--data", data])
        #expect(list.status == 0, "\(list.stderr)")
        let lines = list.stdout.split(separator: "\n")
        #expect(lines.count == 1 + Self.broken.count, "\(list.stdout)")
        #expect(lines.first?.hasPrefix("ID ") == true)
        for b in Self.broken { #expect(lines.contains { $0.contains(b.code) && $0.contains(" \(b.key) ") && $0.contains("pending") }, "\(b.code): \(list.stdout)") }
        #expect(!list.stdout.contains(#""uuid""#) && !list.stdout.contains("5400"), "payloads shown: \(list.stdout)")
        let shown = try Daybook.run(["dlq", "list", "--data", data, "--show-payload"])
        for b in Self.broken { #expect(shown.stdout.contains(b.payload), "\(b.code)") }
        let ids = try ids(data)
        #expect(ids.count == Self.broken.count)
        for id in ids.values { #expect(id.wholeMatch(of: /[01]:[0-9]+/) != nil, "\(id)") }

        // The three repairs, then the stored payloads as they are: eve's is valid and goes,
        // dan's still fails, is named, and is not published.
        let fixes = try fixFile(ids, Self.repairs)
        let replay = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--fix", fixes])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stderr.contains("published 3, skipped 0"), "\(replay.stderr)")
        for code in Self.repairs.keys { #expect(replay.stdout.contains("\(ids[code] ?? "?") replayed as "), "\(replay.stdout)") }
        let asStored = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data])
        #expect(asStored.status == 65, "\(asStored.stderr)")
        #expect(asStored.stdout.contains("\(ids["key_mismatch"] ?? "?") replayed as "), "\(asStored.stdout)")
        #expect(asStored.stderr.contains("\(ids["unsupported_schema"] ?? "?"): schema: 7 is not a supported schema version"), "\(asStored.stderr)")
        #expect(asStored.stderr.contains("published 1,"), "\(asStored.stderr)")

        #expect(project(broker, data).stderr.contains("applied 4, dead letters 0"))
        // Exactly the lines of rollup over the original log with the repaired events appended.
        let expected = try ProjectorTests.rollup(Self.valid + Self.broken.map(\.payload) + Self.repairs.keys.sorted().compactMap { Self.repairs[$0] })
        let totals = try ProjectorTests.totals(data)
        #expect(totals == expected)
        #expect(totals == [
            #"{"user":"ana","metric":"steps","day":"2024-03-02","value":7050}"#, // naive 8400, max 5400
            #"{"user":"ben","metric":"steps","day":"2024-03-05","value":9000}"#, // naive 10000, max 6000
            #"{"user":"cara","metric":"steps","day":"2024-03-07","value":2500}"#, // naive 3500, max 2000
            #"{"user":"eve","metric":"steps","day":"2024-03-02","value":700}"#,
        ])

        // Only dan's is pending; --all shows where each replayed event landed.
        let after = try Daybook.run(["dlq", "list", "--data", data])
        #expect(after.stdout.split(separator: "\n").count == 2 && after.stdout.contains("unsupported_schema"), "\(after.stdout)")
        #expect(after.stderr.contains("4 replayed not shown"))
        let all = try Daybook.run(["dlq", "list", "--data", data, "--all"])
        #expect(all.stdout.split(separator: "\n").filter { $0.wholeMatch(of: /.* replayed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ as [01]:\d+ .*/) != nil }.count == 4, "\(all.stdout)")

        // A second replay publishes nothing: the repairs are skipped by name, dan's still fails.
        let again = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--fix", fixes])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("published 0, skipped 3 (already replayed)"), "\(again.stderr)")
        #expect(again.stdout.split(separator: "\n").filter { $0.contains("skipped: already replayed") }.count == 3)
        let againAsStored = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data])
        #expect(againAsStored.status == 65)
        #expect(againAsStored.stderr.contains("published 0,"), "\(againAsStored.stderr)")
        #expect(project(broker, data).stderr.contains("applied 0, dead letters 0"))
        #expect(try ProjectorTests.totals(data) == expected)
    }

    @Test func anInvalidFixExits65NamingTheLineAndFieldAndPublishesNothing() throws {
        let (broker, data) = try setUp(partitions: 1)
        defer { _ = broker.stop() }
        let ids = try ids(data)
        var repairs = Self.repairs
        // The ben line (line 1: the file is sorted by code) gets a negative value.
        repairs["end_before_start"] = Self.sample("ben", "bp", "phone", "2024-03-05T08:30:00Z", "2024-03-05T10:30:00Z", "-4000")
        let fixes = try fixFile(ids, repairs)
        let r = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--fix", fixes])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("\(fixes): line 1: event.sample.value: -4000 is negative"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing published"))
        #expect(r.stdout.isEmpty)

        // An id that names no dead letter, in the file or in --id: refused the same way.
        let unknown = try scratch.file(#"{"id":"0:999","event":\#(Self.repairs["unit_mismatch"] ?? "")}"# + "\n")
        let u = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--fix", unknown])
        #expect(u.status == 65 && u.stderr.contains("line 1: id: 0:999 is no dead letter of health-samples"), "\(u.stderr)")
        let i = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--id", "0:998"])
        #expect(i.status == 65 && i.stderr.contains("--id 0:998: no dead letter"), "\(i.stderr)")
        // A dry run of the valid repairs says what it would do, and does not.
        let dry = try Daybook.run(["dlq", "replay", "--data", data, "--fix", try fixFile(ids, Self.repairs), "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.split(separator: "\n").filter { $0.contains("would be published") }.count == 3, "\(dry.stdout)")

        // Nothing reached the log, and every dead letter is still pending.
        #expect(project(broker, data).stderr.contains("applied 0, dead letters 0"))
        let list = try Daybook.run(["dlq", "list", "--data", data])
        #expect(list.stdout.split(separator: "\n").count == 1 + Self.broken.count, "\(list.stdout)")
        #expect(!list.stdout.contains("replayed"))
    }

    @Test func replayMarksWhileAProjectorHoldsTheShardsAndThatProjectorCountsTheRepairs() throws {
        let (broker, data) = try setUp(partitions: 2)
        defer { _ = broker.stop() }
        let ids = try ids(data)
        // The projector holds every shard's lock from here on.
        let projector = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", data, "--solo"])
        let shards = try ShardReader(directory: data).shardPaths()
        #expect(shards.count == 2)
        var deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !shards.allSatisfy(Self.isLocked) { Thread.sleep(forTimeInterval: 0.1) }
        #expect(shards.allSatisfy(Self.isLocked), "the projector never took the shards: \(projector.stderr.suffix(400))")
        let r = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--fix", try fixFile(ids, Self.repairs)])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("published 3,"), "\(r.stderr)")
        let expected = try ProjectorTests.rollup(Self.valid + Self.repairs.keys.sorted().compactMap { Self.repairs[$0] })
        deadline = Date().addingTimeInterval(30)
        var totals: [String] = []
        while Date() < deadline, totals != expected {
            Thread.sleep(forTimeInterval: 0.2)
            totals = try ProjectorTests.totals(data)
        }
        #expect(totals == expected, "projector: \(projector.stderr.suffix(400))")
        let pending = try Daybook.run(["dlq", "list", "--data", data])
        #expect(pending.stdout.split(separator: "\n").count == 3, "\(pending.stdout)") // key_mismatch and unsupported_schema
        #expect(shards.allSatisfy(Self.isLocked))
        projector.process.terminate()
        #expect(projector.wait(seconds: 20) == 0, "\(projector.stderr.suffix(400))")
    }

    /// True while another process holds the shard's lock (`Shard` flocks `<shard>.lock`).
    static func isLocked(_ shard: String) -> Bool {
        let fd = open(shard + ".lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(fd, LOCK_UN)
        return false
    }

    @Test func helpTeachesTheFixFormatAndTheExitCodes() throws {
        let r = try Daybook.run(["dlq", "--help"])
        #expect(r.status == 0)
        for text in ["USAGE: daybook dlq list --data DIR", "daybook dlq replay --brokers B --data DIR", #"{"id":"3:1234","event":{"#,
                     "EXIT CODES", "EXAMPLES", "harmless", "--show-payload"] {
            #expect(r.stdout.contains(text), "\(text)")
        }
        #expect(try Daybook.run(["help"]).stdout.contains("  dlq "))
        let wrong = try Daybook.run(["dlq", "list", "--data", scratch.path, "--fix", "f"])
        #expect(wrong.status == 64 && wrong.stderr.contains("--fix is for dlq replay, not dlq list"), "\(wrong.stderr)")
        let empty = try Daybook.run(["dlq", "list", "--data", scratch.path])
        #expect(empty.status == 0 && empty.stdout == "no dead letters\n", "\(empty.stdout)")
        let missing = try Daybook.run(["dlq", "list", "--data", scratch.path + "/nope"])
        #expect(missing.status == 66)
    }
}
