import Foundation

/// The uuid index (migration 008): for a 32-bit hash of (user, uuid), the places (a pack's
/// metric and UTC day, or 0 for `tombstones`) that may hold a uuid of that hash, with how many.
///
/// A batch writes what it changed as one *run* in `uuid_runs`: a blob of (hash, place, delta)
/// entries sorted by hash, one row per batch instead of one B-tree upsert per sample. Once a
/// shard holds `maxIndexRuns` runs, the commit that wrote the last one merges them all into
/// `uuid_pages`: the counts in force, sorted, cut into pages of at most `indexPageEntries`
/// entries, each keyed by the lowest hash it covers (the first page by `Int64.min`), so that
/// a hash's counts are in the page with the greatest key not above it. A lookup reads that
/// page and binary-searches it and each run; a shard never has more than `maxIndexRuns` runs,
/// so neither a lookup nor what the shard holds in memory grows with its history.
///
/// Every entry is 12 bytes (hash, place, count as little-endian Int32s): a blob is searched in
/// place, without decoding. Runs are read once per read transaction or commit
/// (`indexRuns()`), pages one at a time.
///
/// Complexity: writing a batch of `n` index changes is one sort of `n` and one row; a
/// compaction of `r` run entries into an index of `N` rewrites the pages they touch
/// (at most `N + r` entries), once every `maxIndexRuns` batches.
struct IndexEntry: Equatable {
    var hash: Int64
    var place: Int64
    var count: Int64

    static func before(_ a: IndexEntry, _ b: IndexEntry) -> Bool {
        a.hash != b.hash ? a.hash < b.hash : a.place < b.place
    }
}

/// The bytes of a run or a page: `IndexEntry`s sorted by (hash, place), 12 bytes each.
enum IndexBlob {
    static let width = 12

    /// The blob of `entries` (sorted by the caller).
    /// - Throws: if a hash, place or count does not fit in 32 bits.
    static func encode(_ entries: some Collection<IndexEntry>, path: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: entries.count * width)
        try out.withUnsafeMutableBytes { bytes in
            var offset = 0
            for e in entries {
                guard let hash = Int32(exactly: e.hash), let place = Int32(exactly: e.place), let count = Int32(exactly: e.count) else {
                    throw Shard.ShardError(.storage, "\(path): a uuid index entry (hash \(e.hash), place \(e.place), count \(e.count)) does not fit in 32 bits")
                }
                bytes.storeBytes(of: hash.littleEndian, toByteOffset: offset, as: Int32.self)
                bytes.storeBytes(of: place.littleEndian, toByteOffset: offset + 4, as: Int32.self)
                bytes.storeBytes(of: count.littleEndian, toByteOffset: offset + 8, as: Int32.self)
                offset += width
            }
        }
        return out
    }

    static func count(_ bytes: UnsafeRawBufferPointer) -> Int { bytes.count / width }

    static func int(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> Int64 {
        Int64(Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
    }

    static func hash(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Int64 { int(bytes, i * width) }

    static func entry(_ bytes: UnsafeRawBufferPointer, at i: Int) -> IndexEntry {
        IndexEntry(hash: int(bytes, i * width), place: int(bytes, i * width + 4), count: int(bytes, i * width + 8))
    }

    /// The position of the first entry at or after `from` whose hash is not below `hash`
    /// (every entry before `from` must be below it): gallops from `from`, then halves, so a
    /// walk over rising hashes costs the log of each gap, not of the whole blob.
    static func seek(_ hash: Int64, in bytes: UnsafeRawBufferPointer, from: Int) -> Int {
        let n = count(bytes)
        var low = from, high = from, step = 1
        while high < n, self.hash(bytes, at: high) < hash {
            low = high + 1
            high += step
            step *= 2
        }
        high = min(high, n)
        while low < high {
            let mid = (low + high) / 2
            if self.hash(bytes, at: mid) < hash { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Whether `bytes` is a whole number of entries.
    static func isWhole(_ bytes: UnsafeRawBufferPointer) -> Bool { bytes.count % width == 0 }
}

extension Shard {
    /// Entries a page of `uuid_pages` is cut to in a database of `pageSize`-byte pages: the
    /// most one cell of a database page holds without an overflow page, less 64 bytes (336
    /// entries, 4,032 bytes, in a 4 KiB page; 165 in a 2 KiB page), so that a page of the index
    /// fills a database page and reading it reads one. One hash's entries are never split
    /// across pages, and a lookup does not depend on where pages were cut.
    static func indexPageEntries(pageSize: Int) -> Int { max(1, (pageSize - 64) / IndexBlob.width) }

    static let floorPage = "SELECT first_hash, entries FROM uuid_pages WHERE first_hash <= ? ORDER BY first_hash DESC LIMIT 1"
    static let nextPage = "SELECT first_hash FROM uuid_pages WHERE first_hash > ? ORDER BY first_hash LIMIT 1"

    /// The runs of the uuid index, read once per read transaction or commit.
    func indexRuns() throws -> [[UInt8]] {
        if let cachedIndexRuns { return cachedIndexRuns }
        let read = try database.statement("SELECT entries FROM uuid_runs ORDER BY id")
        defer { read.reset() }
        var runs: [[UInt8]] = []
        while try read.step() {
            let run = read.blob(0)
            guard run.count % IndexBlob.width == 0 else { throw damagedIndex("a run") }
            runs.append(run)
        }
        cachedIndexRuns = runs
        return runs
    }

    func damagedIndex(_ what: String) -> ShardError {
        ShardError(.notAShard, "\(path): \(what) of the uuid index is damaged (not a whole number of entries). Move the shard away and restart: a missing shard is rebuilt from the log.")
    }

    /// The places the index names for each of `hashes` (each asked hash gets an entry, empty
    /// when it names none), in rising order: the counts of its page and of every run summed.
    /// The hashes are walked in rising order: a page is read once for all the hashes it
    /// covers, and each blob is searched onward from where the hash before stopped.
    func places(ofHashes hashes: [Int64]) throws -> [Int64: [Int64]] {
        var out: [Int64: [Int64]] = [:]
        out.reserveCapacity(hashes.count)
        for hash in hashes { out[hash] = [] }
        let runs = try indexRuns()
        let floor = try database.statement(Shard.floorPage)
        let next = try database.statement(Shard.nextPage)
        defer {
            floor.reset()
            next.reset()
        }
        // The page that covers [pageStart, pageEnd) (empty where no page does).
        var page: [UInt8] = []
        var pageEnd = Int64.min
        var pageAt = 0
        var runAt = [Int](repeating: 0, count: runs.count)
        var found: [(place: Int64, count: Int64)] = []
        func add(_ hash: Int64, in bytes: UnsafeRawBufferPointer, at i: inout Int) {
            i = IndexBlob.seek(hash, in: bytes, from: i)
            var k = i
            while k < IndexBlob.count(bytes), IndexBlob.hash(bytes, at: k) == hash {
                let place = IndexBlob.int(bytes, k * IndexBlob.width + 4), count = IndexBlob.int(bytes, k * IndexBlob.width + 8)
                if let j = found.firstIndex(where: { $0.place == place }) { found[j].count += count } else { found.append((place, count)) }
                k += 1
            }
        }
        for hash in out.keys.sorted() {
            if hash >= pageEnd {
                try floor.bind(1, hash)
                let start = try floor.step() ? floor.int64(0) : nil
                page = start == nil ? [] : floor.blob(1)
                floor.reset()
                guard page.count % IndexBlob.width == 0 else { throw damagedIndex("a page") }
                try next.bind(1, start ?? hash)
                pageEnd = try next.firstRow { $0.int64(0) } ?? Int64.max
                pageAt = 0
            }
            found.removeAll(keepingCapacity: true)
            page.withUnsafeBytes { add(hash, in: $0, at: &pageAt) }
            for r in runs.indices { runs[r].withUnsafeBytes { add(hash, in: $0, at: &runAt[r]) } }
            guard !found.isEmpty else { continue }
            var places: [Int64] = []
            for f in found where f.count > 0 { places.append(f.place) }
            out[hash] = places.sorted()
        }
        return out
    }

    /// Adds a batch's index changes (sorted, no zero) as one run, inside the batch's
    /// transaction; merges the runs into the pages once there are `maxIndexRuns`.
    func addIndexRun(_ changes: [IndexEntry]) throws {
        guard !changes.isEmpty else { return }
        cachedIndexRuns = nil
        let add = try database.statement("INSERT INTO uuid_runs (entries) VALUES (?)")
        try add.bind(1, blob: try IndexBlob.encode(changes, path: path))
        try add.run()
        let runs = try database.statement("SELECT count(*) FROM uuid_runs").firstRow { Int($0.int64(0)) } ?? 0
        if runs >= maxIndexRuns { try compactIndex() }
    }

    /// Merges every run into the pages and deletes the runs (inside the caller's transaction).
    func compactIndex() throws {
        cachedIndexRuns = nil
        var all: [IndexEntry] = []
        let read = try database.statement("SELECT entries FROM uuid_runs")
        while try read.step() {
            try read.withBlob(0) { bytes in
                guard IndexBlob.isWhole(bytes) else { throw damagedIndex("a run") }
                for i in 0..<IndexBlob.count(bytes) { all.append(IndexBlob.entry(bytes, at: i)) }
            }
        }
        read.reset()
        try database.execute("DELETE FROM uuid_runs")
        all.sort(by: IndexEntry.before)
        // One delta per (hash, place), none zero.
        var deltas: [IndexEntry] = []
        deltas.reserveCapacity(all.count)
        for e in all {
            if let last = deltas.last, last.hash == e.hash, last.place == e.place {
                deltas[deltas.count - 1].count += e.count
            } else {
                if deltas.last?.count == 0 { deltas.removeLast() }
                deltas.append(e)
            }
        }
        if deltas.last?.count == 0 { deltas.removeLast() }
        try mergeIntoPages(deltas)
    }

    /// Adds sorted `deltas` to the counts of `uuid_pages`: each page they touch is read once,
    /// merged, and written again cut to `indexPageEntries` (a count that reaches 0 goes).
    func mergeIntoPages(_ deltas: [IndexEntry]) throws {
        let floor = try database.statement(Shard.floorPage)
        let next = try database.statement(Shard.nextPage)
        let drop = try database.statement("DELETE FROM uuid_pages WHERE first_hash = ?")
        let put = try database.statement("INSERT INTO uuid_pages (first_hash, entries) VALUES (?, ?)")
        var i = 0
        var merged: [IndexEntry] = []
        while i < deltas.count {
            let hash = deltas[i].hash
            try floor.bind(1, hash)
            var key = Int64.min
            var old: [IndexEntry] = []
            if try floor.step() {
                key = floor.int64(0)
                try floor.withBlob(1) { bytes in
                    guard IndexBlob.isWhole(bytes) else { throw damagedIndex("a page") }
                    old.reserveCapacity(IndexBlob.count(bytes))
                    for k in 0..<IndexBlob.count(bytes) { old.append(IndexBlob.entry(bytes, at: k)) }
                }
            }
            floor.reset()
            try next.bind(1, key)
            let end = try next.firstRow { $0.int64(0) } ?? Int64.max
            var j = i
            while j < deltas.count, deltas[j].hash < end { j += 1 }
            // Merge the page's counts with deltas[i..<j], both sorted.
            merged.removeAll(keepingCapacity: true)
            var a = 0, b = i
            while a < old.count || b < j {
                if b == j || (a < old.count && IndexEntry.before(old[a], deltas[b])) {
                    merged.append(old[a])
                    a += 1
                } else if a == old.count || IndexEntry.before(deltas[b], old[a]) {
                    if deltas[b].count > 0 { merged.append(deltas[b]) }
                    b += 1
                } else {
                    var sum = old[a]
                    sum.count += deltas[b].count
                    if sum.count > 0 { merged.append(sum) }
                    a += 1
                    b += 1
                }
            }
            try drop.bind(1, key)
            try drop.run()
            // Cut into pages, never between two entries of one hash; the first keeps the key.
            var start = 0
            var pageKey = key
            while start < merged.count {
                var stop = min(start + indexPageEntries, merged.count)
                while stop < merged.count, merged[stop].hash == merged[stop - 1].hash { stop += 1 }
                try put.bind(1, pageKey)
                try put.bind(2, blob: try IndexBlob.encode(merged[start..<stop], path: path))
                try put.run()
                if stop < merged.count { pageKey = merged[stop].hash }
                start = stop
            }
            i = j
        }
    }

    /// The index's counts in force (pages and runs summed, none zero), sorted: for tests and
    /// for checking a migration.
    func indexCounts() throws -> [IndexEntry] {
        var all: [IndexEntry] = []
        let pages = try database.statement("SELECT entries FROM uuid_pages ORDER BY first_hash")
        while try pages.step() {
            pages.withBlob(0) { bytes in for i in 0..<IndexBlob.count(bytes) { all.append(IndexBlob.entry(bytes, at: i)) } }
        }
        pages.reset()
        let runs = try database.statement("SELECT entries FROM uuid_runs")
        while try runs.step() {
            runs.withBlob(0) { bytes in for i in 0..<IndexBlob.count(bytes) { all.append(IndexBlob.entry(bytes, at: i)) } }
        }
        runs.reset()
        all.sort(by: IndexEntry.before)
        var out: [IndexEntry] = []
        for e in all {
            if let last = out.last, last.hash == e.hash, last.place == e.place { out[out.count - 1].count += e.count } else { out.append(e) }
        }
        return out.filter { $0.count != 0 }
    }

    /// Whether the shard still has the row-per-(hash, place) index of migrations 006–007.
    func holdsSampleDaysTable() throws -> Bool {
        try database.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sample_days'").firstRow { $0.int64(0) > 0 } ?? false
    }

    /// Moves the index of a shard written before runs and pages (one `sample_days` row per
    /// (hash, place)) into pages, in one transaction: interrupted, the shard is as it was
    /// and the next open starts over. Then gives the freed pages back to the file system.
    /// - Returns: the (hash, place) counts moved, or nil if there was nothing to migrate.
    @discardableResult
    func migrateSampleDaysToPages() throws -> Int? {
        guard try holdsSampleDaysTable() else { return nil }
        var moved = 0
        try database.inTransaction {
            // A chunk at a time in index order: each merges into the last page the one
            // before it wrote, so memory stays at one chunk whatever the index holds.
            let read = try database.statement("""
                SELECT hash, place, count FROM sample_days WHERE count > 0 AND (hash, place) > (?, ?) ORDER BY hash, place LIMIT 65536
                """)
            var after = (hash: Int64.min, place: Int64.min)
            var rows: [IndexEntry] = []
            repeat {
                rows.removeAll(keepingCapacity: true)
                try read.bind(1, after.hash)
                try read.bind(2, after.place)
                while try read.step() { rows.append(IndexEntry(hash: read.int64(0), place: read.int64(1), count: read.int64(2))) }
                read.reset()
                guard let last = rows.last else { break }
                after = (last.hash, last.place)
                try mergeIntoPages(rows)
                moved += rows.count
            } while true
            try database.execute("DROP TABLE sample_days")
            return .commit
        }
        try database.execute("VACUUM")
        return moved
    }
}
