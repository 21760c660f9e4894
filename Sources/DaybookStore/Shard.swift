import DaybookCore
import DaybookSupport
import Foundation

/// One partition's read model in one SQLite file: its live samples and tombstones, the
/// per-(user, metric, day) totals with a per-source breakdown, its dead letters, and the
/// partition's next offset — always written in the same transaction as what it covers.
///
/// A shard is locked (flock on `<file>.lock`) for as long as it is open, so two projectors
/// never write it at once; the OS drops the lock if the process dies.
public final class Shard {
    public let topic: String
    public let partition: Int32
    public let path: String
    let database: Database
    private var lockDescriptor: Int32 = -1
    /// The offset of the next message to apply (0 for a new shard).
    public private(set) var nextOffset: Int64 = 0
    /// The longest stored sample (end − start, ns): how far before a day a sample that
    /// reaches into it can start.
    var maxSpan: Int64 = 0
    /// The hash of (user, uuid) that keys the uuid index (tests put one here under which every
    /// uuid collides: a lookup must still find each uuid's own sample).
    var uuidHash: (String, String) -> Int64 = { SamplePack.hash(user: $0, uuid: $1) } {
        didSet { uuidHashReplaced = true }
    }
    private var uuidHashReplaced = false

    /// `uuidHash` of a uuid in its compact form: the default hash over the uuid's bytes
    /// without a String made (a test's hash gets the text).
    @inline(__always)
    func indexHash(_ user: String, _ uuid: SampleUUID) -> Int64 {
        uuidHashReplaced ? uuidHash(user, uuid.text) : SamplePack.hash(user: user, uuid: uuid)
    }
    /// The page size of a shard this process creates. A shard's packs are blobs of 0.1 to 6 KB
    /// (a (user, metric, day)'s samples) in a table without rowids, where a cell larger than a
    /// quarter of a page goes on to overflow pages; the last overflow page of each is mostly
    /// empty. Half of a 4 KiB-page shard's pack pages were empty (74.8 bytes per event on disk
    /// on the issue's log spelled with UUIDs); with 2 KiB pages, 57.0 (BENCHMARKS.md, "Issue 26,
    /// ninth steps").
    /// A shard made before keeps its page size.
    static let pageSize = 2048
    /// Entries a page of the uuid index is cut to, for this shard's page size.
    private(set) var indexPageEntries = Shard.indexPageEntries(pageSize: 4096)
    /// How many runs the uuid index holds before a commit merges them into its pages
    /// (`UUIDIndex.swift`; tests make it small).
    var maxIndexRuns = 8
    /// The uuid index's runs while a read transaction or a commit looks uuids up; nil
    /// between batches (a shard keeps nothing of its own in memory between them).
    var cachedIndexRuns: [[UInt8]]?

    /// The file name of a partition's shard inside a data directory.
    public static func fileName(topic: String, partition: Int32) -> String {
        let p = String(partition)
        return "\(topic)-\(String(repeating: "0", count: max(0, 4 - p.count)) + p).sqlite"
    }

    /// The partition of a shard file name of `topic` (`health-samples-0003.sqlite` → 3).
    public static func partition(ofFile name: String, topic: String) -> Int32? {
        guard let parsed = topicAndPartition(ofFile: name), parsed.topic == topic else { return nil }
        return parsed.partition
    }

    /// The topic and partition of a shard file name of any topic (`health-samples-0003.sqlite`
    /// → health-samples, 3); nil for a name `fileName(topic:partition:)` would not give.
    public static func topicAndPartition(ofFile name: String) -> (topic: String, partition: Int32)? {
        guard name.hasSuffix(".sqlite"), let dash = name.lastIndex(of: "-"), dash > name.startIndex else { return nil }
        let topic = String(name[..<dash])
        let digits = name[name.index(after: dash)...].dropLast(".sqlite".count)
        guard digits.count >= 4, digits.allSatisfy(\.isASCII), let p = Int32(digits), p >= 0,
              fileName(topic: topic, partition: p) == name else { return nil }
        return (topic, p)
    }

    static let migrations: [(name: String, sql: String)] = [
        ("001-read-model", """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE progress (topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
                               updated_at TEXT NOT NULL, PRIMARY KEY (topic, partition)) WITHOUT ROWID;
        CREATE TABLE samples (user TEXT NOT NULL, uuid TEXT NOT NULL, metric TEXT NOT NULL, source TEXT NOT NULL,
                              start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, value REAL NOT NULL, zone TEXT NOT NULL,
                              seq INTEGER NOT NULL, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
        CREATE TABLE tombstones (user TEXT NOT NULL, uuid TEXT NOT NULL, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
        CREATE TABLE totals (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL,
                             value REAL, min REAL, max REAL, avg REAL, count INTEGER,
                             updated_offset INTEGER NOT NULL, PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
        CREATE TABLE total_sources (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL, rank INTEGER NOT NULL,
                                    source TEXT NOT NULL, value REAL NOT NULL,
                                    PRIMARY KEY (user, metric, day, rank)) WITHOUT ROWID;
        CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, partition INTEGER NOT NULL,
                                   offset INTEGER NOT NULL, key BLOB NOT NULL, payload BLOB NOT NULL, reason TEXT NOT NULL,
                                   code TEXT NOT NULL, recorded_at TEXT NOT NULL, forwarded INTEGER NOT NULL DEFAULT 0,
                                   UNIQUE (topic, partition, offset));
        CREATE INDEX dead_letters_unforwarded ON dead_letters (forwarded) WHERE forwarded = 0;
        """),
        // The shard becomes the projector's state store: live samples and tombstones in one
        // table (a tombstone is a row without a metric), so one lookup answers "what is
        // this uuid", and an index by start finds the samples near a day. Sources and zones
        // are numbered in `names` and metrics by `Metric.storageCode`: smaller rows, fewer
        // strings bound per sample.
        ("002-state-store", """
        CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE entries (user TEXT NOT NULL, uuid TEXT NOT NULL, metric INTEGER, source INTEGER, start_ns INTEGER,
                              end_ns INTEGER, value REAL, zone INTEGER, seq INTEGER, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
        INSERT OR IGNORE INTO names (name) SELECT source FROM samples UNION SELECT zone FROM samples;
        INSERT INTO entries
          SELECT s.user, s.uuid, CASE s.metric WHEN 'steps' THEN 0 WHEN 'active_energy' THEN 1 WHEN 'distance' THEN 2
                 WHEN 'heart_rate' THEN 3 END, src.id, s.start_ns, s.end_ns, s.value, z.id, s.seq
          FROM samples s JOIN names src ON src.name = s.source JOIN names z ON z.name = s.zone;
        INSERT OR IGNORE INTO entries (user, uuid) SELECT user, uuid FROM tombstones;
        DROP TABLE samples;
        DROP TABLE tombstones;
        CREATE INDEX entries_by_start ON entries (user, metric, start_ns);
        INSERT OR REPLACE INTO meta (key, value)
          SELECT 'max_span_ns', CAST(coalesce(max(end_ns - start_ns), 0) AS TEXT) FROM entries;
        """),
        // `daybook dlq replay` records here when (and where) it republished a dead letter's
        // repaired event; NULL while the dead letter waits. It writes these columns through a
        // connection of its own while a projector may hold the shard, and applies this
        // migration itself on a shard no projector has opened since (`DeadLetterMarks`).
        (DeadLetterMarks.migrationName, """
        ALTER TABLE dead_letters ADD COLUMN replayed_at TEXT;
        ALTER TABLE dead_letters ADD COLUMN replayed_partition INTEGER;
        ALTER TABLE dead_letters ADD COLUMN replayed_offset INTEGER;
        """),
        // Freshness: per (user, source) the last check-in, the last sample delivered (Kafka
        // timestamp), the newest sample end and its zone, and the metrics it syncs (a bit
        // per `Metric.storageCode`). Each column only moves forward (`SourceSync.merge`),
        // written in the batch's transaction. A shard built before this has no row until
        // its pairs speak again; meta.sync_state_from records where its sync state starts
        // (`daybook stale` warns about it), and a rebuild fills it from the log.
        ("004-sync-state", """
        CREATE TABLE sync_state (user TEXT NOT NULL, source TEXT NOT NULL, last_check_in_ns INTEGER,
                                 last_sample_ns INTEGER, newest_end_ns INTEGER, newest_zone TEXT,
                                 metrics INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user, source)) WITHOUT ROWID;
        INSERT INTO meta (key, value) SELECT 'sync_state_from', CAST(max(next_offset) AS TEXT) FROM progress HAVING max(next_offset) > 0;
        """),
        // Sample versions (`Sample.version`): events before them had none, which is version
        // 0, so every stored sample is right as it stands. Rows computed before this broke
        // same-rank ties by log position; meta.rows_before_versions marks a shard that holds
        // such rows, and the projector recomputes them from its samples when it opens it
        // (`ShardProjection.recomputeRowsBeforeVersions`).
        ("005-sample-versions", """
        ALTER TABLE entries ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        INSERT INTO meta (key, value) SELECT 'rows_before_versions', '1' FROM totals LIMIT 1;
        """),
        // The packed state store (`Shard+Packs.swift`): a blob of samples per (user, metric,
        // UTC day of their start), an index of small integers from a hash of (user, uuid) to
        // the packs that may hold it, and tombstones on their own. A shard that still has
        // `entries` is moved into packs when it opens (`migrateEntriesToPacks`).
        ("006-packed-samples", """
        CREATE TABLE packs (user TEXT NOT NULL, metric INTEGER NOT NULL, day INTEGER NOT NULL, samples BLOB NOT NULL,
                            PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
        CREATE TABLE sample_days (hash INTEGER NOT NULL, place INTEGER NOT NULL, count INTEGER NOT NULL,
                                  PRIMARY KEY (hash, place)) WITHOUT ROWID;
        CREATE TABLE tombstones (user TEXT NOT NULL, uuid TEXT NOT NULL, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
        """),
        // A dead letter `dlq replay` did not republish because a newer write of its uuid wins
        // (`ReplayOrder`): replayed_at says when that was decided, replayed_partition and
        // replayed_offset name the winning write, and `superseded` says where that is (1 a
        // message at home, 2 another dead letter); 0 for one that was republished. Written
        // like the replay columns, by `DeadLetterMarks` (which applies this itself if needed).
        (DeadLetterMarks.supersededMigrationName, """
        ALTER TABLE dead_letters ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
        """),
        // The uuid index as sorted blobs (`UUIDIndex.swift`): a run of (hash, place, delta)
        // entries per batch instead of a `sample_days` row per (hash, place), merged into
        // pages of counts keyed by the lowest hash each covers. A shard that still has
        // `sample_days` is moved into pages when it opens (`migrateSampleDaysToPages`).
        ("008-uuid-runs", """
        CREATE TABLE uuid_pages (first_hash INTEGER PRIMARY KEY, entries BLOB NOT NULL);
        CREATE TABLE uuid_runs (id INTEGER PRIMARY KEY, entries BLOB NOT NULL);
        """),
        // A discrete row's latest value (`DaySummary.discrete`): the value of the day's last
        // sample. Rows written before it have none; meta.rows_before_latest marks a shard
        // that holds discrete rows, and the projector recomputes its rows from its samples
        // when it opens it (`ShardProjection.recomputeOlderRows`). Readers of a shard not yet
        // upgraded read an unknown latest (`TotalsCursor`).
        ("009-discrete-latest", """
        ALTER TABLE totals ADD COLUMN latest REAL;
        INSERT INTO meta (key, value) SELECT 'rows_before_latest', '1' FROM totals WHERE count IS NOT NULL LIMIT 1;
        """),
    ]

    /// The schema `migrations` lead to, for a new shard: created in one step with every
    /// migration recorded as applied, instead of replaying them (seven transactions of DDL,
    /// a table made and dropped, ALTERs, and a VACUUM: about 10 M instructions a shard; this
    /// is about a tenth of that). `ShardTests.aNewShardHasTheSchemaItsMigrationsLeadTo`
    /// holds the two equal: change both together.
    static let currentSchema = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE progress (topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
                               updated_at TEXT NOT NULL, PRIMARY KEY (topic, partition)) WITHOUT ROWID;
        CREATE TABLE totals (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL,
                             value REAL, min REAL, max REAL, avg REAL, count INTEGER,
                             updated_offset INTEGER NOT NULL, latest REAL, PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
        CREATE TABLE total_sources (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL, rank INTEGER NOT NULL,
                                    source TEXT NOT NULL, value REAL NOT NULL,
                                    PRIMARY KEY (user, metric, day, rank)) WITHOUT ROWID;
        CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, partition INTEGER NOT NULL,
                                   offset INTEGER NOT NULL, key BLOB NOT NULL, payload BLOB NOT NULL, reason TEXT NOT NULL,
                                   code TEXT NOT NULL, recorded_at TEXT NOT NULL, forwarded INTEGER NOT NULL DEFAULT 0,
                                   replayed_at TEXT, replayed_partition INTEGER, replayed_offset INTEGER,
                                   superseded INTEGER NOT NULL DEFAULT 0,
                                   UNIQUE (topic, partition, offset));
        CREATE INDEX dead_letters_unforwarded ON dead_letters (forwarded) WHERE forwarded = 0;
        CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        INSERT INTO meta (key, value) VALUES ('max_span_ns', '0');
        CREATE TABLE sync_state (user TEXT NOT NULL, source TEXT NOT NULL, last_check_in_ns INTEGER,
                                 last_sample_ns INTEGER, newest_end_ns INTEGER, newest_zone TEXT,
                                 metrics INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user, source)) WITHOUT ROWID;
        CREATE TABLE packs (user TEXT NOT NULL, metric INTEGER NOT NULL, day INTEGER NOT NULL, samples BLOB NOT NULL,
                            PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
        CREATE TABLE tombstones (user TEXT NOT NULL, uuid TEXT NOT NULL, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
        CREATE TABLE uuid_pages (first_hash INTEGER PRIMARY KEY, entries BLOB NOT NULL);
        CREATE TABLE uuid_runs (id INTEGER PRIMARY KEY, entries BLOB NOT NULL);
        """

    /// A new shard's file as it is before anything is written into it: `currentSchema` with
    /// every migration recorded, `pageSize` pages, marked as a WAL database (header bytes 18
    /// and 19, the file format versions, are 2). Made once a process, in memory. Creating
    /// each new shard's schema took ~3.2 M instructions (SQLite parsing the statements)
    /// and 4 fsyncs switching the new file to WAL through a rollback journal: 102 M
    /// instructions for the 32 shards of a catch-up, ~390 an event of the issue's
    /// 262,482-event log (BENCHMARKS.md, "Issue 26, thirteenth steps").
    static let template: Result<[UInt8], any Error> = Result { () throws -> [UInt8] in
        let memory = try Database(path: ":memory:")
        try memory.execute("PRAGMA page_size=\(Shard.pageSize)")
        try memory.create(Shard.currentSchema, recording: Shard.migrations.map(\.name))
        // The catalogue a new shard is built under, so that opening it writes nothing more.
        let metrics = try memory.statement("INSERT INTO meta (key, value) VALUES ('metrics', ?)")
        try metrics.bind(1, MetricCatalogue.record(Metric.definitions))
        try metrics.run()
        return try memory.serialized(asWAL: true)
    }

    /// Writes a new shard at `path` (which does not exist; the caller holds its lock) from
    /// `template`: to a file beside it, synced, then renamed into place, so that a reader
    /// finds no shard or a whole one, never a part.
    static func writeNew(_ path: String) throws {
        let bytes = try template.get()
        let partial = path + ".new"
        unlink(partial) // a part left by a process killed while writing it
        let fd = open(partial, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw storageFault(errno, path: partial, "cannot create the new shard") }
        var written = 0
        var failure: Int32 = 0
        bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                written += n
            }
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0, rename(partial, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(partial)
            throw storageFault(failure, path: path, "cannot write the new shard")
        }
        // The rename itself is made durable with its directory.
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    /// A failed write of a new shard as the `DatabaseError` SQLite gives for the same fault
    /// (a full disk or a file-size limit is `SQLITE_FULL`, and so on), so that every caller
    /// tells it as it tells a failed commit: what is left, and how to free the space.
    static func storageFault(_ code: Int32, path: String, _ doing: String) -> DatabaseError {
        let result: DatabaseError.ResultCode = switch code {
        case ENOSPC, EFBIG, EDQUOT: .full
        case EROFS: .readOnly
        case EACCES, EPERM: .permission
        default: .ioError
        }
        return DatabaseError(code: result.rawValue, message: "\(doing): \(String(cString: strerror(code)))", sql: nil, path: path)
    }

    /// Opens or creates the shard of `topic`/`partition` in `directory`.
    /// - Parameter fingerprint: a description of the source priority; a shard built with
    ///   another priority is refused (its totals would be wrong), which asks for a rebuild.
    /// - Parameter lockTimeout: how long to wait for another process to release the shard.
    public convenience init(directory: String, topic: String, partition: Int32, fingerprint: String,
                            lockTimeout: Duration = .seconds(30)) throws {
        try self.init(path: directory + "/" + Shard.fileName(topic: topic, partition: partition), topic: topic,
                      partition: partition, fingerprint: fingerprint, lockTimeout: lockTimeout)
    }

    /// Opens or creates the shard of `topic`/`partition` at `path` (where a `DataLayout` puts it).
    public init(path: String, topic: String, partition: Int32, fingerprint: String,
                lockTimeout: Duration = .seconds(30)) throws {
        self.topic = topic
        self.partition = partition
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        lockDescriptor = try Shard.lock(path + ".lock", timeout: lockTimeout)
        do {
            if !FileManager.default.fileExists(atPath: path) { try Shard.writeNew(path) }
            database = try Database(path: path, pageSizeIfNew: Shard.pageSize)
            // A database with tables but none of ours is someone else's file: never write into it.
            let tables = try database.statement("SELECT count(*), count(CASE WHEN name = 'schema_migrations' THEN 1 END) FROM sqlite_master WHERE type = 'table'")
            // (firstRow finishes the read: an unfinished one would keep the migrations from dropping tables.)
            if try tables.firstRow({ $0.int64(0) > 0 && $0.int64(1) == 0 }) ?? false {
                throw ShardError(.notAShard, "\(path) is not a Daybook shard (an SQLite database with other tables). Move it out of \(directory) and restart: a missing shard is rebuilt from the log.")
            }
            try database.create(Shard.currentSchema, recording: Shard.migrations.map(\.name))
            if let pageSize = try database.statement("PRAGMA page_size").firstRow({ $0.int64(0) }) {
                indexPageEntries = Shard.indexPageEntries(pageSize: Int(pageSize))
            }
            try database.migrate(Shard.migrations)
            try migrateEntriesToPacks()
            try migrateSampleDaysToPages()
            // The catalogue first: a shard built under added metrics names them in its priority too.
            try checkCatalogue(Metric.definitions)
            try checkFingerprint(fingerprint)
            let read = try database.statement("SELECT next_offset FROM progress WHERE topic = ? AND partition = ?")
            try read.bind(1, topic)
            try read.bind(2, Int(partition))
            if let next = try read.firstRow({ $0.int64(0) }) { nextOffset = next }
            let span = try database.statement("SELECT value FROM meta WHERE key = 'max_span_ns'")
            if let text = try span.firstRow({ $0.text(0) }) { maxSpan = Int64(text) ?? EventDecoder.maximumDuration }
        } catch let error as DatabaseError where error.isCorrupt {
            close(lockDescriptor)
            throw ShardError(.notAShard, "\(path) is not a Daybook shard (\(error.message)). Move it away and restart: a missing shard is rebuilt from the log.")
        } catch {
            close(lockDescriptor)
            throw error
        }
    }

    deinit {
        if lockDescriptor >= 0 { close(lockDescriptor) }
    }

    /// Why a shard cannot be used; the kind says what would fix it.
    public struct ShardError: Error, CustomStringConvertible {
        public enum Kind: Sendable {
            /// Another process holds the shard: stop it, or wait and retry.
            case locked
            /// The shard was built under another source priority: rebuild into a new directory.
            case priorityMismatch
            /// The shard was built under other metric catalogue entries (a metric's
            /// aggregation or unit differs, or this Daybook lacks one the shard holds): rebuild.
            case catalogueMismatch
            /// The file is not a Daybook shard (not SQLite, damaged, or foreign): move it away.
            case notAShard
            /// The data directory is missing or is not a directory.
            case missingDirectory
            /// One (user, metric, day) has rows in two shards: the user's events were
            /// published to two partitions, and neither row is the day's total.
            case splitUser
            /// A file could not be created or opened (permissions, space).
            case storage
        }

        public var kind: Kind
        /// What went wrong and what to do, in this library's terms.
        public var message: String
        /// The facts of the refusal, for a caller that words the next step its own way (a
        /// command line names its options); nil where `message` says all there is.
        public var detail: Detail?
        public var description: String { message }

        public enum Detail: Sendable, Equatable {
            /// Another process holds the lock on the shard at `path`; waited `waited`.
            case held(path: String, waited: Duration)
            /// The manifest of `directory` names the shard at `path`, which is not there.
            case missingShard(path: String, directory: String)
            /// `directory` exists but is a file, not a data directory.
            case notADirectory(directory: String)
            /// `directory` is a generation of the data directory `parent`.
            case generation(directory: String, parent: String)
            /// `directory` is a verify's or diff's temporary directory inside `parent`.
            case comparisonDirectory(directory: String, parent: String)
            /// The day `key` has rows in `first` and `second`, shards of the data directory
            /// `directory`.
            case splitUser(key: DayKey, first: String, second: String, directory: String)
        }

        public init(_ kind: Kind, _ message: String, detail: Detail? = nil) {
            self.kind = kind
            self.message = message
            self.detail = detail
        }
    }

    /// Takes an exclusive flock on `path` (created if missing), waiting up to `timeout`;
    /// returns the descriptor that holds it (closing it lets go).
    public static func lock(_ path: String, timeout: Duration) throws -> Int32 {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ShardError(.storage, "\(path): cannot open lock file: \(String(cString: strerror(errno)))") }
        let deadline = ContinuousClock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK, ContinuousClock.now < deadline else {
                close(fd)
                throw ShardError(.locked, "\(path): another projector holds this shard (waited \(timeout)); stop it or use another data directory",
                                 detail: .held(path: path, waited: timeout))
            }
            usleep(50_000)
        }
        return fd
    }

    /// True when another process holds the lock of the shard at `path` (a projector or a
    /// replay writes it). Creates nothing: a shard never opened has no lock file, and no holder.
    public static func isHeld(_ path: String) -> Bool {
        let fd = open(path + ".lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) } // also lets go of the lock taken here, at once
        return flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    /// Records the metric catalogue entries the shard is built under (meta.metrics, a
    /// `MetricCatalogue.record`), or checks them against the ones it recorded
    /// (`catalogueRefusal`): a shard whose data some metric's other name, aggregation or unit
    /// made is refused, never mixed with data of this one's. A shard of a Daybook before the
    /// catalogue records the entries on its first open: it was built under the first four,
    /// which the catalogue keeps. Entries added since, or changed where the shard holds
    /// nothing, are recorded anew.
    func checkCatalogue(_ entries: [MetricDefinition]) throws {
        let current = MetricCatalogue.record(entries)
        let stored = try Shard.recordedCatalogue(database)
        if stored == nil, try database.statement("SELECT 1 FROM packs WHERE metric >= 7 LIMIT 1").firstRow({ _ in true }) ?? false {
            // Written by the one Daybook that carried metrics from exercise_time (7) on before
            // the uuid index had places for them (`place(metric:day:)`): their index entries
            // name packs that do not exist, so a re-read would store their samples twice.
            throw ShardError(.catalogueMismatch, "\(path) holds samples of metrics from exercise_time on, written before the uuid index could place them (their lookups would miss and count them twice): rebuild the projection.")
        }
        if stored == current { return }
        if let refusal = try Shard.catalogueRefusal(database, path: path, recorded: stored, entries: entries) { throw refusal }
        try database.inTransaction {
            let write = try database.statement("INSERT OR REPLACE INTO meta (key, value) VALUES ('metrics', ?)")
            try write.bind(1, current)
            try write.run()
            return .commit
        }
    }

    /// The catalogue the shard in `database` recorded (meta.metrics), nil for one from before it.
    static func recordedCatalogue(_ database: Database) throws -> String? {
        try database.statement("SELECT value FROM meta WHERE key = 'metrics'").firstRow { $0.text(0) }
    }

    /// Why the shard in `database` cannot be read or written under `entries`, given the
    /// catalogue it `recorded` (nil: none, a shard from before the catalogue): the places whose
    /// entry differs (`MetricCatalogue.changes`) and that the shard holds something of (a pack,
    /// a row, a source's sync bit). A place it holds nothing of may change: nothing was made
    /// under its old entry. Nil when nothing stands in the way.
    static func catalogueRefusal(_ database: Database, path: String, recorded: String?, entries: [MetricDefinition]) throws -> ShardError? {
        let held = try heldCatalogueChanges(database, recorded: recorded, entries: entries)
        guard let first = held.first else { return nil }
        let list = held.map { "metric \($0.place) was \($0.was), is \($0.now ?? "unknown to this Daybook")" }.joined(separator: "; ")
        let name = first.name
        let advice = first.now == nil
            ? "give the configuration whose metrics section adds \(name) (--config)"
            : "rebuild the projection under this catalogue (a rebuild builds beside the live shards and swaps: daybook rebuild --data DIR --config FILE), or use the Daybook and configuration that built it"
        return ShardError(.catalogueMismatch, "\(path) was built under other metric catalogue entries (\(list)): its \(name) data were made under another entry. To read or write it, \(advice).")
    }

    /// The places whose entry `entries` give differently from the catalogue the shard in
    /// `database` recorded (none without a record) and that the shard holds data of.
    static func heldCatalogueChanges(_ database: Database, recorded: String?, entries: [MetricDefinition]) throws -> [MetricCatalogue.Change] {
        guard let recorded, recorded != MetricCatalogue.record(entries) else { return [] }
        var held: [MetricCatalogue.Change] = []
        for change in MetricCatalogue.changes(from: recorded, to: entries) {
            let packs = try database.statement("SELECT 1 FROM packs WHERE metric = ? LIMIT 1")
            try packs.bind(1, change.place)
            let rows = try database.statement("SELECT 1 FROM totals WHERE metric = ? LIMIT 1")
            try rows.bind(1, String(change.name))
            let sync = try database.statement("SELECT 1 FROM sync_state WHERE metrics & ? != 0 LIMIT 1")
            try sync.bind(1, Int64(1) << Int64(change.place))
            if try packs.firstRow({ _ in true }) ?? rows.firstRow({ _ in true }) ?? sync.firstRow({ _ in true }) ?? false {
                held.append(change)
            }
        }
        return held
    }

    private func checkFingerprint(_ fingerprint: String) throws {
        let read = try database.statement("SELECT value FROM meta WHERE key = 'priority'")
        if let stored = try read.firstRow({ $0.text(0) }) {
            guard SourcePriority.sameRanking(stored, fingerprint) else {
                throw ShardError(.priorityMismatch, "\(path) was built with source priority \(stored), not \(fingerprint): open it under the order it was built with, or rebuild the projection under this one.")
            }
            return
        }
        try database.inTransaction {
            let write = try database.statement("INSERT INTO meta (key, value) VALUES ('priority', ?), ('topic', ?), ('partition', ?)")
            try write.bind(1, fingerprint)
            try write.bind(2, topic)
            try write.bind(3, String(partition))
            try write.run()
            return .commit
        }
    }

    /// Sets how much SQLite may cache of this shard's pages, in KiB, while a batch is read
    /// and written: each commit gives the pages back (`commit(_:)`), so a process's page
    /// cache holds the shards of the batches in hand, not a sliver of each of all.
    public func setPageCache(kilobytes: Int) throws {
        try database.execute("PRAGMA cache_size = -\(max(64, kilobytes))")
    }

    // MARK: Where the log came from

    /// The id of the Kafka cluster this shard's log is read from, once one was recorded.
    public func clusterID() throws -> String? {
        try database.statement("SELECT value FROM meta WHERE key = 'cluster_id'").firstRow { $0.text(0) }
    }

    /// Records the cluster the shard's offsets refer to; offsets of another cluster's log
    /// mean nothing here, so the projector refuses to mix them.
    public func recordClusterID(_ id: String) throws {
        try database.inTransaction {
            let write = try database.statement("INSERT INTO meta (key, value) VALUES ('cluster_id', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            try write.bind(1, id)
            try write.run()
            return .commit
        }
    }

    // MARK: The ledger's store

    // MARK: Names of sources and zones

    /// Name ↔ id, read on first use (a few rows: the distinct sources and zones).
    private var nameIDs: [String: Int64]?
    private var namesByID: [Int64: String] = [:]

    func loadNames() throws -> [String: Int64] {
        if let nameIDs { return nameIDs }
        var ids: [String: Int64] = [:]
        let read = try database.statement("SELECT id, name FROM names")
        while try read.step() {
            ids[read.text(1)] = read.int64(0)
            namesByID[read.int64(0)] = read.text(1)
        }
        nameIDs = ids
        return ids
    }

    func name(_ id: Int64) throws -> String {
        _ = try loadNames()
        guard let name = namesByID[id] else {
            throw ShardError(.notAShard, "\(path): a stored sample refers to name \(id), which the shard does not have")
        }
        return name
    }

    // MARK: Writing a batch

    /// A sample a batch writes as the version in force of its uuid, with its log position.
    /// A struct, not a `(sample, seq)` pair: an array of pairs was copied and destroyed
    /// through the runtime's generic tuple witnesses (~300 instructions an event).
    public struct Upsert {
        public var sample: Sample
        public var seq: Int64

        public init(sample: Sample, seq: Int64) {
            self.sample = sample
            self.seq = seq
        }

        public init(_ sample: Sample, _ seq: Int64) {
            self.init(sample: sample, seq: seq)
        }
    }

    /// Everything one batch of messages changes, committed at once.
    public struct Batch {
        public var upserts: [Upsert] = []
        /// Samples written straight from a staged batch, after `upserts`: the numbers of its
        /// `sample-added` events whose sample became the version in force, each at its position
        /// (a projection's form: no `Sample` is made, each name is looked up once a batch).
        public var staged = StagedBatch()
        public var stagedUpserts: [Int32] = []
        /// Parallel to `upserts` then `stagedUpserts` (or empty): true where the caller knows
        /// that the store held nothing of the sample's uuid before this batch
        /// (`Ledger.storeLacks`), so that writing it needs no lookup. A wrong true would keep
        /// two versions of a uuid.
        public var storeLacks: [Bool] = []
        public var deletes: [(user: String, uuid: SampleUUID)] = []
        public var rows: [DayKey: DayTotal?] = [:]
        public var deadLetters: [DeadLetter] = []
        /// What the batch's events say about each (user, source) pair, merged into the stored state.
        public var sync: [SyncKey: SourceSync] = [:]
        /// The offset after the last message of the batch.
        public var nextOffset: Int64

        public init(nextOffset: Int64) { self.nextOffset = nextOffset }
    }

    /// A message that could not be applied, kept with the reason.
    public struct DeadLetter: Sendable {
        public var offset: Int64
        public var key: [UInt8]
        public var payload: [UInt8]
        public var reason: String
        public var code: String

        public init(offset: Int64, key: [UInt8], payload: [UInt8], reason: String, code: String) {
            self.offset = offset
            self.key = key
            self.payload = payload
            self.reason = reason
            self.code = code
        }
    }

    /// Writes a batch and the new next offset in one transaction. On any failure nothing is
    /// written and `nextOffset` stays where it was.
    public func commit(_ batch: Batch) throws {
        // Runs read before this commit, or by one that failed, are not read again from memory.
        cachedIndexRuns = nil
        defer { cachedIndexRuns = nil }
        var newSpan: Int64?
        // Names numbered in this transaction count only once it commits.
        var added: [(String, Int64)] = []
        try database.inTransaction {
            var ids = try loadNames()
            let addName = try database.statement("INSERT INTO names (name) VALUES (?)")
            // A batch names a handful of sources and zones over and over: the last few are
            // compared before the dictionary is hashed.
            var recent = RecentNames<Int64>(capacity: 4)
            func id(_ name: String) throws -> Int64 {
                if let id = recent.value(of: name) { return id }
                if let id = ids[name] {
                    recent.note(name, id)
                    return id
                }
                try addName.bind(1, name)
                try addName.run()
                let id = database.lastInsertedRowID
                ids[name] = id
                added.append((name, id))
                return id
            }
            let longest = max(maxSpan, try writeSamples(batch.upserts, staged: batch.staged, stagedUpserts: batch.stagedUpserts,
                                                           storeLacks: batch.storeLacks, deletes: batch.deletes, nameID: id))
            if longest > maxSpan {
                let span = try database.statement("INSERT OR REPLACE INTO meta (key, value) VALUES ('max_span_ns', ?)")
                try span.bind(1, String(longest))
                try span.run()
                newSpan = longest
            }
            try writeRows(batch.rows, offset: batch.nextOffset)
            try writeSync(batch.sync.values)
            let letter = try database.statement("""
                INSERT OR IGNORE INTO dead_letters (topic, partition, offset, key, payload, reason, code, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, datetime('now'))
                """)
            for d in batch.deadLetters {
                try letter.bind(1, topic)
                try letter.bind(2, Int(partition))
                try letter.bind(3, d.offset)
                try letter.bind(4, blob: d.key)
                try letter.bind(5, blob: d.payload)
                try letter.bind(6, d.reason)
                try letter.bind(7, d.code)
                try letter.run()
            }
            let progress = try database.statement("""
                INSERT INTO progress (topic, partition, next_offset, updated_at) VALUES (?, ?, ?, datetime('now'))
                ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset, updated_at = excluded.updated_at
                """)
            try progress.bind(1, topic)
            try progress.bind(2, Int(partition))
            try progress.bind(3, batch.nextOffset)
            try progress.run()
            return .commit
        }
        nextOffset = batch.nextOffset
        if let newSpan { maxSpan = newSpan }
        // Between batches a shard keeps no pages (see setPageCache): the next batch of this
        // partition reads its B-tree's few upper pages again from the OS's cache.
        database.releaseMemory()
        for (name, id) in added {
            nameIDs?[name] = id
            namesByID[id] = name
        }
    }

    private func writeRows(_ rows: [DayKey: DayTotal?], offset: Int64) throws {
        let deleteRow = try database.statement("DELETE FROM totals WHERE user = ? AND metric = ? AND day = ?")
        let deleteSources = try database.statement("DELETE FROM total_sources WHERE user = ? AND metric = ? AND day = ?")
        let upsert = try database.statement("""
            INSERT INTO totals (user, metric, day, value, min, max, avg, count, updated_offset, latest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user, metric, day) DO UPDATE SET value = excluded.value, min = excluded.min, max = excluded.max,
              avg = excluded.avg, count = excluded.count, updated_offset = excluded.updated_offset, latest = excluded.latest
            """)
        let source = try database.statement("INSERT INTO total_sources (user, metric, day, rank, source, value) VALUES (?, ?, ?, ?, ?, ?)")
        for (key, total) in rows {
            let day = key.day.description
            for s in [deleteSources] + (total == nil ? [deleteRow] : []) {
                try s.bind(1, key.user)
                try s.bind(2, key.metric.rawValue)
                try s.bind(3, day)
                try s.run()
            }
            guard let total else { continue }
            try upsert.bind(1, key.user)
            try upsert.bind(2, key.metric.rawValue)
            try upsert.bind(3, day)
            switch total.summary {
            case .cumulative(let value, let shares):
                try upsert.bind(4, value)
                for i: Int32 in [5, 6, 7, 8, 10] { try upsert.bindNull(i) }
                for (rank, share) in shares.enumerated() {
                    try source.bind(1, key.user)
                    try source.bind(2, key.metric.rawValue)
                    try source.bind(3, day)
                    try source.bind(4, rank)
                    try source.bind(5, share.source)
                    try source.bind(6, share.value)
                    try source.run()
                }
            case .discrete(let lo, let hi, let avg, let count, let latest):
                try upsert.bindNull(4)
                try upsert.bind(5, lo)
                try upsert.bind(6, hi)
                try upsert.bind(7, avg)
                try upsert.bind(8, count)
                if let latest { try upsert.bind(10, latest) } else { try upsert.bindNull(10) }
            }
            try upsert.bind(9, offset)
            try upsert.run()
        }
    }

    /// Merges pairs into `sync_state`: each column keeps the later value (NULL never wins).
    private func writeSync(_ pairs: some Collection<SourceSync>) throws {
        guard !pairs.isEmpty else { return }
        let upsert = try database.statement("""
            INSERT INTO sync_state (user, source, last_check_in_ns, last_sample_ns, newest_end_ns, newest_zone, metrics)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user, source) DO UPDATE SET
              last_check_in_ns = CASE WHEN last_check_in_ns IS NULL OR excluded.last_check_in_ns > last_check_in_ns
                                      THEN coalesce(excluded.last_check_in_ns, last_check_in_ns) ELSE last_check_in_ns END,
              last_sample_ns = CASE WHEN last_sample_ns IS NULL OR excluded.last_sample_ns > last_sample_ns
                                    THEN coalesce(excluded.last_sample_ns, last_sample_ns) ELSE last_sample_ns END,
              newest_zone = CASE WHEN excluded.newest_end_ns IS NOT NULL AND (newest_end_ns IS NULL OR excluded.newest_end_ns > newest_end_ns
                                      OR (excluded.newest_end_ns = newest_end_ns AND excluded.newest_zone > coalesce(newest_zone, '')))
                                 THEN excluded.newest_zone ELSE newest_zone END,
              newest_end_ns = CASE WHEN newest_end_ns IS NULL OR excluded.newest_end_ns > newest_end_ns
                                   THEN coalesce(excluded.newest_end_ns, newest_end_ns) ELSE newest_end_ns END,
              metrics = metrics | excluded.metrics
            """)
        for pair in pairs {
            try upsert.bind(1, pair.user)
            try upsert.bind(2, pair.source)
            for (index, instant) in [(Int32(3), pair.lastCheckIn), (4, pair.lastSampleDelivered), (5, pair.newestSampleEnd)] {
                if let instant { try upsert.bind(index, instant.nanoseconds) } else { try upsert.bindNull(index) }
            }
            if let zone = pair.zone { try upsert.bind(6, zone) } else { try upsert.bindNull(6) }
            try upsert.bind(7, SyncStateColumns.bits(pair.metrics))
            try upsert.run()
        }
    }

    // MARK: Dead-letter outbox

    /// Dead letters not yet forwarded to the DLQ topic, oldest first.
    public func unforwardedDeadLetters(after id: Int64 = 0, limit: Int = 1_000) throws -> [(id: Int64, letter: DeadLetter)] {
        let read = try database.statement("SELECT id, offset, key, payload, reason, code FROM dead_letters WHERE forwarded = 0 AND id > ? ORDER BY id LIMIT ?")
        try read.bind(1, id)
        try read.bind(2, limit)
        var out: [(Int64, DeadLetter)] = []
        while try read.step() {
            out.append((read.int64(0), DeadLetter(offset: read.int64(1), key: read.blob(2), payload: read.blob(3), reason: read.text(4), code: read.text(5))))
        }
        return out
    }

    public func markForwarded(_ ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try database.inTransaction {
            let mark = try database.statement("UPDATE dead_letters SET forwarded = 1 WHERE id = ?")
            for id in ids {
                try mark.bind(1, id)
                try mark.run()
            }
            return .commit
        }
    }

    /// Takes over what happened to the dead letters of the live shard at `livePath` (a
    /// rebuild meets the same poison messages again): those below `offset` were forwarded to
    /// the DLQ topic by the live projector, the ones `dlq replay` republished stay marked
    /// replayed (with where they went) and the ones it found superseded stay so, and each
    /// keeps the time it was first recorded.
    /// The live shard is only read, by a connection of its own (a projector may be writing
    /// it; a write transaction spanning both files would wait for it).
    public func adoptDeadLetterStatus(fromShardAt livePath: String, below offset: Int64) throws {
        try database.inTransaction {
            let forwarded = try database.statement("UPDATE dead_letters SET forwarded = 1 WHERE offset < ? AND forwarded = 0")
            try forwarded.bind(1, offset)
            try forwarded.run()
            return .commit
        }
        guard FileManager.default.fileExists(atPath: livePath) else { return }
        let live = try Database(path: livePath, readOnly: true)
        let columns = try live.statement("SELECT count(CASE WHEN name = 'replayed_at' THEN 1 END), count(CASE WHEN name = 'superseded' THEN 1 END) FROM pragma_table_info('dead_letters')")
        let (replays, supersessions) = try columns.firstRow { ($0.int64(0) == 1, $0.int64(1) == 1) } ?? (false, false)
        let read = try live.statement("""
            SELECT offset, recorded_at, \(replays ? "replayed_at, replayed_partition, replayed_offset" : "NULL, NULL, NULL"), \(supersessions ? "superseded" : "0")
            FROM dead_letters WHERE topic = ? AND partition = ? AND offset > ? ORDER BY offset LIMIT 10000
            """)
        let adopt = try database.statement("""
            UPDATE dead_letters SET recorded_at = ?, replayed_at = ?, replayed_partition = ?, replayed_offset = ?, superseded = ?
            WHERE topic = ? AND partition = ? AND offset = ?
            """)
        // A page at a time: a log of poison must not make this hold them all.
        var after: Int64 = -1
        var more = true
        while more {
            more = false
            try read.bind(1, topic)
            try read.bind(2, Int(partition))
            try read.bind(3, after)
            try database.inTransaction {
                while try read.step() {
                    more = true
                    after = read.int64(0)
                    try adopt.bind(1, read.text(1))
                    for (column, index) in [(Int32(2), Int32(2)), (3, 3), (4, 4)] {
                        if read.isNull(column) { try adopt.bindNull(index) } else if column == 2 { try adopt.bind(index, read.text(column)) } else { try adopt.bind(index, read.int64(column)) }
                    }
                    try adopt.bind(5, read.int64(5))
                    try adopt.bind(6, topic)
                    try adopt.bind(7, Int(partition))
                    try adopt.bind(8, after)
                    try adopt.run()
                }
                return .commit
            }
            read.reset()
        }
    }

    // MARK: Rows an older Daybook wrote

    /// Why the shard's rows must be recomputed from its samples, nil when they need not. Its
    /// samples are right as they stand; only rows an older Daybook computed differ:
    /// - rows computed before sample versions, when same-rank ties went to the later log
    ///   position (migration 005 marks such a shard; no event had a version, and the latest
    ///   add of each uuid is in force under both rules);
    /// - discrete rows written before their latest value (migration 009 marks them).
    public func rowsToRecompute() throws -> String? {
        let read = try database.statement("SELECT key FROM meta WHERE key IN ('rows_before_versions', 'rows_before_latest') ORDER BY key")
        var reasons: [String] = []
        while try read.step() {
            reasons.append(read.text(0) == "rows_before_latest" ? "discrete rows now carry their latest value"
                           : "same-rank ties now go by version, not log position")
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// Once every row has been recomputed from the samples.
    public func markRowsRecomputed() throws {
        try database.execute("DELETE FROM meta WHERE key IN ('rows_before_versions', 'rows_before_latest')")
    }

    public func deadLetterCount() throws -> Int {
        try database.statement("SELECT count(*) FROM dead_letters").firstRow { Int($0.int64(0)) } ?? 0
    }
}
