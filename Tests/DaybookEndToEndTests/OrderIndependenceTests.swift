import DaybookCore
import DaybookStore
import DaybookSupport
import DaybookTestSupport
import Foundation
import Testing

/// "Same events, same totals" through the processes: `rollup`, the projector, `rebuild` and
/// `replay` give byte-identical rows for any order of a log that keeps each (user, uuid)'s
/// own events in order, and for the log published twice.
@Suite(.serialized) struct OrderIndependenceTests {
    let scratch = TemporaryDirectory()

    /// The issue's lines, all phone: A 08:00–09:00 100, A again at 200, B 08:00–09:00 500,
    /// C 08:30–09:30 600. 08:00–08:30 B (ties A on version, start and end; larger value):
    /// 250; 08:30–09:30 C (later start): 600 → 850 (naive 1300 over uuids, max 600). Before
    /// versions, the log sent twice moved A to the end and printed 500.
    static let issueLog = [
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"A","metric":"steps","source":"phone","start":"2024-05-06T08:00:00Z","end":"2024-05-06T09:00:00Z","value":100,"unit":"count","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"A","metric":"steps","source":"phone","start":"2024-05-06T08:00:00Z","end":"2024-05-06T09:00:00Z","value":200,"unit":"count","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"B","metric":"steps","source":"phone","start":"2024-05-06T08:00:00Z","end":"2024-05-06T09:00:00Z","value":500,"unit":"count","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"C","metric":"steps","source":"phone","start":"2024-05-06T08:30:00Z","end":"2024-05-06T09:30:00Z","value":600,"unit":"count","zone":"UTC"}}"#,
    ]
    static let issueAnswer = #"{"user":"ana","metric":"steps","day":"2024-05-06","value":850}"#

    @Test func rollupOfAFileSentTwiceEqualsItSentOnce() throws {
        let once = try Daybook.run(["rollup", "-"], stdin: Self.issueLog.joined(separator: "\n") + "\n")
        let twice = try Daybook.run(["rollup", "-"], stdin: (Self.issueLog + Self.issueLog).joined(separator: "\n") + "\n")
        #expect(once.status == 0 && twice.status == 0)
        #expect(once.stdout == Self.issueAnswer + "\n")
        #expect(twice.stdout == once.stdout)
        // The issue's three lines alone: B's 500 beats A's 200 (same version, times; larger value).
        let three = Self.issueLog.prefix(3).joined(separator: "\n") + "\n"
        let r3 = try Daybook.run(["rollup", "-"], stdin: three)
        let r33 = try Daybook.run(["rollup", "-"], stdin: three + three)
        #expect(r3.stdout == #"{"user":"ana","metric":"steps","day":"2024-05-06","value":500}"# + "\n")
        #expect(r33.stdout == r3.stdout)
    }

    /// A seeded log of several users: same-source overlaps, versions, same-version edits,
    /// stale re-sends, deletions and re-sends after them; every aggregation (steps, water,
    /// exercise time, and heart-rate and body-mass instants); in user order.
    static func log(seed: UInt64, users: Int = 9, eventsPerUser: Int = 80) -> [Event] {
        var rng = SplitMix64(seed: seed)
        var events: [Event] = []
        let day0 = Int64(CivilDay("2024-10-26")?.number ?? 0) * 86_400 // Berlin's 25-hour day is the 27th
        for u in 0..<users {
            let user = "u\(u)"
            var live: [Sample] = []
            for n in 0..<eventsPerUser {
                let roll = rng.below(100)
                if roll < 55 || live.isEmpty {
                    let kind = rng.below(16)
                    let metric: Metric = kind < 2 ? .heartRate : kind < 3 ? .bodyMass : kind < 5 ? .water : kind < 7 ? .exerciseTime : .steps
                    let heart = !metric.isCumulative
                    let start = day0 + Int64(rng.below(3 * 24 * 60)) * 60
                    let length: Int64 = heart ? 0 : Int64(1 + rng.below(180)) * 60
                    let s = Sample(user: user, uuid: "\(user)-s\(n)", metric: metric,
                                   source: ["watch", "phone", "manual"][rng.below(3)],
                                   start: Instant(seconds: start), end: Instant(seconds: start + length),
                                   value: Double(40 + rng.below(heart ? 150 : 900)),
                                   zone: ["Europe/Berlin", "America/New_York", "UTC"][rng.below(3)],
                                   version: Int64(rng.below(3)))
                    live.append(s)
                    events.append(.sampleAdded(s))
                } else if roll < 80 {
                    // An edit at a higher, the same, or a lower (stale) version.
                    let k = rng.below(live.count)
                    var s = live[k]
                    s.value = Double(40 + rng.below(s.metric.isCumulative ? 900 : 150))
                    if s.metric.isCumulative, rng.below(2) == 0 { s.end = Instant(seconds: s.start.nanoseconds / 1_000_000_000 + Int64(1 + rng.below(240)) * 60) }
                    let v = rng.below(3)
                    s.version = v == 0 ? s.version + 1 : v == 1 ? s.version : max(0, s.version - 1)
                    if s.version >= live[k].version { live[k] = s }
                    events.append(.sampleAdded(s))
                } else if roll < 92 {
                    let s = live[rng.below(live.count)]
                    events.append(.sampleDeleted(user: user, uuid: s.uuid))
                    if rng.below(2) == 0 { events.append(.sampleAdded(s)) } // a retry that tries to resurrect it
                } else if let e = events.last(where: { $0.user == user }) {
                    events.append(e) // an exact redelivery
                }
            }
        }
        return events
    }

    /// The same events as a live stream delivers them: users interleaved, each (user, uuid)'s
    /// own events still in order.
    static func interleaved(_ events: [Event], seed: UInt64) -> [Event] {
        var rng = SplitMix64(seed: seed)
        var slots = Array(events.indices)
        for i in stride(from: slots.count - 1, to: 0, by: -1) { slots.swapAt(i, rng.below(i + 1)) }
        var positions: [String: [Int]] = [:]
        for (slot, original) in slots.enumerated() {
            positions["\(events[original].user)|\(events[original].uuid ?? "")", default: []].append(slot)
        }
        for key in positions.keys { positions[key]?.sort() }
        var out = events
        var next: [String: Int] = [:]
        for e in events {
            let key = "\(e.user)|\(e.uuid ?? "")"
            let k = next[key, default: 0]
            if let slot = positions[key]?[k] { out[slot] = e }
            next[key] = k + 1
        }
        return out
    }

    func file(_ events: [Event]) throws -> String {
        try scratch.file(events.map(\.jsonLine).joined(separator: "\n") + "\n")
    }

    func project(_ broker: BrokerProcess, _ dir: String) throws -> String {
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        return r.stderr
    }

    func totals(_ dir: String) throws -> String {
        let r = try Daybook.run(["totals", "--data", dir, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout
    }

    @Test(arguments: [UInt64(7), 8])
    func anyOrderGivesIdenticalRowsThroughProjectorRebuildAndReplay(seed: UInt64) throws {
        let userOrder = Self.log(seed: seed)
        let arrival = Self.interleaved(userOrder, seed: seed ^ 0x5EED)
        #expect(arrival != userOrder)
        let ledger = Ledger()
        for (i, e) in userOrder.enumerated() { ledger.apply(e, at: Int64(i)) }
        #expect(ledger.staleResendCount > 5, "the log must hold stale re-sends")

        // rollup: byte-identical in both orders.
        let expected = try Daybook.run(["rollup", try file(userOrder)])
        #expect(expected.status == 0)
        #expect(expected.stdout.split(separator: "\n").count > 40)
        #expect(try Daybook.run(["rollup", try file(arrival)]).stdout == expected.stdout)

        // The projector, each order on its own broker (3 partitions).
        let a = try BrokerProcess(arguments: ["--partitions", "3"])
        let b = try BrokerProcess(arguments: ["--partitions", "3"])
        defer { _ = a.stop(); _ = b.stop() }
        #expect(try Daybook.run(["publish", "--brokers", a.bootstrap, try file(userOrder)]).status == 0)
        #expect(try Daybook.run(["publish", "--brokers", b.bootstrap, try file(arrival)]).status == 0)
        let dirA = scratch.newPath("a"), dirB = scratch.newPath("b")
        let summaryA = try project(a, dirA)
        #expect(summaryA.contains("\(ledger.staleResendCount) stale re-sends ignored"), "\(summaryA)")
        _ = try project(b, dirB)
        #expect(try totals(dirA) == expected.stdout)
        #expect(try totals(dirB) == expected.stdout)

        // A rebuild of the arrival-order log and a replay of the user-order one from 0.
        let rebuild = try Daybook.run(["rebuild", "--brokers", b.bootstrap, "--data", dirB])
        #expect(rebuild.status == 0, "\(rebuild.stderr)")
        #expect(try totals(dirB) == expected.stdout)
        let replay = try Daybook.run(["replay", "--brokers", a.bootstrap, "--data", dirA, "--from-offset", "0"])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(try totals(dirA) == expected.stdout)

        // The whole log published a second time (a producer retrying everything).
        #expect(try Daybook.run(["publish", "--brokers", a.bootstrap, try file(userOrder)]).status == 0)
        _ = try project(a, dirA)
        #expect(try totals(dirA) == expected.stdout)
    }

    /// A shard written before sample versions (checked in as SQL: the issue's log sent twice,
    /// projected by main at 2dffe6f, whose row says 500) is upgraded when the projector opens
    /// it: its rows are recomputed from its samples under the new rule, 850, as `rollup` says.
    @Test func aShardWrittenBeforeVersionsIsRecomputedWhenTheProjectorOpensIt() throws {
        let dir = scratch.newPath("old")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let sql = try String(contentsOf: Daybook.root.appendingPathComponent("Tests/DaybookEndToEndTests/Fixtures/shard-before-versions.sql"), encoding: .utf8)
        try Database(path: dir + "/health-samples-0000.sqlite").execute(sql)
        // Before a projector opens it, readers show what it holds.
        #expect(try totals(dir) == #"{"user":"ana","metric":"steps","day":"2024-05-06","value":500}"# + "\n")

        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        let twice = Self.issueLog + Self.issueLog
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(twice.joined(separator: "\n") + "\n")]).status == 0)
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("applied 0"), "the shard's offset (8) is the log's end: \(r.stderr)")
        #expect(r.stderr.contains("1 rows an older Daybook wrote recomputed from the shard's samples (same-rank ties now go by version, not log position)"), "\(r.stderr)")
        #expect(try totals(dir) == Self.issueAnswer + "\n")
        // Once: a second open has nothing to recompute.
        let again = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(again.status == 0)
        #expect(!again.stderr.contains("recomputed"), "\(again.stderr)")
        #expect(try totals(dir) == Self.issueAnswer + "\n")
    }
}
