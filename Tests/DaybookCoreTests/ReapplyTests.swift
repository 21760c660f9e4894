@testable import DaybookCore
import DaybookSupport
import DaybookTestSupport
import Testing

/// `Ledger.reapply`, what `daybook replay` runs for every event below a shard's offset:
/// re-reading any suffix of the log changes nothing in a consistent ledger, in memory and
/// as a cache over a store; and re-reading the whole log repairs a tampered stored sample,
/// a sample missing from the store, and every row.
@Suite struct ReapplyTests {
    typealias Store = CachedLedgerTests.MemoryStore

    /// Re-reads `events[start...]` through `ledger` in random batches, as `ShardProjection`
    /// does below a shard's offset: load, reapply, recompute the dirty days, commit what
    /// changed, let the cache shrink to a random budget. Returns the samples written.
    static func reread(_ events: [Event], from start: Int, ledger: Ledger, store: Store,
                       rows: inout [DayKey: DayTotal], seed: UInt64) throws -> Int {
        var rng = SplitMix64(seed: seed ^ 0x5EAD)
        var written = 0
        var i = start
        while i < events.count {
            let n = 1 + rng.below(7)
            let batch = Array(events[i..<min(events.count, i + n)])
            try ledger.load(for: batch)
            var dirty = Set<DayKey>()
            var upserts: [(Sample, Int64)] = []
            var deletes: [(String, String)] = []
            for (j, e) in batch.enumerated() {
                let changed = ledger.reapply(e, at: Int64(i + j), dirty: &dirty)
                switch e {
                case .sampleAdded(let s): if changed { upserts.append((s, Int64(i + j))) }
                case .sampleDeleted(let u, let id): deletes.append((u, id))
                case .sourceCheckedIn: break
                }
            }
            for (key, total) in ledger.recompute(dirty) { rows[key] = total }
            store.commit(upserts: upserts, deletes: deletes)
            written += upserts.count
            ledger.cacheBudgetBytes = [0, 500, 2_000, 20_000, Int.max][rng.below(5)]
            ledger.evictIfOverBudget()
            i += n
        }
        return written
    }

    static func keyed(_ rows: [DayTotal]) -> [DayKey: DayTotal] {
        Dictionary(uniqueKeysWithValues: rows.map { ($0.key, $0) })
    }

    @Test(arguments: PropertyTests.seeds)
    func rereadingAnySuffixInMemoryChangesNothing(seed: UInt64) {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        for n in 0..<events.count {
            let ledger = Ledger(priority: LogGenerator.priority)
            for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
            let before = ledger.allTotals()
            let rows = Self.keyed(before)
            var dirty = Set<DayKey>()
            for i in n..<events.count {
                #expect(!ledger.reapply(events[i], at: Int64(i), dirty: &dirty), "event \(i) re-read from \(n) changed a sample (seed \(seed))")
            }
            // Every recomputed row is the row in force (nil: the day has none).
            for (key, total) in ledger.recompute(dirty) {
                #expect(total == rows[key], "\(key) recomputed from \(n) (seed \(seed))")
            }
            #expect(ledger.allTotals() == before, "re-read from \(n) (seed \(seed))")
        }
    }

    @Test(arguments: PropertyTests.seeds)
    func rereadingAnySuffixThroughTheCacheChangesNothing(seed: UInt64) throws {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let expected = CachedLedgerTests.inMemory(events)
        var rng = SplitMix64(seed: seed ^ 0x0FF5E7)
        for n in Set([0, events.count - 1, rng.below(events.count), rng.below(events.count), rng.below(events.count)]).sorted() {
            let (projected, store, ledger) = try CachedLedgerTests.projected(events, seed: seed) { rng in [0, 500, 2_000, 20_000, Int.max][rng.below(5)] }
            #expect(projected == expected)
            let stored = store.entries
            var rows = Self.keyed(projected)
            let written = try Self.reread(events, from: n, ledger: ledger, store: store, rows: &rows, seed: seed &+ UInt64(n))
            #expect(written == 0, "re-reading from \(n) wrote \(written) samples (seed \(seed))")
            #expect(store.entries == stored, "re-read from \(n) (seed \(seed))")
            #expect(rows.values.sorted { $0.key < $1.key } == expected, "re-read from \(n) (seed \(seed))")
        }
    }

    /// A stored sample edited by hand (its value, at its stored position), another one
    /// removed, and every row garbled: after eviction, re-reading the log from the start
    /// gives back the untampered store and exactly the rows of the log.
    @Test(arguments: PropertyTests.seeds)
    func rereadingFromTheStartRepairsTamperedSamplesAndRows(seed: UInt64) throws {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let expected = CachedLedgerTests.inMemory(events)
        let (projected, store, ledger) = try CachedLedgerTests.projected(events, seed: seed) { rng in [0, 2_000, Int.max][rng.below(3)] }
        #expect(projected == expected)
        let untampered = store.entries

        var live: [(user: String, uuid: String, sample: Sample, seq: Int64)] = []
        for (user, entries) in store.entries.sorted(by: { $0.key < $1.key }) {
            for (uuid, entry) in entries.sorted(by: { $0.key < $1.key }) {
                if case .live(let s, let seq) = entry { live.append((user, uuid, s, seq)) }
            }
        }
        try #require(!live.isEmpty)
        var rng = SplitMix64(seed: seed ^ 0x7A3)
        let edited = live[rng.below(live.count)]
        var changed = edited.sample
        changed.value = changed.value * 2 + 1
        store.entries[edited.user]?[edited.uuid] = .live(changed, seq: edited.seq)
        let removed = live.count > 1 ? live.filter { $0.uuid != edited.uuid || $0.user != edited.user }[rng.below(live.count - 1)] : nil
        if let removed { store.entries[removed.user]?[removed.uuid] = nil }
        var rows = Self.keyed(projected).mapValues { row in
            DayTotal(key: row.key, summary: .cumulative(value: -1, sources: []))
        }

        ledger.cacheBudgetBytes = 0
        ledger.evictIfOverBudget()
        #expect(ledger.cachedUserCount == 0)
        let written = try Self.reread(events, from: 0, ledger: ledger, store: store, rows: &rows, seed: seed)
        #expect(written >= 1, "the edited sample was not written back (seed \(seed))")
        #expect(store.entries == untampered, "edited \(edited.uuid), removed \(removed?.uuid ?? "-") (seed \(seed))")
        #expect(rows.values.sorted { $0.key < $1.key } == expected, "edited \(edited.uuid), removed \(removed?.uuid ?? "-") (seed \(seed))")
    }

    /// What a re-read cannot repair, as Guides/Replay.md says. Watch 600 over 09:00–10:00 is
    /// deleted (and re-sent later, which the log ignores); phone 900 over 09:30–10:30 keeps
    /// all of 2024-05-06: 900. With the watch alive it would be 600 + 450 = 1050.
    @Test func whatARereadCannotRepair() throws {
        let watch = added("w", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        let phone = added("p", "phone", "2024-05-06T09:30:00Z", "2024-05-06T10:30:00Z", 900, zone: "UTC")
        let later = added("q", "phone", "2024-05-07T09:00:00Z", "2024-05-07T10:00:00Z", 100, zone: "UTC")
        let events: [Event] = [watch, phone, deleted("w"), watch, later]
        let may6 = DayKey(user: "ana", metric: .steps, day: CivilDay("2024-05-06")!)
        func value(_ rows: [DayKey: DayTotal]) -> Double? {
            if case .cumulative(let v, _)? = rows[may6]?.summary { return v }
            return nil
        }
        func projected() throws -> (Store, Ledger, [DayKey: DayTotal]) {
            let (rows, store, ledger) = try CachedLedgerTests.projected(events, seed: 3) { _ in 0 }
            #expect(value(Self.keyed(rows)) == 900)
            return (store, ledger, Self.keyed(rows))
        }

        // A row on a day no re-read event covers stays as edited.
        do {
            let (store, ledger, projectedRows) = try projected()
            var rows = projectedRows
            rows[may6] = DayTotal(key: may6, summary: .cumulative(value: 1, sources: []))
            _ = try Self.reread(events, from: 4, ledger: ledger, store: store, rows: &rows, seed: 3)
            #expect(value(rows) == 1)
            _ = try Self.reread(events, from: 1, ledger: ledger, store: store, rows: &rows, seed: 3)
            #expect(value(rows) == 900)
        }
        // A sample inserted by hand with a uuid the log never had stays, and counts in every
        // recomputed day it overlaps (manual 50 over 11:00–12:00: 950).
        do {
            let (store, ledger, projectedRows) = try projected()
            var rows = projectedRows
            guard case .sampleAdded(let foreign) = added("x", "manual", "2024-05-06T11:00:00Z", "2024-05-06T12:00:00Z", 50, zone: "UTC") else { return }
            store.entries["ana"]?["x"] = .live(foreign, seq: 99)
            _ = try Self.reread(events, from: 0, ledger: ledger, store: store, rows: &rows, seed: 3)
            #expect(value(rows) == 950)
            #expect(store.entries["ana"]?["x"] != nil)
        }
        // A tombstone removed by hand comes back if its deletion is re-read; re-reading only
        // the later re-send brings the deleted sample back to life.
        do {
            let (store, ledger, projectedRows) = try projected()
            var rows = projectedRows
            store.entries["ana"]?["w"] = nil
            _ = try Self.reread(events, from: 3, ledger: ledger, store: store, rows: &rows, seed: 3)
            #expect(value(rows) == 1_050)
            guard case .live? = store.entries["ana"]?["w"] else { Issue.record("the re-send was not applied"); return }
            _ = try Self.reread(events, from: 2, ledger: ledger, store: store, rows: &rows, seed: 3)
            #expect(value(rows) == 900)
            #expect(store.entries["ana"]?["w"] == .tombstoned)
        }
    }
}
