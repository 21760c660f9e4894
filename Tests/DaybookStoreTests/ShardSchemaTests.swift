import DaybookCore
import DaybookTestSupport
@testable import DaybookStore
import Foundation
import Testing

/// A new shard is created at the current schema in one step (`Shard.currentSchema`); it
/// must be exactly the schema its migrations lead to, or shards made new and shards
/// migrated from older builds would differ.
@Suite struct ShardSchemaTests {
    let scratch = TemporaryDirectory()

    /// Tables and indexes (their SQL, whitespace folded), each table's columns, the meta rows
    /// and the migrations recorded: everything a later migration or reader could tell apart.
    static func schema(of db: Database) throws -> [String] {
        var out: [String] = []
        let master = try db.statement("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
        var tables: [String] = []
        while try master.step() {
            let sql = master.text(3).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            out.append("\(master.text(0)) \(master.text(1)) on \(master.text(2)): \(sql)")
            if master.text(0) == "table" { tables.append(master.text(1)) }
        }
        for table in tables {
            let columns = try db.statement("SELECT cid, name, type, \"notnull\", coalesce(dflt_value, 'NULL'), pk FROM pragma_table_info(?)")
            try columns.bind(1, table)
            while try columns.step() {
                out.append("\(table).\(columns.int64(0)) \(columns.text(1)) \(columns.text(2)) notnull=\(columns.int64(3)) default=\(columns.text(4)) pk=\(columns.int64(5))")
            }
        }
        let meta = try db.statement("SELECT key, value FROM meta ORDER BY key")
        while try meta.step() { out.append("meta \(meta.text(0)) = \(meta.text(1))") }
        let applied = try db.statement("SELECT name FROM schema_migrations ORDER BY name")
        while try applied.step() { out.append("migration \(applied.text(0))") }
        return out
    }

    /// A shard records the metric catalogue entries it is built under (meta.metrics): a new
    /// one from its template, an old one (before the catalogue, or before entries added
    /// since) on its next open. One recorded under another aggregation or unit of a metric,
    /// or under a metric this Daybook does not know, is refused, naming the metric.
    @Test func aShardRecordsTheCatalogueAndRefusesAnother() throws {
        let path = scratch.path + "/catalogue.sqlite"
        func recorded() throws -> String? {
            let shard = try Shard(path: path, topic: "t", partition: 0, fingerprint: "f")
            return try shard.database.statement("SELECT value FROM meta WHERE key = 'metrics'").firstRow { $0.text(0) }
        }
        func record(_ value: String?) throws {
            let db = try Database(path: path)
            try db.execute("DELETE FROM meta WHERE key = 'metrics'")
            if let value {
                let write = try db.statement("INSERT INTO meta (key, value) VALUES ('metrics', ?)")
                try write.bind(1, value)
                try write.run()
            }
        }
        let current = MetricCatalogue.record(Metric.definitions)
        #expect(try recorded() == current)
        #expect(current.hasPrefix("steps:priority_sum:count;active_energy:priority_sum:kcal;distance:priority_sum:m;heart_rate:discrete:count/min;"))
        // Before the catalogue (no record), and under its first four entries alone: recorded whole.
        try record(nil)
        #expect(try recorded() == current)
        try record("steps:priority_sum:count;active_energy:priority_sum:kcal;distance:priority_sum:m;heart_rate:discrete:count/min")
        #expect(try recorded() == current)
        // Heart rate once summed, and a metric after the catalogue's last, where the shard
        // holds nothing of them: recorded anew (nothing was made under the old entries).
        let summed = current.replacingOccurrences(of: ";heart_rate:discrete:", with: ";heart_rate:sum:")
        try record(summed)
        #expect(try recorded() == current)
        try record(current + ";blood_glucose:discrete:mg/dL")
        #expect(try recorded() == current)
        // Where it holds something (a row, a pack, a source's sync bit): refused, and so is
        // reading it.
        func refusal(_ expected: String) -> (any Error) -> Bool {
            { error in
                let e = error as? Shard.ShardError
                return e?.kind == .catalogueMismatch && e?.message.contains(expected) == true
            }
        }
        try record(summed)
        try Database(path: path).execute("INSERT INTO totals (user, metric, day, min, max, avg, count, updated_offset) VALUES ('ana', 'heart_rate', '2024-05-06', 60, 60, 60, 1, 0)")
        #expect(performing: { _ = try recorded() }, throws: refusal("metric 3 was heart_rate:sum:count/min, is heart_rate:discrete:count/min): its heart_rate data were made under another entry. To read or write it, rebuild the projection under this catalogue"))
        #expect(performing: { _ = try ShardReader(directory: scratch.path).snapshot(ofShardAt: path).rows() }, throws: refusal("metric 3 was heart_rate:sum"))
        try Database(path: path).execute("DELETE FROM totals")
        let place = Metric.definitions.count
        try record(current + ";blood_glucose:discrete:mg/dL")
        try Database(path: path).execute("INSERT INTO sync_state (user, source, metrics) VALUES ('ana', 'meter', \(1 << place))")
        #expect(performing: { _ = try recorded() }, throws: refusal("metric \(place) was blood_glucose:discrete:mg/dL, is unknown to this Daybook): its blood_glucose data were made under another entry. To read or write it, give the configuration whose metrics section adds blood_glucose (--config)"))
        try Database(path: path).execute("DELETE FROM sync_state; INSERT INTO packs (user, metric, day, samples) VALUES ('ana', \(place), 19800, x'00')")
        #expect(performing: { _ = try recorded() }, throws: refusal("metric \(place) was blood_glucose"))
    }

    /// A shard without a record of its catalogue that holds packs of metrics from 7 on was
    /// written by the Daybook whose uuid index could not place them: refused, asking for a
    /// rebuild. One that holds only the first seven metrics records the catalogue and opens.
    @Test func aShardWithUnplaceableMetricsFromBeforeTheRecordIsRefused() throws {
        let path = scratch.path + "/unplaced.sqlite"
        func open() throws { _ = try Shard(path: path, topic: "t", partition: 0, fingerprint: "f") }
        try open()
        let db = try Database(path: path)
        try db.execute("DELETE FROM meta WHERE key = 'metrics'; INSERT INTO packs (user, metric, day, samples) VALUES ('ana', 2, 19800, x'00')")
        try open()
        try db.execute("DELETE FROM meta WHERE key = 'metrics'; INSERT INTO packs (user, metric, day, samples) VALUES ('ana', 9, 19800, x'00')")
        #expect {
            try open()
        } throws: { error in
            let e = error as? Shard.ShardError
            return e?.kind == .catalogueMismatch && e?.message.contains("written before the uuid index could place them") == true
        }
    }

    @Test func aNewShardHasTheSchemaItsMigrationsLeadTo() throws {
        let fresh = try Shard(path: scratch.path + "/fresh.sqlite", topic: "t", partition: 0, fingerprint: "f")
        // The old way: every migration in turn, then the move into packs (which drops
        // `entries`) when the shard opens.
        let migratedPath = scratch.path + "/migrated.sqlite"
        try Database(path: migratedPath).migrate(Shard.migrations)
        let migrated = try Shard(path: migratedPath, topic: "t", partition: 0, fingerprint: "f")
        let a = try Self.schema(of: fresh.database), b = try Self.schema(of: migrated.database)
        #expect(a == b, "only new: \(a.filter { !b.contains($0) }); only migrated: \(b.filter { !a.contains($0) })")
        #expect(a.contains("migration \(DeadLetterMarks.supersededMigrationName)") && !a.contains { $0.hasPrefix("table entries") })
    }

    /// A new shard is written from the process's template (`Shard.template`) beside its
    /// place and renamed there: in WAL mode from its first byte, whole (SQLite's integrity
    /// check), nothing left beside it; a part left by a process killed while writing one
    /// is replaced.
    @Test func aNewShardIsWrittenWholeFromTheTemplateInWALMode() throws {
        let path = scratch.path + "/new.sqlite"
        // A part of a shard, as a process killed while writing it would leave.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path + ".new"))
        let shard = try Shard(path: path, topic: "t", partition: 3, fingerprint: "f")
        #expect(!FileManager.default.fileExists(atPath: path + ".new"))
        #expect(try shard.database.statement("PRAGMA journal_mode").firstRow { $0.text(0) } == "wal")
        #expect(try shard.database.statement("PRAGMA integrity_check").firstRow { $0.text(0) } == "ok")
        // The template's header says WAL (file format versions 2 and 2), as a switched file's does.
        let template = try Shard.template.get()
        #expect(template[18] == 2 && template[19] == 2 && template.count % Shard.pageSize == 0)
        // It takes writes and keeps them.
        try shard.database.execute("INSERT INTO meta (key, value) VALUES ('kept', '1')")
        let reopened = try Database(path: path)
        #expect(try reopened.statement("SELECT value FROM meta WHERE key = 'kept'").firstRow { $0.text(0) } == "1")
        #expect(try reopened.statement("SELECT value FROM meta WHERE key = 'partition'").firstRow { $0.text(0) } == "3")
    }

    /// A new shard that cannot be written fails as SQLite fails for the same fault, so the
    /// commands' storage advice applies (a full disk, a file-size limit: `SQLITE_FULL`).
    @Test func aNewShardThatCannotBeWrittenFailsAsSQLiteWould() throws {
        let cases: [(Int32, DatabaseError.ResultCode)] = [(ENOSPC, .full), (EFBIG, .full), (EDQUOT, .full), (EROFS, .readOnly),
                                                            (EACCES, .permission), (EIO, .ioError)]
        for (code, expected) in cases {
            let error = Shard.storageFault(code, path: "/x.sqlite", "cannot write the new shard")
            #expect(error.resultCode == expected && error.isStorageFault, "\(code): \(error)")
            #expect(error.description.contains("cannot write the new shard: \(String(cString: strerror(code)))"))
        }
        // Into a directory that is not there: a DatabaseError naming the file, nothing made.
        #expect(throws: DatabaseError.self) { try Shard.writeNew(scratch.path + "/missing/new.sqlite") }
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/missing"))
    }

    static func pageSize(_ db: Database) throws -> Int64? {
        try db.statement("PRAGMA page_size").firstRow { $0.int64(0) }
    }

    /// A new shard is made of `Shard.pageSize` pages, and its uuid index is cut to fit them
    /// (165 entries of 12 bytes in 2 KiB); a shard made of 4 KiB pages, as every shard before
    /// this page size was, keeps them and its cut of 336 entries.
    @Test func aNewShardHasSmallPagesAndAnOldOneKeepsItsOwn() throws {
        let fresh = try Shard(path: scratch.path + "/fresh.sqlite", topic: "t", partition: 0, fingerprint: "f")
        #expect(try Self.pageSize(fresh.database) == 2048 && Shard.pageSize == 2048)
        #expect(fresh.indexPageEntries == 165)

        let oldPath = scratch.path + "/old.sqlite"
        let old = try Database(path: oldPath, pageSizeIfNew: 4096)
        try old.migrate(Shard.migrations)
        #expect(try Self.pageSize(old) == 4096)
        let reopened = try Shard(path: oldPath, topic: "t", partition: 0, fingerprint: "f")
        #expect(try Self.pageSize(reopened.database) == 4096)
        #expect(reopened.indexPageEntries == 336)
    }

    @Test func aNewShardIsCreatedOnlyOnce() throws {
        let path = scratch.path + "/once.sqlite"
        let db = try Database(path: path)
        try db.create(Shard.currentSchema, recording: Shard.migrations.map(\.name))
        try db.execute("INSERT INTO meta (key, value) VALUES ('kept', '1')")
        // A database with tables is left as it is.
        try db.create(Shard.currentSchema, recording: Shard.migrations.map(\.name))
        #expect(try db.statement("SELECT value FROM meta WHERE key = 'kept'").firstRow { $0.text(0) } == "1")
    }
}
