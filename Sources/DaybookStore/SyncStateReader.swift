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

extension ShardReader {
    /// Every (user, source) pair of every shard, one at a time, by user and source within
    /// a shard: memory does not grow with the number of pairs.
    public func forEachSyncPair(_ body: (SourceSync) throws -> Void) throws {
        for path in try shardPaths() {
            guard let db = try open(path), try SyncStateColumns.exists(in: db) else { continue }
            let read = try db.statement(SyncStateColumns.select + " ORDER BY user, source")
            while try read.step() { try body(SyncStateColumns.pair(read)) }
        }
    }

    /// The pairs of `user`, by source.
    public func syncPairs(user: String) throws -> [SourceSync] {
        var out: [SourceSync] = []
        for path in try shardPaths() {
            guard let db = try open(path), try SyncStateColumns.exists(in: db) else { continue }
            let read = try db.statement(SyncStateColumns.select + " WHERE user = ? ORDER BY source")
            try read.bind(1, user)
            while try read.step() { out.append(SyncStateColumns.pair(read)) }
        }
        return out.sorted { $0.source < $1.source }
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

    init(database: Database?) throws {
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
}
