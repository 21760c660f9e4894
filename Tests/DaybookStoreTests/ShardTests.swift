import DaybookTestSupport
@testable import DaybookStore
import DaybookCore
import Foundation
import Testing

/// A new directory under the test process's scratch directory (removed at exit). Suites
/// that own a `TemporaryDirectory` use its path instead, removed when each test ends.
func temporaryDirectory() throws -> String {
    let path = TemporaryDirectory.processRoot + "/store-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite struct DatabaseTests {
    let scratch = TemporaryDirectory()

    @Test func transactionRollsBackOnThrow() throws {
        let dir = scratch.path
        let db = try Database(path: dir + "/t.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.inTransaction {
                let insert = try db.statement("INSERT INTO t (x) VALUES (?)")
                try insert.bind(1, 42)
                try insert.run()
                throw Boom()
            }
        }
        let count = try db.statement("SELECT count(*) FROM t")
        #expect(try count.step() && count.int64(0) == 0)
    }

    /// Migrations go in as one: a failure in the third leaves neither the first two nor
    /// `schema_migrations` (a process killed there leaves the same: nothing committed), and
    /// a rerun that succeeds applies all three, once.
    @Test func migrationsAreAppliedAllOrNothing() throws {
        let path = scratch.path + "/m.sqlite"
        let db = try Database(path: path)
        let broken = [(name: "1", sql: "CREATE TABLE a (x)"), (name: "2", sql: "CREATE TABLE b (x)"), (name: "3", sql: "CREATE TABLE c (x")]
        #expect(throws: DatabaseError.self) { try db.migrate(broken) }
        let tables = try db.statement("SELECT count(*) FROM sqlite_master")
        #expect(try tables.firstRow { $0.int64(0) } == 0)

        var fixed = broken
        fixed[2].sql = "CREATE TABLE c (x)"
        try db.migrate(fixed)
        try db.migrate(fixed) // nothing left to apply: no error for tables that exist
        let names = try db.statement("SELECT group_concat(name, ',') FROM (SELECT name FROM schema_migrations ORDER BY name)")
        #expect(try names.firstRow { $0.text(0) } == "1,2,3")
        #expect(try tables.firstRow { $0.int64(0) } == 5) // a, b, c, schema_migrations and its key's index
    }

    @Test func aReadTransactionEndsOnAThrowAndTheNextWriteStillBegins() throws {
        let db = try Database(path: scratch.path + "/r.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        try db.execute("INSERT INTO t (x) VALUES (7)")
        struct Boom: Error {}
        var seen: Int64 = 0
        #expect(throws: Boom.self) {
            try db.inReadTransaction {
                let read = try db.statement("SELECT x FROM t")
                if try read.step() { seen = read.int64(0) }
                read.reset()
                throw Boom()
            }
        }
        #expect(seen == 7)
        // Left inside the read, BEGIN IMMEDIATE would fail ("within a transaction").
        try db.inTransaction {
            try db.execute("INSERT INTO t (x) VALUES (8)")
            return .commit
        }
        try db.inReadTransaction {
            let count = try db.statement("SELECT count(*) FROM t")
            #expect(try count.step() && count.int64(0) == 2)
            count.reset()
        }
    }

    @Test func filesArePrivateAndInWALMode() throws {
        let dir = scratch.path
        let db = try Database(path: dir + "/p.sqlite")
        try db.execute("CREATE TABLE t (x)")
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/p.sqlite")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let journal = try db.statement("PRAGMA journal_mode")
        #expect(try journal.step() && journal.text(0) == "wal")
    }

    @Test func errorsNameTheFileAndStatement() throws {
        let dir = scratch.path
        let db = try Database(path: dir + "/e.sqlite")
        do {
            _ = try db.statement("SELECT * FROM missing_table")
            Issue.record("no error")
        } catch {
            #expect(error.description.contains("e.sqlite"))
            #expect(error.description.contains("missing_table"))
        }
    }

    @Test func storageFullIsAStorageFault() throws {
        // max_page_count makes SQLite report SQLITE_FULL, as a full disk would.
        let dir = scratch.path
        let db = try Database(path: dir + "/f.sqlite")
        try db.execute("CREATE TABLE t (x BLOB)")
        try db.execute("PRAGMA max_page_count = 8")
        do {
            try db.inTransaction {
                let insert = try db.statement("INSERT INTO t (x) VALUES (?)")
                for _ in 0..<100 {
                    try insert.bind(1, blob: [UInt8](repeating: 7, count: 4_000))
                    try insert.run()
                }
                return .commit
            }
            Issue.record("no error")
        } catch let error as DatabaseError {
            #expect(error.isStorageFault)
        }
    }
}

@Suite struct ShardTests {
    let scratch = TemporaryDirectory()

    func sample(_ uuid: String, _ value: Double, start: String = "2024-05-06T09:00:00Z", end: String = "2024-05-06T10:00:00Z", source: String = "watch") throws -> Sample {
        Sample(user: "ana", uuid: uuid, metric: .steps, source: source, start: try Instant(rfc3339: start),
               end: try Instant(rfc3339: end), value: value, zone: "UTC")
    }

    @Test func batchAndOffsetCommitTogetherAndTheShardAnswersTheLedger() throws {
        let dir = scratch.path
        let ledger = Ledger()
        var batch = Shard.Batch(nextOffset: 3)
        // watch 09:00–10:00 600, phone 09:30–10:30 900 keeps 10:00–10:30 = 450 → 1050.
        let events: [Event] = [.sampleAdded(try sample("w", 600)),
                               .sampleAdded(try sample("p", 900, start: "2024-05-06T09:30:00Z", end: "2024-05-06T10:30:00Z", source: "phone")),
                               .sampleDeleted(user: "ana", uuid: "gone")]
        var dirty = Set<DayKey>()
        for (i, e) in events.enumerated() {
            dirty.formUnion(ledger.apply(e, at: Int64(i)))
            switch e {
            case .sampleAdded(let s): batch.upserts.append(.init(s, Int64(i)))
            case .sampleDeleted(let u, let id): batch.deletes.append((u, SampleUUID(id)))
            case .sourceCheckedIn: break
            }
        }
        batch.rows = ledger.recompute(dirty)
        do {
            let shard = try Shard(directory: dir, topic: "health-samples", partition: 2, fingerprint: "watch>phone>manual")
            #expect(shard.nextOffset == 0)
            try shard.commit(batch)
            #expect(shard.nextOffset == 3)
        }
        let reopened = try Shard(directory: dir, topic: "health-samples", partition: 2, fingerprint: "watch>phone>manual")
        #expect(reopened.nextOffset == 3)
        let entries = try reopened.entries(user: "ana", uuids: ["w", "p", "gone", "never"])
        #expect(entries == ["w": .live(try sample("w", 600), seq: 0),
                            "p": .live(try sample("p", 900, start: "2024-05-06T09:30:00Z", end: "2024-05-06T10:30:00Z", source: "phone"), seq: 1),
                            "gone": .tombstoned, "never": .absent])
        let day = CivilDay(year: 2024, month: 5, day: 6)
        #expect(try reopened.samples(user: "ana", metric: .steps, days: day.number...day.number).map(\.seq).sorted() == [0, 1])
        #expect(try reopened.samples(user: "ana", metric: .steps, days: (day.number + 1)...(day.number + 3)).isEmpty)
        #expect(try reopened.samples(user: "ana", metric: .distance, days: day.number...day.number).isEmpty)
        let rows = try ShardReader(directory: dir).totals()
        #expect(rows.map(\.jsonLine) == [#"{"user":"ana","metric":"steps","day":"2024-05-06","value":1050}"#])
        #expect(rows.first?.summary == .cumulative(value: 1050, sources: [SourceShare(source: "watch", value: 600), SourceShare(source: "phone", value: 450)]))

        // A ledger over the shard starts empty and loads what an event needs: deleting the
        // watch sample leaves the phone's whole 900 (its 09:30–10:00 no longer shadowed).
        let cached = Ledger(priority: .builtIn, store: reopened, cacheBudgetBytes: 0)
        #expect(cached.cachedUserCount == 0)
        let delete = Event.sampleDeleted(user: "ana", uuid: "w")
        try cached.load(for: [delete])
        let changed = cached.recompute(cached.apply(delete, at: 3))
        #expect(changed[DayKey(user: "ana", metric: .steps, day: day)] == .some(DayTotal(
            key: DayKey(user: "ana", metric: .steps, day: day), summary: .cumulative(value: 900, sources: [SourceShare(source: "phone", value: 900)]))))
        cached.evictIfOverBudget()
        #expect(cached.cachedUserCount == 0)
    }

    @Test func openingAShardReadsNoneOfItsSamples() throws {
        let dir = scratch.path
        // Opening reads a fixed handful of rows (schema, meta: priority, metric catalogue and
        // span, offset), as many for 5,001 stored samples as for one.
        func rowsReadOpening() throws -> Int {
            let shard = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
            return shard.database.rowsRead
        }
        func store(_ range: Range<Int>) throws {
            let shard = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
            var batch = Shard.Batch(nextOffset: Int64(range.upperBound))
            for i in range {
                let start = Int64(i) * 60 * Instant.nanosPerSecond + 1_700_000_000 * Instant.nanosPerSecond
                batch.upserts.append(.init(Sample(user: "u\(i % 50)", uuid: "s\(i)", metric: .steps, source: "watch",
                                             start: Instant(nanoseconds: start), end: Instant(nanoseconds: start + 60 * Instant.nanosPerSecond),
                                             value: 10, zone: "UTC"), Int64(i)))
            }
            try shard.commit(batch)
        }
        try store(0..<1)
        let one = try rowsReadOpening()
        try store(1..<5_001)
        let full = try rowsReadOpening()
        #expect(full == one, "opening read \(full) rows with 5,001 samples stored, \(one) with one")
        #expect(full < 24)
    }

    @Test func aShardOfTheFirstSchemaIsMigratedIntoTheStateStore() throws {
        // A shard written before the state store: samples and tombstones in two tables.
        let dir = scratch.path
        let path = dir + "/" + Shard.fileName(topic: "t", partition: 0)
        do {
            let old = try Database(path: path)
            try old.migrate(Array(Shard.migrations.prefix(1)))
            try old.execute("""
                INSERT INTO meta (key, value) VALUES ('priority', 'f'), ('topic', 't'), ('partition', '0');
                INSERT INTO samples VALUES ('ana', 'w', 'steps', 'watch', 1714986000000000000, 1714989600000000000, 600, 'Europe/Berlin', 4);
                INSERT INTO samples VALUES ('ana', 'h', 'heart_rate', 'watch', 1714986000000000000, 1714986000000000000, 61, 'UTC', 5);
                INSERT INTO tombstones VALUES ('ana', 'gone');
                INSERT INTO progress VALUES ('t', 0, 6, datetime('now'));
                """)
        }
        let shard = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
        #expect(shard.nextOffset == 6)
        let start = Instant(nanoseconds: 1_714_986_000_000_000_000)
        #expect(try shard.entries(user: "ana", uuids: ["w", "h", "gone", "new"]) == [
            "w": .live(Sample(user: "ana", uuid: "w", metric: .steps, source: "watch", start: start,
                              end: Instant(nanoseconds: 1_714_989_600_000_000_000), value: 600, zone: "Europe/Berlin"), seq: 4),
            "h": .live(Sample(user: "ana", uuid: "h", metric: .heartRate, source: "watch", start: start, end: start, value: 61, zone: "UTC"), seq: 5),
            "gone": .tombstoned, "new": .absent])
    }

    @Test func aSecondOpenerWaitsForTheLock() throws {
        let dir = scratch.path
        let first = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f")
        // flock is per open file description, so a second open in this process conflicts too.
        #expect(throws: Shard.ShardError.self) {
            _ = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "f", lockTimeout: .milliseconds(200))
        }
        _ = first
    }

    @Test func aShardBuiltWithAnotherPriorityIsRefused() throws {
        let dir = scratch.path
        _ = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "watch>phone")
        do {
            _ = try Shard(directory: dir, topic: "t", partition: 0, fingerprint: "phone>watch")
            Issue.record("opened")
        } catch let error as Shard.ShardError {
            #expect(error.kind == .priorityMismatch)
            #expect(error.message.contains("rebuild the projection under this one"))
            // The store speaks of shards; the options (--config, daybook rebuild) are the CLI's to add.
            #expect(!error.message.contains("--config") && !error.message.contains("daybook "))
        }
    }

    @Test func deadLettersWaitInTheOutboxUntilForwarded() throws {
        let dir = scratch.path
        let shard = try Shard(directory: dir, topic: "t", partition: 1, fingerprint: "f")
        var batch = Shard.Batch(nextOffset: 8)
        batch.deadLetters = [Shard.DeadLetter(offset: 7, key: Array("ana".utf8), payload: Array("{bad".utf8), reason: "malformed JSON", code: "malformed_json")]
        try shard.commit(batch)
        try shard.commit(batch) // the same offset again is ignored
        let pending = try shard.unforwardedDeadLetters()
        #expect(pending.count == 1 && pending[0].letter.reason == "malformed JSON" && pending[0].letter.payload == Array("{bad".utf8))
        try shard.markForwarded(pending.map(\.id))
        #expect(try shard.unforwardedDeadLetters().isEmpty)
        #expect(try shard.deadLetterCount() == 1)
    }
}

@Suite struct ShardReaderTests {
    let scratch = TemporaryDirectory()

    @Test func aShardBeingCreatedIsSkippedAndGarbageIsNamed() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        _ = shard
        // A projector creating partition 1 has made the file and not yet its tables.
        _ = FileManager.default.createFile(atPath: scratch.path + "/t-0001.sqlite", contents: nil)
        #expect(try ShardReader(directory: scratch.path).totals().isEmpty)
        #expect(throws: Never.self) { try ShardReader(directory: scratch.path).progress() }
        // An SQLite file of something else, and bytes that are not SQLite, are not shards.
        let foreign = try Database(path: scratch.path + "/t-0002.sqlite")
        try foreign.execute("CREATE TABLE notes (x)")
        for (file, reason) in [("t-0002.sqlite", "without the shard's tables"), ("t-0003.sqlite", "file is not a database")] {
            if file == "t-0003.sqlite" {
                try Data(String(repeating: "garbage ", count: 100).utf8).write(to: URL(fileURLWithPath: scratch.path + "/" + file))
                try FileManager.default.removeItem(atPath: scratch.path + "/t-0002.sqlite")
            }
            do {
                _ = try ShardReader(directory: scratch.path).totals()
                Issue.record("read \(file)")
            } catch let error as Shard.ShardError {
                #expect(error.kind == .notAShard)
                #expect(error.message.contains(file) && error.message.contains(reason), "\(error)")
            }
        }
    }
}

/// The uuid index written as one run per batch: a batch of 300 new samples, two uuids to a
/// hash, gives 150 (hash, place) counts, each written once with both uuids counted, and
/// every uuid is found.
@Suite struct SampleIndexChunkTests {
    let scratch = TemporaryDirectory()

    @Test func aBatchOfManySamplesIndexesEachOnceAndFindsThemAll() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        // Two uuids to a hash: the count of one (hash, place) is 2.
        shard.uuidHash = { _, uuid in Int64(uuid.dropFirst().hashValueStable / 2) }
        var batch = Shard.Batch(nextOffset: 300)
        var samples: [Sample] = []
        for i in 0..<300 {
            // Three days of 100 samples: both uuids of a hash (2k, 2k + 1) start on one day.
            let start = Instant(nanoseconds: (1_700_006_400 + Int64(i / 100) * 86_400 + Int64(i % 100) * 60) * Instant.nanosPerSecond)
            let s = Sample(user: "ana", uuid: "s\(i)", metric: .steps, source: "watch", start: start,
                           end: Instant(nanoseconds: start.nanoseconds + 60 * Instant.nanosPerSecond), value: 10, zone: "UTC")
            samples.append(s)
            batch.upserts.append(.init(s, Int64(i)))
        }
        try shard.commit(batch)
        let counts = try shard.indexCounts()
        // 300 uuids, hash i / 2: 150 hashes, each on one day (a place): 150 counts of 2.
        #expect(counts.count == 150 && counts.map(\.count).reduce(0, +) == 300 && counts.map(\.count).max() == 2)
        let found = try shard.entries(user: "ana", uuids: samples.map(\.uuid) + ["s300"])
        for (i, s) in samples.enumerated() { #expect(found[s.uuid] == .live(s, seq: Int64(i))) }
        #expect(found["s300"] == .absent)
    }

    /// A second batch whose uuids the ledger cannot vouch for (`storeLacks` false) looks them
    /// up in the index together (`places(ofHashes:)`): 100 samples
    /// move a day on, 80 are deleted, 50 are new; every uuid then answers as it should and
    /// the index counts what the packs hold.
    @Test func aBatchOfUnvouchedUUIDsFindsEachInTheIndexTogether() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        shard.uuidHash = { _, uuid in Int64(uuid.dropFirst().hashValueStable / 2) }
        func sample(_ i: Int, day: Int64) -> Sample {
            let start = Instant(nanoseconds: (1_700_006_400 + day * 86_400 + Int64(i % 100) * 60) * Instant.nanosPerSecond)
            return Sample(user: "ana", uuid: "s\(i)", metric: .steps, source: "watch", start: start,
                          end: Instant(nanoseconds: start.nanoseconds + 60 * Instant.nanosPerSecond), value: 10, zone: "UTC")
        }
        var first = Shard.Batch(nextOffset: 300)
        for i in 0..<300 { first.upserts.append(.init(sample(i, day: Int64(i / 100)), Int64(i))) }
        try shard.commit(first)
        var second = Shard.Batch(nextOffset: 600)
        var expected: [String: StoredEntry] = [:]
        for i in 0..<100 {
            let moved = sample(i, day: 5)
            second.upserts.append(.init(moved, Int64(300 + i)))
            expected[moved.uuid] = .live(moved, seq: Int64(300 + i))
        }
        for i in 100..<180 {
            second.deletes.append(("ana", SampleUUID("s\(i)")))
            expected["s\(i)"] = .tombstoned
        }
        for i in 180..<300 { expected["s\(i)"] = .live(sample(i, day: Int64(i / 100)), seq: Int64(i)) }
        for i in 300..<350 {
            let new = sample(i, day: 6)
            second.upserts.append(.init(new, Int64(300 + i)))
            expected[new.uuid] = .live(new, seq: Int64(300 + i))
        }
        second.storeLacks = Array(repeating: false, count: second.upserts.count)
        try shard.commit(second)
        let found = try shard.entries(user: "ana", uuids: Array(expected.keys) + ["s999"])
        for (uuid, entry) in expected { #expect(found[uuid] == entry, "\(uuid)") }
        #expect(found["s999"] == .absent)
        // 300 stored − 80 deleted + 50 new = 270 live samples (the 100 moved counted once, at
        // their new day) and 80 tombstones: the index counts each once.
        let counts = try shard.indexCounts()
        let live = counts.filter { $0.place != 0 }.map(\.count).reduce(0, +)
        let dead = counts.filter { $0.place == 0 }.map(\.count).reduce(0, +)
        #expect(live == 270 && dead == 80)
    }
}

private extension Substring {
    /// The number after the "s" of a test uuid.
    var hashValueStable: Int { Int(self) ?? -1 }
}
