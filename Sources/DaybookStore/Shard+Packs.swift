import DaybookCore
import Foundation
import DaybookSupport

/// The state store (migration 006): live samples packed per (user, metric, UTC day of their
/// start) in `packs`, one blob each (`SamplePack`); the uuid index (`UUIDIndex.swift`) says
/// which packs may hold a uuid, by a 32-bit hash of (user, uuid), with a count of the uuids of
/// that hash there (a place is a pack's day and metric in one integer); deleted uuids in
/// `tombstones`, announced in the index at place 0. A batch reads and
/// rewrites each pack it changes once, and a uuid's lookup is one probe of a small index
/// of integers (and of the few packs it names) instead of a row per sample keyed by text.
extension Shard {
    /// The uuid index place that says "`tombstones` may hold a uuid of this hash".
    static let tombstonePlace: Int64 = 0

    /// A pack's (metric, UTC day) as one integer of the uuid index (32 bits in an entry).
    static func place(metric: Int, day: Int64) -> Int64 { day << 3 | Int64(metric + 1) }

    /// The pack of `user` at a `place(metric:day:)` other than the tombstones'.
    static func pack(of user: String, at place: Int64) -> PackKey {
        PackKey(user: user, metric: Int(place & 7) - 1, day: place >> 3)
    }

    /// Where a cursor over the stored samples stands: after this pack.
    public struct SampleCursor: Sendable, Equatable {
        var user: String
        var metric: Int
        var day: Int64
    }

    /// Whether the shard still has the row-per-sample table of migrations 002–005.
    func holdsEntriesTable() throws -> Bool {
        try database.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'entries'").firstRow { $0.int64(0) > 0 } ?? false
    }

    /// Moves the samples and tombstones of a shard written before packs (one `entries` row
    /// per uuid) into packs, in one transaction: interrupted, the shard is as it was and the
    /// next open starts over. Then gives the freed pages back to the file system.
    /// - Returns: the samples moved, or nil if there was nothing to migrate.
    @discardableResult
    func migrateEntriesToPacks() throws -> Int? {
        guard try holdsEntriesTable() else { return nil }
        var moved = 0
        try database.inTransaction {
            let count = try database.statement("""
                INSERT INTO sample_days (hash, place, count) VALUES (?, ?, 1)
                ON CONFLICT (hash, place) DO UPDATE SET count = count + 1
                """)
            let tombstone = try database.statement("INSERT OR IGNORE INTO tombstones (user, uuid) VALUES (?, ?)")
            let deleted = try database.statement("SELECT user, uuid FROM entries WHERE metric IS NULL")
            while try deleted.step() {
                let user = deleted.text(0), uuid = deleted.text(1)
                try tombstone.bind(1, user)
                try tombstone.bind(2, uuid)
                try tombstone.run()
                try count.bind(1, uuidHash(user, uuid))
                try count.bind(2, Shard.tombstonePlace)
                try count.run()
            }
            let write = try database.statement("INSERT INTO packs (user, metric, day, samples) VALUES (?, ?, ?, ?)")
            var key: PackKey?
            var pack: [PackedSample] = []
            func flush() throws {
                guard let key, !pack.isEmpty else { return }
                try write.bind(1, key.user)
                try write.bind(2, key.metric)
                try write.bind(3, key.day)
                try write.bind(4, blob: SamplePack.encode(pack.sorted(by: PackedSample.inPackOrder), day: key.day))
                try write.run()
                for s in pack {
                    try count.bind(1, uuidHash(key.user, s.uuid))
                    try count.bind(2, Shard.place(metric: key.metric, day: key.day))
                    try count.run()
                }
                moved += pack.count
                pack.removeAll(keepingCapacity: true)
            }
            // In the order of the old index: one pack's samples arrive together.
            let live = try database.statement("""
                SELECT user, uuid, metric, source, start_ns, end_ns, value, zone, seq, version FROM entries
                WHERE metric IS NOT NULL ORDER BY user, metric, start_ns
                """)
            while try live.step() {
                let start = live.int64(4)
                let next = PackKey(user: live.text(0), metric: Int(live.int64(2)), day: SamplePack.day(ofStart: start))
                if next != key {
                    try flush()
                    key = next
                }
                pack.append(PackedSample(uuid: live.text(1), source: live.int64(3), start: start, end: live.int64(5),
                                         value: live.double(6), zone: live.int64(7), seq: live.int64(8), version: live.int64(9)))
            }
            try flush()
            try database.execute("DROP INDEX IF EXISTS entries_by_start; DROP TABLE entries;")
            return .commit
        }
        try database.execute("VACUUM")
        return moved
    }

    /// Writes a batch's samples and tombstones (inside the batch's transaction): each pack it
    /// changes is read once, changed in memory and written once.
    /// - Returns: the longest span among the samples written.
    func writeSamples(_ upserts: [(sample: Sample, seq: Int64)], storeLacks: [Bool], deletes: [(user: String, uuid: String)],
                      nameID: (String) throws -> Int64) throws -> Int64 {
        var work = PackWork(shard: self, expecting: upserts.count + deletes.count)
        var longest: Int64 = 0
        let upsertHashes = upserts.map { uuidHash($0.sample.user, $0.sample.uuid) }
        let deleteHashes = deletes.map { uuidHash($0.user, $0.uuid) }
        let vouched = upserts.indices.map { $0 < storeLacks.count && storeLacks[$0] }
        // The uuids the ledger could not vouch for are looked up in the index together.
        var unvouched = deleteHashes
        for i in upserts.indices where !vouched[i] { unvouched.append(upsertHashes[i]) }
        try work.prefetchPlaces(of: unvouched)
        // By index over the array's storage: no copy of each (sample, seq) pair.
        try upserts.withUnsafeBufferPointer { upserts in
            for i in upserts.indices {
                let hash = upsertHashes[i], seq = upserts[i].seq
                let place = try work.locate(user: upserts[i].sample.user, uuid: upserts[i].sample.uuid, hash: hash, storeLacks: vouched[i])
                if let old = place.pack { work.remove(upserts[i].sample.uuid, of: upserts[i].sample.user, from: old, hash: hash) }
                if place.tombstoned { try work.dropTombstone(user: upserts[i].sample.user, uuid: upserts[i].sample.uuid, hash: hash) }
                let start = upserts[i].sample.start.nanoseconds, end = upserts[i].sample.end.nanoseconds
                let key = PackKey(user: upserts[i].sample.user, metric: upserts[i].sample.metric.storageCode, day: SamplePack.day(ofStart: start))
                try work.insert(PackedSample(uuid: upserts[i].sample.uuid, source: try nameID(upserts[i].sample.source), start: start, end: end,
                                             value: upserts[i].sample.value, zone: try nameID(upserts[i].sample.zone), seq: seq,
                                             version: upserts[i].sample.version),
                                of: upserts[i].sample.user, into: key, hash: hash)
                longest = max(longest, end - start)
            }
        }
        for (i, (user, uuid)) in deletes.enumerated() {
            let hash = deleteHashes[i]
            let place = try work.locate(user: user, uuid: uuid, hash: hash)
            if let old = place.pack { work.remove(uuid, of: user, from: old, hash: hash) }
            if !place.tombstoned { try work.addTombstone(user: user, uuid: uuid, hash: hash) }
        }
        try work.write()
        return longest
    }

    /// The stored samples after `cursor`, whole packs at a time until at least `limit`, each
    /// with its log position, and the cursor to continue from (nil at the end). Holds no
    /// statement open between pages.
    public func storedSamples(after cursor: SampleCursor?, limit: Int) throws -> (samples: [(sample: Sample, seq: Int64)], next: SampleCursor?) {
        let read = try database.statement("""
            SELECT user, metric, day, samples FROM packs WHERE (user, metric, day) > (?1, ?2, ?3) ORDER BY user, metric, day
            """)
        try read.bind(1, cursor?.user ?? "")
        try read.bind(2, cursor?.metric ?? Int.min)
        try read.bind(3, cursor?.day ?? Int64.min)
        defer { read.reset() }
        var out: [(sample: Sample, seq: Int64)] = []
        var last: SampleCursor?
        while out.count < limit, try read.step() {
            let key = PackKey(user: read.text(0), metric: Int(read.int64(1)), day: read.int64(2))
            try read.withBlob(3) { bytes in
                try decodePack(bytes, key: key) { out.append((try sample($0, key: key), $0.seq)) }
            }
            last = SampleCursor(user: key.user, metric: key.metric, day: key.day)
        }
        return (out, last)
    }

    func decodePack(_ bytes: UnsafeRawBufferPointer, key: PackKey, _ body: (PackedSample) throws -> Void) throws {
        do {
            try SamplePack.decode(bytes, day: key.day, body)
        } catch let damaged as SamplePack.Damaged {
            throw ShardError(.notAShard, "\(path): the pack of user \(key.user), metric \(key.metric), UTC day \(key.day) is damaged (\(damaged.reason)). Move the shard away and restart: a missing shard is rebuilt from the log.")
        }
    }

    func sample(_ packed: PackedSample, key: PackKey) throws -> Sample {
        guard let metric = Metric(storageCode: key.metric) else {
            throw ShardError(.notAShard, "\(path): a stored sample of user \(key.user) has unknown metric code \(key.metric)")
        }
        return Sample(user: key.user, uuid: packed.uuid, metric: metric, source: try name(packed.source),
                      start: Instant(nanoseconds: packed.start), end: Instant(nanoseconds: packed.end),
                      value: packed.value, zone: try name(packed.zone), version: packed.version)
    }

    /// The samples of a pack in the order they were written; empty if there is no such pack.
    func readPack(_ key: PackKey) throws -> [PackedSample] {
        let read = try database.statement("SELECT samples FROM packs WHERE user = ? AND metric = ? AND day = ?")
        try read.bind(1, key.user)
        try read.bind(2, key.metric)
        try read.bind(3, key.day)
        defer { read.reset() }
        var out: [PackedSample] = []
        if try read.step() {
            try read.withBlob(0) { bytes in try decodePack(bytes, key: key) { out.append($0) } }
        }
        return out
    }

    func isTombstoned(user: String, uuid: String) throws -> Bool {
        let read = try database.statement("SELECT 1 FROM tombstones WHERE user = ? AND uuid = ?")
        try read.bind(1, user)
        try read.bind(2, uuid)
        return try read.firstRow { _ in true } ?? false
    }
}

/// (user, metric code, UTC day): the key of a pack.
struct PackKey: Hashable {
    var user: String
    var metric: Int
    var day: Int64

    /// Users compare byte for byte, as the store keys them; hashed with `NameHash` (a batch
    /// looks up a pack for every sample it writes).
    static func == (a: PackKey, b: PackKey) -> Bool {
        a.day == b.day && a.metric == b.metric && NameHash.sameBytes(a.user, b.user)
    }
    private var mixed: UInt64 { NameHash.of(user) ^ UInt64(bitPattern: day << 3 | Int64(metric & 7)) &* 0x9E37_79B9_7F4A_7C15 }
    func hash(into hasher: inout Hasher) { hasher.combine(mixed) }
    func _rawHashValue(seed: Int) -> Int { NameHash.table(mixed, seed: seed) }
}

extension PackedSample {
    /// The order samples are written in a pack: by log position (then uuid), so that the
    /// same samples always give the same bytes.
    static func inPackOrder(_ a: PackedSample, _ b: PackedSample) -> Bool {
        a.seq != b.seq ? a.seq < b.seq : a.uuid < b.uuid
    }
}

/// A pack as a batch changes it: its samples in log order while only later ones are
/// appended (the arrival of new samples), and a uuid index built only if a lookup needs it.
struct PackEdit {
    private(set) var samples: [PackedSample]
    private var index: [NameKey: Int]?
    private var inOrder = true

    init(_ samples: [PackedSample]) { self.samples = samples }

    var isEmpty: Bool { samples.isEmpty }

    mutating func position(of uuid: String) -> Int? {
        if index == nil {
            var built: [NameKey: Int] = [:]
            built.reserveCapacity(samples.count)
            for (i, s) in samples.enumerated() { built[NameKey(s.uuid)] = i }
            index = built
        }
        return index?[NameKey(uuid)]
    }

    /// Adds a sample whose uuid the pack does not hold.
    mutating func append(_ sample: PackedSample) {
        if let last = samples.last, !PackedSample.inPackOrder(last, sample) { inOrder = false }
        index?[NameKey(sample.uuid)] = samples.count
        samples.append(sample)
    }

    mutating func remove(_ uuid: String) {
        guard let i = position(of: uuid) else { return }
        let last = samples.count - 1
        if i != last {
            samples.swapAt(i, last)
            index?[NameKey(samples[i].uuid)] = i
            inOrder = false
        }
        samples.removeLast()
        index?[NameKey(uuid)] = nil
    }

    /// The samples in pack order (`inPackOrder`), as they are written.
    var ordered: [PackedSample] { inOrder ? samples : samples.sorted(by: PackedSample.inPackOrder) }
}

/// The packs one batch (or one lookup) reads, with what it changed, written at the end.
struct PackWork {
    struct Place {
        var pack: PackKey?
        var tombstoned: Bool
    }

    /// A (user, uuid) keyed by the hash the index already computed (no string hashing).
    private struct UserUUID: Hashable {
        var user: String
        var uuid: String
        var hash: Int64

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
        func _rawHashValue(seed: Int) -> Int { NameHash.table(int: hash, seed: seed) }
        static func == (a: UserUUID, b: UserUUID) -> Bool { a.hash == b.hash && a.uuid == b.uuid && a.user == b.user }
    }

    private struct IndexKey: Hashable {
        var hash: Int64
        var place: Int64

        func _rawHashValue(seed: Int) -> Int { NameHash.table(int: hash &* 0x2545_F491_4F6C_DD1D ^ place, seed: seed) }
    }

    let shard: Shard
    private var packs: [PackKey: PackEdit] = [:]
    private var dirty: Set<PackKey> = []
    private var placed: [UserUUID: Place] = [:]
    private var counts: [IndexKey: Int] = [:]
    /// What the uuid index said of the hashes asked ahead (`prefetchPlaces`).
    private var prefetched: [Int64: [Int64]] = [:]

    init(shard: Shard, expecting uuids: Int = 0) {
        self.shard = shard
        placed.reserveCapacity(uuids)
    }

    /// Where the version in force of (user, uuid) is, and whether it is tombstoned.
    /// - Parameter storeLacks: the caller knows the store held nothing of the uuid before
    ///   this work began: only this work's own changes are looked at.
    mutating func locate(user: String, uuid: String, hash: Int64, storeLacks: Bool = false) throws -> Place {
        let id = UserUUID(user: user, uuid: uuid, hash: hash)
        if let known = placed[id] { return known }
        var place = Place(pack: nil, tombstoned: false)
        if storeLacks { return place }
        var maybeTombstoned = false
        // A hash not asked ahead is asked alone (every caller asks ahead today).
        for spot in try prefetched[hash] ?? shard.places(ofHashes: [hash])[hash] ?? [] {
            if spot == Shard.tombstonePlace {
                maybeTombstoned = true
                continue
            }
            let key = Shard.pack(of: user, at: spot)
            try load(key)
            if packs[key]?.position(of: uuid) != nil {
                place.pack = key
                break
            }
        }
        if maybeTombstoned { place.tombstoned = try shard.isTombstoned(user: user, uuid: uuid) }
        placed[id] = place
        return place
    }

    /// Reads what the uuid index says of `hashes` at once, for the `locate`s that
    /// follow (the index is not written until `write`, so the answers stay true meanwhile).
    mutating func prefetchPlaces(of hashes: [Int64]) throws {
        guard !hashes.isEmpty else { return }
        prefetched.merge(try shard.places(ofHashes: hashes)) { old, _ in old }
    }

    /// The sample of `uuid` in a pack `locate` found it in.
    mutating func sample(_ uuid: String, in key: PackKey) -> PackedSample? {
        guard let i = packs[key]?.position(of: uuid) else { return nil }
        return packs[key]?.samples[i]
    }

    /// Reads a pack on first use.
    private mutating func load(_ key: PackKey) throws {
        if packs[key] == nil { packs[key] = PackEdit(try shard.readPack(key)) }
    }

    mutating func remove(_ uuid: String, of user: String, from key: PackKey, hash: Int64) {
        packs[key]?.remove(uuid)
        dirty.insert(key)
        count(hash, at: Shard.place(metric: key.metric, day: key.day), by: -1)
        placed[UserUUID(user: user, uuid: uuid, hash: hash), default: Place(pack: nil, tombstoned: false)].pack = nil
    }

    /// Adds a sample whose uuid is in no pack (`locate` said so, or it was removed).
    mutating func insert(_ sample: PackedSample, of user: String, into key: PackKey, hash: Int64) throws {
        try load(key)
        packs[key]?.append(sample)
        dirty.insert(key)
        count(hash, at: Shard.place(metric: key.metric, day: key.day), by: 1)
        placed[UserUUID(user: user, uuid: sample.uuid, hash: hash)] = Place(pack: key, tombstoned: false)
    }

    /// Changes the number of uuids of `hash` at `place` that `write` records in the uuid index (as one run).
    private mutating func count(_ hash: Int64, at place: Int64, by delta: Int) {
        counts[IndexKey(hash: hash, place: place), default: 0] += delta
    }

    mutating func addTombstone(user: String, uuid: String, hash: Int64) throws {
        let write = try shard.database.statement("INSERT OR IGNORE INTO tombstones (user, uuid) VALUES (?, ?)")
        try write.bind(1, user)
        try write.bind(2, uuid)
        try write.run()
        if shard.database.changes > 0 { count(hash, at: Shard.tombstonePlace, by: 1) }
        placed[UserUUID(user: user, uuid: uuid, hash: hash)] = Place(pack: nil, tombstoned: true)
    }

    mutating func dropTombstone(user: String, uuid: String, hash: Int64) throws {
        let write = try shard.database.statement("DELETE FROM tombstones WHERE user = ? AND uuid = ?")
        try write.bind(1, user)
        try write.bind(2, uuid)
        try write.run()
        if shard.database.changes > 0 { count(hash, at: Shard.tombstonePlace, by: -1) }
        placed[UserUUID(user: user, uuid: uuid, hash: hash), default: Place(pack: nil, tombstoned: false)].tombstoned = false
    }

    /// Writes every changed pack (an empty one is deleted) and the index counts.
    func write() throws {
        let database = shard.database
        let put = try database.statement("INSERT OR REPLACE INTO packs (user, metric, day, samples) VALUES (?, ?, ?, ?)")
        let drop = try database.statement("DELETE FROM packs WHERE user = ? AND metric = ? AND day = ?")
        for key in dirty {
            let pack = packs[key] ?? PackEdit([])
            let statement = pack.isEmpty ? drop : put
            try statement.bind(1, key.user)
            try statement.bind(2, key.metric)
            try statement.bind(3, key.day)
            if !pack.isEmpty { try statement.bind(4, blob: SamplePack.encode(pack.ordered, day: key.day)) }
            try statement.run()
        }
        // The index's changes as one sorted run: a row per batch, not an upsert per sample.
        var changes: [IndexEntry] = []
        changes.reserveCapacity(counts.count)
        for (key, delta) in counts where delta != 0 { changes.append(IndexEntry(hash: key.hash, place: key.place, count: Int64(delta))) }
        changes.sort(by: IndexEntry.before)
        try shard.addIndexRun(changes)
    }
}

extension Shard: LedgerStore {
    public func reading(_ body: () throws -> Void) throws {
        defer { cachedIndexRuns = nil }
        try database.inReadTransaction(body)
    }

    public func hasEntries(user: String) throws -> Bool {
        let read = try database.statement("SELECT 1 FROM packs WHERE user = ?1 UNION ALL SELECT 1 FROM tombstones WHERE user = ?1 LIMIT 1")
        try read.bind(1, user)
        return try read.firstRow { _ in true } ?? false
    }

    public func entries(user: String, uuids: [String]) throws -> [String: StoredEntry] {
        var work = PackWork(shard: self, expecting: uuids.count)
        var out: [String: StoredEntry] = [:]
        out.reserveCapacity(uuids.count)
        let hashes = uuids.map { uuidHash(user, $0) }
        try work.prefetchPlaces(of: hashes)
        for (uuid, hash) in zip(uuids, hashes) {
            let place = try work.locate(user: user, uuid: uuid, hash: hash)
            if let key = place.pack, let packed = work.sample(uuid, in: key) {
                out[uuid] = .live(try sample(packed, key: key), seq: packed.seq)
            } else {
                out[uuid] = place.tombstoned ? .tombstoned : .absent
            }
        }
        return out
    }

    public func samples(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [(sample: Sample, seq: Int64)] {
        let first = Int64(days.lowerBound) * Instant.nanosPerDay
        // Heart rate counts on its start's day; cumulative samples reach back at most maxSpan.
        let low = metric.isCumulative ? first - maxSpan : first
        let high = (Int64(days.upperBound) + 1) * Instant.nanosPerDay
        let read = try database.statement("SELECT day, samples FROM packs WHERE user = ? AND metric = ? AND day >= ? AND day <= ?")
        try read.bind(1, user)
        try read.bind(2, metric.storageCode)
        try read.bind(3, SamplePack.day(ofStart: low))
        try read.bind(4, SamplePack.day(ofStart: high - 1))
        defer { read.reset() }
        var out: [(sample: Sample, seq: Int64)] = []
        while try read.step() {
            let key = PackKey(user: user, metric: metric.storageCode, day: read.int64(0))
            try read.withBlob(1) { bytes in
                try decodePack(bytes, key: key) { packed in
                    guard packed.start >= low, packed.start < high, packed.end > first || packed.start >= first else { return }
                    out.append((try sample(packed, key: key), packed.seq))
                }
            }
        }
        return out
    }
}
