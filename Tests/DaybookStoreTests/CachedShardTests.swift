import DaybookSupport
import DaybookTestSupport
@testable import DaybookStore
@testable import DaybookCore
import Foundation
import Testing

/// The ledger cached over a real shard (review): harsher logs than the core's generator —
/// samples up to 7 days, instants at midnight UTC, zones at +14 and -11, edits that move a
/// sample to another metric or far-away days, deletes of never-loaded samples, reopening
/// the shard between batches — must give exactly the in-memory ledger's rows.
@Suite struct CachedShardTests {
    let scratch = TemporaryDirectory()

    static let zones = ["Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC", "Europe/Berlin", "America/New_York"]
    static let sources = ["watch", "phone", "manual"]
    static let day = Instant.nanosPerDay
    static let base = Int64(CivilDay(year: 2024, month: 3, day: 1).number) * Instant.nanosPerDay

    static func log(seed: UInt64, count: Int) -> [Event] {
        var rng = SplitMix64(seed: seed)
        var samples: [Sample] = []
        var events: [Event] = []
        var counter = 0
        func fresh(user: String, uuid: String) -> Sample {
            let metric: Metric = [.steps, .steps, .distance, .heartRate][rng.below(4)]
            var start = base + Int64(rng.below(30)) * day
            if rng.below(4) != 0 { start += Int64(rng.below(24 * 60)) * 60 * Instant.nanosPerSecond }
            let length: Int64
            switch rng.below(6) {
            case 0: length = 0
            case 1: length = Int64(1 + rng.below(7 * 24)) * 3_600 * Instant.nanosPerSecond // up to 7 days
            case 2: length = 7 * day
            case 3: length = (start / day + 1 + Int64(rng.below(3))) * day - start // ends at a midnight
            default: length = Int64(1 + rng.below(180)) * 60 * Instant.nanosPerSecond
            }
            return Sample(user: user, uuid: uuid, metric: metric, source: sources[rng.below(3)],
                          start: Instant(nanoseconds: start), end: Instant(nanoseconds: start + length),
                          value: Double(30 + rng.below(300)), zone: zones[rng.below(zones.count)])
        }
        while events.count < count {
            let user = "u\(rng.below(4))"
            let roll = rng.below(100)
            if roll < 50 || samples.isEmpty {
                counter += 1
                let s = fresh(user: user, uuid: "s\(counter)")
                samples.append(s)
                events.append(.sampleAdded(s))
            } else if roll < 72 {
                let old = samples[rng.below(samples.count)]
                let s = fresh(user: old.user, uuid: old.uuid) // any metric, any days
                samples.append(s)
                events.append(.sampleAdded(s))
            } else if roll < 84 {
                let s = samples[rng.below(samples.count)]
                events.append(.sampleDeleted(user: s.user, uuid: s.uuid))
            } else if roll < 88 {
                events.append(.sampleDeleted(user: user, uuid: "never\(rng.below(5))"))
            } else if roll < 94 {
                var s = samples[rng.below(samples.count)]
                s.value += 1
                events.append(.sampleAdded(s))
            } else {
                events.append(events[rng.below(events.count)])
            }
        }
        return events
    }

    /// Runs `events` through a ledger cached over a shard, in random batches with random
    /// budgets, reopening the shard now and then; returns the rows in the shard.
    /// - Parameter hinted: pass the ledger's `storeLacks` with each upsert, as the projector
    ///   does (the shard then skips looking those uuids up; a wrong hint would keep two
    ///   versions of a uuid and show here as a wrong row).
    func projected(_ events: [Event], seed: UInt64, dir: String, hinted: Bool = false,
                   uuidHash: ((String, String) -> Int64)? = nil) throws -> [DayTotal] {
        var rng = SplitMix64(seed: seed ^ 0x5EED)
        func open() throws -> Shard {
            let shard = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
            if let uuidHash { shard.uuidHash = uuidHash }
            return shard
        }
        var shard: Shard? = try open()
        var ledger: Ledger! = Ledger(priority: .builtIn, store: shard!, cacheBudgetBytes: 0)
        var i = 0
        while i < events.count {
            if rng.below(8) == 0 {
                ledger = nil // it holds the shard
                shard = nil
                shard = try open()
                ledger = Ledger(priority: .builtIn, store: shard!, cacheBudgetBytes: 0)
            }
            let n = 1 + rng.below(8)
            let batch = Array(events[i..<min(events.count, i + n)])
            try ledger.load(for: batch)
            var commit = Shard.Batch(nextOffset: Int64(i + batch.count))
            var dirty = Set<DayKey>()
            for (j, e) in batch.enumerated() {
                let lacks: Bool
                if case .sampleAdded(let s) = e { lacks = ledger.storeLacks(user: s.user, uuid: s.uuid) } else { lacks = false }
                let changed = ledger.apply(e, at: Int64(i + j))
                switch e {
                case .sampleAdded(let s):
                    if !changed.isEmpty {
                        commit.upserts.append(.init(s, Int64(i + j)))
                        if hinted { commit.storeLacks.append(lacks) }
                    }
                case .sampleDeleted(let u, let id): commit.deletes.append((u, SampleUUID(id)))
                case .sourceCheckedIn: break
                }
                dirty.formUnion(changed)
            }
            commit.rows = ledger.recompute(dirty)
            try shard!.commit(commit)
            ledger.cacheBudgetBytes = [0, 0, 3_000, 30_000, Int.max][rng.below(5)]
            ledger.evictIfOverBudget()
            i += n
        }
        return try ShardReader(directory: dir).totals()
    }

    static func inMemory(_ events: [Event]) -> [DayTotal] {
        let ledger = Ledger(priority: .builtIn)
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        return ledger.allTotals()
    }

    static func describe(_ t: DayTotal) -> String { t.jsonLine }

    @Test(arguments: 1...200)
    func aCachedShardGivesTheInMemoryRows(seed: Int) throws {
        let events = Self.log(seed: UInt64(seed), count: 20 + seed % 80)
        let dir = scratch.path + "/s\(seed)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let rows = try projected(events, seed: UInt64(seed), dir: dir, hinted: seed % 2 == 0).map(Self.describe).sorted()
        let expected = Self.inMemory(events).map(Self.describe).sorted()
        #expect(rows == expected, "seed \(seed): \(Set(rows).symmetricDifference(expected).sorted())")
    }

    /// The uuid index keys packs by a 64-bit hash of (user, uuid), which two uuids may share.
    /// Under a hash that gives every uuid of a user the same key (one of two per user), each
    /// lookup meets many packs and tombstones that are not its own, and must still find its
    /// own sample, or none: the rows equal the in-memory ledger's.
    @Test(arguments: 1...40)
    func uuidsSharingAHashStillFindTheirOwnSamples(seed: Int) throws {
        let events = Self.log(seed: UInt64(seed), count: 40 + seed % 60)
        let dir = scratch.path + "/h\(seed)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let rows = try projected(events, seed: UInt64(seed), dir: dir, uuidHash: { user, uuid in
            Int64(user.utf8.count) * 2 + Int64(uuid.utf8.count % 2)
        }).map(Self.describe).sorted()
        let expected = Self.inMemory(events).map(Self.describe).sorted()
        #expect(rows == expected, "seed \(seed): \(Set(rows).symmetricDifference(expected).sorted())")
    }
}

@Suite struct ShardWALTests {
    let scratch = TemporaryDirectory()

    /// The write-ahead log is checkpointed and restarted as batches commit: it stays near
    /// SQLite's auto-checkpoint size (1,000 pages) instead of growing with the history.
    @Test(arguments: [false, true])
    func theWriteAheadLogDoesNotGrowWithTheHistory(reopened: Bool) throws {
        let dir = scratch.path
        var seq: Int64 = 0
        if reopened {
            // A shard that already has an offset (and so a progress row) when it is opened.
            let first = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
            try first.commit(Shard.Batch(nextOffset: 0))
            try first.recordClusterID("cluster")
        }
        let shard = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
        _ = try shard.clusterID() // as the projector checks it on opening
        for b in 0..<300 {
            var batch = Shard.Batch(nextOffset: seq + 200)
            for _ in 0..<200 {
                let start = 1_700_000_000 * Instant.nanosPerSecond + seq * 60 * Instant.nanosPerSecond
                batch.upserts.append(.init(Sample(user: "user-\(seq % 97)", uuid: "uuid-\(seq)-\(b)-padding-padding", metric: .steps,
                                             source: "watch", start: Instant(nanoseconds: start),
                                             end: Instant(nanoseconds: start + 60 * Instant.nanosPerSecond), value: 10, zone: "UTC"), seq))
                seq += 1
            }
            try shard.commit(batch)
        }
        let wal = try FileManager.default.attributesOfItem(atPath: shard.path + "-wal")[.size] as? Int ?? 0
        let db = try FileManager.default.attributesOfItem(atPath: shard.path)[.size] as? Int ?? 0
        #expect(wal < 12 << 20, "reopened: \(reopened): WAL \(wal) bytes for a database of \(db) bytes")
    }
}
