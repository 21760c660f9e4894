@testable import DaybookCore
import DaybookSupport
import DaybookTestSupport
import Testing

/// The ledger as a cache over a store: with a budget so small that every batch evicts
/// everything, and with random budgets, it must give exactly the rows of an in-memory ledger.
@Suite struct CachedLedgerTests {
    /// A store that keeps entries in dictionaries and answers by scanning (the real one is
    /// the SQLite shard; this one has no I/O, so the core's side is tested alone).
    final class MemoryStore: LedgerStore {
        var entries: [String: [String: StoredEntry]] = [:]
        var entryLookups = 0

        func hasEntries(user: String) throws -> Bool { !(entries[user] ?? [:]).isEmpty }

        func entries(user: String, uuids: [String]) throws -> [String: StoredEntry] {
            entryLookups += uuids.count
            var out: [String: StoredEntry] = [:]
            for uuid in uuids { out[uuid] = entries[user]?[uuid] ?? .absent }
            return out
        }

        func samples(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [(sample: Sample, seq: Int64)] {
            let first = Int64(days.lowerBound) * Instant.nanosPerDay
            let end = (Int64(days.upperBound) + 1) * Instant.nanosPerDay
            return (entries[user] ?? [:]).values.compactMap { entry in
                guard case .live(let s, let seq) = entry, s.metric == metric else { return nil }
                let start = s.start.nanoseconds, stop = s.end.nanoseconds
                let inside = metric.isCumulative && start != stop
                    ? start < end && stop > first
                    : start >= first && start < end
                return inside ? (s, seq) : nil
            }
        }

        /// What the shard's commit writes for a batch.
        func commit(upserts: [(Sample, Int64)], deletes: [(String, String)]) {
            for (s, seq) in upserts { entries[s.user, default: [:]][s.uuid] = .live(s, seq: seq) }
            for (user, uuid) in deletes { entries[user, default: [:]][uuid] = .tombstoned }
        }
    }

    /// Applies `events` in random batches through a cached ledger, as the projector does,
    /// and returns the rows it wrote.
    static func projected(_ events: [Event], seed: UInt64, budget: (inout SplitMix64) -> Int) throws -> (rows: [DayTotal], store: MemoryStore, ledger: Ledger) {
        var rng = SplitMix64(seed: seed ^ 0xCAC4E)
        let store = MemoryStore()
        let ledger = Ledger(priority: LogGenerator.priority, store: store, cacheBudgetBytes: budget(&rng))
        var rows: [DayKey: DayTotal] = [:]
        var i = 0
        while i < events.count {
            let n = 1 + rng.below(7)
            let batch = Array(events[i..<min(events.count, i + n)])
            try ledger.load(for: batch)
            var dirty = Set<DayKey>()
            var upserts: [(Sample, Int64)] = []
            var deletes: [(String, String)] = []
            for (j, e) in batch.enumerated() {
                // The answer the projector takes from apply is the one storeLacks gives just before.
                var asked = false
                if case .sampleAdded(let s) = e { asked = ledger.storeLacks(user: s.user, uuid: s.uuid) }
                var changed = Set<DayKey>()
                var storeLacks = !asked
                ledger.apply(e, at: Int64(i + j), dirty: &changed, storeLacks: &storeLacks)
                if case .sampleAdded = e, storeLacks != asked {
                    Issue.record("apply said storeLacks \(storeLacks), storeLacks(user:uuid:) said \(asked) for \(e)")
                }
                switch e {
                case .sampleAdded(let s): if !changed.isEmpty { upserts.append((s, Int64(i + j))) }
                case .sampleDeleted(let u, let id): deletes.append((u, id))
                case .sourceCheckedIn: break
                }
                dirty.formUnion(changed)
            }
            for (key, total) in ledger.recompute(dirty) { rows[key] = total }
            store.commit(upserts: upserts, deletes: deletes)
            ledger.cacheBudgetBytes = budget(&rng)
            ledger.evictIfOverBudget()
            i += n
        }
        return (rows.values.sorted { $0.key < $1.key }, store, ledger)
    }

    static func inMemory(_ events: [Event]) -> [DayTotal] {
        let ledger = Ledger(priority: LogGenerator.priority)
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        return ledger.allTotals()
    }

    @Test(arguments: PropertyTests.seeds)
    func evictingEverythingAfterEveryBatchChangesNoRow(seed: UInt64) throws {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let (rows, _, ledger) = try Self.projected(events, seed: seed) { _ in 0 }
        #expect(rows == Self.inMemory(events), "seed \(seed)")
        #expect(ledger.cachedUserCount == 0 && ledger.cachedBytes == 0)
    }

    @Test(arguments: PropertyTests.seeds)
    func randomBudgetsChangeNoRow(seed: UInt64) throws {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let (rows, _, _) = try Self.projected(events, seed: seed) { rng in [0, 500, 2_000, 20_000, Int.max][rng.below(5)] }
        #expect(rows == Self.inMemory(events), "seed \(seed)")
    }

    @Test(arguments: PropertyTests.seeds.prefix(20))
    func redeliveriesThroughAnEmptyCacheChangeNothing(seed: UInt64) throws {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        var rng = SplitMix64(seed: seed ^ 0xD0D0)
        let i = rng.below(events.count)
        var twice = events
        twice.insert(events[i], at: i + 1)
        let (rows, _, _) = try Self.projected(twice, seed: seed) { _ in 0 }
        #expect(rows == Self.inMemory(events), "event \(i) twice (seed \(seed))")
    }

    @Test func aDeletedSampleStaysDeletedAfterEviction() throws {
        // watch 600 09:00–10:00 is deleted; every batch evicts; then the watch sample is
        // re-sent, and must stay deleted (its tombstone comes back from the store).
        // phone 840 over 09:00–10:30 wins all of it; manual 300 over 09:00–11:00 keeps
        // 10:30–11:00 = 300 × 30/120 = 75 → 915. Resurrecting the watch would give
        // 600 + phone's 10:00–10:30 (280) + 75 = 955; the naive sum is 1140, the max 840.
        let phone = added("p", "phone", "2024-05-06T09:00:00Z", "2024-05-06T10:30:00Z", 840, zone: "UTC")
        let manual = added("m", "manual", "2024-05-06T09:00:00Z", "2024-05-06T11:00:00Z", 300, zone: "UTC")
        let watch = added("w", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        let events: [Event] = [watch, phone, manual, deleted("w"), watch]
        let (rows, store, _) = try Self.projected(events, seed: 7) { _ in 0 }
        #expect(rows.count == 1)
        #expect(rows.first?.summary == .cumulative(value: 915, sources: [SourceShare(source: "phone", value: 840), SourceShare(source: "manual", value: 75)]))
        #expect(store.entryLookups > 0)
        expectDiscriminating([phone, manual], total: 915)
    }

    @Test func aLoadHandsBackEachEventsUUIDHashAndApplyingWithItGivesTheSameRows() throws {
        // One batch: two adds of ana's, a delete of the first, a check-in. The load returns
        // NameHash.of each sample event's uuid (0 for the check-in); applied with those
        // hashes, the ledger keeps c's 120 steps (the naive sum of all adds 620, the max 500)
        // and knows a is deleted, as the ledger applying without hashes does.
        let events: [Event] = [
            added("a", "phone", "2024-05-01T09:00:00Z", "2024-05-01T10:00:00Z", 500, zone: "UTC"),
            added("c", "phone", "2024-05-01T11:00:00Z", "2024-05-01T12:00:00Z", 120, zone: "UTC"),
            .sampleDeleted(user: "ana", uuid: "a"),
            .sourceCheckedIn(CheckIn(user: "ana", source: "phone", at: Instant(nanoseconds: 1_714_560_000_000_000_000))),
        ]
        let staged = StagedBatch(events)
        var rows: [[DayKey: DayTotal]] = []
        for withHashes in [true, false] {
            let ledger = Ledger(priority: LogGenerator.priority, store: MemoryStore(), cacheBudgetBytes: Int.max)
            var context = try ledger.load(staged)
            #expect(context.hashes == [NameHash.of("a"), NameHash.of("c"), NameHash.of("a"), 0])
            var dirty = DirtyDays()
            for i in 0..<staged.count {
                var lacks = false
                let item = staged.events[i]
                if item.kind == .added {
                    if withHashes {
                        ledger.apply(staged, at: i, context: &context, dirty: &dirty, storeLacks: &lacks)
                    } else {
                        ledger.apply(added: staged.sample(at: i), at: item.position, dirty: &dirty, storeLacks: &lacks, uuidHash: nil)
                    }
                } else {
                    ledger.apply(staged.event(at: i), at: item.position, dirty: &dirty, storeLacks: &lacks)
                }
            }
            #expect(ledger.isTombstoned(user: "ana", uuid: "a"))
            rows.append(ledger.recompute(dirty.keys).compactMapValues { $0 })
        }
        #expect(rows[0] == rows[1])
        #expect(rows[0].values.map(\.summary) == [.cumulative(value: 120, sources: [SourceShare(source: "phone", value: 120)])])
    }

    @Test func aUserKeepsKnowingItsUUIDsAfterEviction() throws {
        // ana's first sample a (500 steps, 2024-05-01) is evicted by a budget one byte under
        // what the cache holds once b (2024-05-20) is in: a's day is the coldest. ana stays
        // cached, so her next new uuid c needs no lookup in the store (the ledger remembers
        // what it evicted, by hash); a re-sent with version 2 and 300 steps does, and replaces
        // the stored a: 2024-05-01 is 300 (the naive sum 800, the max 500).
        let store = MemoryStore()
        let ledger = Ledger(priority: LogGenerator.priority, store: store, cacheBudgetBytes: Int.max)
        var rows: [DayKey: DayTotal] = [:]
        var position: Int64 = 0
        func batch(_ events: [Event]) throws {
            for (key, total) in try Self.commit(events, ledger: ledger, store: store, position: &position) { rows[key] = total }
        }
        let a = added("a", "phone", "2024-05-01T09:00:00Z", "2024-05-01T10:00:00Z", 500, zone: "UTC")
        try batch([a])
        try batch([added("b", "phone", "2024-05-20T09:00:00Z", "2024-05-20T10:00:00Z", 200, zone: "UTC")])
        ledger.cacheBudgetBytes = ledger.cachedBytes - 1
        ledger.evictIfOverBudget()
        #expect(ledger.cacheEvictions > 0 && ledger.cachedUserCount == 1)
        #expect(store.entryLookups == 0)

        try batch([added("c", "phone", "2024-05-20T11:00:00Z", "2024-05-20T12:00:00Z", 100, zone: "UTC")])
        #expect(store.entryLookups == 0, "a uuid ana never had was looked up")
        #expect(!ledger.storeLacks(user: "ana", uuid: "a"))

        guard case .sampleAdded(var edited) = a else { return }
        edited.version = 2
        edited.value = 300
        try batch([.sampleAdded(edited)])
        #expect(store.entryLookups == 1, "the evicted uuid a must be looked up")
        #expect(rows[DayKey(user: "ana", metric: .steps, day: CivilDay("2024-05-01")!)]?.summary
                == .cumulative(value: 300, sources: [SourceShare(source: "phone", value: 300)]))
        #expect(rows[DayKey(user: "ana", metric: .steps, day: CivilDay("2024-05-20")!)]?.summary
                == .cumulative(value: 300, sources: [SourceShare(source: "phone", value: 300)]))
    }

    /// One batch as the projector runs it: loaded, applied from `position` on, recomputed,
    /// written to `store`, then the cache evicted to its budget; the rows recomputed.
    static func commit(_ events: [Event], ledger: Ledger, store: MemoryStore, position: inout Int64) throws -> [DayKey: DayTotal?] {
        try ledger.load(for: events)
        var dirty = Set<DayKey>()
        var upserts: [(Sample, Int64)] = []
        for event in events {
            if ledger.apply(event, at: position, dirty: &dirty), case .sampleAdded(let s) = event { upserts.append((s, position)) }
            position += 1
        }
        let rows = ledger.recompute(dirty)
        store.commit(upserts: upserts, deletes: [])
        ledger.evictIfOverBudget()
        return rows
    }

    /// ana, new to the store, sends `perDay` half-minute samples a day for `days` days, a
    /// batch a day, through a cache of `budget` bytes; the store's uuid lookups so far after
    /// each day.
    static func dailyBatches(days: Int, perDay: Int, budget: Int) throws -> (lookups: [Int], ledger: Ledger) {
        let store = MemoryStore()
        let ledger = Ledger(priority: LogGenerator.priority, store: store, cacheBudgetBytes: budget)
        var position: Int64 = 0
        var lookups: [Int] = []
        let first = CivilDay("2024-01-01")!.number
        for day in 0..<days {
            let date = CivilDay(number: first + Int32(day)).description
            let events: [Event] = (0..<perDay).map { i in
                let minute = i % 60, hour = 6 + i / 60
                let at = "\(date)T\(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute)"
                return added("ana-\(day)-\(i)", "watch", at + ":00Z", at + ":30Z", 10, zone: "UTC")
            }
            _ = try commit(events, ledger: ledger, store: store, position: &position)
            lookups.append(store.entryLookups)
        }
        return (lookups, ledger)
    }

    @Test func newUUIDsNeedNoLookupLongAfterTheOldSetOfEvictedHashesWouldHaveBeenForgotten() throws {
        // 400 samples a day (~100 KB in the cache's reckoning), a cache of 256 KiB: each
        // batch evicts older days, ~11,000 uuids in 30 days. The filter (an eighth of the
        // budget, 32 KiB: capacity 30,932) keeps every one known, so no uuid is looked up;
        // a set of hashes at 16 bytes each within a quarter of the budget (4,096) forgot
        // them all after ~10 days, and each day's 400 were looked up from then on (7,600
        // or more by day 30).
        let (lookups, ledger) = try Self.dailyBatches(days: 30, perDay: 400, budget: 256 << 10)
        #expect(ledger.cacheEvictions > 20, "the cache must be too small for the month")
        // (A uuid the filter mistakes for an evicted one is looked up: ~0.06 % of them here.)
        #expect((lookups.last ?? .max) < 100, "\(lookups)")
    }

    @Test func onceTheFilterCannotGrowEveryUsersUUIDsAreForgottenAndLookedUpAgain() throws {
        // 100 samples a day (~25 KB), a cache of 64 KiB: the filter is 8 KiB (capacity 7,733
        // uuids), then a second of 16 KiB (15,466); a third would pass half the budget. About
        // 100 uuids are evicted a day from the third on, so the first fills near day 80 and
        // the second near day 235. Before, a uuid is looked up only when a filter mistakes
        // it for an evicted one (a few a day: under 2 % a full filter); after, ana's uuids
        // are forgotten and each day's 100 new ones are looked up.
        let (lookups, _) = try Self.dailyBatches(days: 250, perDay: 100, budget: 64 << 10)
        #expect(lookups[30] < 30, "\(lookups)")
        // With one filter, lookups resumed near day 80: 100 a day.
        #expect(lookups[150] - lookups[120] < 300, "\(lookups)")
        #expect(lookups[249] - lookups[248] == 100, "\(lookups)")
    }

    @Test func aLoadJoinsTheDaysItsEventsNeedIntoTheFewestRanges() {
        // 1...5 and 3...7 overlap, 8...9 touches them, 11...12 stands apart, 4...4 lies inside.
        #expect(Ledger.merged([3...7, 11...12, 1...5, 8...9, 4...4]) == [1...9, 11...12])
        #expect(Ledger.merged([2...2]) == [2...2])
        #expect(Ledger.merged([]) == [])
    }

    @Test func aBatchCountsEachDayWindowOnce() throws {
        // Three one-hour samples of a user the store has nothing of, on 2024-05-06, in one
        // batch: they need the same UTC day ± 2, so the load counts 5 windows, not 15.
        let ledger = Ledger(priority: LogGenerator.priority, store: MemoryStore(), cacheBudgetBytes: Int.max)
        let batch = (1...3).map { added("s\($0)", "watch", "2024-05-06T0\($0):00:00Z", "2024-05-06T0\($0 + 1):00:00Z", 100, zone: "UTC") }
        try ledger.load(for: batch)
        #expect(ledger.cacheHits == 5 && ledger.cacheMisses == 0)
    }

    @Test func cacheHitsMissesAndEvictionsCountDayWindows() throws {
        // Each one-hour steps sample on 2024-05-06 needs its UTC day ± 2: 5 windows a batch.
        // 1. a user the store has nothing of: complete, 5 hits, nothing read;
        // 2. its 5 windows evicted (budget 0), so the next batch reads all 5 from the store:
        //    5 misses; 3. still cached (budget unlimited): 5 hits. Hits 10, misses 5,
        //    evictions 5 (windows, as hits and misses are).
        let store = MemoryStore()
        let ledger = Ledger(priority: LogGenerator.priority, store: store, cacheBudgetBytes: Int.max)
        let samples = ["a", "b", "c"].enumerated().map { i, id in
            added(id, "watch", "2024-05-06T0\(i + 1):00:00Z", "2024-05-06T0\(i + 2):00:00Z", 100, zone: "UTC")
        }
        for (i, event) in samples.enumerated() {
            try ledger.load(for: [event])
            var dirty = Set<DayKey>()
            _ = ledger.apply(event, at: Int64(i), dirty: &dirty)
            _ = ledger.recompute(dirty)
            if case .sampleAdded(let s) = event { store.commit(upserts: [(s, Int64(i))], deletes: []) }
            ledger.cacheBudgetBytes = i == 0 ? 0 : Int.max
            ledger.evictIfOverBudget()
        }
        #expect(ledger.cacheHits == 10)
        #expect(ledger.cacheMisses == 5)
        #expect(ledger.cacheEvictions == 5)
    }

    @Test func evictionDropsTheOldestDaysOfABatchFirst() throws {
        // One batch of a user's steps, a one-hour sample on each of 2024-05-01 … 05-10 (UTC):
        // every window it loads has the same clock. A budget of two thirds of what is cached
        // evicts down to half (3/4 of the budget); the oldest days go first, so a sample on
        // 05-10, the day an arrival-order log goes on with, finds its 5 windows (05-08 …
        // 05-12) cached: 5 hits, no miss. (Ties broken in table order evicted days at random
        // and the next batch read its own days back: 28 % of the misses on the
        // 262,482-event log.)
        let store = MemoryStore()
        let ledger = Ledger(priority: LogGenerator.priority, store: store, cacheBudgetBytes: Int.max)
        let days = (1...10).map { added("s\($0)", "watch", "2024-05-\($0 < 10 ? "0" : "")\($0)T09:00:00Z", "2024-05-\($0 < 10 ? "0" : "")\($0)T10:00:00Z", 100, zone: "UTC") }
        try ledger.load(for: days)
        var dirty = Set<DayKey>()
        for (i, e) in days.enumerated() { _ = ledger.apply(e, at: Int64(i), dirty: &dirty) }
        _ = ledger.recompute(dirty)
        store.commit(upserts: days.enumerated().compactMap { i, e in if case .sampleAdded(let s) = e { (s, Int64(i)) } else { nil } }, deletes: [])
        ledger.evictIfOverBudget() // adds up what is cached (within the budget: nothing goes)
        let cached = ledger.cachedBytes
        #expect(cached > 0 && ledger.cacheEvictions == 0)
        ledger.cacheBudgetBytes = cached / 3 * 2
        ledger.evictIfOverBudget()
        #expect(ledger.cacheEvictions > 0 && ledger.cachedBytes <= cached / 2)
        let (hits, misses) = (ledger.cacheHits, ledger.cacheMisses)
        try ledger.load(for: [added("t", "watch", "2024-05-10T11:00:00Z", "2024-05-10T12:00:00Z", 100, zone: "UTC")])
        #expect(ledger.cacheMisses == misses, "the latest days were evicted")
        #expect(ledger.cacheHits == hits + 5)
    }

    /// A month of four users in arrival order (by the hour, users interleaved), with late
    /// edits and deletions of old days, through a cache that holds only about a week of
    /// days in all: cold days are evicted, every user's recent days stay, and no row changes.
    static func arrivalOrderMonth(seed: UInt64) -> [Event] {
        var rng = SplitMix64(seed: seed)
        var events: [Event] = []
        var hourly: [[Sample]] = []
        let users = ["ana", "bo", "cy", "di"]
        let zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"]
        let first = Int64(CivilDay("2024-03-01")!.number) * 86_400
        for hour in 0..<(30 * 24) {
            var batch: [Sample] = []
            for (u, user) in users.enumerated() where rng.below(3) > 0 {
                let start = first + Int64(hour) * 3_600 + Int64(rng.below(30)) * 60
                // The watch and the phone count the same walk: overlapping, never to be summed.
                for (source, minutes) in [("watch", 40), ("phone", 50)] {
                    batch.append(Sample(user: user, uuid: "\(user)-\(hour)-\(source)", metric: .steps, source: source,
                                        start: Instant(seconds: start), end: Instant(seconds: start + Int64(minutes) * 60),
                                        value: Double(100 + rng.below(900)), zone: zones[u]))
                }
            }
            hourly.append(batch)
            events += batch.map { .sampleAdded($0) }
            // Now and then a late edit (a higher version) or a deletion of a sample days old.
            if hour > 96, rng.below(8) == 0, let old = hourly[hour - 72 - rng.below(24)].first {
                var edited = old
                edited.version = 2
                edited.value += 1_000
                events.append(rng.below(2) == 0 ? .sampleAdded(edited) : .sampleDeleted(user: old.user, uuid: old.uuid))
            }
        }
        return events
    }

    @Test(arguments: PropertyTests.seeds.prefix(10))
    func anArrivalOrderMonthThroughASmallCacheKeepsRecentDaysAndChangesNoRow(seed: UInt64) throws {
        let events = Self.arrivalOrderMonth(seed: seed)
        let (rows, _, ledger) = try Self.projected(events, seed: seed) { _ in 60_000 }
        #expect(rows == Self.inMemory(events), "seed \(seed)")
        #expect(ledger.cacheEvictions > 0, "the cache must have been too small for the month")
        // Day windows were dropped, users were not: each keeps its recent days.
        #expect(ledger.cachedUserCount == 4, "users cached: \(ledger.cachedUserCount)")
        #expect(ledger.cachedBytes <= 60_000)
        // Overlapping sources are not summed: the rows add up to less than the samples in force.
        let total = rows.reduce(0.0) { sum, row in
            if case .cumulative(let value, _) = row.summary { return sum + value }
            return sum
        }
        #expect(total < Self.naiveSum(events) - 1_000, "rows \(total), naive \(Self.naiveSum(events)), seed \(seed)")
    }

    /// The plain sum of every sample in force (deleted stays deleted), for the check above.
    static func naiveSum(_ events: [Event]) -> Double {
        var live: [String: Sample] = [:]
        var deleted: Set<String> = []
        for e in events {
            switch e {
            case .sampleAdded(let s):
                if !deleted.contains(s.uuid), live[s.uuid].map({ $0.version <= s.version }) ?? true { live[s.uuid] = s }
            case .sampleDeleted(_, let uuid):
                live[uuid] = nil
                deleted.insert(uuid)
            case .sourceCheckedIn: break
            }
        }
        return live.values.reduce(0) { $0 + $1.value }
    }
}
