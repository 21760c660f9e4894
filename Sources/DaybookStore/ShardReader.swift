import DaybookCore
import DaybookSupport
import Foundation

/// Reads the totals of every shard in a data directory (read-only; safe while a projector writes).
public struct ShardReader: Sendable {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    /// The shard files of the projection readers see now, sorted by file name: the
    /// directory's manifest is resolved once per call (see `DataLayout`), so one query
    /// reads one generation, never a mix of an old and a new one.
    public func shardPaths() throws -> [String] {
        try DataLayout.read(directory).shardPaths()
    }

    /// Opens `path` read-only, refusing a file that is not a shard (not SQLite, damaged,
    /// or a database without the shard's tables) with a `ShardError` that names it; nil for
    /// a shard a projector is creating right now (no tables yet: nothing to read).
    func open(_ path: String) throws -> Database? {
        let advice = "Move it out of \(directory) (the projector rebuilds a missing shard from the log)."
        guard FileManager.default.fileExists(atPath: path) else {
            // Listed by the manifest, or removed between listing and opening.
            throw Shard.ShardError(.notAShard, "\(path) is missing, though \(directory)/\(DataLayout.manifestName) names it (removed by hand?): its rows cannot be read. Rebuild its partition from the log (Rebuilder).",
                                   detail: .missingShard(path: path, directory: directory))
        }
        do {
            let db = try Database(path: path, readOnly: true)
            let tables = try db.statement("SELECT count(*), count(CASE WHEN name IN ('totals', 'total_sources', 'progress', 'dead_letters') THEN 1 END) FROM sqlite_master WHERE type = 'table'")
            guard let (all, ours) = try tables.firstRow({ ($0.int64(0), $0.int64(1)) }), all > 0 else { return nil }
            guard ours == 4 else {
                throw Shard.ShardError(.notAShard, "\(path) is not a Daybook shard (an SQLite file without the shard's tables). \(advice)")
            }
            return db
        } catch let error as DatabaseError where error.isCorrupt {
            throw Shard.ShardError(.notAShard, "\(path) is not a Daybook shard (\(error.message)). \(advice)")
        }
    }

    /// `open(path)` for reading the shard's data (rows, samples, sync state), which are read
    /// under the catalogue the shard was built under or not at all (`checkCatalogue`).
    /// Its metadata (offsets, priority, dead letters) read through `open` alone.
    func openForData(_ path: String) throws -> Database? {
        guard let db = try open(path) else { return nil }
        try ShardReader.checkCatalogue(of: db, path: path)
        return db
    }

    /// Refuses the shard in `db` when some metric it holds data of was made under another
    /// catalogue entry than this process's (`Shard.catalogueRefusal`): a pack's metric is a
    /// place, a sync bit too, and a row's rule its metric's aggregation.
    static func checkCatalogue(of db: Database, path: String) throws {
        if let refusal = try Shard.catalogueRefusal(db, path: path, recorded: Shard.recordedCatalogue(db), entries: Metric.definitions) {
            throw refusal
        }
    }

    /// The catalogue places of the shard at `path` that this process's catalogue gives
    /// differently and that the shard holds data of (`Shard.catalogueRefusal`): each with the
    /// entry it recorded (`name:aggregation:unit`) and the entry now, nil for one this
    /// catalogue lacks. Empty for a shard being created.
    public func heldCatalogueChanges(ofShardAt path: String) throws -> [MetricCatalogue.Change] {
        guard let db = try open(path) else { return [] }
        return try Shard.heldCatalogueChanges(db, recorded: Shard.recordedCatalogue(db), entries: Metric.definitions)
    }

    /// A filter on the rows.
    public struct Query {
        public var user: String?
        public var metric: Metric?
        public var from: CivilDay?
        public var to: CivilDay?
        public init(user: String? = nil, metric: Metric? = nil, from: CivilDay? = nil, to: CivilDay? = nil) {
            self.user = user
            self.metric = metric
            self.from = from
            self.to = to
        }
    }

    /// Matching rows of all shards, sorted by user, metric, day (the order of `daybook rollup`).
    ///
    /// A user lives in one partition, so each (user, metric, day) has at most one row. One
    /// found in two shards is a `ShardError` `.splitUser` naming both, never a silent pick:
    /// each row holds only the events of its partition.
    public func totals(_ query: Query = Query()) throws -> [DayTotal] {
        let paths = try shardPaths()
        var out: [(row: DayTotal, shard: Int)] = []
        for (index, path) in paths.enumerated() {
            guard let db = try openForData(path) else { continue }
            try forEachRow(of: db, query, ordered: false) { out.append(($0, index)) }
        }
        out.sort { $0.row.key < $1.row.key }
        for i in out.indices.dropFirst() where out[i].row.key == out[i - 1].row.key {
            throw Self.split(out[i - 1].row, in: paths[out[i - 1].shard], out[i].row, in: paths[out[i].shard], directory: directory)
        }
        return out.map(\.row)
    }

    static func split(_ a: DayTotal, in first: String, _ b: DayTotal, in second: String, directory: String) -> Shard.ShardError {
        let key = a.key
        return Shard.ShardError(.splitUser, """
            user \(JSONWriter.quoted(key.user)) has a \(key.metric.rawValue) row for \(key.day) in two shards, \(first) and \(second): \
            the user's events were published to two partitions (a producer with another partitioner than kafka.partitioner), \
            so neither row is the day's total and none is printed. Rebuild the projection of \(directory) from the log: the \
            misplaced events become dead letters with code wrong_partition, and dead-letter replay republishes them to the \
            partition they belong in.
            """, detail: .splitUser(key: key, first: first, second: second, directory: directory))
    }

    /// Every matching row of the one shard at `path`, in (user, metric, day) order, one at a
    /// time: memory does not grow with the number of rows. (Text sorts by its UTF-8 bytes,
    /// which for the NFC ids Daybook accepts is the order of `DayKey`.)
    public func forEachTotal(inShardAt path: String, _ query: Query = Query(), _ body: (DayTotal) throws -> Void) throws {
        guard let db = try openForData(path) else { return }
        try forEachRow(of: db, query, ordered: true, body)
    }

    private func forEachRow(of db: Database, _ query: Query, ordered: Bool, _ body: (DayTotal) throws -> Void) throws {
        let cursor = try TotalsCursor(database: db, query, ordered: ordered)
        while let row = try cursor.next() { try body(row) }
    }

    /// Per shard: topic, partition, next offset and dead-letter count.
    public func progress() throws -> [(path: String, topic: String, partition: Int32, nextOffset: Int64, deadLetters: Int)] {
        var out: [(String, String, Int32, Int64, Int)] = []
        for path in try shardPaths() {
            guard let db = try open(path) else { continue }
            let p = try db.statement("SELECT topic, partition, next_offset FROM progress")
            let d = try db.statement("SELECT count(*) FROM dead_letters")
            let letters = try d.firstRow { Int($0.int64(0)) } ?? 0
            if let row = try p.firstRow({ ($0.text(0), Int32($0.int64(1)), $0.int64(2)) }) { out.append((path, row.0, row.1, row.2, letters)) }
        }
        return out
    }
}

extension ShardReader {
    /// A read-only view of one shard as of one moment: its next offset and its rows come
    /// from the same read transaction, however far a projector writes meanwhile.
    public final class Snapshot {
        public let path: String
        /// The offset of the next message the shard would apply (0 for a shard without progress).
        public let nextOffset: Int64
        /// The source priority the shard records.
        public let fingerprint: String?
        /// The id of the Kafka cluster whose log the shard's offsets refer to, once recorded.
        public let clusterID: String?
        let database: Database?
        private var open = true
        private var catalogueChecked: Bool

        /// `catalogueChecked`: the connection was opened for data (`openForData`), so its
        /// rows need no second check (serve's pooled connections, a snapshot a request).
        init(path: String, database: Database?, catalogueChecked: Bool = false) throws {
            self.path = path
            self.database = database
            self.catalogueChecked = catalogueChecked
            guard let database else {
                nextOffset = 0
                fingerprint = nil
                clusterID = nil
                return
            }
            try database.execute("BEGIN")
            nextOffset = try database.statement("SELECT next_offset FROM progress").firstRow { $0.int64(0) } ?? 0
            fingerprint = try database.statement("SELECT value FROM meta WHERE key = 'priority'").firstRow { $0.text(0) }
            clusterID = try database.statement("SELECT value FROM meta WHERE key = 'cluster_id'").firstRow { $0.text(0) }
        }

        deinit { end() }

        /// The snapshot of a partition that has no shard: offset 0, no rows.
        public static var empty: Snapshot { Snapshot(emptyAt: "") }

        private init(emptyAt path: String) {
            self.path = path
            database = nil
            nextOffset = 0
            fingerprint = nil
            clusterID = nil
            catalogueChecked = true // no database, no rows
        }

        /// Ends the read transaction.
        public func end() {
            guard open else { return }
            open = false
            try? database?.execute("COMMIT")
        }

        /// The shard's rows in (user, metric, day) order, pulled one at a time.
        public func rows() throws -> TotalsCursor {
            try checkCatalogue()
            return try TotalsCursor(database: database, ordered: true)
        }

        /// Refuses rows made under other catalogue entries (`ShardReader.checkCatalogue`), once.
        private func checkCatalogue() throws {
            guard !catalogueChecked, let database else { return }
            try ShardReader.checkCatalogue(of: database, path: path)
            catalogueChecked = true
        }

        /// The rows matching `query` in (user, metric, day) order, as of this snapshot.
        public func totals(_ query: Query) throws -> [DayTotal] {
            try checkCatalogue()
            let cursor = try TotalsCursor(database: database, query, ordered: true)
            var out: [DayTotal] = []
            while let row = try cursor.next() { out.append(row) }
            return out
        }
    }

    /// Opens a snapshot of the shard at `path`; a shard a projector is creating right now
    /// reads as empty at offset 0.
    public func snapshot(ofShardAt path: String) throws -> Snapshot {
        try Snapshot(path: path, database: try open(path))
    }

    /// Each shard's snapshot offset and priority, keyed by partition, for the shards of `topic`.
    public func offsets(topic: String) throws -> [Int32: (path: String, nextOffset: Int64, fingerprint: String?)] {
        var out: [Int32: (String, Int64, String?)] = [:]
        for path in try shardPaths() {
            guard let partition = Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: topic) else { continue }
            // A shard the manifest names but that is gone has no offset: verify then compares
            // it as empty (every row a difference), and rebuild builds it.
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let snapshot = try self.snapshot(ofShardAt: path)
            out[partition] = (path, snapshot.nextOffset, snapshot.fingerprint)
            snapshot.end()
        }
        return out
    }
}

/// Rows of one shard, one at a time (for merging two shards, or streaming them out).
public final class TotalsCursor {
    private let rows: Statement?
    private let sources: Statement?
    private let path: String

    /// The rows matching `query`, in (user, metric, day) order when `ordered`.
    init(database: Database?, _ query: ShardReader.Query = .init(), ordered: Bool = true) throws {
        path = database?.path ?? ""
        guard let database else {
            rows = nil
            sources = nil
            return
        }
        var sql = "SELECT user, metric, day, value, min, max, avg, count, latest FROM totals WHERE 1 = 1"
        var binds: [String] = []
        if let u = query.user { sql += " AND user = ?"; binds.append(u) }
        if let m = query.metric { sql += " AND metric = ?"; binds.append(m.rawValue) }
        if let f = query.from { sql += " AND day >= ?"; binds.append(f.description) }
        if let t = query.to { sql += " AND day <= ?"; binds.append(t.description) }
        if ordered { sql += " ORDER BY user, metric, day" }
        let rows: Statement
        do {
            rows = try database.statement(sql)
        } catch {
            // A shard no projector of this version has opened yet has no latest column
            // (migration 009): its discrete rows read with an unknown latest until it does.
            rows = try database.statement(sql.replacingOccurrences(of: "count, latest FROM", with: "count, NULL FROM"))
        }
        for (i, b) in binds.enumerated() { try rows.bind(Int32(i + 1), b) }
        self.rows = rows
        sources = try database.statement("SELECT source, value FROM total_sources WHERE user = ? AND metric = ? AND day = ? ORDER BY rank")
    }

    /// The next row, or nil at the end. A row whose metric or day this version cannot read
    /// is an error naming the shard (`ShardError.notAShard`), never skipped: a comparison
    /// or a reader must not miss it.
    public func next() throws -> DayTotal? {
        guard let rows, let sources, try rows.step() else { return nil }
        guard let metric = Metric(rawValue: rows.text(1)) else {
            throw Shard.ShardError(.notAShard, "\(path): a totals row has metric \(JSONWriter.quoted(rows.text(1))), which is not in this Daybook's metric catalogue: give the --config whose metrics section adds it (the projector's), or, if a newer Daybook wrote it, read it with that one")
        }
        guard let day = CivilDay(rows.text(2)) else {
            throw Shard.ShardError(.notAShard, "\(path): a totals row has day \(JSONWriter.quoted(rows.text(2))), which is not a day (damaged, or written by a newer Daybook): rebuild the projection")
        }
        let key = DayKey(user: rows.text(0), metric: metric, day: day)
        guard metric.isCumulative else {
            return DayTotal(key: key, summary: .discrete(min: rows.double(4), max: rows.double(5), average: rows.double(6), count: Int(rows.int64(7)),
                                                         latest: rows.isNull(8) ? nil : rows.double(8)))
        }
        var shares: [SourceShare] = []
        sources.reset()
        try sources.bind(1, key.user)
        try sources.bind(2, metric.rawValue)
        try sources.bind(3, rows.text(2))
        while try sources.step() { shares.append(SourceShare(source: sources.text(0), value: sources.double(1))) }
        return DayTotal(key: key, summary: .cumulative(value: rows.double(3), sources: shares))
    }
}
