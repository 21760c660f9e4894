import DaybookCore
import DaybookSupport
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

    @Test func aPairInTwoShardsIsReadAsOnePair() throws {
        // A producer with another partitioner put bob's phone in partitions 0 and 2.
        let fingerprint = SourcePriority.builtIn.fingerprint
        let early = SourceSync(user: "bob", source: "phone", lastCheckIn: Instant(seconds: 1_764_000_000), metrics: [.steps])
        let late = SourceSync(user: "bob", source: "phone", lastCheckIn: Instant(seconds: 1_764_090_000))
        let ana = SourceSync(user: "ana", source: "watch", lastSampleDelivered: Instant(seconds: 1_764_050_000))
        let zed = SourceSync(user: "zed", source: "ring", lastCheckIn: Instant(seconds: 1_764_060_000))
        for (partition, pairs) in [(Int32(0), [early, zed]), (1, [ana]), (2, [late])] {
            let shard = try Shard(directory: scratch.path, topic: "health-samples", partition: partition, fingerprint: fingerprint)
            var batch = Shard.Batch(nextOffset: 1)
            for p in pairs { batch.sync[SyncKey(user: p.user, source: p.source)] = p }
            try shard.commit(batch)
        }
        var merged = early
        merged.merge(late)
        var read: [SourceSync] = []
        try ShardReader(directory: scratch.path).forEachSyncPair { read.append($0) }
        #expect(read == [ana, merged, zed])
        #expect(try ShardReader(directory: scratch.path).syncPairs(user: "bob") == [merged])
        #expect(merged.lastCheckIn == late.lastCheckIn && merged.metrics == [.steps])
    }

    @Test func shardsWithoutSyncStateOrWithItOnlyFromAnUpgradeAreNamed() throws {
        let fingerprint = SourcePriority.builtIn.fingerprint
        let fresh = try Shard(directory: scratch.path, topic: "health-samples", partition: 0, fingerprint: fingerprint)
        try fresh.commit(Shard.Batch(nextOffset: 10))
        // Partition 1 had 500 events applied by a Daybook before freshness: its migration
        // to 004 records where the sync state starts.
        // Partition 2 was never opened by this version: no table at all.
        for (partition, offset) in [(Int32(1), Int64(500)), (2, 7)] {
            let shard = try Shard(directory: scratch.path, topic: "health-samples", partition: partition, fingerprint: fingerprint)
            try shard.commit(Shard.Batch(nextOffset: offset))
            try shard.database.execute("DROP TABLE sync_state; DELETE FROM schema_migrations WHERE name = '004-sync-state'")
        } // (closed here)
        let paths = (0...2).map { scratch.path + "/" + Shard.fileName(topic: "health-samples", partition: $0) }
        _ = try Shard(path: paths[1], topic: "health-samples", partition: 1, fingerprint: fingerprint, lockTimeout: .seconds(1))
        let gaps = try ShardReader(directory: scratch.path).forEachSyncPair { _ in }
        #expect(gaps.shards == 3)
        #expect(gaps.missing == [paths[2]])
        #expect(gaps.partial.map(\.path) == [paths[1]] && gaps.partial.map(\.from) == [500])
    }
}
