import CSQLite
import Foundation

/// An SQLite error: the result code, SQLite's message, and the statement that failed.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (`SQLITE_FULL` = 13, `SQLITE_READONLY` = 8, …).
    public var code: Int32
    public var message: String
    /// The SQL being run, without bound values (which may be health data).
    public var sql: String?
    public var path: String

    /// The result code as a typed value (`resultCode.primary == .cantOpen`).
    public var resultCode: ResultCode { ResultCode(rawValue: code) }

    /// The disk is full, the file is read-only or an I/O error happened: fix the storage, then restart.
    public var isStorageFault: Bool {
        switch resultCode.primary {
        case .full, .readOnly, .ioError, .cantOpen, .permission: true
        default: false
        }
    }

    /// The file is not an SQLite database, or is damaged: no retry helps; move it away.
    public var isCorrupt: Bool { resultCode.primary == .notADatabase || resultCode.primary == .corrupt }

    /// Another connection holds the lock past the busy timeout: retrying later can succeed.
    public var isBusy: Bool { resultCode.primary == .busy || resultCode.primary == .locked }

    /// An SQLite result code, primary (`SQLITE_CANTOPEN`) or extended (`SQLITE_CANTOPEN_NOTEMPDIR`),
    /// with names for the ones Daybook acts on, so that no caller compares raw numbers.
    public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The primary code of an extended one (its low byte); a primary code itself.
        public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xff) }

        public static let busy = ResultCode(rawValue: SQLITE_BUSY)
        public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
        public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
        public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
        public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
        public static let full = ResultCode(rawValue: SQLITE_FULL)
        public static let cantOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
        public static let permission = ResultCode(rawValue: SQLITE_PERM)
        public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)

        /// SQLite's English name for the code ("unable to open database file").
        public var description: String { String(cString: sqlite3_errstr(rawValue)) }
    }

    public var description: String {
        let name = resultCode.description
        return "\(path): \(message) (SQLite \(code): \(name))" + (sql.map { " in: \($0.prefix(80))" } ?? "")
    }
}

/// A connection to one SQLite file. Not thread-safe: one owner uses it (a shard's worker).
///
/// Opens in WAL mode with a busy timeout; statements are prepared once and cached.
public final class Database {
    private var handle: OpaquePointer?
    public let path: String
    private var cache: [String: Statement] = [:]
    /// The rowid of the last row inserted on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// Rows the last INSERT, UPDATE or DELETE on this connection changed.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Process-wide settings, applied once before the first connection opens.
    private static let configured: Bool = daybook_disable_memory_statistics() == SQLITE_OK

    /// Rows stepped through since the connection opened (tests check what a step reads).
    public internal(set) var rowsRead = 0

    /// Opens (or creates, with mode 0600) `path`.
    /// - Parameter create: false to open only an existing file (writable or not); a missing
    ///   one fails with `SQLITE_CANTOPEN` instead of becoming an empty database.
    /// - Parameter pageSizeIfNew: the page size (a power of two, 512 to 65,536) of a database
    ///   that has no page yet; an existing database keeps the one it was made with.
    public init(path: String, readOnly: Bool = false, create: Bool = true, busyTimeoutMilliseconds: Int32 = 5_000,
                pageSizeIfNew: Int? = nil) throws(DatabaseError) {
        _ = Database.configured
        self.path = path
        if !readOnly, create, path != ":memory:", !FileManager.default.fileExists(atPath: path) {
            // Create the file ourselves so it is private from the first byte; SQLite gives
            // its -wal and -shm files the same mode.
            let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            if fd < 0 {
                throw DatabaseError(code: SQLITE_CANTOPEN, message: "cannot create the file: \(String(cString: strerror(errno)))", sql: nil, path: path)
            }
            close(fd)
        }
        var flags = readOnly ? SQLITE_OPEN_READONLY : create ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READWRITE
        var name = path
        if readOnly, Database.opensImmutable(path) {
            name = Database.immutableURI(path)
            flags |= SQLITE_OPEN_URI
        }
        let rc = sqlite3_open_v2(name, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            handle = nil
            throw DatabaseError(code: rc, message: message, sql: nil, path: path)
        }
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
        if !readOnly {
            // Before WAL mode, which writes the first page: a WAL database keeps its page size.
            if let pageSizeIfNew {
                let pages = try statement("PRAGMA page_count")
                let empty = try pages.step() && pages.int64(0) == 0
                pages.reset()
                if empty { try execute("PRAGMA page_size=\(pageSizeIfNew)") }
            }
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=NORMAL")
        }
        try execute("PRAGMA foreign_keys=ON")
    }

    /// The bytes of the database on this connection (`sqlite3_serialize`): for a template
    /// made in memory and written out as a new file. `asWAL` marks them as a WAL database
    /// (the header's file format versions, bytes 18 and 19, set to 2), as a file switched
    /// to WAL mode is.
    public func serialized(asWAL: Bool = false) throws(DatabaseError) -> [UInt8] {
        var size: sqlite3_int64 = 0
        guard let raw = sqlite3_serialize(handle, "main", &size, 0) else {
            throw DatabaseError(code: SQLITE_NOMEM, message: "cannot serialize the database", sql: nil, path: path)
        }
        defer { sqlite3_free(raw) }
        var bytes = Array(UnsafeBufferPointer(start: raw, count: Int(size)))
        guard bytes.count >= 100 else {
            throw DatabaseError(code: SQLITE_CORRUPT, message: "a serialized database without its 100-byte header", sql: nil, path: path)
        }
        if asWAL {
            bytes[18] = 2
            bytes[19] = 2
        }
        return bytes
    }

    /// Whether a read-only open must be an immutable one: a WAL database in a directory this
    /// process cannot write (read-only media, a snapshot) cannot get the `-shm` file a
    /// reader needs, so SQLite says "unable to open database file". Only a cleanly closed
    /// database (no `-wal`, no `-shm` left) is opened immutable: nobody can be writing it,
    /// since a writer would need that directory too. Anything else opens as before.
    static func readsImmutable(directoryWritable: Bool, walExists: Bool, shmExists: Bool) -> Bool {
        !directoryWritable && !walExists && !shmExists
    }

    /// `readsImmutable` for the file at `path`, as the system answers now.
    static func opensImmutable(_ path: String) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        return readsImmutable(directoryWritable: access(directory.isEmpty ? "." : directory, W_OK) == 0,
                              walExists: access(path + "-wal", F_OK) == 0, shmExists: access(path + "-shm", F_OK) == 0)
    }

    /// `file:PATH?immutable=1`, the path percent-encoded where a URI would misread it.
    static func immutableURI(_ path: String) -> String {
        var encoded = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            default:
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return "file:" + encoded + "?immutable=1"
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, sql: String?) -> DatabaseError {
        DatabaseError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path)
    }

    /// Frees the pages this connection caches (they are read again when needed).
    public func releaseMemory() {
        sqlite3_db_release_memory(handle)
    }

    /// Runs SQL without results or parameters (schema, pragmas). May contain several statements.
    public func execute(_ sql: String) throws(DatabaseError) {
        var message: UnsafeMutablePointer<CChar>? = nil
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard rc == SQLITE_OK else {
            throw DatabaseError(code: rc, message: message.map { String(cString: $0) } ?? "error", sql: sql, path: path)
        }
    }

    /// A prepared statement for `sql`, cached for reuse. Values are always bound, never spliced.
    public func statement(_ sql: String) throws(DatabaseError) -> Statement {
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer? = nil
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, sql: sql) }
        let statement = Statement(raw, database: self, sql: sql)
        cache[sql] = statement
        return statement
    }

    /// Resets every cached statement, so that none left on a row holds a read transaction
    /// open while the connection waits in a pool.
    public func resetStatements() {
        for statement in cache.values { statement.reset() }
    }

    public enum TransactionEnd { case commit, rollback }

    /// Runs `body` in `BEGIN IMMEDIATE … COMMIT`; any throw (or `.rollback`) rolls back.
    public func inTransaction(_ body: () throws -> TransactionEnd) throws {
        try execute("BEGIN IMMEDIATE")
        do {
            switch try body() {
            case .commit: try execute("COMMIT")
            case .rollback: try execute("ROLLBACK")
            }
        } catch {
            // After SQLITE_FULL/IOERR SQLite may already have rolled back; ignore a second failure.
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in a deferred `BEGIN … COMMIT` that only reads: its statements share one
    /// snapshot and one shared lock (outside a transaction each takes and drops its own).
    /// A throw ends it too, and is rethrown; so does a failed COMMIT (the connection is
    /// never left inside a transaction for the next write to trip over).
    public func inReadTransaction(_ body: () throws -> Void) throws {
        try execute("BEGIN")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Applies the migrations not yet recorded in `schema_migrations`, in order, all in one
    /// transaction: another connection sees the schema before or after, never between two
    /// migrations (a shard half-created by a process killed at that moment, or read while it
    /// is created, would look like someone else's database).
    /// Creates `schema` in a database without tables, in one transaction that also records
    /// `migrations` as applied (the schema is where they lead); does nothing to a database
    /// that has tables. Another connection creating it at the same time waits for the write
    /// lock and then finds the tables.
    public func create(_ schema: String, recording migrations: [String]) throws {
        let tables = "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
        guard try statement(tables).firstRow({ $0.int64(0) }) == 0 else { return }
        try inTransaction {
            guard try statement(tables).firstRow({ $0.int64(0) }) == 0 else { return .commit }
            try execute(schema)
            try execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            let record = try statement("INSERT INTO schema_migrations (name, applied_at) VALUES (?, datetime('now'))")
            for name in migrations {
                try record.bind(1, name)
                try record.run()
            }
            return .commit
        }
    }

    public func migrate(_ migrations: [(name: String, sql: String)]) throws {
        func applied() throws -> Set<String> {
            let exists = try statement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
            guard try exists.firstRow({ _ in true }) ?? false else { return [] }
            var names = Set<String>()
            let read = try statement("SELECT name FROM schema_migrations")
            while try read.step() { names.insert(read.text(0)) }
            return names
        }
        // Nothing to do is found without the write lock (every open of a current shard).
        let known = try applied()
        guard migrations.contains(where: { !known.contains($0.name) }) else { return }
        try inTransaction {
            try execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            // Read again under the write lock: another connection may have applied some since
            // (`dlq replay` applies the dead-letter migration to a shard a projector is opening).
            let done = try applied()
            let record = try statement("INSERT INTO schema_migrations (name, applied_at) VALUES (?, datetime('now'))")
            for migration in migrations where !done.contains(migration.name) {
                try execute(migration.sql)
                try record.bind(1, migration.name)
                try record.run()
            }
            return .commit
        }
    }
}

/// A prepared statement. Bind with 1-based indexes, `step()` through rows, read with 0-based columns.
public final class Statement {
    private let raw: OpaquePointer
    private unowned let database: Database
    public let sql: String

    init(_ raw: OpaquePointer, database: Database, sql: String) {
        self.raw = raw
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(raw) }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    private func check(_ rc: Int32) throws(DatabaseError) {
        guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
    }

    public func bind(_ index: Int32, _ value: Int64) throws(DatabaseError) { try check(sqlite3_bind_int64(raw, index, value)) }
    public func bind(_ index: Int32, _ value: Int) throws(DatabaseError) { try check(sqlite3_bind_int64(raw, index, Int64(value))) }
    public func bind(_ index: Int32, _ value: Double) throws(DatabaseError) { try check(sqlite3_bind_double(raw, index, value)) }
    public func bindNull(_ index: Int32) throws(DatabaseError) { try check(sqlite3_bind_null(raw, index)) }

    public func bind(_ index: Int32, _ value: String) throws(DatabaseError) {
        var value = value
        let rc = value.withUTF8 { daybook_bind_text(raw, index, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count)) }
        try check(rc)
    }

    public func bind(_ index: Int32, blob: UnsafeRawBufferPointer) throws(DatabaseError) {
        // A zero-length blob needs a non-NULL pointer to bind as a blob rather than NULL.
        var empty: UInt8 = 0
        let rc = blob.count == 0 ? daybook_bind_blob(raw, index, &empty, 0) : daybook_bind_blob(raw, index, blob.baseAddress, Int32(blob.count))
        try check(rc)
    }

    public func bind(_ index: Int32, blob: [UInt8]) throws(DatabaseError) {
        let result = blob.withUnsafeBytes { b in Result { () throws(DatabaseError) in try bind(index, blob: b) } }
        try result.get()
    }

    /// Advances to the next row: true when there is one, false when done.
    public func step() throws(DatabaseError) -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW:
            database.rowsRead &+= 1
            return true
        case SQLITE_DONE: return false
        case let rc:
            let error = database.error(rc, sql: sql)
            sqlite3_reset(raw)
            throw error
        }
    }

    /// Runs a statement that returns no rows.
    /// Reads the first row with `read` (nil when there is none) and resets the statement
    /// either way. Every single-row read goes through here: a statement left on a row keeps
    /// a read transaction open for the connection's life, and SQLite can then never restart
    /// the write-ahead log, which grows with every commit, without bound.
    public func firstRow<T>(_ read: (Statement) throws -> T) throws -> T? {
        defer { reset() }
        return try step() ? try read(self) : nil
    }

    public func run() throws(DatabaseError) {
        while try step() {}
        sqlite3_reset(raw)
    }

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }

    public func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(raw, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(raw, column))), as: UTF8.self)
    }

    /// Calls `body` with the bytes of a blob column, valid only during the call (no copy).
    public func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let start = sqlite3_column_blob(raw, column) // before the count, as SQLite asks
        return try body(UnsafeRawBufferPointer(start: start, count: Int(sqlite3_column_bytes(raw, column))))
    }

    public func blob(_ column: Int32) -> [UInt8] {
        guard let p = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(raw, column))))
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
