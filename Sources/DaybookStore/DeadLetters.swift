import CSQLite
import DaybookCore
import Foundation

/// A dead letter's name, the same in every process and whichever shard file holds it: the
/// partition and offset of the message in its topic, written `3:1234`. Offsets never repeat
/// within a partition, so it is unique within a topic.
public struct DeadLetterID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var partition: Int32
    public var offset: Int64

    public init(partition: Int32, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }

    /// Parses `PARTITION:OFFSET`, two non-negative decimal numbers in canonical form (as
    /// `description` writes them: `02:1` is not `2:1`); nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) } }),
              let p = Int32(parts[0]), let o = Int64(parts[1]), "\(p):\(o)" == text else { return nil }
        partition = p
        offset = o
    }

    public var description: String { "\(partition):\(offset)" }

    public static func < (a: DeadLetterID, b: DeadLetterID) -> Bool {
        (a.partition, a.offset) < (b.partition, b.offset)
    }
}

/// A dead letter as a shard holds it: the message, why it was refused, and whether
/// `daybook dlq replay` has republished it.
public struct StoredDeadLetter: Sendable {
    public var id: DeadLetterID
    public var topic: String
    /// The message's key and payload, as they came (not necessarily UTF-8). The payload is
    /// empty unless asked for: it is health data.
    public var key: [UInt8]
    public var payload: [UInt8]
    public var reason: String
    public var code: String
    /// When the projector recorded it, UTC, as SQLite's `datetime('now')` writes it.
    public var recordedAt: String
    /// Set once the dead letter was republished; nil while it waits.
    public var replay: Replay?
    /// The shard file it was read from: where `DeadLetterMarks` records its replay.
    public var shardPath: String

    public struct Replay: Sendable, Equatable {
        /// UTC, as SQLite's `datetime('now')` writes it.
        public var at: String
        /// Where the republished event landed, when the delivery report said so; for a
        /// superseded dead letter, the write that wins over it.
        public var landedAt: DeadLetterID?
        /// Set when the dead letter was not republished because a newer write of its uuid
        /// wins (republishing it would have rewound an edit); nil for one republished.
        public var superseded: Supersession?

        public init(at: String, landedAt: DeadLetterID?, superseded: Supersession? = nil) {
            self.at = at
            self.landedAt = landedAt
            self.superseded = superseded
        }
    }

    /// Where the write that supersedes a dead letter is (its code in the shard).
    public enum Supersession: Int64, Sendable, Equatable {
        /// A message in the user's own partition.
        case byHome = 1
        /// Another dead letter of the same replay (the newest of its uuid's).
        case byDeadLetter = 2
    }
}

extension ShardReader {
    /// Which dead letters to read.
    public struct DeadLetterQuery: Sendable {
        /// Only this topic's (a data directory may hold the shards of several).
        public var topic: String?
        /// Only these partitions; nil for all.
        public var partitions: Set<Int32>?
        /// Also the ones already replayed.
        public var includeReplayed = false
        /// Read the payloads too (health data; `dlq list` shows them only when asked).
        public var withPayloads = false

        public init(topic: String? = nil, partitions: Set<Int32>? = nil, includeReplayed: Bool = false, withPayloads: Bool = false) {
            self.topic = topic
            self.partitions = partitions
            self.includeReplayed = includeReplayed
            self.withPayloads = withPayloads
        }
    }

    /// The dead letters of every shard (`shardPaths()`), by partition and offset. Read-only:
    /// safe while a projector writes. A shard no projector has opened since dead letters
    /// could be replayed has no replay columns yet; its dead letters all read as waiting.
    public func deadLetters(_ query: DeadLetterQuery = DeadLetterQuery()) throws -> [StoredDeadLetter] {
        var out: [StoredDeadLetter] = []
        for path in try shardPaths() {
            guard let db = try open(path) else { continue }
            do {
                try readDeadLetters(of: db, at: path, query) { out.append($0) }
            } catch let error as DatabaseError where error.isCorrupt {
                throw Shard.ShardError(.notAShard, "\(path) is not a Daybook shard (\(error.message)). Move it out of \(directory) (the projector rebuilds a missing shard from the log).")
            }
        }
        return out.sorted { $0.id < $1.id }
    }

    private func readDeadLetters(of db: Database, at path: String, _ query: DeadLetterQuery, _ body: (StoredDeadLetter) -> Void) throws {
        let (replayColumns, supersededColumn) = try db.statement("""
            SELECT count(CASE WHEN name IN ('replayed_at', 'replayed_partition', 'replayed_offset') THEN 1 END),
                   count(CASE WHEN name = 'superseded' THEN 1 END) FROM pragma_table_info('dead_letters')
            """).firstRow { ($0.int64(0) == 3, $0.int64(1) == 1) } ?? (false, false)
        var sql = "SELECT topic, partition, offset, key, \(query.withPayloads ? "payload" : "NULL"), reason, code, recorded_at, "
        sql += replayColumns ? "replayed_at, replayed_partition, replayed_offset" : "NULL, NULL, NULL"
        sql += supersededColumn ? ", superseded" : ", 0"
        sql += " FROM dead_letters WHERE 1 = 1"
        var texts: [String] = []
        if let topic = query.topic { sql += " AND topic = ?"; texts.append(topic) }
        if replayColumns, !query.includeReplayed { sql += " AND replayed_at IS NULL" }
        let partitions = query.partitions.map { $0.sorted() } ?? []
        if query.partitions != nil {
            sql += " AND partition IN (\(partitions.map { _ in "?" }.joined(separator: ", ")))"
        }
        sql += " ORDER BY partition, offset"
        let rows = try db.statement(sql)
        var index: Int32 = 1
        for t in texts { try rows.bind(index, t); index += 1 }
        for p in partitions { try rows.bind(index, Int(p)); index += 1 }
        defer { rows.reset() }
        while try rows.step() {
            var replay: StoredDeadLetter.Replay?
            if !rows.isNull(8) {
                let landed = rows.isNull(9) || rows.isNull(10) ? nil
                    : DeadLetterID(partition: Int32(truncatingIfNeeded: rows.int64(9)), offset: rows.int64(10))
                replay = .init(at: rows.text(8), landedAt: landed, superseded: StoredDeadLetter.Supersession(rawValue: rows.int64(11)))
            }
            body(StoredDeadLetter(id: DeadLetterID(partition: Int32(truncatingIfNeeded: rows.int64(1)), offset: rows.int64(2)),
                                  topic: rows.text(0), key: rows.blob(3), payload: query.withPayloads ? rows.blob(4) : [],
                                  reason: rows.text(5), code: rows.text(6), recordedAt: rows.text(7), replay: replay, shardPath: path))
        }
    }
}

/// Records that dead letters were replayed, in the shard file itself, through a short-lived
/// connection of its own: never through `Shard`, whose lock a running projector holds for as
/// long as it runs. SQLite's own locking (WAL, a busy timeout) orders this one small
/// transaction with the projector's batches; it changes only the replay columns of
/// `dead_letters`, which the projector never reads.
public enum DeadLetterMarks {
    /// The migration that adds the replay columns (`Shard.migrations`).
    static let migrationName = "003-dead-letter-replays"
    /// The migration that adds the `superseded` column.
    static let supersededMigrationName = "007-dead-letter-superseded"

    /// One replayed dead letter and where its event landed (nil when the delivery report
    /// did not say); or, with `superseded`, one not republished and the write that wins.
    public struct Mark: Sendable {
        public var id: DeadLetterID
        public var landedAt: DeadLetterID?
        public var superseded: StoredDeadLetter.Supersession?

        public init(id: DeadLetterID, landedAt: DeadLetterID?, superseded: StoredDeadLetter.Supersession? = nil) {
            self.id = id
            self.landedAt = landedAt
            self.superseded = superseded
        }
    }

    /// Marks `marks` replayed now in the shard at `path`, in one transaction, and returns
    /// the ids it marked: one already marked, or no longer in the shard, is left as it is.
    /// A shard no projector has migrated yet gets the replay columns first (the same
    /// migration, recorded, so the projector does not apply it again).
    /// - Throws: `Shard.ShardError` `.locked` when the shard stays busy for
    ///   `busyTimeoutMilliseconds`, `.notAShard` for a file that is not a shard, `.storage`
    ///   when it is gone; `DatabaseError` for a storage fault.
    public static func markReplayed(_ marks: [Mark], topic: String, inShardAt path: String,
                                    busyTimeoutMilliseconds: Int32 = 10_000) throws -> [DeadLetterID] {
        guard !marks.isEmpty else { return [] }
        var marked: [DeadLetterID] = []
        do {
            // Never create the file: a shard removed since it was read stays removed.
            let db = try Database(path: path, create: false, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            try db.inTransaction {
                let tables = try db.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('dead_letters', 'schema_migrations')")
                guard try tables.firstRow({ $0.int64(0) }) == 2 else {
                    throw Shard.ShardError(.notAShard, "\(path) is not a Daybook shard (no dead_letters or schema_migrations table); nothing was marked")
                }
                try addReplayColumnsIfMissing(db)
                let mark = try db.statement("""
                    UPDATE dead_letters SET replayed_at = datetime('now'), replayed_partition = ?, replayed_offset = ?, superseded = ?
                    WHERE topic = ? AND partition = ? AND offset = ? AND replayed_at IS NULL RETURNING 1
                    """)
                for m in marks {
                    if let landed = m.landedAt {
                        try mark.bind(1, Int(landed.partition))
                        try mark.bind(2, landed.offset)
                    } else {
                        try mark.bindNull(1)
                        try mark.bindNull(2)
                    }
                    try mark.bind(3, m.superseded?.rawValue ?? 0)
                    try mark.bind(4, topic)
                    try mark.bind(5, Int(m.id.partition))
                    try mark.bind(6, m.id.offset)
                    if try mark.firstRow({ _ in true }) ?? false { marked.append(m.id) }
                }
                return .commit
            }
        } catch let error as DatabaseError where error.isBusy {
            throw Shard.ShardError(.locked, "\(path) stayed busy for \(busyTimeoutMilliseconds) ms (\(error.message)); nothing was marked in it")
        } catch let error as DatabaseError where error.isCorrupt {
            throw Shard.ShardError(.notAShard, "\(path) is not a Daybook shard (\(error.message)); nothing was marked in it")
        } catch let error as DatabaseError where error.resultCode.primary == .cantOpen && !FileManager.default.fileExists(atPath: path) {
            throw Shard.ShardError(.storage, "\(path) is gone (removed since it was read); nothing was marked in it")
        }
        return marked
    }

    /// Applies the migrations of the replay columns inside the caller's transaction, each
    /// unless it was applied (by a projector, or by an earlier replay).
    private static func addReplayColumnsIfMissing(_ db: Database) throws {
        for name in [migrationName, supersededMigrationName] {
            let applied = try db.statement("SELECT 1 FROM schema_migrations WHERE name = ?")
            try applied.bind(1, name)
            guard try applied.firstRow({ _ in true }) == nil else { continue }
            guard let migration = Shard.migrations.first(where: { $0.name == name }) else {
                preconditionFailure("Shard.migrations has no \(name)")
            }
            try db.execute(migration.sql)
            let record = try db.statement("INSERT INTO schema_migrations (name, applied_at) VALUES (?, datetime('now'))")
            try record.bind(1, name)
            try record.run()
        }
    }
}
