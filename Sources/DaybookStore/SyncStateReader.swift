import DaybookCore

/// How `sync_state` stores a pair's metrics: one bit per `Metric.storageCode`.
enum SyncStateColumns {
    static func bits(_ metrics: Set<Metric>) -> Int64 {
        metrics.reduce(0) { $0 | (1 << Int64($1.storageCode)) }
    }

    static func metrics(_ bits: Int64) -> Set<Metric> {
        Set(Metric.allCases.filter { bits & (1 << Int64($0.storageCode)) != 0 })
    }

    static let select = "SELECT user, source, last_check_in_ns, last_sample_ns, newest_end_ns, newest_zone, metrics FROM sync_state"

    static func pair(_ row: Statement) -> SourceSync {
        func instant(_ column: Int32) -> Instant? { row.isNull(column) ? nil : Instant(nanoseconds: row.int64(column)) }
        return SourceSync(user: row.text(0), source: row.text(1), lastCheckIn: instant(2), lastSampleDelivered: instant(3),
                          newestSampleEnd: instant(4), zone: row.isNull(5) ? nil : row.text(5), metrics: metrics(row.int64(6)))
    }

    /// Whether the shard has the table (a shard no projector has opened since version 004 has not).
    static func exists(in database: Database) throws -> Bool {
        try database.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sync_state'")
            .firstRow { $0.int64(0) == 1 } ?? false
    }
}

/// What the shards of a data directory could show of their users' sync state.
public struct SyncStateCoverage: Sendable {
    /// Shard files the projection has (0: nothing to judge).
    public var shards = 0
    /// Shards that cannot hold sync state yet: no projector of this version opened them.
    public var missing: [String] = []
    /// Shards whose sync state starts at an offset: migrated with history before it.
    /// A rebuild fills both from the log.
    public var partial: [(path: String, from: Int64)] = []
}

extension ShardReader {
    /// Every (user, source) pair of the projection, one at a time in (user, source) order,
    /// merged across shards: a user's events keyed as Daybook keys them live in one
    /// partition, but a producer with another partitioner (or a topic that grew) can put a
    /// pair in two shards, and it is still one pair (`SourceSync.merge`). Memory holds one
    /// pair per shard, not all of them. Returns what the shards could show (`SyncStateCoverage`).
    @discardableResult
    public func forEachSyncPair(_ body: (SourceSync) throws -> Void) throws -> SyncStateCoverage {
        var coverage = SyncStateCoverage()
        var cursors: [SyncStateCursor] = []
        let paths = try shardPaths()
        coverage.shards = paths.count
        for path in paths {
            guard let db = try openForData(path) else { continue }
            let cursor = try SyncStateCursor(database: db)
            if !cursor.hasTable {
                coverage.missing.append(path)
            } else if let from = try db.statement("SELECT value FROM meta WHERE key = 'sync_state_from'").firstRow({ Int64($0.text(0)) ?? 0 }), from > 0 {
                coverage.partial.append((path, from))
            }
            cursors.append(cursor)
        }
        var heads: [(key: SyncKey, pair: SourceSync, cursor: Int)] = []
        for (i, c) in cursors.enumerated() {
            if let p = try c.next() { heads.append((SyncKey(user: p.user, source: p.source), p, i)) }
        }
        var heap = MinHeap(heads) { $0.key < $1.key }
        while let first = heap.pop() {
            var merged = first.pair
            var advance = [first.cursor]
            while let top = heap.peek, top.key == first.key, let same = heap.pop() {
                merged.merge(same.pair)
                advance.append(same.cursor)
            }
            for i in advance {
                if let p = try cursors[i].next() { heap.push((SyncKey(user: p.user, source: p.source), p, i)) }
            }
            try body(merged)
        }
        return coverage
    }

    /// The pairs of `user`, by source (merged across shards, as `forEachSyncPair`).
    public func syncPairs(user: String) throws -> [SourceSync] {
        var bySource: [String: SourceSync] = [:]
        for path in try shardPaths() {
            guard let db = try openForData(path), try SyncStateColumns.exists(in: db) else { continue }
            let read = try db.statement(SyncStateColumns.select + " WHERE user = ?")
            try read.bind(1, user)
            while try read.step() {
                let pair = SyncStateColumns.pair(read)
                bySource[pair.source, default: pair].merge(pair)
            }
        }
        return bySource.values.sorted { SyncKey(user: $0.user, source: $0.source) < SyncKey(user: $1.user, source: $1.source) }
    }
}

/// A binary min-heap (by `less`), for merging sorted streams.
struct MinHeap<Element> {
    private var items: [Element]
    private let less: (Element, Element) -> Bool

    init(_ items: [Element], less: @escaping (Element, Element) -> Bool) {
        self.items = []
        self.less = less
        for item in items { push(item) }
    }

    var peek: Element? { items.first }

    mutating func push(_ item: Element) {
        items.append(item)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(items[i], items[parent]) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < items.count, less(items[l], items[smallest]) { smallest = l }
            if r < items.count, less(items[r], items[smallest]) { smallest = r }
            guard smallest != i else { break }
            items.swapAt(i, smallest)
            i = smallest
        }
        return top
    }
}

extension Shard {
    /// The stored state of `user`'s pairs (tests and tools; the projector never reads it back).
    public func syncPairs(user: String) throws -> [SourceSync] {
        let read = try database.statement(SyncStateColumns.select + " WHERE user = ? ORDER BY source")
        try read.bind(1, user)
        var out: [SourceSync] = []
        while try read.step() { out.append(SyncStateColumns.pair(read)) }
        return out
    }
}

/// One shard's sync state, a pair at a time in (user, source) order (for comparing shards).
public final class SyncStateCursor {
    private let rows: Statement?
    /// Kept open for as long as the cursor reads it (a statement does not own its database).
    private let database: Database?

    /// Whether the shard has the table (a shard no projector has opened since version 004 has not).
    var hasTable: Bool { rows != nil }

    init(database: Database?) throws {
        self.database = database
        guard let database, try SyncStateColumns.exists(in: database) else {
            rows = nil
            return
        }
        rows = try database.statement(SyncStateColumns.select + " ORDER BY user, source")
    }

    public func next() throws -> SourceSync? {
        guard let rows, try rows.step() else { return nil }
        return SyncStateColumns.pair(rows)
    }
}

extension ShardReader.Snapshot {
    /// The shard's sync state as of the snapshot, in (user, source) order.
    public func syncState() throws -> SyncStateCursor {
        try SyncStateCursor(database: database)
    }

    /// The pairs of `user` in this shard alone, by source (a user lives in one partition;
    /// `ShardReader.syncPairs(user:)` merges every shard's).
    public func syncPairs(user: String) throws -> [SourceSync] {
        guard let database, try SyncStateColumns.exists(in: database) else { return [] }
        let read = try database.statement(SyncStateColumns.select + " WHERE user = ? ORDER BY source")
        try read.bind(1, user)
        var out: [SourceSync] = []
        while try read.step() { out.append(SyncStateColumns.pair(read)) }
        return out
    }
}
