import DaybookCore
import DaybookTestSupport
import DaybookStore
import Foundation
import Testing

/// The readers `totals` and `stale` call, over real shard files: day blocks with their
/// users' sync state, and freshness judged in one pass over every shard.
@Suite struct ReadModelTests {
    let scratch = TemporaryDirectory()

    static func at(_ text: String) -> Instant { try! Instant(rfc3339: text) }
    static func day(_ text: String) -> CivilDay { CivilDay(text)! }

    /// Two shards: ana on partition 0, bob on partition 1.
    func writeShards() throws {
        let fingerprint = SourcePriority.builtIn.fingerprint
        let zero = try Shard(directory: scratch.path, topic: "health-samples", partition: 0, fingerprint: fingerprint)
        var a = Shard.Batch(nextOffset: 3)
        // watch 3000 + phone 5400 × 45/60 = 7050 (the naive sum says 8400, the max 5400).
        let key = DayKey(user: "ana", metric: .steps, day: Self.day("2026-11-27"))
        a.rows[key] = DayTotal(key: key, summary: .cumulative(value: 7050, sources: [SourceShare(source: "watch", value: 3000), SourceShare(source: "phone", value: 4050)]))
        a.sync[SyncKey(user: "ana", source: "phone")] = SourceSync(user: "ana", source: "phone", lastCheckIn: Self.at("2026-11-28T12:00:00Z"), metrics: [.steps])
        a.sync[SyncKey(user: "ana", source: "watch")] = SourceSync(user: "ana", source: "watch", lastCheckIn: Self.at("2026-11-30T11:00:00Z"), metrics: [.steps])
        try zero.commit(a)
        let one = try Shard(directory: scratch.path, topic: "health-samples", partition: 1, fingerprint: fingerprint)
        var b = Shard.Batch(nextOffset: 1)
        b.sync[SyncKey(user: "bob", source: "phone")] = SourceSync(user: "bob", source: "phone", lastCheckIn: Self.at("2026-11-30T10:00:00Z"), metrics: [.steps])
        try one.commit(b)
    }

    @Test func dayBlocksCarryTheSyncStateThatMakesADayUnknown() throws {
        try writeShards()
        let blocks = try ShardReader(directory: scratch.path).dayBlocks(
            ShardReader.Query(user: "ana", metric: .steps, from: Self.day("2026-11-26"), to: Self.day("2026-11-29")))
        try #require(blocks.count == 1)
        #expect(blocks[0].pairs.map(\.source).sorted() == ["phone", "watch"])
        var shown: [String] = []
        blocks[0].forEachDay(everyDay: true) { day, row, unknown in
            shown.append("\(day) " + (row != nil ? "row" : unknown.isEmpty ? "no data" : "unknown"))
        }
        // The phone was last heard on 11-28 (UTC): that day and the next are unknown.
        #expect(shown == ["2026-11-26 no data", "2026-11-27 row", "2026-11-28 unknown", "2026-11-29 unknown"])
        // For all users, bob has no rows, so no block.
        #expect(try ShardReader(directory: scratch.path).dayBlocks(ShardReader.Query()).map(\.user) == ["ana"])
    }

    @Test func freshnessIsJudgedOverEveryShardOnce() throws {
        try writeShards()
        // Threshold 24 h at 11-30 12:00: ana/phone silent 48 h (stale); ana/watch 1 h and
        // bob/phone 2 h are fresh. The canary never checked in: stale, so the detector fired.
        let policy = FreshnessPolicy(defaultRule: .init(threshold: .seconds(24 * 3600), pageFraction: 0.5),
                                     canaries: [SyncKey(user: "canary", source: "phone")])
        var seen = 0
        let reading = try ShardReader(directory: scratch.path).judgeFreshness(policy: policy, now: Self.at("2026-11-30T12:00:00Z")) { _ in seen += 1 }
        #expect(seen == 3)
        #expect(reading.coverage.shards == 2)
        #expect(reading.report.stale.map { "\($0.user)/\($0.source)" } == ["ana/phone", "canary/phone"]) // by source, then user
        #expect(reading.report.stale.first { $0.user == "ana" }?.silence == .seconds(48 * 3600))
        #expect(reading.unreported.isEmpty)
        #expect(reading.canariesNeverSeen == [SyncKey(user: "canary", source: "phone")])
        // phone: 1 of 2 real users stale = 0.5 ≥ 0.5: pages (the canary does not count).
        let phone = reading.report.sources.first { $0.source == "phone" }
        #expect(phone?.users == 2 && phone?.stale == 1 && phone?.pages == true)
    }
}

@Suite struct DatabaseErrorCodeTests {
    let scratch = TemporaryDirectory()

    @Test func aFileThatCannotBeOpenedIsCantOpenTyped() throws {
        do {
            _ = try Database(path: scratch.path + "/no-such-directory/shard.sqlite")
            Issue.record("opened a database in a missing directory")
        } catch {
            #expect(error.resultCode.primary == .cantOpen)
            #expect(error.isStorageFault && !error.isCorrupt && !error.isBusy)
        }
        // Extended codes keep their value and share the primary one.
        let extended = DatabaseError.ResultCode(rawValue: 14 | (1 << 8)) // SQLITE_CANTOPEN_NOTEMPDIR
        #expect(extended != .cantOpen && extended.primary == .cantOpen)
    }

    @Test func notADatabaseIsCorrupt() throws {
        let path = try scratch.file("this is not an SQLite file, just text long enough to have a header......", suffix: ".sqlite")
        do {
            let db = try Database(path: path, create: false)
            try db.execute("SELECT count(*) FROM sqlite_master")
            Issue.record("read a text file as a database")
        } catch {
            #expect(error.resultCode.primary == .notADatabase)
            #expect(error.isCorrupt)
        }
    }
}
