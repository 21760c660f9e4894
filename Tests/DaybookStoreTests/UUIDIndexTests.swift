import DaybookCore
import DaybookSupport
import DaybookTestSupport
@testable import DaybookStore
import Foundation
import Testing

/// The uuid index as runs and pages (`UUIDIndex.swift`): every uuid answers as a model of
/// the batches says, whatever runs and pages its counts are spread over; compaction keeps
/// the runs at most `maxIndexRuns` and the counts the same; a failed commit leaves the index
/// as it was; a shard with the `sample_days` index of migrations 006–007 is moved into pages.
@Suite struct UUIDIndexTests {
    let scratch = TemporaryDirectory()

    static func sample(_ i: Int, day: Int, version: Int64 = 0, user: String = "ana") -> Sample {
        let start = Instant(nanoseconds: (1_700_006_400 + Int64(day) * 86_400 + Int64(i % 1000) * 60) * Instant.nanosPerSecond)
        return Sample(user: user, uuid: "s\(i)", metric: .steps, source: "watch", start: start,
                      end: Instant(nanoseconds: start.nanoseconds + 60 * Instant.nanosPerSecond), value: Double(i), zone: "UTC",
                      version: version)
    }

    /// What each uuid of a user must answer, and the index counts that follow from it.
    struct Model {
        var entries: [String: StoredEntry] = [:]

        func counts(hash: (String, String) -> Int64) -> [IndexEntry] {
            var out: [IndexKey: Int64] = [:]
            for (uuid, entry) in entries {
                switch entry {
                case .absent: continue
                case .tombstoned: out[IndexKey(hash: hash("ana", uuid), place: Shard.tombstonePlace), default: 0] += 1
                case .live(let s, _):
                    let day = SamplePack.day(ofStart: s.start.nanoseconds)
                    out[IndexKey(hash: hash("ana", uuid), place: Shard.place(metric: s.metric.storageCode, day: day)), default: 0] += 1
                }
            }
            return out.map { IndexEntry(hash: $0.key.hash, place: $0.key.place, count: $0.value) }.sorted(by: IndexEntry.before)
        }

        struct IndexKey: Hashable {
            var hash: Int64
            var place: Int64
        }
    }

    func check(_ shard: Shard, _ model: Model, _ comment: Comment? = nil) throws {
        let asked = Array(model.entries.keys) + ["never"]
        let found = try shard.entries(user: "ana", uuids: asked)
        for (uuid, entry) in model.entries { #expect(found[uuid] == entry, "\(uuid) \(comment ?? "")") }
        #expect(found["never"] == .absent)
        #expect(try shard.indexCounts() == model.counts(hash: shard.uuidHash), comment)
    }

    func directory(_ name: String) throws -> String {
        let path = scratch.newPath(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func runCount(_ shard: Shard) throws -> Int {
        try shard.database.statement("SELECT count(*) FROM uuid_runs").firstRow { Int($0.int64(0)) } ?? -1
    }

    func pageCount(_ shard: Shard) throws -> Int {
        try shard.database.statement("SELECT count(*) FROM uuid_pages").firstRow { Int($0.int64(0)) } ?? -1
    }

    /// Thirty batches of adds, moves to other days, deletions and re-adds of deleted uuids
    /// (refused: the tombstone holds), four uuids to a hash, compacted every third batch:
    /// after each commit the runs are fewer than three and every uuid answers as the model.
    @Test(arguments: [false, true]) func compactionKeepsRunsBoundedAndAnswersRight(collide: Bool) throws {
        let shard = try Shard(directory: try directory("c\(collide)"), topic: "t", partition: 0, fingerprint: "f")
        if collide { shard.uuidHash = { _, uuid in Int64(uuid.dropFirst()).map { $0 / 4 } ?? -1 } }
        shard.maxIndexRuns = 3
        var model = Model()
        var rng = SplitMix64(seed: collide ? 7 : 8)
        var seq: Int64 = 0
        for round in 0..<30 {
            var batch = Shard.Batch(nextOffset: Int64(round + 1) * 100)
            var touched = Set<String>()
            for _ in 0..<60 {
                let i = Int(rng.next() % 400)
                let uuid = "s\(i)"
                guard touched.insert(uuid).inserted else { continue }
                seq += 1
                switch (model.entries[uuid], rng.next() % 5) {
                case (.tombstoned, _):
                    // A re-add of a deleted uuid: the ledger would refuse it; the store keeps the tombstone.
                    continue
                case (.live, 0):
                    batch.deletes.append(("ana", SampleUUID(uuid)))
                    model.entries[uuid] = .tombstoned
                case (_, 1) where model.entries[uuid] == nil:
                    batch.deletes.append(("ana", SampleUUID(uuid)))
                    model.entries[uuid] = .tombstoned
                default:
                    let s = Self.sample(i, day: Int(rng.next() % 20), version: seq)
                    batch.upserts.append(.init(s, seq))
                    model.entries[uuid] = .live(s, seq: seq)
                }
            }
            try shard.commit(batch)
            #expect(try runCount(shard) < 3)
            try check(shard, model, "round \(round)")
        }
        #expect(try pageCount(shard) >= 1)
    }

    /// A place holds every metric a shard may store (the catalogue's 17 and room for more)
    /// and every UTC day from year 0001 to 9999, in 32 bits, never as the tombstones' 0, and
    /// gives back its metric and day. Metrics 0–6 keep the form shards have always had.
    @Test func everyPlaceRoundTripsInThirtyTwoBits() {
        #expect(Metric.allCases.count <= Shard.placeMetrics && MetricCatalogue.maximumEntries == Shard.placeMetrics)
        let days: [Int64] = [-719_162, -1, 0, 1, 19_800, 2_932_896] // 0001-01-01, 1969-12-31, 1970-01-01, ..., 9999-12-31
        for metric in 0..<Shard.placeMetrics {
            for day in days {
                let place = Shard.place(metric: metric, day: day)
                #expect(Int32(exactly: place) != nil && place != Shard.tombstonePlace, "metric \(metric) day \(day)")
                let key = Shard.pack(of: "ana", at: place)
                #expect(key.metric == metric && key.day == day, "metric \(metric) day \(day): \(key)")
            }
        }
        #expect(Shard.place(metric: 2, day: 19_800) == 19_800 << 3 | 3, "the first seven metrics keep the old form")
    }

    /// A sample of every catalogue metric is found again by its uuid, in its pack, and moved
    /// to another day it is still one sample. (Before the second form of place, a metric
    /// from exercise_time (7) on was looked for in a pack that does not exist: the uuid read
    /// as absent and a re-read stored the sample twice.)
    @Test func aSampleOfEveryMetricIsFoundByItsUUID() throws {
        let shard = try Shard(directory: try directory("every"), topic: "t", partition: 0, fingerprint: "f")
        var model = Model()
        for round in 0..<2 {
            var batch = Shard.Batch(nextOffset: Int64(round + 1))
            for metric in Metric.allCases {
                var s = Self.sample(metric.storageCode, day: round * 3, version: Int64(round))
                s = Sample(user: s.user, uuid: "m\(metric.storageCode)", metric: metric, source: s.source, start: s.start,
                           end: metric.isCumulative ? s.end : s.start, value: 50, zone: s.zone, version: s.version)
                batch.upserts.append(.init(s, Int64(round)))
                model.entries[s.uuid] = .live(s, seq: Int64(round))
            }
            try shard.commit(batch)
            try check(shard, model, "round \(round)")
        }
    }

    /// One hash whose counts are spread over forty runs (a uuid added in one, moved in later
    /// ones, another of the same hash deleted in another): a lookup sums them all; compacted,
    /// the same answers come from the pages alone.
    @Test func aLookupSpansManyRuns() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        shard.uuidHash = { _, _ in 7 }
        shard.maxIndexRuns = 1_000
        var model = Model()
        for round in 0..<40 {
            var batch = Shard.Batch(nextOffset: Int64(round + 1))
            let seq = Int64(round)
            switch round % 4 {
            case 0, 1:
                // A new uuid, and the first one moved to the round's day.
                let s = Self.sample(round, day: round)
                batch.upserts.append(.init(s, seq))
                model.entries[s.uuid] = .live(s, seq: seq)
                let moved = Self.sample(0, day: round + 1, version: seq + 1)
                batch.upserts.append(.init(moved, seq))
                model.entries[moved.uuid] = .live(moved, seq: seq)
            case 2:
                batch.deletes.append(("ana", SampleUUID("s\(round - 1)")))
                model.entries["s\(round - 1)"] = .tombstoned
            default:
                batch.deletes.append(("ana", SampleUUID("gone\(round)")))
                model.entries["gone\(round)"] = .tombstoned
            }
            try shard.commit(batch)
        }
        #expect(try runCount(shard) == 40 && pageCount(shard) == 0)
        try check(shard, model)
        shard.maxIndexRuns = 2
        let last = Self.sample(999, day: 3)
        var batch = Shard.Batch(nextOffset: 100)
        batch.upserts.append(.init(last, 100))
        model.entries[last.uuid] = .live(last, seq: 100)
        try shard.commit(batch)
        #expect(try runCount(shard) == 0 && pageCount(shard) == 1)
        try check(shard, model)
    }

    /// Pages are cut at `indexPageEntries`, never between two entries of one hash: 1,100
    /// uuids under 1,100 hashes make several pages, 400 places of one hash stay in one page,
    /// and every uuid is found either way.
    @Test func pagesAreCutButNeverWithinAHash() throws {
        let spread = try Shard(directory: try directory("spread"), topic: "t", partition: 0, fingerprint: "f")
        spread.maxIndexRuns = 1
        var model = Model()
        for round in 0..<11 {
            var batch = Shard.Batch(nextOffset: Int64(round + 1))
            for i in (round * 100)..<(round * 100 + 100) {
                let s = Self.sample(i, day: i % 9)
                batch.upserts.append(.init(s, Int64(i)))
                model.entries[s.uuid] = .live(s, seq: Int64(i))
            }
            try spread.commit(batch)
        }
        #expect(try runCount(spread) == 0 && pageCount(spread) >= 3)
        try check(spread, model)

        let one = try Shard(directory: try directory("one"), topic: "t", partition: 0, fingerprint: "f")
        one.uuidHash = { _, _ in 7 }
        one.maxIndexRuns = 1
        model = Model()
        var batch = Shard.Batch(nextOffset: 1)
        for i in 0..<(one.indexPageEntries + 64) {
            let s = Self.sample(i, day: i)
            batch.upserts.append(.init(s, Int64(i)))
            model.entries[s.uuid] = .live(s, seq: Int64(i))
        }
        try one.commit(batch)
        #expect(try runCount(one) == 0 && pageCount(one) == 1)
        try check(one, model)
    }

    /// A commit that fails after its run was written and the runs compacted (a trigger makes
    /// its last statement fail) leaves the offset, the runs, the pages and every answer as
    /// they were; the next commit goes on from there.
    @Test func aFailedCommitLeavesTheIndexAsItWas() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        shard.maxIndexRuns = 2
        var model = Model()
        var first = Shard.Batch(nextOffset: 10)
        for i in 0..<10 {
            let s = Self.sample(i, day: 1)
            first.upserts.append(.init(s, Int64(i)))
            model.entries[s.uuid] = .live(s, seq: Int64(i))
        }
        try shard.commit(first)
        #expect(try runCount(shard) == 1)
        var second = Shard.Batch(nextOffset: 20)
        second.upserts.append(.init(Self.sample(3, day: 5, version: 1), 11))
        second.deletes.append(("ana", SampleUUID("s4")))
        try shard.database.execute("CREATE TEMP TRIGGER boom BEFORE INSERT ON progress BEGIN SELECT RAISE(ABORT, 'boom'); END")
        #expect(throws: DatabaseError.self) { try shard.commit(second) }
        #expect(shard.nextOffset == 10)
        #expect(try runCount(shard) == 1 && pageCount(shard) == 0)
        try check(shard, model)
        try shard.database.execute("DROP TRIGGER boom")
        try shard.commit(second)
        model.entries["s3"] = .live(Self.sample(3, day: 5, version: 1), seq: 11)
        model.entries["s4"] = .tombstoned
        #expect(shard.nextOffset == 20)
        #expect(try runCount(shard) == 0 && pageCount(shard) == 1)
        try check(shard, model)
    }

    /// A shard whose index is still `sample_days` (migrations 001–007, as main wrote it before
    /// migration 008) is moved into pages when it opens: the same counts, the same answers.
    @Test func aShardWithSampleDaysIsMovedIntoPages() throws {
        let path = scratch.path + "/old.sqlite"
        var model = Model()
        var counts: [IndexEntry] = []
        do {
            let shard = try Shard(path: path, topic: "t", partition: 0, fingerprint: "f")
            var batch = Shard.Batch(nextOffset: 5)
            for i in 0..<600 {
                let s = Self.sample(i, day: i % 7)
                batch.upserts.append(.init(s, Int64(i)))
                model.entries[s.uuid] = .live(s, seq: Int64(i))
            }
            for i in 600..<650 {
                batch.deletes.append(("ana", SampleUUID("s\(i)")))
                model.entries["s\(i)"] = .tombstoned
            }
            try shard.commit(batch)
            counts = try shard.indexCounts()
            // Back to the schema of 007, with the same counts as rows.
            try shard.database.execute("""
                DROP TABLE uuid_pages; DROP TABLE uuid_runs; DELETE FROM schema_migrations WHERE name = '008-uuid-runs';
                CREATE TABLE sample_days (hash INTEGER NOT NULL, place INTEGER NOT NULL, count INTEGER NOT NULL,
                                          PRIMARY KEY (hash, place)) WITHOUT ROWID;
                """)
            let insert = try shard.database.statement("INSERT INTO sample_days (hash, place, count) VALUES (?, ?, ?)")
            for e in counts {
                try insert.bind(1, e.hash)
                try insert.bind(2, e.place)
                try insert.bind(3, e.count)
                try insert.run()
            }
        }
        let shard = try Shard(path: path, topic: "t", partition: 0, fingerprint: "f")
        #expect(try !shard.holdsSampleDaysTable())
        #expect(shard.nextOffset == 5)
        #expect(try runCount(shard) == 0 && pageCount(shard) >= 2)
        #expect(try shard.indexCounts() == counts)
        try check(shard, model)
    }
}
