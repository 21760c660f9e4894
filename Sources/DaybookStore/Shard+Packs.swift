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

    /// The metric numbers a place can hold: 0 ..< `placeMetrics` (`place(metric:day:)`).
    static let placeMetrics = 38

    /// A pack's (metric, UTC day) as one integer of the uuid index (32 bits in an entry), in
    /// one of two forms told apart by the low 3 bits:
    /// - metrics 0–6 (the first seven of the catalogue): `day << 3 | metric + 1`, low bits
    ///   1–7, the form every shard has used since the packs;
    /// - metrics 7–37: `day << 8 | (metric − 6) << 3`, low bits 0 (and never 0 as a whole,
    ///   the tombstones' place). 24 bits of day hold years 0001 to 9999 in an Int32.
    ///
    /// The first form alone had room for seven metrics: the catalogue's eighth
    /// (exercise_time, 7 + 1 = 8) spilled into the day bits, and a uuid's lookup then named
    /// the wrong pack, so a re-read sample was stored twice (issue 30; a shard that holds
    /// such samples written before this is refused on open, asking for a rebuild:
    /// `checkCatalogue`). `UUIDIndexTests` checks both forms round trip.
    static func place(metric: Int, day: Int64) -> Int64 {
        precondition(metric >= 0 && metric < placeMetrics, "metric \(metric) has no place in the uuid index")
        return metric < 7 ? day << 3 | Int64(metric + 1) : day << 8 | Int64(metric - 6) << 3
    }

    /// The pack of `user` at a `place(metric:day:)` other than the tombstones'.
    static func pack(of user: String, at place: Int64) -> PackKey {
        let low = place & 7
        if low != 0 { return PackKey(user: user, metric: Int(low) - 1, day: place >> 3) }
        return PackKey(user: user, metric: Int(place >> 3 & 31) + 6, day: place >> 8)
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
                    try count.bind(1, indexHash(key.user, s.uuid))
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
    func writeSamples(_ upserts: [Upsert], staged: StagedBatch, stagedUpserts: [Int32], storeLacks: [Bool],
                      deletes: [(user: String, uuid: SampleUUID)], nameID: (String) throws -> Int64) throws -> Int64 {
        // Upserts given as samples (tests, tools; a projection stages) join the staged batch
        // ahead of its own, in the order `storeLacks` follows, so that one loop writes both.
        var staged = staged, written = stagedUpserts
        if !upserts.isEmpty {
            written = []
            written.reserveCapacity(upserts.count + stagedUpserts.count)
            for upsert in upserts {
                written.append(Int32(staged.count))
                staged.append(.sampleAdded(upsert.sample), position: upsert.seq)
            }
            written += stagedUpserts
        }
        var work = PackWork(shard: self, expecting: written.count + deletes.count)
        var longest: Int64 = 0
        let upsertHashes = written.map { e in indexHash(staged.name(staged.events[Int(e)].user), staged.uuid(at: Int(e))) }
        let deleteHashes = deletes.map { indexHash($0.user, $0.uuid) }
        let vouched = written.indices.map { $0 < storeLacks.count && storeLacks[$0] }
        // The uuids the ledger could not vouch for are looked up in the index together.
        var unvouched = deleteHashes
        for i in written.indices where !vouched[i] { unvouched.append(upsertHashes[i]) }
        try work.prefetchPlaces(of: unvouched)
        // The batch's names in the store's numbering, each looked up once.
        var storeIDs = [Int64](repeating: -1, count: written.isEmpty ? 0 : staged.names.count)
        func storeID(_ name: Int32) throws -> Int64 {
            if storeIDs[Int(name)] < 0 { storeIDs[Int(name)] = try nameID(staged.name(name)) }
            return storeIDs[Int(name)]
        }
        for (i, e) in written.enumerated() {
            let event = staged.events[Int(e)] // plain data
            let span = try write(user: staged.name(event.user), uuid: staged.uuid(at: Int(e)), metric: event.metric,
                                 source: try storeID(event.source), zone: try storeID(event.zone),
                                 start: event.start.nanoseconds, end: event.end.nanoseconds, value: event.value,
                                 version: event.version, seq: event.position, hash: upsertHashes[i], vouched: vouched[i], into: &work)
            longest = max(longest, span)
        }
        for (i, (user, uuid)) in deletes.enumerated() {
            let hash = deleteHashes[i]
            let place = try work.locate(user: user, uuid: uuid, hash: hash)
            if let old = place.pack { try work.remove(uuid, of: user, from: old, hash: hash) }
            if !place.tombstoned { try work.addTombstone(user: user, uuid: uuid, hash: hash) }
        }
        try work.write()
        return longest
    }

    /// Puts one upserted sample in its pack (out of any pack or tombstone it was in); returns
    /// its span (end − start). `source` and `zone` are the store's numbers of their names.
    private func write(user: String, uuid: SampleUUID, metric: Metric, source: Int64, zone: Int64, start: Int64, end: Int64,
                       value: Double, version: Int64, seq: Int64, hash: Int64, vouched: Bool, into work: inout PackWork) throws -> Int64 {
        let place = try work.locate(user: user, uuid: uuid, hash: hash, storeLacks: vouched)
        if let old = place.pack { try work.remove(uuid, of: user, from: old, hash: hash) }
        if place.tombstoned { try work.dropTombstone(user: user, uuid: uuid, hash: hash) }
        let key = PackKey(user: user, metric: metric.storageCode, day: SamplePack.day(ofStart: start))
        try work.insert(PackedSample(uuid: uuid, source: source, start: start, end: end, value: value, zone: zone, seq: seq, version: version),
                        of: user, into: key, hash: hash)
        return end - start
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
            throw damagedPack(key, damaged)
        }
    }

    func damagedPack(_ key: PackKey, _ damaged: SamplePack.Damaged) -> ShardError {
        ShardError(.notAShard, "\(path): the pack of user \(key.user), metric \(key.metric), UTC day \(key.day) is damaged (\(damaged.reason)). Move the shard away and restart: a missing shard is rebuilt from the log.")
    }

    func sample(_ packed: PackedSample, key: PackKey) throws -> Sample {
        guard let metric = Metric(storageCode: key.metric) else {
            throw ShardError(.notAShard, "\(path): a stored sample of user \(key.user) has unknown metric code \(key.metric)")
        }
        return Sample(user: key.user, uuid: packed.uuid, metric: metric, source: try name(packed.source),
                      start: Instant(nanoseconds: packed.start), end: Instant(nanoseconds: packed.end),
                      value: packed.value, zone: try name(packed.zone), version: packed.version)
    }

    /// The stored bytes of a pack; empty if there is no such pack.
    func readPackBytes(_ key: PackKey) throws -> [UInt8] {
        let read = try database.statement("SELECT samples FROM packs WHERE user = ? AND metric = ? AND day = ?")
        try read.bind(1, key.user)
        try read.bind(2, key.metric)
        try read.bind(3, key.day)
        defer { read.reset() }
        return try read.step() ? read.blob(0) : []
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
    private var mixed: UInt64 { NameHash.of(user) ^ UInt64(bitPattern: day << 8 | Int64(metric & 255)) &* 0x9E37_79B9_7F4A_7C15 }
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

/// A pack as a batch changes it. While the batch only appends samples that come after the
/// stored ones in pack order (the arrival of new samples), the pack stays bytes: the stored
/// blob and the new samples coded after its tail (`PackEncoder`), so that writing it codes
/// only the new samples and no stored one becomes a String. A lookup, a removal or an
/// append out of order turns it into samples (decoded once), written whole as before.
struct PackEdit {
    /// The blob as stored (empty when there is none), until the pack is decoded.
    private var stored: [UInt8]
    /// The stored pack's tail and the samples coded after it, once one is appended.
    private var tail: SamplePack.Tail?
    private var appended: PackEncoder?
    /// The log position and uuid of the last sample appended as bytes.
    private var last: Appended?
    /// A struct, not a tuple: replacing a tuple of a non-trivial field went through the
    /// runtime's generic tuple witness (~115 instructions a sample).
    private struct Appended {
        var seq: Int64
        var uuid: SampleUUID
    }
    /// The samples, once decoded: in pack order while only later ones are appended.
    private var samples: [PackedSample]?
    private var index: [SampleUUID: Int]?
    private var inOrder = true
    /// Whether the batch changed the pack (it is written then).
    var changed = false

    init(stored: [UInt8]) { self.stored = stored }

    init(_ samples: [PackedSample]) {
        stored = []
        self.samples = samples
    }

    var isEmpty: Bool {
        if let samples { return samples.isEmpty }
        return (tail?.count ?? (stored.isEmpty ? 0 : 1)) + (appended?.count ?? 0) == 0
    }

    /// The samples, decoded from the bytes on first use (`key` names the pack in errors).
    mutating func decoded(_ shard: Shard, _ key: PackKey) throws -> [PackedSample] {
        if let samples { return samples }
        var all: [PackedSample] = []
        let bytes = appended.map { $0.pack(after: stored, tail: tail) } ?? stored
        if !bytes.isEmpty {
            try bytes.withUnsafeBytes { try shard.decodePack($0, key: key) { all.append($0) } }
        }
        samples = all
        stored = []
        tail = nil
        appended = nil
        last = nil
        return all
    }

    mutating func position(of uuid: SampleUUID, _ shard: Shard, _ key: PackKey) throws -> Int? {
        let samples = try decoded(shard, key)
        if index == nil {
            var built: [SampleUUID: Int] = [:]
            built.reserveCapacity(samples.count)
            for (i, s) in samples.enumerated() { built[s.uuid] = i }
            index = built
        }
        return index?[uuid]
    }

    func sample(at i: Int) -> PackedSample? { samples?[i] }

    /// Whether the pack was decoded (for tests: a batch of appends in order never decodes it).
    var isDecoded: Bool { samples != nil }

    /// Adds a sample whose uuid the pack does not hold.
    mutating func append(_ sample: PackedSample, _ shard: Shard, _ key: PackKey) throws {
        changed = true
        if samples == nil {
            if appended == nil {
                var stored = SamplePack.Tail(previousStart: key.day &* Instant.nanosPerDay)
                if !self.stored.isEmpty {
                    do {
                        stored = try self.stored.withUnsafeBytes { try SamplePack.tail($0, day: key.day) }
                    } catch let damaged as SamplePack.Damaged {
                        throw shard.damagedPack(key, damaged)
                    }
                }
                tail = stored
                appended = PackEncoder(after: stored)
            }
            if comesLast(sample) {
                appended!.add(sample)
                last = Appended(seq: sample.seq, uuid: sample.uuid)
                return
            }
            _ = try decoded(shard, key)
        }
        if let last = samples!.last, !PackedSample.inPackOrder(last, sample) { inOrder = false }
        index?[sample.uuid] = samples!.count
        samples!.append(sample)
    }

    /// Whether `sample` comes after every sample of the bytes in pack order.
    private func comesLast(_ sample: PackedSample) -> Bool {
        if let last { return last.seq != sample.seq ? last.seq < sample.seq : last.uuid < sample.uuid }
        guard let end = tail?.last else { return true }
        if end.seq != sample.seq { return end.seq < sample.seq }
        return end.uuid.withUnsafeBufferPointer { end in sample.uuid.withUTF8 { SampleUUID.precedes(end, $0) } }
    }

    mutating func remove(_ uuid: SampleUUID, _ shard: Shard, _ key: PackKey) throws {
        guard let i = try position(of: uuid, shard, key) else { return }
        changed = true
        let last = samples!.count - 1
        if i != last {
            samples!.swapAt(i, last)
            index?[samples![i].uuid] = i
            inOrder = false
        }
        samples!.removeLast()
        index?[uuid] = nil
    }

    /// The blob to write: the stored bytes with the appended samples after them, or the
    /// decoded samples coded whole in pack order (`inPackOrder`).
    func bytes(day: Int64) -> [UInt8] {
        if let samples { return SamplePack.encode(inOrder ? samples : samples.sorted(by: PackedSample.inPackOrder), day: day) }
        if let appended { return appended.pack(after: stored, tail: tail) }
        return stored
    }
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
        var uuid: SampleUUID
        var hash: Int64

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
        func _rawHashValue(seed: Int) -> Int { NameHash.table(int: hash, seed: seed) }
        static func == (a: UserUUID, b: UserUUID) -> Bool { a.hash == b.hash && a.uuid == b.uuid && NameHash.sameBytes(a.user, b.user) }
    }

    let shard: Shard
    /// The packs read, by key, as places in `edits`.
    private var slots: [PackKey: Int] = [:]
    private var keys: [PackKey] = []
    private var edits: [PackEdit] = []
    /// The packs used last: a partition's samples come in runs of a few users' few packs,
    /// found here by comparing integers instead of hashing a user's String.
    private var recent: [RecentPack] = []
    private var nextRecent = 0
    private static let recentPacks = 8

    /// A pack used lately, its user by the bits of the String `keys` holds. Equal bits are the
    /// same bytes (one small String's inline bytes, or one storage object, kept alive by
    /// `keys` so that no other String can take its address); other bits say nothing, and the
    /// dictionary answers.
    private struct RecentPack {
        var user: (UInt64, UInt64)
        var metric: Int
        var day: Int64
        var slot: Int
    }

    @inline(__always)
    private static func bits(_ name: String) -> (UInt64, UInt64) { unsafeBitCast(name, to: (UInt64, UInt64).self) }
    private var placed: [UserUUID: Place] = [:]
    /// The index changes, as (hash, place) keys that sort as the pairs do: one +1 per insert,
    /// one −1 per removal, summed in `write` (no dictionary per sample).
    private var added: [UInt64] = []
    private var removed: [UInt64] = []
    /// Changes whose place does not fit the packed key (never in practice; kept so that
    /// `write` still refuses them as the index does).
    private var unpacked: [IndexEntry] = []
    /// What the uuid index said of the hashes asked ahead (`prefetchPlaces`).
    private var prefetched: [Int64: [Int64]] = [:]

    init(shard: Shard, expecting uuids: Int = 0) {
        self.shard = shard
        placed.reserveCapacity(uuids)
        added.reserveCapacity(uuids)
    }

    /// Where the version in force of (user, uuid) is, and whether it is tombstoned.
    /// - Parameter storeLacks: the caller knows the store held nothing of the uuid before
    ///   this work began: only this work's own changes are looked at.
    mutating func locate(user: String, uuid: SampleUUID, hash: Int64, storeLacks: Bool = false) throws -> Place {
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
            let slot = try load(key)
            if try edits[slot].position(of: uuid, shard, key) != nil {
                place.pack = key
                break
            }
        }
        if maybeTombstoned { place.tombstoned = try shard.isTombstoned(user: user, uuid: uuid.text) }
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
    mutating func sample(_ uuid: SampleUUID, in key: PackKey) throws -> PackedSample? {
        guard let slot = slots[key], let i = try edits[slot].position(of: uuid, shard, key) else { return nil }
        return edits[slot].sample(at: i)
    }

    /// Reads a pack on first use, as bytes; its slot in `edits`.
    private mutating func load(_ key: PackKey) throws -> Int {
        let user = PackWork.bits(key.user)
        for r in recent where r.day == key.day && r.metric == key.metric && r.user == user { return r.slot }
        let slot: Int
        if let known = slots[key] {
            slot = known
        } else {
            slot = edits.count
            edits.append(PackEdit(stored: try shard.readPackBytes(key)))
            keys.append(key)
            slots[key] = slot
        }
        let used = RecentPack(user: PackWork.bits(keys[slot].user), metric: key.metric, day: key.day, slot: slot)
        if recent.count < PackWork.recentPacks {
            recent.append(used)
        } else {
            recent[nextRecent] = used
            nextRecent = (nextRecent + 1) % PackWork.recentPacks
        }
        return slot
    }

    mutating func remove(_ uuid: SampleUUID, of user: String, from key: PackKey, hash: Int64) throws {
        let slot = try load(key)
        try edits[slot].remove(uuid, shard, key)
        edits[slot].changed = true
        count(hash, at: Shard.place(metric: key.metric, day: key.day), by: -1)
        placed[UserUUID(user: user, uuid: uuid, hash: hash), default: Place(pack: nil, tombstoned: false)].pack = nil
    }

    /// Adds a sample whose uuid is in no pack (`locate` said so, or it was removed).
    mutating func insert(_ sample: PackedSample, of user: String, into key: PackKey, hash: Int64) throws {
        let slot = try load(key)
        try edits[slot].append(sample, shard, key)
        count(hash, at: Shard.place(metric: key.metric, day: key.day), by: 1)
        placed[UserUUID(user: user, uuid: sample.uuid, hash: hash)] = Place(pack: key, tombstoned: false)
    }

    /// Changes the number of uuids of `hash` at `place` that `write` records in the uuid index (as one run).
    private mutating func count(_ hash: Int64, at place: Int64, by delta: Int) {
        guard let h = Int32(exactly: hash), let p = Int32(exactly: place) else {
            unpacked.append(IndexEntry(hash: hash, place: place, count: Int64(delta)))
            return
        }
        // Flipping the sign bits makes unsigned order the signed order of (hash, place).
        let key = UInt64(UInt32(bitPattern: h) ^ 0x8000_0000) << 32 | UInt64(UInt32(bitPattern: p) ^ 0x8000_0000)
        if delta > 0 { added.append(key) } else { removed.append(key) }
    }

    private static func entry(_ key: UInt64, count: Int64) -> IndexEntry {
        IndexEntry(hash: Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: key >> 32) ^ 0x8000_0000)),
                   place: Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: key) ^ 0x8000_0000)), count: count)
    }

    mutating func addTombstone(user: String, uuid: SampleUUID, hash: Int64) throws {
        let write = try shard.database.statement("INSERT OR IGNORE INTO tombstones (user, uuid) VALUES (?, ?)")
        try write.bind(1, user)
        try write.bind(2, uuid.text)
        try write.run()
        if shard.database.changes > 0 { count(hash, at: Shard.tombstonePlace, by: 1) }
        placed[UserUUID(user: user, uuid: uuid, hash: hash)] = Place(pack: nil, tombstoned: true)
    }

    mutating func dropTombstone(user: String, uuid: SampleUUID, hash: Int64) throws {
        let write = try shard.database.statement("DELETE FROM tombstones WHERE user = ? AND uuid = ?")
        try write.bind(1, user)
        try write.bind(2, uuid.text)
        try write.run()
        if shard.database.changes > 0 { count(hash, at: Shard.tombstonePlace, by: -1) }
        placed[UserUUID(user: user, uuid: uuid, hash: hash), default: Place(pack: nil, tombstoned: false)].tombstoned = false
    }

    /// Writes every changed pack (an empty one is deleted) and the index counts.
    mutating func write() throws {
        let database = shard.database
        let put = try database.statement("INSERT OR REPLACE INTO packs (user, metric, day, samples) VALUES (?, ?, ?, ?)")
        let drop = try database.statement("DELETE FROM packs WHERE user = ? AND metric = ? AND day = ?")
        for slot in edits.indices where edits[slot].changed {
            let key = keys[slot]
            let empty = edits[slot].isEmpty
            let statement = empty ? drop : put
            try statement.bind(1, key.user)
            try statement.bind(2, key.metric)
            try statement.bind(3, key.day)
            if !empty { try statement.bind(4, blob: edits[slot].bytes(day: key.day)) }
            try statement.run()
        }
        try shard.addIndexRun(indexChanges())
    }

    /// The index's changes as one sorted run, summed per (hash, place), none zero: a row per
    /// batch, not an upsert per sample.
    private mutating func indexChanges() -> [IndexEntry] {
        added.sort()
        removed.sort()
        var changes: [IndexEntry] = []
        changes.reserveCapacity(added.count + removed.count)
        var a = 0, r = 0
        while a < added.count || r < removed.count {
            let key = r == removed.count || (a < added.count && added[a] <= removed[r]) ? added[a] : removed[r]
            var count: Int64 = 0
            while a < added.count, added[a] == key {
                count += 1
                a += 1
            }
            while r < removed.count, removed[r] == key {
                count -= 1
                r += 1
            }
            if count != 0 { changes.append(PackWork.entry(key, count: count)) }
        }
        guard !unpacked.isEmpty else { return changes }
        // A place out of the index's range: summed with the rest, so that the run refuses it.
        var all = changes + unpacked
        all.sort(by: IndexEntry.before)
        changes.removeAll()
        for e in all {
            if let last = changes.last, last.hash == e.hash, last.place == e.place { changes[changes.count - 1].count += e.count } else { changes.append(e) }
        }
        return changes.filter { $0.count != 0 }
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
            let compact = SampleUUID(uuid)
            let place = try work.locate(user: user, uuid: compact, hash: hash)
            if let key = place.pack, let packed = try work.sample(compact, in: key) {
                out[uuid] = .live(try sample(packed, key: key), seq: packed.seq)
            } else {
                out[uuid] = place.tombstoned ? .tombstoned : .absent
            }
        }
        return out
    }

    public func records(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [StoredRecord]? {
        var out: [StoredRecord] = []
        try forEachPacked(user: user, metric: metric, days: days) { packed, _ in
            out.append(StoredRecord(uuid: packed.uuid, start: packed.start, end: packed.end, value: packed.value, version: packed.version,
                                    seq: packed.seq, source: packed.source, zone: packed.zone))
        }
        return out
    }

    public func name(numbered number: Int64) throws -> String { try name(number) }

    public func samples(user: String, metric: Metric, days: ClosedRange<Int32>) throws -> [(sample: Sample, seq: Int64)] {
        var out: [(sample: Sample, seq: Int64)] = []
        try forEachPacked(user: user, metric: metric, days: days) { packed, key in out.append((try sample(packed, key: key), packed.seq)) }
        return out
    }

    /// Each stored sample of (`user`, `metric`) in the UTC days `days` (as `samples` selects them).
    private func forEachPacked(user: String, metric: Metric, days: ClosedRange<Int32>,
                               _ body: (PackedSample, PackKey) throws -> Void) throws {
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
        while try read.step() {
            let key = PackKey(user: user, metric: metric.storageCode, day: read.int64(0))
            try read.withBlob(1) { bytes in
                try decodePack(bytes, key: key) { packed in
                    guard packed.start >= low, packed.start < high, packed.end > first || packed.start >= first else { return }
                    try body(packed, key)
                }
            }
        }
    }
}
