import DaybookCore
import DaybookTestSupport
@testable import DaybookStore
import Foundation
import Testing

/// The shard's `sync_state` merges exactly as `SourceSync.merge` does, whatever the batches.
@Suite struct SyncStateStoreTests {
    let scratch = TemporaryDirectory()

    static func pair(_ rng: inout SplitMix64) -> SourceSync {
        let base: Int64 = 1_764_000_000 * 1_000_000_000
        func maybe() -> Instant? { rng.below(3) == 0 ? nil : Instant(nanoseconds: base + Int64(rng.below(50)) * 3_600_000_000_000) }
        let end = maybe()
        return SourceSync(user: ["ana", "bob", "é"][rng.below(3)], source: ["watch", "phone"][rng.below(2)],
                          lastCheckIn: maybe(), lastSampleDelivered: maybe(), newestSampleEnd: end,
                          zone: end == nil ? nil : ["Europe/Berlin", "Asia/Tokyo", "UTC"][rng.below(3)],
                          metrics: Set(Metric.allCases.filter { _ in rng.below(3) == 0 }))
    }

    @Test func batchesInAnyOrderLeaveWhatTheCoreMergeSays() throws {
        var rng = SplitMix64(seed: 2026)
        for round in 0..<20 {
            let pairs = (0..<40).map { _ in Self.pair(&rng) }
            var expected: [SyncKey: SourceSync] = [:]
            for p in pairs { expected[SyncKey(user: p.user, source: p.source), default: p].merge(p) }

            let shard = try Shard(directory: scratch.path, topic: "t\(round)", partition: 0, fingerprint: SourcePriority.builtIn.fingerprint)
            var offset: Int64 = 0
            var rest = pairs.shuffled(using: &rng) + pairs.prefix(10) // some twice
            while !rest.isEmpty {
                let n = min(rest.count, 1 + rng.below(8))
                offset += Int64(n)
                var batch = Shard.Batch(nextOffset: offset)
                for p in rest.prefix(n) { batch.sync[SyncKey(user: p.user, source: p.source), default: p].merge(p) }
                rest.removeFirst(n)
                try shard.commit(batch)
            }
            for user in ["ana", "bob", "é"] {
                let stored = try shard.syncPairs(user: user)
                let want = expected.values.filter { $0.user == user }.sorted { $0.source < $1.source }
                #expect(stored == want, "round \(round), \(user)")
            }
            // Readers see the same, through the data directory.
            var read: [SourceSync] = []
            try ShardReader(directory: scratch.path).forEachSyncPair { if $0.user == "ana" { read.append($0) } }
            #expect(read.count >= (expected.values.filter { $0.user == "ana" }.count))
        }
    }

    @Test func aFailedBatchLeavesTheSyncStateAsItWas() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: SourcePriority.builtIn.fingerprint)
        let early = SourceSync(user: "ana", source: "phone", lastCheckIn: Instant(seconds: 1_764_000_000))
        var first = Shard.Batch(nextOffset: 1)
        first.sync[SyncKey(user: "ana", source: "phone")] = early
        try shard.commit(first)
        // A batch whose totals row cannot be written (the table is gone) fails as a whole.
        try shard.database.execute("DROP TABLE total_sources")
        var second = Shard.Batch(nextOffset: 2)
        second.sync[SyncKey(user: "ana", source: "phone")] = SourceSync(user: "ana", source: "phone", lastCheckIn: Instant(seconds: 1_764_086_400))
        second.rows[DayKey(user: "ana", metric: .steps, day: CivilDay("2025-11-24")!)] = DayTotal(
            key: DayKey(user: "ana", metric: .steps, day: CivilDay("2025-11-24")!), summary: .cumulative(value: 5, sources: [SourceShare(source: "phone", value: 5)]))
        #expect(throws: (any Error).self) { try shard.commit(second) }
        #expect(try shard.syncPairs(user: "ana") == [early])
        #expect(shard.nextOffset == 1)
    }
}
