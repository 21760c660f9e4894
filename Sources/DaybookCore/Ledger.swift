import DaybookSupport

/// The incremental state of the rollup: live samples and tombstones, indexed so that one
/// event can be applied and only the days it touches recomputed.
///
/// Use it in one of two ways, which give identical rows (the tests check this):
/// - batch: `apply` every event of the log, then `allTotals()`;
/// - incremental: `apply` one event, which returns the keys it made dirty, then
///   `recompute(_:)` just those and store the rows (nil means "delete the row").
///
/// A ledger made without a store holds everything in memory. A ledger made with a
/// `LedgerStore` is a cache over it: before a batch, `load(for:)` fetches from the store
/// exactly what applying those events and recomputing their days will read (each uuid's
/// stored version, and the samples of each (user, metric) near the events' days); after
/// the batch is durably written, `evictIfOverBudget()` drops the least recently used
/// users until the cache fits its byte budget. Nothing is lost by eviction: the store holds
/// everything the ledger held once the batch is written. The ledger itself does no I/O.
///
/// Complexity: `apply` is O(b + z·d) for b samples sharing the sample's UTC days
/// (only their zones are read), z distinct zones among them (usually 1) and d days the
/// sample spans (at most 8). `recompute` of a run of k adjacent days is O(m log m) for the
/// m samples overlapping those days ± 1. `allTotals` is O(n log n) for n live samples.
///
/// Not thread-safe: one owner applies and reads (a projector owns one ledger per shard).
public final class Ledger {
    public let priority: SourcePriority
    /// Where evicted and never-loaded state lives; nil: everything is in memory.
    private let store: (any LedgerStore)?
    /// The most the cache may hold between batches, in (estimated) bytes.
    public var cacheBudgetBytes: Int

    private var sources: [String] = []
    private var sourceIDs: [String: Int32] = [:]
    private var rankTables: [Metric: [Int32]] = [:]
    private var zones: [ZoneRules] = []
    private var zoneIDs: [String: Int32] = [:]
    private var users: [NameKey: UserState] = [:]
    /// The store's numbers of source and zone names (`LedgerStore.records`) → the ledger's ids.
    private var storeSources = IntTable<Int64, Int32>()
    private var storeZones = IntTable<Int64, Int32>()
    /// Advances once per `load`: a user's `lastUse` says how recently it was needed.
    private var clock: UInt64 = 0
    /// Users whose estimated size may have changed since the last `evictIfOverBudget`.
    private var touched: [UserState] = []
    /// Estimated bytes of the cached users (see `UserState.estimatedBytes`).
    public private(set) var cachedBytes = 0
    /// The uuids evicted from users who knew all of theirs (made at the first such
    /// eviction, an eighth of the budget, growing to at most half of it; counted in it
    /// beside `cachedBytes`).
    private var evicted: GrowingEvictedUUIDs?
    private var evictedBytes: Int { evicted?.bytes ?? 0 }

    /// An in-memory ledger (rollups of a file, tests, benchmarks).
    public init(priority: SourcePriority = .builtIn) {
        self.priority = priority
        store = nil
        cacheBudgetBytes = .max
    }

    /// A ledger that caches `store` within `cacheBudgetBytes`. It starts empty: opening it
    /// reads nothing.
    public init(priority: SourcePriority, store: any LedgerStore, cacheBudgetBytes: Int) {
        self.priority = priority
        self.store = store
        self.cacheBudgetBytes = cacheBudgetBytes
    }

    /// Number of live (not deleted) samples applied minus those removed (meaningful for an
    /// in-memory ledger; a cached ledger counts only what passed through it).
    public private(set) var liveSampleCount = 0

    /// `sample-added` events ignored because the sample in force had a higher version.
    public private(set) var staleResendCount = 0

    /// Users in the cache.
    public var cachedUserCount: Int { users.count }

    /// (user, metric, UTC day) windows a `load` needed that the cache already held (or
    /// that a user the store has nothing of cannot need), since the ledger was made.
    public private(set) var cacheHits = 0
    /// (user, metric, UTC day) windows a `load` had to read from the store.
    public private(set) var cacheMisses = 0
    /// (user, metric, UTC day) windows dropped from the cache to fit its budget (their
    /// samples stay in the store).
    public private(set) var cacheEvictions = 0

    // MARK: Loading from the store

    /// Fetches from the store what applying `events` and then recomputing the days they
    /// make dirty will read. Call it before applying a batch; between it and the end of the
    /// batch nothing is evicted. Does nothing for an in-memory ledger.
    public func load(for events: some Collection<Event>) throws {
        _ = try load(StagedBatch(events))
    }

    /// What a staged batch's names are in this ledger, each resolved once however many of
    /// the batch's events name it: the users' cached states, the sources' and zones' ids.
    /// Made by `load(_:)` and used by `apply(_:at:context:dirty:storeLacks:)` for the same
    /// batch, with no eviction between them.
    public struct BatchContext {
        /// Each event's uuid hash (`SampleUUID.hash64`; 0 for a check-in), computed by the
        /// load; empty for an in-memory ledger, which loads nothing (apply hashes then).
        public fileprivate(set) var hashes: [UInt64] = []
        fileprivate var states: [UserState?]
        fileprivate var sourceIDs: [Int32]
        fileprivate var zoneIDs: [Int32]

        fileprivate init(names: Int) {
            states = [UserState?](repeating: nil, count: names)
            sourceIDs = [Int32](repeating: -1, count: names)
            zoneIDs = [Int32](repeating: -1, count: names)
        }
    }

    /// Fetches from the store what applying the staged `batch` and then recomputing the days
    /// it makes dirty will read (as `load(for:)`), walking the events' plain fields in place.
    /// - Returns: the batch's context, with each event's uuid hash, for
    ///   `apply(_:at:context:dirty:storeLacks:)`.
    @discardableResult
    public func load(_ batch: StagedBatch) throws -> BatchContext {
        var context = BatchContext(names: batch.names.count)
        guard let store else { return context }
        clock += 1
        context.hashes = [UInt64](repeating: 0, count: batch.count)
        try store.reading { try load(batch, into: &context, from: store) }
        return context
    }

    /// The cached state of name `user` of the batch, resolved once per batch; `created` is
    /// set when the cache had none (`user(_:created:)`).
    @inline(__always)
    private func state(_ user: Int32, in context: inout BatchContext, of batch: StagedBatch, created: inout Bool) -> UserState {
        if let state = context.states[Int(user)] { return state }
        let state = self.user(batch.name(user), created: &created)
        context.states[Int(user)] = state
        return state
    }

    private func load(_ batch: StagedBatch, into context: inout BatchContext, from store: any LedgerStore) throws {
        // 1. Each uuid's stored state, for the uuids the cache does not know.
        // Per user (by identity: no id hashed again), the uuids to look up; a uuid twice in
        // the batch is asked twice and answered once.
        var unknown: [ObjectIdentifier: (user: String, state: UserState, uuids: [String])] = [:]
        // What step 2 needs of each sample event, gathered here, so that its uuid is not
        // hashed again.
        var pending: [Pending] = []
        pending.reserveCapacity(batch.count)
        for i in batch.events.indices {
            let e = batch.events[i] // plain data: a copy retains nothing
            if e.kind == .checkedIn { continue } // no sample state
            var added: (metric: Metric, days: ClosedRange<Int32>)?
            if e.kind == .added {
                added = (e.metric, Ledger.loadRange(start: e.start.nanoseconds, end: e.end.nanoseconds, metric: e.metric))
            }
            var isNew = false
            let state = self.state(e.user, in: &context, of: batch, created: &isNew)
            // A user the store has nothing of is wholly in the cache from now until evicted:
            // every row of theirs is written through this ledger.
            if isNew {
                let none = try !store.hasEntries(user: batch.name(e.user))
                state.complete = none
                state.uuidsKnown = none
            }
            let key = UUIDKey(batch.uuid(of: e))
            if state.uuids[key] == nil, storeMayHold(key, of: state) {
                unknown[ObjectIdentifier(state), default: (batch.name(e.user), state, [])].uuids.append(key.uuid.text)
            }
            context.hashes[i] = key.hash
            pending.append(Pending(state: state, user: e.user, uuid: key, added: added))
        }
        for (userID, state, uuids) in unknown.values {
            for (uuid, entry) in try store.entries(user: userID, uuids: uuids) {
                switch entry {
                case .absent: state.uuids[UUIDKey(SampleUUID(uuid))] = .absent
                case .tombstoned: state.uuids[UUIDKey(SampleUUID(uuid))] = .tombstoned
                case .live(let sample, let seq):
                    // Its record comes with its days; a store that did not return it there
                    // still gets it in (the ledger must know every version in force it replaces).
                    try ensureLoaded(Ledger.loadRange(start: sample.start.nanoseconds, end: sample.end.nanoseconds, metric: sample.metric),
                                     metric: sample.metric, state: state, user: userID, store: store)
                    // The load brought its record without naming its uuid (records read back are
                    // not in `uuids`): named here, the record added only if the store did not
                    // return it with its days.
                    if state.uuids[UUIDKey(sample.compactUUID)] == nil {
                        var metricState = state.metrics[sample.metric] ?? MetricState()
                        state.metrics[sample.metric] = nil // keep the state uniquely referenced while it changes
                        cacheIfUnknown(makeRecord(sample, seq: seq), metric: sample.metric, in: &metricState, of: state)
                        state.metrics[sample.metric] = metricState
                    }
                }
            }
        }
        // 2. The samples near every version an event adds or replaces: the days each needs,
        // gathered per (user, metric) and merged where they overlap or touch, so that a batch
        // probes each window once however many of its events need it.
        var needs: [NeedKey: (state: UserState, user: Int32, days: [ClosedRange<Int32>])] = [:]
        var lastNeed: (key: NeedKey, days: ClosedRange<Int32>)?
        func need(_ state: UserState, _ userID: Int32, _ metric: Metric, _ days: ClosedRange<Int32>) {
            let key = NeedKey(state: ObjectIdentifier(state), metric: metric)
            if let last = lastNeed, last.key == key, last.days == days { return } // the usual case: the same days again
            lastNeed = (key, days)
            if let last = needs[key]?.days.last, last == days { return }
            needs[key, default: (state, userID, [])].days.append(days)
        }
        // Nothing is evicted during a load: the users of step 1 are still cached.
        // By index, fields read in place: a `for` copied each entry (a reference, a String,
        // a key) through its value witness.
        pending.withUnsafeBufferPointer { pending in
            for i in pending.indices {
                let state = pending[i].state
                if let added = pending[i].added { need(state, pending[i].user, added.metric, added.days) }
                if case .live(let metric, let seq)? = state.uuids[pending[i].uuid], let r = state.metrics[metric]?.records[seq] {
                    need(state, pending[i].user, metric, Ledger.loadRange(start: r.start, end: r.end, metric: metric))
                }
            }
        }
        for (key, need) in needs {
            for days in Ledger.merged(need.days) {
                try ensureLoaded(days, metric: key.metric, state: need.state, user: batch.name(need.user), store: store)
            }
        }
    }

    /// A sample event of a batch being loaded: its user (a name of the batch) and uuid, and
    /// what an add needs.
    private struct Pending {
        var state: UserState
        var user: Int32
        var uuid: UUIDKey
        var added: (metric: Metric, days: ClosedRange<Int32>)?
    }

    /// A (cached user, metric) whose days a load gathers.
    private struct NeedKey: Hashable {
        var state: ObjectIdentifier
        var metric: Metric

        /// The object's address and the metric mixed without SipHash (~120 instructions a probe).
        func hash(into hasher: inout Hasher) { hasher.combine(mixed) }
        func _rawHashValue(seed: Int) -> Int { NameHash.table(mixed, seed: seed) }
        private var mixed: UInt64 {
            (UInt64(UInt(bitPattern: state)) &+ UInt64(metric.storageCode)) &* 0x9E37_79B9_7F4A_7C15
        }
    }

    /// `ranges` as the fewest ranges covering the same days (overlapping or adjacent ones joined).
    static func merged(_ ranges: [ClosedRange<Int32>]) -> [ClosedRange<Int32>] {
        guard ranges.count > 1 else { return ranges }
        var out: [ClosedRange<Int32>] = []
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = out.last, r.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return out
    }

    /// UTC days whose samples a version of a sample can touch, as a change or a recompute:
    /// its own days (for heart rate: its start's) ± 2 (civil days lie within their UTC day
    /// ± 1, and a recompute reads the days around them ± 1).
    private static func loadRange(start: Int64, end: Int64, metric: Metric) -> ClosedRange<Int32> {
        widen(MetricState.loadDays(start: start, end: end, cumulative: metric.isCumulative))
    }

    private static func widen(_ days: ClosedRange<Int32>) -> ClosedRange<Int32> {
        (days.lowerBound - 2)...(days.upperBound + 2)
    }

    private func ensureLoaded(_ days: ClosedRange<Int32>, metric: Metric, state: UserState, user userID: String,
                              store: any LedgerStore) throws {
        guard !state.complete else {
            // Everything of the user is here; the days are marked, so that eviction finds them.
            cacheHits += days.count
            var metricState = state.metrics[metric] ?? MetricState()
            state.metrics[metric] = nil // keep the state uniquely referenced while it changes
            for d in days { metricState.dayUse[d] = clock }
            state.metrics[metric] = metricState
            return
        }
        var day = days.lowerBound
        while day <= days.upperBound {
            if state.metrics[metric]?.dayUse.replaceExisting(day, with: clock) ?? false {
                cacheHits += 1
                day += 1
                continue
            }
            var last = day
            while last < days.upperBound, !(state.metrics[metric]?.isLoaded(last + 1) ?? false) { last += 1 }
            cacheMisses += Int(last - day) + 1
            // Records with the store's numbers of their names where the store has them (no
            // Sample made, each name looked up once for the ledger's life), else samples.
            let records = try store.records(user: userID, metric: metric, days: day...last)
            let stored = records == nil ? try store.samples(user: userID, metric: metric, days: day...last) : []
            var metricState = state.metrics[metric] ?? MetricState()
            state.metrics[metric] = nil // keep the state uniquely referenced while it changes
            for d in day...last { metricState.dayUse[d] = clock }
            // Records read back go into the day index only, not into `uuids`: the store holds
            // them, so an event naming one of their uuids looks it up (`storeMayHold`: the
            // filter of evicted uuids has it, or the user's uuids are not all known) and names
            // it then. Naming every one cost a uuid hash, a probe and an insert at each load and
            // a removal at each eviction, and 96 bytes of the budget a record.
            // The cache is never ahead of the store at a load (everything applied is
            // written before the next batch loads), so what the store holds of these days is
            // the version in force of each uuid.
            if let records {
                for r in records where metricState.records[r.seq] == nil {
                    let record = Record(start: r.start, end: r.end, value: r.value, seq: r.seq, version: r.version,
                                        source: try ledgerID(source: r.source, from: store), zone: try ledgerID(zone: r.zone, from: store),
                                        uuid: r.uuid, named: false)
                    metricState.insert(record, cumulative: metric.isCumulative, zones: zones)
                }
            }
            // By index: a `for` over (sample, seq) pairs copied each through the runtime's
            // generic tuple witness; here a sample already cached is not copied at all.
            stored.withUnsafeBufferPointer { stored in
                for i in stored.indices where metricState.records[stored[i].seq] == nil {
                    var record = makeRecord(stored[i].sample, seq: stored[i].seq)
                    record.named = false
                    metricState.insert(record, cumulative: metric.isCumulative, zones: zones)
                }
            }
            state.metrics[metric] = metricState
            day = last + 1
        }
    }

    /// The ledger's source id of the store's name number `number`, looked up once.
    private func ledgerID(source number: Int64, from store: any LedgerStore) throws -> Int32 {
        if let id = storeSources[number] { return id }
        let id = intern(source: try store.name(numbered: number))
        storeSources[number] = id
        return id
    }

    /// The ledger's zone id of the store's name number `number`, looked up once.
    private func ledgerID(zone number: Int64, from store: any LedgerStore) throws -> Int32 {
        if let id = storeZones[number] { return id }
        let id = intern(zone: try store.name(numbered: number))
        storeZones[number] = id
        return id
    }

    /// Puts a stored sample into the cache as the version in force of its uuid, unless the
    /// cache knows the uuid already (its state there is newer than the store's); its record
    /// is added unless a load read it back already.
    private func cacheIfUnknown(_ record: Record, metric: Metric, in metricState: inout MetricState, of state: UserState) {
        let key = UUIDKey(record.uuid)
        guard state.uuids[key] == nil else { return }
        state.uuids[key] = .live(metric: metric, seq: record.seq)
        if metricState.records[record.seq] == nil {
            metricState.insert(record, cumulative: metric.isCumulative, zones: zones)
        } else {
            metricState.records[record.seq]?.named = true // read back by the load: named now
        }
    }

    /// Drops what was needed least recently until the cache fits its budget (down to 3/4
    /// of it, so that eviction runs in rounds, not after every batch): first (user, metric,
    /// UTC day) windows, the coldest first, so that an interleaved log keeps every user's
    /// recent days rather than all the days of a few users, and among the windows of one
    /// batch (one clock) the oldest day first, since a log goes on with the latest days
    /// (in table order, the next batch read 28 % of its windows back: BENCHMARKS.md,
    /// "Issue 26, thirteenth steps"); then, if that is not enough
    /// (tombstones, uuids known absent), whole users, least recently used first. Call it
    /// only when everything applied so far has been written to the store.
    public func evictIfOverBudget() {
        for state in touched {
            let bytes = state.estimatedBytes
            cachedBytes += bytes - state.accountedBytes
            state.accountedBytes = bytes
        }
        touched.removeAll(keepingCapacity: true)
        guard store != nil, cachedBytes + evictedBytes > cacheBudgetBytes else { return }
        let target = cacheBudgetBytes / 4 * 3
        recentUsers = RecentNames(capacity: Ledger.recentUserCount)
        // Each window names its user by its place in `states`: no user id is copied or hashed.
        let states = Array(users.values)
        var windows: [(use: UInt64, user: Int32, metric: Metric, day: Int32)] = []
        for (index, state) in states.enumerated() {
            for (metric, m) in state.metrics.all {
                m.dayUse.forEach { day, use in windows.append((use, Int32(index), metric, day)) }
            }
        }
        windows.sort { ($0.use, $0.day) < ($1.use, $1.day) }
        var shrunk: [ObjectIdentifier: UserState] = [:]
        var dropped: [SampleUUID] = []
        for w in windows {
            guard cachedBytes + evictedBytes > target else { break }
            let state = states[Int(w.user)]
            guard var m = state.metrics[w.metric] else { continue }
            state.metrics[w.metric] = nil // keep the state uniquely referenced while it changes
            dropped.removeAll(keepingCapacity: true)
            m.evict(w.day, cumulative: w.metric.isCumulative, zones: zones, dropped: &dropped)
            for uuid in dropped {
                let key = UUIDKey(uuid)
                // The store holds it now: remembered by its hash, so that a uuid the user
                // never had still needs no lookup. (A record read back is not named in
                // `uuids`, and `evict` leaves it out: it was remembered when it first left.)
                state.uuids[key] = nil
                if state.uuidsKnown { rememberEvicted(key, of: state) }
            }
            state.metrics[w.metric] = m
            state.complete = false // the store now holds what the cache does not
            cacheEvictions += 1
            shrunk[ObjectIdentifier(state)] = state
            let bytes = state.estimatedBytes
            cachedBytes += bytes - state.accountedBytes
            state.accountedBytes = bytes
        }
        // A dictionary keeps its storage when entries leave: give back what eviction emptied.
        for state in shrunk.values { state.compact() }
        guard cachedBytes + evictedBytes > target else { return }
        for (id, state) in users.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard cachedBytes + evictedBytes > target else { break }
            cachedBytes -= state.accountedBytes
            cacheEvictions += state.metrics.all.reduce(0) { $0 + $1.1.dayUse.count }
            users[id] = nil
        }
    }

    /// Remembers that uuid `key` of `state` (whose uuids are all known) left the cache. The
    /// filter is made at the first such eviction, an eighth of the budget (at most
    /// `EvictedUUIDs.largestBytes`: its bits are all written when it is made), and grows by
    /// filters of twice the size up to half the budget (`GrowingEvictedUUIDs`). Once it
    /// cannot grow (or the budget shrank below it), every user's uuids are forgotten: their
    /// new uuids are looked up in the store again until they leave the cache, and the next
    /// eviction starts a new filter (bounded, not growing with history).
    private func rememberEvicted(_ key: UUIDKey, of state: UserState) {
        let filterKey = EvictedUUIDs.key(uuid: key.hash, user: state.nameHash)
        let bytes = min(cacheBudgetBytes / 8, EvictedUUIDs.largestBytes)
        guard let filter = evicted else {
            let made = GrowingEvictedUUIDs(first: bytes, limit: min(cacheBudgetBytes / 2, EvictedUUIDs.largestBytes))
            _ = made.insert(filterKey)
            evicted = made
            return
        }
        if filter.firstBytes > bytes || !filter.insert(filterKey) {
            evicted = nil
            for user in users.values { user.uuidsKnown = false }
        }
    }

    /// Forgets everything cached (after a failed write, the cache may be ahead of the store).
    public func dropCache() {
        guard store != nil else { return }
        recentUsers = RecentNames(capacity: Ledger.recentUserCount)
        users.removeAll()
        touched.removeAll()
        cachedBytes = 0
        evicted = nil
    }

    // MARK: Applying events

    /// Applies one event of the log.
    ///
    /// A `sample-added` replaces the sample in force of its uuid if its version is at least
    /// the one in force; a lower version is a stale re-send, ignored and counted in
    /// `staleResendCount`. A deleted uuid stays deleted.
    ///
    /// - Parameter position: the event's position in the log. Positions must increase
    ///   along each uuid's events (a line number, or a Kafka offset within a partition);
    ///   they identify the version in force and never decide a total.
    /// - Returns: the (user, metric, day) keys whose rows may have changed.
    @discardableResult
    public func apply(_ event: Event, at position: Int64) -> Set<DayKey> {
        var dirty = Set<DayKey>()
        apply(event, at: position, dirty: &dirty)
        return dirty
    }

    /// Applies one event and adds the keys it may change to `dirty` (a batch collects them
    /// in one set). Returns whether anything changed.
    @discardableResult
    public func apply(_ event: Event, at position: Int64, dirty: inout Set<DayKey>) -> Bool {
        var storeLacks = false
        return apply(event, at: position, dirty: &dirty, storeLacks: &storeLacks)
    }

    /// Applies one event like `apply(_:at:dirty:)`, and sets `storeLacks` to what
    /// `storeLacks(user:uuid:)` would have answered just before (asked of the same lookup).
    @discardableResult
    public func apply(_ event: Event, at position: Int64, dirty: inout Set<DayKey>, storeLacks: inout Bool) -> Bool {
        var days = DirtyDays()
        let changed = apply(event, at: position, dirty: &days, storeLacks: &storeLacks)
        dirty.formUnion(days.keys)
        return changed
    }

    /// `apply(_:at:dirty:storeLacks:)` gathering the keys in a batch's `DirtyDays`, which
    /// adds a run of one day's events once.
    @discardableResult
    public func apply(_ event: Event, at position: Int64, dirty: inout DirtyDays, storeLacks: inout Bool) -> Bool {
        var changed = false
        switch event {
        case .sampleAdded(let sample):
            changed = apply(added: sample, at: position, dirty: &dirty, storeLacks: &storeLacks)
        case .sampleDeleted(let userID, let uuid):
            let state = user(userID)
            let key = UUIDKey(SampleUUID(uuid))
            changed = remove(uuid: key, from: state, userID: userID, dirty: &dirty)
            state.uuids[key] = .tombstoned
        case .sourceCheckedIn:
            return false // sync state, kept beside the ledger (`SyncState`): no totals change
        }
        return changed
    }

    /// `apply(_:at:dirty:storeLacks:)` of a `sample-added` event, given its sample (a
    /// projection that has already taken the sample out of its event passes it on: taking
    /// it out again copies it).
    /// - Parameter uuidHash: `sample.compactUUID.hash64` when the caller has it (what
    ///   `load(_:)` returned in its context for the event), else nil.
    @discardableResult
    public func apply(added sample: Sample, at position: Int64, dirty: inout DirtyDays, storeLacks: inout Bool,
                      uuidHash: UInt64? = nil) -> Bool {
        let state = user(sample.user)
        // One lookup of the uuid decides everything below.
        let uuidKey = uuidHash.map { UUIDKey(sample.compactUUID, hash: $0) } ?? UUIDKey(sample.compactUUID)
        let current = state.uuids[uuidKey]
        storeLacks = store != nil && self.storeLacks(current, key: uuidKey, of: state)
        if case .tombstoned? = current { return false }
        return put(makeRecord(sample, seq: position), metric: sample.metric, in: state, as: uuidKey, replacing: current,
                   user: sample.user, dirty: &dirty)
    }

    /// Makes `record` (of `metric`, user `state`) the version in force of its uuid, unless
    /// the version in force (`current`) is newer or the same sample: the rule of every add.
    private func put(_ record: Record, metric newMetric: Metric, in state: UserState, as uuidKey: UUIDKey, replacing current: UUIDState?,
                     user: String, dirty: inout DirtyDays) -> Bool {
        if case .live(let metric, let seq)? = current, let existing = state.metrics[metric]?.records[seq] {
            if record.version < existing.version {
                staleResendCount += 1
                return false // A stale re-send: the version in force is newer.
            }
            if metric == newMetric, existing.sameContent(as: record) {
                return false // Redelivery of the version in force: nothing changes.
            }
            remove(existing, metric: metric, from: state, userID: user, dirty: &dirty)
        }
        state.uuids[uuidKey] = .live(metric: newMetric, seq: record.seq)
        state.metrics[newMetric, default: MetricState()].insert(record, cumulative: newMetric.isCumulative, zones: zones)
        liveSampleCount += 1
        collectDirty(record, metric: newMetric, state: state, user: user, into: &dirty)
        return true
    }

    /// `apply(added:at:dirty:storeLacks:uuidHash:)` of the `sample-added` event `i` of a
    /// staged batch, at its position, through the batch's `context` (from `load(_:)`): its
    /// user, source and zone are resolved once per batch, and
    /// nothing of the event is copied but plain fields.
    @discardableResult
    public func apply(_ batch: StagedBatch, at i: Int, context: inout BatchContext, dirty: inout DirtyDays,
                      storeLacks: inout Bool) -> Bool {
        let e = batch.events[i]
        var created = false
        let state = self.state(e.user, in: &context, of: batch, created: &created)
        let uuid = batch.uuid(of: e)
        let uuidKey = context.hashes.isEmpty ? UUIDKey(uuid) : UUIDKey(uuid, hash: context.hashes[i])
        let current = state.uuids[uuidKey]
        storeLacks = store != nil && self.storeLacks(current, key: uuidKey, of: state)
        if case .tombstoned? = current { return false }
        var source = context.sourceIDs[Int(e.source)]
        if source < 0 {
            source = intern(source: batch.name(e.source))
            context.sourceIDs[Int(e.source)] = source
        }
        var zone = context.zoneIDs[Int(e.zone)]
        if zone < 0 {
            zone = intern(zone: batch.name(e.zone))
            context.zoneIDs[Int(e.zone)] = zone
        }
        let record = Record(start: e.start.nanoseconds, end: e.end.nanoseconds, value: e.value, seq: e.position,
                            version: e.version, source: source, zone: zone, uuid: uuid)
        return put(record, metric: e.metric, in: state, as: uuidKey, replacing: current, user: batch.name(e.user), dirty: &dirty)
    }

    /// Applies an event again that the ledger has already seen (a replay below a shard's
    /// offset), without ever stepping back: an add older than the version of its sample in
    /// force changes nothing (the later version stays, as the log says), a deleted sample
    /// stays deleted, and an add that *is* the version in force but differs from the stored
    /// copy, or whose sample is missing, is applied (the log wins over a hand edit). The days
    /// the event covers are dirty in every case, so their rows are recomputed from the
    /// samples: a row edited by hand comes back. Returns whether a sample changed.
    @discardableResult
    public func reapply(_ event: Event, at position: Int64, dirty: inout Set<DayKey>) -> Bool {
        var days = DirtyDays()
        let changed = reapply(event, at: position, dirty: &days)
        dirty.formUnion(days.keys)
        return changed
    }

    /// `reapply(_:at:dirty:)` gathering the keys in a batch's `DirtyDays`.
    @discardableResult
    public func reapply(_ event: Event, at position: Int64, dirty: inout DirtyDays) -> Bool {
        var storeLacks = false
        guard case .sampleAdded(let sample) = event else { return apply(event, at: position, dirty: &dirty, storeLacks: &storeLacks) }
        return reapply(added: sample, at: position, dirty: &dirty)
    }

    /// `reapply(_:at:dirty:)` of a `sample-added` event, given its sample.
    @discardableResult
    public func reapply(added sample: Sample, at position: Int64, dirty: inout DirtyDays) -> Bool {
        var storeLacks = false
        let state = user(sample.user)
        collectDirty(makeRecord(sample, seq: position), metric: sample.metric, state: state, user: sample.user, into: &dirty)
        switch state.uuids[UUIDKey(sample.compactUUID)] {
        case .tombstoned?:
            return false
        case .live(_, let seq)? where seq > position:
            return false
        default:
            return apply(added: sample, at: position, dirty: &dirty, storeLacks: &storeLacks)
        }
    }

    /// Whether the store holds nothing of (`user`, `uuid`), as far as the cache knows: the
    /// uuid's state is "absent", or its user is complete and the uuid unknown. Ask before
    /// applying the uuid's event; a projector passes it on so that the store's write skips
    /// looking the uuid up (`Shard.Batch.storeLacks`). False when the cache does not know.
    public func storeLacks(user: String, uuid: String) -> Bool {
        storeLacks(user: user, uuid: SampleUUID(uuid))
    }

    /// `storeLacks(user:uuid:)` of a uuid in its compact form.
    public func storeLacks(user: String, uuid: SampleUUID) -> Bool {
        guard store != nil, let state = cachedUser(user) else { return false }
        let key = UUIDKey(uuid)
        return storeLacks(state.uuids[key], key: key, of: state)
    }

    /// Whether the store holds nothing of uuid `key`, whose cached state is `uuidState`, of
    /// user `state`.
    private func storeLacks(_ uuidState: UUIDState?, key: UUIDKey, of state: UserState) -> Bool {
        switch uuidState {
        case .absent?: return true
        case nil: return !storeMayHold(key, of: state)
        default: return false
        }
    }

    /// Whether the store may hold uuid `key` of user `state`, which its `uuids` does not name.
    @inline(__always)
    private func storeMayHold(_ key: UUIDKey, of state: UserState) -> Bool {
        guard state.uuidsKnown else { return true }
        guard let evicted else { return false }
        return evicted.mayContain(EvictedUUIDs.key(uuid: key.hash, user: state.nameHash))
    }

    /// Whether `uuid` of `user` has been deleted (and so can never be added again), as far
    /// as the cache knows.
    public func isTombstoned(user: String, uuid: String) -> Bool {
        if case .tombstoned? = cachedUser(user)?.uuids[UUIDKey(SampleUUID(uuid))] { return true }
        return false
    }

    /// The cached state of user `id`, if any. A partition's events name a few users over and
    /// over: the last few asked for are answered without hashing the id again.
    private func cachedUser(_ id: String) -> UserState? {
        // Bytes, as `NameKey` compares (String's == would walk Unicode equivalence); a
        // batch's names share their storage, so a recent one is matched by its words.
        if let state = recentUsers.value(of: id) { return state }
        guard let state = users[NameKey(id)] else { return nil }
        recentUsers.note(id, state)
        return state
    }

    private func user(_ id: String) -> UserState {
        var created = false
        return user(id, created: &created)
    }

    /// The user's state, made (and `created` set) if the cache has none.
    private func user(_ id: String, created: inout Bool) -> UserState {
        let state: UserState
        if let existing = cachedUser(id) {
            state = existing
        } else {
            state = UserState(nameHash: NameHash.of(id))
            users[NameKey(id)] = state
            recentUsers.note(id, state)
            created = true
        }
        if store != nil, state.lastUse != clock {
            state.lastUse = clock
            touched.append(state)
        }
        return state
    }

    /// The users `cachedUser` answered last (forgotten whenever users leave the cache):
    /// a partition's events name a few users over and over.
    private var recentUsers = RecentNames<UserState>(capacity: Ledger.recentUserCount)
    private static let recentUserCount = 8

    @discardableResult
    private func remove(uuid uuidKey: UUIDKey, from state: UserState, userID: String, dirty: inout DirtyDays) -> Bool {
        guard case .live(let metric, let seq)? = state.uuids[uuidKey] else { return false }
        state.uuids[uuidKey] = .absent
        guard let record = state.metrics[metric]?.records[seq] else { return false }
        remove(record, metric: metric, from: state, userID: userID, dirty: &dirty)
        return true
    }

    /// Takes a cached record out of its metric's state (its uuid's state is the caller's).
    private func remove(_ record: Record, metric: Metric, from state: UserState, userID: String, dirty: inout DirtyDays) {
        collectDirty(record, metric: metric, state: state, user: userID, into: &dirty)
        state.metrics[metric]?.remove(record, cumulative: metric.isCumulative, zones: zones)
        liveSampleCount -= 1
    }
    private func makeRecord(_ s: Sample, seq: Int64) -> Record {
        Record(start: s.start.nanoseconds, end: s.end.nanoseconds, value: s.value, seq: seq, version: s.version,
               source: intern(source: s.source), zone: intern(zone: s.zone), uuid: s.compactUUID)
    }

    private func intern(source: String) -> Int32 {
        if let id = recentSources.value(of: source) { return id }
        if let id = sourceIDs[source] {
            recentSources.note(source, id)
            return id
        }
        let id = Int32(sources.count)
        sources.append(source)
        sourceIDs[source] = id
        rankTables.removeAll()
        return id
    }

    private func intern(zone: String) -> Int32 {
        if let id = recentZones.value(of: zone) { return id }
        if let id = zoneIDs[zone] {
            recentZones.note(zone, id)
            return id
        }
        let id = Int32(zones.count)
        zones.append(ZoneRules.forSamples(zone))
        zoneIDs[zone] = id
        return id
    }

    /// The last few sources and zones interned: a batch names a handful over and over, and
    /// comparing a few short strings costs less than hashing one.
    private var recentSources = RecentNames<Int32>(capacity: 4)
    private var recentZones = RecentNames<Int32>(capacity: 4)

    /// Source id → rank (0 is best) for one metric.
    private func rankTable(for metric: Metric) -> [Int32] {
        if let table = rankTables[metric] { return table }
        let table = priority.rankTable(sources, for: metric)
        rankTables[metric] = table
        return table
    }

    /// Adds to `dirty` every day whose row `record` can affect: its days in its own zone
    /// and, for cumulative metrics, its span's days in the zone of every sample that
    /// shares its UTC days (a sample it shadows may count in another zone's day).
    private func collectDirty(_ record: Record, metric: Metric, state: UserState, user: String, into dirty: inout DirtyDays) {
        guard metric.isCumulative else {
            let day = zones[Int(record.zone)].day(of: Instant(nanoseconds: record.start))
            dirty.insert(DayKey(user: user, metric: metric, day: day))
            return
        }
        // The record's own zone, then any other zone of the buckets it lies in (rare: a
        // user who travelled); the array stays empty, unallocated, in the usual case.
        var others: [Int32] = []
        state.metrics[metric]?.forEachBucket(of: record) { bucket in
            for (zone, _) in bucket.zones where zone != record.zone && !others.contains(zone) { others.append(zone) }
        }
        // The zone's rules read where the array holds them: a copy retained and released
        // its name and two tables at every event.
        func mark(_ zone: Int32) {
            if record.isInstant {
                dirty.insert(DayKey(user: user, metric: metric, day: zones[Int(zone)].day(of: Instant(nanoseconds: record.start))))
            } else {
                zones[Int(zone)].forEachDay(from: record.start, to: record.end) { day, _ in
                    dirty.insert(DayKey(user: user, metric: metric, day: day))
                }
            }
        }
        mark(record.zone)
        for zone in others { mark(zone) }
    }

    // MARK: Reading totals

    /// Recomputes the given rows from the live samples; nil means the day has no data.
    public func recompute(_ keys: Set<DayKey>) -> [DayKey: DayTotal?] {
        var result: [DayKey: DayTotal?] = [:]
        var groups: [String: [Metric: [Int32]]] = [:]
        for key in keys { groups[key.user, default: [:]][key.metric, default: []].append(key.day.number) }
        for (userID, metrics) in groups {
            for (metric, days) in metrics {
                for key in days.map({ DayKey(user: userID, metric: metric, day: CivilDay(number: $0)) }) {
                    result[key] = .some(nil)
                }
                guard let state = users[NameKey(userID)]?.metrics[metric] else { continue }
                for cluster in DayClusters(days) {
                    let records = state.records(near: cluster, cumulative: metric.isCumulative)
                    for total in totals(records, user: userID, metric: metric, include: { cluster.contains($0) }) {
                        result[total.key] = total
                    }
                }
            }
        }
        return result
    }

    /// The civil-hour rows of (`user`, `metric`) on the days `from` through `to`, sorted by
    /// day, start and end (`HourRollup`: the hours of each day add up to its row exactly).
    /// Complexity: O(m log m) for the m samples near those days.
    public func hours(user: String, metric: Metric, from: CivilDay, to: CivilDay) -> [HourTotal] {
        guard from <= to, let state = users[NameKey(user)]?.metrics[metric] else { return [] }
        let days = from.number...to.number
        let records = state.records(near: days, cumulative: metric.isCumulative)
        return HourRollup.rows(records: records, rank: rankTable(for: metric), zones: zones, sources: sources,
                               user: user, metric: metric, days: days).hours
    }

    /// Every row, sorted by user, metric and day.
    public func allTotals() -> [DayTotal] {
        var out: [DayTotal] = []
        for (userKey, state) in users {
            let userID = userKey.name
            for (metric, metricState) in state.metrics.all where !metricState.records.isEmpty {
                out += totals(Array(metricState.records.values), user: userID, metric: metric, include: nil)
            }
        }
        out.sort { $0.key < $1.key }
        return out
    }

    private func totals(_ records: [Record], user: String, metric: Metric, include: ((Int32) -> Bool)?) -> [DayTotal] {
        guard metric.isCumulative else { return discreteTotals(records, user: user, metric: metric, include: include) }
        let table = rankTable(for: metric)
        let (runs, instants) = TimelineResolver(records: records, rank: { table[Int($0)] }).resolve(metric)
        var attribution = DayAttribution()
        attribution.attribute(runs: runs, instants: instants, records: records, zones: zones, include: include)
        return attribution.totals(records: records, countsTime: metric.countsTime).map { day in
            let shares = day.bySource
                .sorted { table[Int($0.source)] < table[Int($1.source)] }
                .map { SourceShare(source: sources[Int($0.source)], value: $0.value) }
            return DayTotal(key: DayKey(user: user, metric: metric, day: CivilDay(number: day.day)),
                            summary: .cumulative(value: day.value, sources: shares))
        }
    }

    /// Heart rate: min, max, mean and count per civil day of each sample's start.
    private func discreteTotals(_ records: [Record], user: String, metric: Metric, include: ((Int32) -> Bool)?) -> [DayTotal] {
        var byDay: [Int32: [Int]] = [:]
        for i in records.indices {
            let day = zones[Int(records[i].zone)].day(of: Instant(nanoseconds: records[i].start)).number
            if include?(day) ?? true { byDay[day, default: []].append(i) }
        }
        return byDay.map { day, indices in
            DayTotal(key: DayKey(user: user, metric: metric, day: CivilDay(number: day)), summary: Record.discreteSummary(records, indices))
        }
    }

    // MARK: Explaining a day

    /// Which sample won which part of a day's timeline, and what each contributed.
    public func explain(_ key: DayKey) -> Explanation {
        var explanation = Explanation(key: key, pieces: [], points: [], total: recompute([key])[key] ?? nil)
        guard key.metric.isCumulative, let state = users[NameKey(key.user)]?.metrics[key.metric] else { return explanation }
        let records = state.records(near: key.day.number...key.day.number, cumulative: true)
        let table = rankTable(for: key.metric)
        let (runs, instants) = TimelineResolver(records: records, rank: { table[Int($0)] }).resolve(key.metric)
        func describe(_ i: Int) -> Explanation.SampleRef {
            let r = records[i]
            return .init(uuid: r.uuid.text, source: sources[Int(r.source)], zone: zones[Int(r.zone)].identifier,
                         start: Instant(nanoseconds: r.start), end: Instant(nanoseconds: r.end), value: r.value)
        }
        for run in runs {
            let winner = records[run.winner]
            let rules = zones[Int(winner.zone)]
            var cursor = run.start
            rules.forEachDay(from: run.start, to: run.end) { day, nanos in
                defer { cursor += nanos }
                guard day == key.day else { return }
                // Every sample of a `sum` metric counts: none is beaten.
                let beaten = key.metric.countsEverySample ? [] : records.indices.filter { i in
                    i != run.winner && !records[i].isInstant && records[i].start < cursor + nanos && records[i].end > cursor
                }
                explanation.pieces.append(.init(
                    start: Instant(nanoseconds: cursor), end: Instant(nanoseconds: cursor + nanos),
                    offsetSeconds: rules.offsetSeconds(at: Instant(nanoseconds: cursor)),
                    winner: describe(run.winner), beaten: beaten.map(describe),
                    contribution: DayAttribution.contribution(value: winner.value, start: winner.start, end: winner.end, nanos: nanos,
                                                              whole: false, countsTime: key.metric.countsTime)))
            }
        }
        for outcome in instants {
            let r = records[outcome.record]
            let rules = zones[Int(r.zone)]
            guard rules.day(of: Instant(nanoseconds: r.start)) == key.day else { continue }
            explanation.points.append(.init(
                sample: describe(outcome.record), offsetSeconds: rules.offsetSeconds(at: Instant(nanoseconds: r.start)),
                shadowedBy: outcome.shadowedBy.map(describe)))
        }
        return explanation
    }
}

/// The answer of `Ledger.explain`.
public struct Explanation: Sendable {
    public struct SampleRef: Sendable {
        public var uuid: String
        public var source: String
        public var zone: String
        public var start: Instant
        public var end: Instant
        public var value: Double
    }
    /// A stretch of the day won by one interval sample.
    public struct Piece: Sendable {
        public var start: Instant
        public var end: Instant
        /// UTC offset of the winner's zone at `start`, for showing wall-clock times.
        public var offsetSeconds: Int
        public var winner: SampleRef
        public var beaten: [SampleRef]
        public var contribution: Double
    }
    /// An instantaneous sample and whether it counted.
    public struct Point: Sendable {
        public var sample: SampleRef
        public var offsetSeconds: Int
        public var shadowedBy: SampleRef?
    }

    public var key: DayKey
    public var pieces: [Piece]
    public var points: [Point]
    public var total: DayTotal?

    public init(key: DayKey, pieces: [Piece], points: [Point], total: DayTotal?) {
        self.key = key
        self.pieces = pieces
        self.points = points
        self.total = total
    }
}

// MARK: - Storage

private final class UserState {
    /// What the cache knows of each uuid: its version in force, or that it was deleted, or
    /// that the store has nothing. A uuid missing here is unknown (in a cached ledger), as
    /// are those of the records a load read back from the store: `load` looks up a uuid it
    /// does not find here when the store may hold it, and names it then.
    var uuids: [UUIDKey: UUIDState] = [:]
    var metrics = MetricTable()
    /// The ledger's clock at the last batch that needed this user.
    var lastUse: UInt64 = 0
    /// Everything the store holds of this user is in the cache (the store had nothing when
    /// the user was first loaded): nothing needs to be looked up.
    var complete = false
    /// Every uuid the store holds of this user is in `uuids` or in the ledger's `evicted`
    /// filter (the store had nothing when the user was first loaded, and what left the
    /// cache since was remembered): a uuid in neither needs no lookup. Outlives `complete`,
    /// which the first eviction ends.
    var uuidsKnown = false
    /// `NameHash.of` the user's id: what `EvictedUUIDs` mixes into a uuid's hash.
    let nameHash: UInt64

    init(nameHash: UInt64) { self.nameHash = nameHash }

    /// `estimatedBytes` when the ledger last added it up.
    var accountedBytes = 0

    /// Gives back storage that eviction left mostly empty (dictionaries do not shrink).
    func compact() {
        if uuids.capacity > 64, uuids.count * 4 < uuids.capacity { uuids = Dictionary(uniqueKeysWithValues: uuids.map { ($0, $1) }) }
        for metric in Metric.allCases {
            guard var m = metrics[metric] else { continue }
            metrics[metric] = nil // keep the state uniquely referenced while it changes
            m.compact()
            metrics[metric] = m
        }
    }

    /// A deliberately rough size: per record its table entry, bucket entries and uuid; per
    /// bucket its arrays; per uuid its map entry (not calibrated; BENCHMARKS.md measures the
    /// peak RSS with the default budget and with 1 MiB).
    var estimatedBytes: Int {
        var bytes = 256 + uuids.count * 96
        for (_, m) in metrics.all { bytes += m.records.count * 160 + m.buckets.count * 96 + m.dayUse.count * 48 }
        return bytes
    }
}

/// A uuid with its `hash64`, computed once: the key of a user's uuid map, hashed in a few
/// instructions and compared as 16 bytes (a canonical uuid) or as text.
struct UUIDKey: Hashable {
    let uuid: SampleUUID
    let hash: UInt64

    @inline(__always)
    init(_ uuid: SampleUUID) {
        self.uuid = uuid
        hash = uuid.hash64
    }

    /// A key whose hash the caller computed already (`uuid.hash64`).
    @inline(__always)
    init(_ uuid: SampleUUID, hash: UInt64) {
        self.uuid = uuid
        self.hash = hash
    }

    static func == (a: UUIDKey, b: UUIDKey) -> Bool { a.hash == b.hash && a.uuid == b.uuid }
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    func _rawHashValue(seed: Int) -> Int { NameHash.table(hash, seed: seed) }
}

enum UUIDState {
    case live(metric: Metric, seq: Int64)
    case tombstoned
    case absent
}

/// A user's `MetricState`s in a fixed array indexed by metric (no hashing on the hot path).
private struct MetricTable {
    private var storage = [MetricState?](repeating: nil, count: Metric.tableSize)

    /// Read in place (`_read`): a `get` returned a copy of the state, retaining and
    /// releasing its three tables at every `state.metrics[m]?.…` (3 of each an event).
    subscript(metric: Metric) -> MetricState? {
        _read { yield storage[metric.index] }
        _modify { yield &storage[metric.index] }
    }

    subscript(metric: Metric, default fallback: @autoclosure () -> MetricState) -> MetricState {
        get { storage[metric.index] ?? fallback() }
        _modify {
            let i = metric.index
            if storage[i] == nil { storage[i] = fallback() }
            yield &storage[i]!
        }
    }

    var all: [(Metric, MetricState)] {
        Metric.allCases.compactMap { m in storage[m.index].map { (m, $0) } }
    }
}

/// The live samples of one user and metric, with a day index.
///
/// Cumulative metrics are indexed by every UTC day a sample overlaps (so a civil day in any
/// zone, which lies within its UTC day ± 1, finds all samples that can touch it); heart
/// rate by the civil day of its start, which is the only day it counts in.
private struct MetricState {
    var records = IntTable<Int64, Record>()
    var buckets = IntTable<Int32, Bucket>()
    /// The UTC days whose samples are all in `records` (cumulative: overlapping the day;
    /// heart rate: starting in it), each with the ledger's clock at the last load that
    /// needed it (what eviction goes by). Used only by a ledger with a store.
    var dayUse = IntTable<Int32, UInt64>()

    /// Whether the samples of UTC day `day` are all in `records`.
    @inline(__always)
    func isLoaded(_ day: Int32) -> Bool { dayUse[day] != nil }

    /// Gives back storage that eviction left mostly empty (dictionaries do not shrink).
    mutating func compact() {
        if records.capacity > 64, records.count * 4 < records.capacity { records.compact() }
        if buckets.capacity > 64, buckets.count * 4 < buckets.capacity { buckets.compact() }
        if dayUse.capacity > 64, dayUse.count * 4 < dayUse.capacity { dayUse.compact() }
    }

    /// Forgets that `day` is loaded, and every record none of whose days is loaded any more
    /// (a record reaching into a loaded day stays: that day needs it). Appends the uuids of
    /// the records dropped that `uuids` names (`Record.named`) to `dropped`: the cache no
    /// longer knows them.
    ///
    /// Each bucket under `day` is rewritten in place as it is walked: a record leaving is
    /// found and removed with one probe of `records`, its seq is not kept and its zone count
    /// drops. Only a record that also lies in another bucket (a cumulative sample across
    /// UTC midnight) is gathered for that bucket, which is then rewritten once (removing
    /// records one by one searches a bucket for each: quadratic in a day's samples).
    mutating func evict(_ day: Int32, cumulative: Bool, zones: [ZoneRules], dropped: inout [SampleUUID]) {
        dayUse[day] = nil
        var elsewhere = IntTable<Int32, [(seq: Int64, zone: Int32)]>()
        // Records found under `day`: cumulative buckets are UTC days; heart rate's are civil
        // days, within a day of the UTC day of the start.
        for bucketDay in cumulative ? day...day : (day - 1)...(day + 1) {
            // Taken out while it changes, so that its arrays are not copied on write.
            guard var bucket = buckets.removeValue(forKey: bucketDay) else { continue }
            var kept = 0
            for k in bucket.seqs.indices {
                let seq = bucket.seqs[k]
                guard let place = records.place(of: seq) else {
                    bucket.seqs[kept] = seq
                    kept += 1
                    continue
                }
                let (start, end) = records.withValue(at: place) { ($0.start, $0.end) }
                let days = MetricState.loadDays(start: start, end: end, cumulative: cumulative)
                // (`day` itself is no longer loaded: a record of that day alone, the usual
                // case, needs no probe.)
                if (!cumulative && days.lowerBound != day) || (days != day...day && days.contains(where: isLoaded)) {
                    bucket.seqs[kept] = seq
                    kept += 1
                    continue
                }
                let r = records.remove(at: place)
                bucket.uncount(zone: r.zone)
                if days.count > 1 { // only cumulative samples lie in more than one bucket
                    for d in days where d != bucketDay { elsewhere[d, default: []].append((seq, r.zone)) }
                }
                if r.named { dropped.append(r.uuid) }
            }
            bucket.seqs.removeLast(bucket.seqs.count - kept)
            if kept > 0 { buckets[bucketDay] = bucket }
        }
        elsewhere.forEach { d, gone in removeFromBucket(d, gone) }
    }

    /// The UTC days a sample from `start` to `end` is found under when loading from a
    /// store: the days it overlaps (cumulative), or its start's (heart rate).
    static func loadDays(start: Int64, end: Int64, cumulative: Bool) -> ClosedRange<Int32> {
        let first = Int32(floorDiv(start, Instant.nanosPerDay))
        guard cumulative, end != start else { return first...first }
        return first...Int32(floorDiv(end - 1, Instant.nanosPerDay))
    }

    struct Bucket {
        var seqs: [Int64] = []
        /// Zone id → number of samples in the bucket recorded in it.
        var zones: [(zone: Int32, count: Int32)] = []

        mutating func add(_ r: Record) {
            seqs.append(r.seq)
            if let k = zones.firstIndex(where: { $0.zone == r.zone }) {
                zones[k].count += 1
            } else {
                zones.append((r.zone, 1))
            }
        }

        /// One sample fewer recorded in `zone`.
        mutating func uncount(zone: Int32) {
            guard let k = zones.firstIndex(where: { $0.zone == zone }) else { return }
            zones[k].count -= 1
            if zones[k].count == 0 { zones.remove(at: k) }
        }
    }

    static func utcDays(of r: Record) -> ClosedRange<Int32> {
        let first = Int32(floorDiv(r.start, Instant.nanosPerDay))
        let last = r.isInstant ? first : Int32(floorDiv(r.end - 1, Instant.nanosPerDay))
        return first...last
    }

    func bucketDays(of r: Record, cumulative: Bool, zones: [ZoneRules]) -> ClosedRange<Int32> {
        if cumulative { return MetricState.utcDays(of: r) }
        let day = zones[Int(r.zone)].day(of: Instant(nanoseconds: r.start)).number
        return day...day
    }

    mutating func insert(_ r: Record, cumulative: Bool, zones: [ZoneRules]) {
        records[r.seq] = r
        // One probe of the table per day: the bucket is changed in place.
        for day in bucketDays(of: r, cumulative: cumulative, zones: zones) { buckets[day, default: Bucket()].add(r) }
    }

    mutating func remove(_ r: Record, cumulative: Bool, zones: [ZoneRules]) {
        records[r.seq] = nil
        for day in bucketDays(of: r, cumulative: cumulative, zones: zones) {
            removeFromBucket(day, CollectionOfOne((seq: r.seq, zone: r.zone)))
        }
    }

    /// Takes the records `leaving` (each a seq and the zone it was recorded in) out of the
    /// bucket of `day`: their seqs out of its list, one count each out of its zone counts;
    /// drops the bucket once it is empty. The bucket is rewritten once whatever the number of
    /// records (`evict` gathers a day's leavers first: one by one would be quadratic).
    ///
    /// Complexity: O(*b* + *k*) for a bucket of *b* seqs and *k* records leaving, plus
    /// O(*k*·*z*) for its *z* zones (one or two in practice).
    private mutating func removeFromBucket(_ day: Int32, _ leaving: some Collection<(seq: Int64, zone: Int32)>) {
        // Taken out while it changes, so that its arrays are not copied on write.
        guard var bucket = buckets.removeValue(forKey: day) else { return }
        if leaving.count == bucket.seqs.count {
            // Every record of the bucket leaves (eviction's usual case): the leavers are
            // distinct seqs of the bucket, so nothing stays.
            return
        }
        if leaving.count == 1, let only = leaving.first {
            if let k = bucket.seqs.firstIndex(of: only.seq) { bucket.seqs.remove(at: k) }
        } else {
            var seqs = IntTable<Int64, Void>()
            for (seq, _) in leaving { seqs[seq] = () }
            bucket.seqs.removeAll { seqs[$0] != nil }
        }
        for (_, zone) in leaving { bucket.uncount(zone: zone) }
        if !bucket.seqs.isEmpty { buckets[day] = bucket }
    }

    /// Each bucket read in place (a copy retained and released its two arrays).
    func forEachBucket(of r: Record, _ body: (borrowing Bucket) -> Void) {
        for day in MetricState.utcDays(of: r) { buckets.withValue(forKey: day, body) }
    }

    /// Every record that can contribute to the civil days `days` (cumulative: overlapping
    /// their UTC days ± 1; discrete: starting on them).
    func records(near days: ClosedRange<Int32>, cumulative: Bool) -> [Record] {
        let range = cumulative ? (days.lowerBound - 1)...(days.upperBound + 1) : days
        var out: [Record] = []
        for day in range {
            guard let bucket = buckets[day] else { continue }
            for seq in bucket.seqs {
                guard let r = records[seq] else { continue }
                // A cumulative record lies in the bucket of each UTC day it overlaps
                // (`utcDays`): it is taken at the first of them in the range, once.
                if cumulative, max(MetricState.utcDays(of: r).lowerBound, range.lowerBound) != day { continue }
                out.append(r)
            }
        }
        return out
    }
}

/// A table keyed by an integer (a log position, a UTC day), hashed by `NameHash.table(int:seed:)`
/// under each table's own seed instead of SipHash: a ledger probes these several times per event.
struct IntTable<Key: FixedWidthInteger, Value> {
    struct Slot: Hashable {
        var key: Key
        func hash(into hasher: inout Hasher) { hasher.combine(key) }
        func _rawHashValue(seed: Int) -> Int { NameHash.table(int: Int64(truncatingIfNeeded: key), seed: seed) }
    }

    private var storage: [Slot: Value] = [:]

    subscript(key: Key) -> Value? {
        get { storage[Slot(key: key)] }
        _modify { yield &storage[Slot(key: key)] }
    }

    subscript(key: Key, default fallback: @autoclosure () -> Value) -> Value {
        get { storage[Slot(key: key)] ?? fallback() }
        _modify { yield &storage[Slot(key: key), default: fallback()] }
    }

    var count: Int { storage.count }
    var capacity: Int { storage.capacity }
    var isEmpty: Bool { storage.isEmpty }
    var values: Dictionary<Slot, Value>.Values { storage.values }

    mutating func removeValue(forKey key: Key) -> Value? { storage.removeValue(forKey: Slot(key: key)) }

    /// Where `key` sits in the table (one probe), for `withValue(at:)` and `remove(at:)`
    /// without probing again; valid until the table changes.
    typealias Place = Dictionary<Slot, Value>.Index
    func place(of key: Key) -> Place? { storage.index(forKey: Slot(key: key)) }
    func withValue<R>(at place: Place, _ body: (borrowing Value) -> R) -> R { body(storage.values[place]) }
    /// `body` of the value of `key`, read in place; nil (and `body` not called) if there is none.
    @discardableResult
    func withValue<R>(forKey key: Key, _ body: (borrowing Value) -> R) -> R? {
        guard let i = storage.index(forKey: Slot(key: key)) else { return nil }
        return body(storage.values[i])
    }
    mutating func remove(at place: Place) -> Value { storage.remove(at: place).value }

    /// Sets the value of `key` if the table holds it (one probe); returns whether it did.
    mutating func replaceExisting(_ key: Key, with value: Value) -> Bool {
        guard let i = storage.index(forKey: Slot(key: key)) else { return false }
        storage.values[i] = value
        return true
    }

    /// Calls `body` with every key and value, in the table's order.
    func forEach(_ body: (Key, Value) throws -> Void) rethrows {
        for (slot, value) in storage { try body(slot.key, value) }
    }

    /// Gives back the storage of a table eviction left mostly empty (dictionaries do not shrink).
    mutating func compact() { storage = Dictionary(uniqueKeysWithValues: storage.map { ($0, $1) }) }
}

/// What a ledger reads from durable storage, and what the shard store implements.
public protocol LedgerStore: AnyObject {
    /// Runs `body`, whose reads all belong to one `load`, as one read of the store (the
    /// shard: one SQLite read transaction, so one lock instead of one per lookup).
    func reading(_ body: () throws -> Void) throws
    /// Whether the store holds anything (a sample or a tombstone) of `user`.
    func hasEntries(user: String) throws -> Bool
    /// The stored state of each of `uuids` of `user` (every uuid asked gets an answer; a uuid
    /// may be asked more than once).
    func entries(user: String, uuids: [String]) throws -> [String: StoredEntry]
    /// The stored samples of (`user`, `metric`) that lie in the UTC days `days`: for
    /// cumulative metrics every sample overlapping one of them (an instant on its day), for
    /// heart rate every sample starting in them; each with its log position.
    func samples(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [(sample: Sample, seq: Int64)]
    /// `samples(user:metric:days:)` with each sample's source and zone as the store's
    /// numbers of their names (`name(numbered:)`), no `Sample` made; nil from a store that
    /// does not number names (the ledger then reads `samples`). A number names one name for
    /// the store's life.
    func records(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [StoredRecord]?
    /// The name the store numbered `number` (a `StoredRecord`'s source or zone).
    func name(numbered number: Int64) throws -> String
}

/// A stored sample of a known user and metric as a store that numbers names keeps it
/// (`LedgerStore.records`).
public struct StoredRecord: Sendable {
    public var uuid: SampleUUID
    public var start: Int64
    public var end: Int64
    public var value: Double
    public var version: Int64
    public var seq: Int64
    /// The store's numbers of the source's and the zone's names.
    public var source: Int64
    public var zone: Int64

    public init(uuid: SampleUUID, start: Int64, end: Int64, value: Double, version: Int64, seq: Int64, source: Int64, zone: Int64) {
        self.uuid = uuid
        self.start = start
        self.end = end
        self.value = value
        self.version = version
        self.seq = seq
        self.source = source
        self.zone = zone
    }
}

/// A uuid's stored state.
public enum StoredEntry: Sendable, Equatable {
    case absent
    case tombstoned
    case live(Sample, seq: Int64)
}

extension Record {
    func sameContent(as other: Record) -> Bool {
        start == other.start && end == other.end && value == other.value && version == other.version
            && source == other.source && zone == other.zone && uuid == other.uuid
    }
}

/// Splits a list of day numbers into maximal runs of consecutive days.
struct DayClusters: Sequence {
    let days: [Int32]
    init(_ days: [Int32]) { self.days = Array(Set(days)).sorted() }

    func makeIterator() -> AnyIterator<ClosedRange<Int32>> {
        var i = 0
        return AnyIterator {
            guard i < days.count else { return nil }
            let first = days[i]
            while i + 1 < days.count, days[i + 1] == days[i] + 1 { i += 1 }
            let last = days[i]
            i += 1
            return first...last
        }
    }
}

extension LedgerStore {
    /// A store without transactions reads as it is asked.
    public func reading(_ body: () throws -> Void) throws { try body() }
    /// A store that does not number names: the ledger reads `samples`.
    public func records(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [StoredRecord]? { nil }
    public func name(numbered number: Int64) throws -> String { "" }
}
