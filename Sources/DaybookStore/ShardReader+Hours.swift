import DaybookCore
import DaybookSupport
import Foundation
import Synchronization

/// Civil-hour rows and explanations, computed at read time from a shard's state store (its
/// packs of samples) under the source priority the shard records: nothing is kept per hour,
/// so the projector writes no more than it did, and an hour row can never be stale beside
/// its day row. Every read is one read transaction of a read-only connection (WAL), so a
/// shard a projector writes meanwhile reads as of one commit.
extension ShardReader {
    /// The civil-hour rows of `user`'s `metric` on the civil days `from` through `to` in the
    /// shard at `path`, sorted by day, start and end (`HourRollup`: the hours of each day add
    /// up to its day row exactly). None when `from` is after `to`, for a user the shard does
    /// not hold, and for a shard a projector is creating right now.
    ///
    /// Reads only the packs that can reach those days in a zone the shard names: samples
    /// starting from the longest stored span (at most 7 days) before the first instant of
    /// `from` in any of those zones, to the last instant of `to` in any of them (at most the
    /// day before `from` and the day after `to`).
    /// - Throws: `Shard.ShardError` (`.notAShard` for a file that is not a shard or a damaged
    ///   pack) or `DatabaseError`.
    public func hours(inShardAt path: String, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws -> [HourTotal] {
        guard from <= to, let db = try openForData(path) else { return [] }
        var rows: [HourTotal] = []
        try db.inReadTransaction {
            rows = try StoredSamples(database: db, path: path).hours(user: user, metric: metric, from: from, to: to)
        }
        return rows
    }

    /// The hour rows `query` asks for over every shard, sorted by user, metric, day and start
    /// (`daybook totals --bucket hour`). Without `from` or `to` the range is open on that side.
    /// A (user, metric, day) found in two shards is a `ShardError` `.splitUser`, as `totals`.
    public func hours(_ query: Query) throws -> [HourTotal] {
        let from = query.from ?? StoredSamples.firstDay
        let to = query.to ?? StoredSamples.lastDay
        guard from <= to else { return [] }
        let metrics = query.metric.map { [$0] } ?? Metric.allCases
        let paths = try shardPaths()
        var found: [(rows: [HourTotal], shard: Int)] = []
        for (index, path) in paths.enumerated() {
            guard let db = try openForData(path) else { continue }
            try db.inReadTransaction {
                let stored = try StoredSamples(database: db, path: path)
                for user in try query.user.map({ [$0] }) ?? stored.users() {
                    for metric in metrics {
                        let rows = try stored.hours(user: user, metric: metric, from: from, to: to)
                        if !rows.isEmpty { found.append((rows, index)) }
                    }
                }
            }
        }
        // Blocks of one (user, metric) from one shard, in key order; two blocks of the same
        // (user, metric) sharing a day came from two partitions.
        found.sort { a, b in
            let x = a.rows[0].key, y = b.rows[0].key
            return x.user != y.user ? x.user.utf8.lexicographicallyPrecedes(y.user.utf8) : x.metric != y.metric ? x.metric < y.metric : a.shard < b.shard
        }
        for i in found.indices.dropFirst() {
            let a = found[i - 1], b = found[i]
            guard a.rows[0].key.user == b.rows[0].key.user, a.rows[0].key.metric == b.rows[0].key.metric else { continue }
            let days = Set(a.rows.map(\.key.day))
            if let clash = b.rows.first(where: { days.contains($0.key.day) }), let other = a.rows.first(where: { $0.key.day == clash.key.day }) {
                throw Self.split(DayTotal(key: other.key, summary: other.summary), in: paths[a.shard],
                                 DayTotal(key: clash.key, summary: clash.summary), in: paths[b.shard], directory: directory)
            }
        }
        return found.flatMap(\.rows).sorted { a, b in
            a.key != b.key ? a.key < b.key : (a.start, a.end, a.startOffsetSeconds) < (b.start, b.end, b.startOffsetSeconds)
        }
    }

    /// Which sample won which stretch of `key`'s day, from the samples in the shard at
    /// `path` (`Ledger.explain`: what `daybook explain` prints of an events file). A shard a
    /// projector is creating right now explains an empty day.
    public func explain(inShardAt path: String, _ key: DayKey) throws -> Explanation {
        guard let db = try openForData(path) else { return Ledger().explain(key) }
        var explanation: Explanation?
        try db.inReadTransaction {
            explanation = try StoredSamples(database: db, path: path)
                .window(user: key.user, metric: key.metric, from: key.day, to: key.day).ledger().explain(key)
        }
        return explanation ?? Ledger().explain(key)
    }
}

extension ShardReader.Snapshot {
    /// `ShardReader.hours(inShardAt:…)` as of this snapshot: on its open connection and in
    /// its read transaction (a server that holds snapshots opens nothing per request).
    public func hours(user: String, metric: Metric, from: CivilDay, to: CivilDay) throws -> [HourTotal] {
        guard from <= to, let database else { return [] }
        return try StoredSamples(database: database, path: path).hours(user: user, metric: metric, from: from, to: to)
    }

    /// `ShardReader.explain(inShardAt:_:)` as of this snapshot.
    public func explain(_ key: DayKey) throws -> Explanation {
        guard let database else { return Ledger().explain(key) }
        return try StoredSamples(database: database, path: path).window(user: key.user, metric: key.metric, from: key.day, to: key.day)
            .ledger().explain(key)
    }
}

/// A shard's stored samples as a reader sees them (inside the caller's read transaction):
/// its priority, its names, its longest span, and the packs near some days.
struct StoredSamples {
    let database: Database
    let path: String
    let priority: SourcePriority
    /// The longest stored span (end − start, ns): how far before a day a sample reaching
    /// into it can start.
    let maxSpan: Int64
    private var names: [Int64: String] = [:]

    /// The widest range of civil days a sample can touch (instants lie in 1900 ..< 2200).
    static let firstDay = CivilDay(year: 1899, month: 12, day: 30)
    static let lastDay = CivilDay(year: 2200, month: 1, day: 2)

    /// `from...to` narrowed to `firstDay...lastDay`, nil when nothing of it is left: no sample
    /// lies outside, and the nanosecond bounds of a day far beyond (a read of 9999-12-31)
    /// overflow an Int64 and trap.
    static func clamped(_ from: CivilDay, _ to: CivilDay) -> (from: CivilDay, to: CivilDay)? {
        let from = max(from, firstDay), to = min(to, lastDay)
        return from <= to ? (from, to) : nil
    }

    init(database: Database, path: String) throws {
        self.database = database
        self.path = path
        let meta = try database.statement("SELECT key, value FROM meta WHERE key IN ('priority', 'max_span_ns')")
        var fingerprint: String?
        var span: String?
        while try meta.step() {
            if meta.text(0) == "priority" { fingerprint = meta.text(1) } else { span = meta.text(1) }
        }
        // A shard records its priority when it is created, before it holds a sample: a shard
        // without one has nothing to rank.
        if let fingerprint {
            guard let parsed = Self.parsedPriority(fingerprint) else {
                throw Shard.ShardError(.notAShard, "\(path): its source priority \(JSONWriter.quoted(fingerprint)) cannot be read (damaged, or written by a newer Daybook): rebuild the projection")
            }
            priority = parsed
        } else {
            priority = .builtIn
        }
        maxSpan = span.flatMap { Int64($0) } ?? EventDecoder.maximumDuration
        let read = try database.statement("SELECT id, name FROM names")
        while try read.step() { names[read.int64(0)] = read.text(1) }
    }

    /// Parsed fingerprints: every read parsed its shard's again (~27,000 instructions of an
    /// hour read), and a data directory's shards record one or a few.
    private static let priorities = Mutex<[String: SourcePriority]>([:])

    /// `SourcePriority(fingerprint:)`, each fingerprint parsed once (at most 64 kept).
    private static func parsedPriority(_ fingerprint: String) -> SourcePriority? {
        if let known = priorities.withLock({ $0[fingerprint] }) { return known }
        guard let parsed = SourcePriority(fingerprint: fingerprint) else { return nil }
        priorities.withLock { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[fingerprint] = parsed
        }
        return parsed
    }

    /// The smallest and largest UTC offsets (ns) of every shard name that is a zone, by
    /// name (nil: not a zone), so that a read looks each name up, not its zone's rules.
    private static let nameOffsets = Mutex<[String: (min: Int64, max: Int64)?]>([:])

    /// The smallest and largest UTC offsets (ns) of any zone a sample of this shard can
    /// have: those of every name of the shard that is a zone, and UTC's (a sample's zone
    /// that is none counts as UTC, `ZoneRules.forSamples`). A shard names a few zones; a
    /// read whose zones are all east of UTC need not decode the packs of the day after
    /// `to`, and none with samples shorter than a day those of two days before `from`.
    /// Complexity: O(names), each name's rules built once per process (at most 4,096 kept).
    func zoneOffsets() -> (min: Int64, max: Int64) {
        var low: Int64 = 0, high: Int64 = 0
        for name in names.values {
            let known = Self.nameOffsets.withLock { $0[name] }
            let range: (min: Int64, max: Int64)?
            if let known {
                range = known
            } else {
                range = ZoneRules.named(name)?.offsetRange
                Self.nameOffsets.withLock { cache in
                    if cache.count >= 4_096 { cache.removeAll() }
                    cache[name] = .some(range)
                }
            }
            if let range {
                low = min(low, range.min)
                high = max(high, range.max)
            }
        }
        return (low, high)
    }

    /// The users with samples in the shard, in code-point order.
    func users() throws -> [String] {
        let read = try database.statement("SELECT DISTINCT user FROM packs ORDER BY user")
        var out: [String] = []
        while try read.step() { out.append(read.text(0)) }
        return out
    }

    /// The hour rows of (`user`, `metric`) on the civil days `from` through `to`, apportioned
    /// from the shard's stored day rows (`SampleWindow.hours(_:from:to:dayTotals:)`).
    ///
    /// The packs are read without their uuids; only when some samples share their start and
    /// end (the only ones a tie-break tells apart by uuid) are they read again for those uuids.
    func hours(user: String, metric: Metric, from: CivilDay, to: CivilDay) throws -> [HourTotal] {
        guard let (from, to) = Self.clamped(from, to) else { return [] }
        let window = try hourWindow(user: user, metric: metric, from: from, to: to)
        guard metric.isCumulative else { return window.hours(metric, from: from, to: to) }
        return window.hours(metric, from: from, to: to, dayTotals: try dayTotals(user: user, metric: metric, from: from, to: to))
    }

    /// The stored day totals of (`user`, `metric`) from `from` through `to` (`totals`' values).
    func dayTotals(user: String, metric: Metric, from: CivilDay, to: CivilDay) throws -> [CivilDay: Double] {
        let read = try database.statement("SELECT day, value FROM totals WHERE user = ? AND metric = ? AND day >= ? AND day <= ?")
        try read.bind(1, user)
        try read.bind(2, metric.rawValue)
        try read.bind(3, from.description)
        try read.bind(4, to.description)
        defer { read.reset() }
        var out: [CivilDay: Double] = [:]
        while try read.step() {
            guard let day = CivilDay(read.text(0)) else {
                throw Shard.ShardError(.notAShard, "\(path): a totals row of user \(user), metric \(metric.rawValue) has day \(JSONWriter.quoted(read.text(0))), which is not a day (damaged, or written by a newer Daybook): rebuild the projection")
            }
            out[day] = read.double(1)
        }
        return out
    }

    /// A window holding every live sample of (`user`, `metric`) that can reach the civil days
    /// `from` through `to` with its uuid (what `explain`'s ledger needs): cumulative samples
    /// overlapping their UTC days ± 1 (as a ledger's recompute reads them), heart rate's
    /// starting in them.
    func window(user: String, metric: Metric, from: CivilDay, to: CivilDay) throws -> SampleWindow {
        var window = SampleWindow(user: user, priority: priority)
        // The shard's name ids → the window's, by id (ids are the rowids of `names`, dense from
        // 1): each name is looked up and interned once, and no id is hashed per sample.
        var sourceIDs: [Int32] = []
        var zoneIDs: [Int32] = []
        // What a miss needs, taken out of `self`: a closure called per sample that reaches
        // `self` copies this whole struct (its names, path and priority) on every call.
        let names = self.names
        let path = self.path
        func windowID(_ id: Int64, in table: inout [Int32], interning intern: (String) -> Int32) throws -> Int32 {
            if id >= 0, id < table.count, table[Int(id)] >= 0 { return table[Int(id)] }
            let mapped = intern(try Self.name(id, in: names, path: path, user: user))
            guard id >= 0, id < 1 << 20 else { return mapped } // a stray id is looked up each time instead
            if table.count <= id { table.append(contentsOf: repeatElement(-1, count: Int(id) + 1 - table.count)) }
            table[Int(id)] = mapped
            return mapped
        }
        try forEachSample(user: user, metric: metric, from: from, to: to, uuids: true) { packed, uuid in
            let source = try windowID(packed.source, in: &sourceIDs) { window.sourceID($0) }
            let zone = try windowID(packed.zone, in: &zoneIDs) { window.zoneID($0) }
            window.add(uuid: String(decoding: uuid, as: UTF8.self), metric: metric, source: source, zone: zone,
                       start: packed.start, end: packed.end, value: packed.value, version: packed.version, seq: packed.seq)
        }
        return window
    }

    /// A window of the same samples as `window` for hour reads, holding only the uuids a
    /// tie-break needs (it answers hours, not `ledger()`), filled column by column: the packs
    /// decoded straight into flat arrays (`SamplePack.decodeWindow`, no closure or `PackedSample` per sample), the
    /// shard's name ids mapped to the window's in one pass, the arrays handed over whole.
    func hourWindow(user: String, metric: Metric, from: CivilDay, to: CivilDay) throws -> SampleWindow {
        var window = SampleWindow(user: user, priority: priority)
        guard let (from, to) = Self.clamped(from, to) else { return window }
        var columns = PackColumns()
        columns.reserve(256 * (Int(to.number) - Int(from.number) + 4))
        // Only what the shard's zones can reach (the rollup resolves no more than its own
        // zones' days reach: a subset); the uuid reading below takes the same bounds.
        let offsets = zoneOffsets()
        try forEachPack(user: user, metric: metric, from: from, to: to, offsets: offsets) { day, bytes, bounds in
            try SamplePack.decodeWindow(bytes, day: day, low: bounds.low, high: bounds.high, first: bounds.first, into: &columns)
        }
        // The shard's name ids → the window's, through a table by id (ids are the rowids of
        // `names`, dense from 1): each name looked up and interned once, the ids read and
        // written through buffers (two per sample).
        func mapped(_ ids: [Int64], intern: (String) -> Int32) throws -> [Int32] {
            var table: [Int32] = []
            return try [Int32](unsafeUninitializedCapacity: ids.count) { out, written in
                try ids.withUnsafeBufferPointer { ids in
                    for (i, id) in ids.enumerated() {
                        if id >= 0, id < table.count, table[Int(id)] >= 0 {
                            out[i] = table[Int(id)]
                        } else {
                            let windowID = intern(try Self.name(id, in: names, path: path, user: user))
                            if id >= 0, id < 1 << 20 { // a stray id is looked up each time instead
                                if table.count <= id { table.append(contentsOf: repeatElement(-1, count: Int(id) + 1 - table.count)) }
                                table[Int(id)] = windowID
                            }
                            out[i] = windowID
                        }
                        written = i + 1
                    }
                }
            }
        }
        let sources = try mapped(columns.source) { window.sourceID($0) }
        let zones = try mapped(columns.zone) { window.zoneID($0) }
        window.addWithoutUUIDs(metric: metric, start: columns.start, end: columns.end, value: columns.value, version: columns.version,
                               source: sources, zone: zones)
        // The second reading, for the uuids of samples that share their bounds (rare: none in
        // `bench generate`'s logs). The same statement in the same transaction gives the same
        // samples in the same order, so the n-th one is the n-th added.
        let needed = window.recordsNeedingUUIDs(metric)
        guard !needed.isEmpty else { return window }
        var place = 0
        var next = 0
        try forEachSample(user: user, metric: metric, from: from, to: to, offsets: offsets, uuids: true) { _, uuid in
            if next < needed.count, needed[next] == place {
                window.setUUID(String(decoding: uuid, as: UTF8.self), metric: metric, place: place)
                next += 1
            }
            place += 1
        }
        return window
    }

    /// Calls `body` with each live sample of (`user`, `metric`) that can reach the civil days
    /// `from` through `to` (as `window` holds them), in the order of the packs and within each.
    private func forEachSample(user: String, metric: Metric, from: CivilDay, to: CivilDay, offsets: (min: Int64, max: Int64) = StoredSamples.anyZone, uuids: Bool,
                               _ body: (PackedSample, UnsafeRawBufferPointer) throws -> Void) throws {
        guard let (from, to) = Self.clamped(from, to) else { return }
        try forEachPack(user: user, metric: metric, from: from, to: to, offsets: offsets) { day, bytes, bounds in
            try SamplePack.decodeFields(bytes, day: day, uuids: uuids) { packed, uuid in
                // Overlapping [first, high): an interval ending after `first`, an instant at or after it.
                guard packed.start >= bounds.low, packed.start < bounds.high,
                      packed.end > bounds.first || packed.start >= bounds.first else { return }
                try body(packed, uuid)
            }
        }
    }

    /// UTC offsets wider than any zone's (a civil day lies within its UTC day ± 1): the
    /// bounds of a read that does not narrow them to the shard's zones (`window`).
    static let anyZone = (min: -Instant.nanosPerDay, max: Instant.nanosPerDay)

    /// Calls `body` with each stored pack of (`user`, `metric`) that can hold a sample
    /// reaching the civil days `from` through `to` (already `clamped`) in a zone of UTC
    /// offsets within `offsets`, in day order, with the bounds a sample must meet: a start in
    /// [`low`, `high`) and reaching past `first` (the first instant of `from` in those zones;
    /// `high` the end of `to`). A damaged pack throws a `ShardError` naming it.
    private func forEachPack(user: String, metric: Metric, from: CivilDay, to: CivilDay, offsets: (min: Int64, max: Int64) = StoredSamples.anyZone,
                             _ body: (_ day: Int64, _ bytes: UnsafeRawBufferPointer, _ bounds: (low: Int64, first: Int64, high: Int64)) throws -> Void) throws {
        let first = Int64(from.number) * Instant.nanosPerDay - offsets.max
        let high = (Int64(to.number) + 1) * Instant.nanosPerDay - offsets.min
        let low = metric.isCumulative ? first - max(0, maxSpan) : first
        let read = try database.statement("SELECT day, samples FROM packs WHERE user = ? AND metric = ? AND day >= ? AND day <= ? ORDER BY day")
        try read.bind(1, user)
        try read.bind(2, metric.storageCode)
        try read.bind(3, SamplePack.day(ofStart: low))
        try read.bind(4, SamplePack.day(ofStart: high - 1))
        defer { read.reset() }
        while try read.step() {
            let day = read.int64(0)
            try read.withBlob(1) { bytes in
                do {
                    try body(day, bytes, (low, first, high))
                } catch let damaged as SamplePack.Damaged {
                    throw Shard.ShardError(.notAShard, "\(path): the pack of user \(user), metric \(metric.rawValue), UTC day \(day) is damaged (\(damaged.reason)). Move the shard away and restart: a missing shard is rebuilt from the log.")
                }
            }
        }
    }

    private static func name(_ id: Int64, in names: [Int64: String], path: String, user: String) throws -> String {
        guard let name = names[id] else {
            throw Shard.ShardError(.notAShard, "\(path): a stored sample of user \(user) refers to name \(id), which the shard does not have: rebuild the projection")
        }
        return name
    }
}
