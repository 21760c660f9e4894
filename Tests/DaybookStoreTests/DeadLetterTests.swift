import DaybookTestSupport
@testable import DaybookStore
import DaybookCore
import Foundation
import Testing

/// `ShardReader.deadLetters` and `DeadLetterMarks`: what `daybook dlq` reads and writes.
@Suite struct DeadLetterTests {
    let scratch = TemporaryDirectory()

    static func letter(_ offset: Int64, user: String = "ana", payload: String = "{bad", code: String = "malformed_json") -> Shard.DeadLetter {
        Shard.DeadLetter(offset: offset, key: Array(user.utf8), payload: Array(payload.utf8), reason: "reason \(offset)", code: code)
    }

    /// A shard of `partition` holding dead letters at `offsets`.
    @discardableResult
    func shard(_ partition: Int32, topic: String = "health-samples", offsets: [Int64]) throws -> Shard {
        let shard = try Shard(directory: scratch.path, topic: topic, partition: partition, fingerprint: "f")
        var batch = Shard.Batch(nextOffset: (offsets.max() ?? 0) + 1)
        batch.deadLetters = offsets.map { Self.letter($0, payload: "{payload \(partition):\($0)") }
        try shard.commit(batch)
        return shard
    }

    var reader: ShardReader { ShardReader(directory: scratch.path) }

    @Test func listsEveryShardsDeadLettersByPartitionAndOffsetWithoutPayloads() throws {
        try shard(1, offsets: [40, 7])
        try shard(0, offsets: [12])
        try shard(2, topic: "other", offsets: [3])
        let all = try reader.deadLetters()
        #expect(all.map(\.id.description) == ["0:12", "1:7", "1:40", "2:3"])
        #expect(all.allSatisfy { $0.payload.isEmpty && $0.replay == nil })
        #expect(all[1].key == Array("ana".utf8) && all[1].reason == "reason 7" && all[1].code == "malformed_json")
        #expect(all[1].shardPath.hasSuffix("/health-samples-0001.sqlite"))
        #expect(all[1].recordedAt.count == 19, "\(all[1].recordedAt)") // 2024-05-01 12:00:00

        let mine = try reader.deadLetters(.init(topic: "health-samples", withPayloads: true))
        #expect(mine.map(\.id.description) == ["0:12", "1:7", "1:40"])
        #expect(mine.map { String(decoding: $0.payload, as: UTF8.self) } == ["{payload 0:12", "{payload 1:7", "{payload 1:40"])
        #expect(try reader.deadLetters(.init(partitions: [1, 2])).map(\.id.description) == ["1:7", "1:40", "2:3"])
        #expect(try reader.deadLetters(.init(partitions: [])).isEmpty)
    }

    @Test func aRebuiltShardTakesOverForwardedAndReplayedMarksFromTheLiveOne() throws {
        // The live shard: dead letters at 7, 40 and 41; 7 was republished by dlq replay.
        let live = try shard(1, offsets: [7, 40, 41])
        let livePath = live.path
        _ = try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 1, offset: 7), landedAt: DeadLetterID(partition: 1, offset: 90))],
                                             topic: "health-samples", inShardAt: livePath)
        // The rebuilt shard met the same three, and one more past the live offset.
        let staging = scratch.path + "/gen-000001"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        let rebuilt = try Shard(directory: staging, topic: "health-samples", partition: 1, fingerprint: "f")
        var batch = Shard.Batch(nextOffset: 50)
        batch.deadLetters = [7, 40, 41, 45].map { Self.letter($0) }
        try rebuilt.commit(batch)
        // The live projector is at offset 41: it forwarded 7 and 40, not yet 41 (nor 45).
        try rebuilt.adoptDeadLetterStatus(fromShardAt: livePath, below: 41)
        #expect(try rebuilt.unforwardedDeadLetters().map(\.letter.offset) == [41, 45])
        let stagedReader = ShardReader(directory: staging)
        #expect(try stagedReader.deadLetters().map(\.id.description) == ["1:40", "1:41", "1:45"])
        let replayed = try stagedReader.deadLetters(.init(includeReplayed: true)).first { $0.id.offset == 7 }
        #expect(replayed?.replay?.landedAt == DeadLetterID(partition: 1, offset: 90))
        // A live shard that is gone (or from before dlq replay) leaves only the forwarded marks.
        try rebuilt.adoptDeadLetterStatus(fromShardAt: scratch.path + "/nothing.sqlite", below: 50)
        #expect(try rebuilt.unforwardedDeadLetters().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/nothing.sqlite"))
    }

    @Test func markingRecordsWhenAndWhereOnceAndHidesThemFromTheDefaultList() throws {
        try shard(1, offsets: [7, 40, 41])
        let path = try reader.deadLetters()[0].shardPath
        let marked = try DeadLetterMarks.markReplayed([
            .init(id: DeadLetterID(partition: 1, offset: 7), landedAt: DeadLetterID(partition: 0, offset: 99)),
            .init(id: DeadLetterID(partition: 1, offset: 40), landedAt: nil),
            .init(id: DeadLetterID(partition: 1, offset: 1_000), landedAt: nil), // no such dead letter
        ], topic: "health-samples", inShardAt: path)
        #expect(marked.map(\.description) == ["1:7", "1:40"])

        #expect(try reader.deadLetters().map(\.id.description) == ["1:41"])
        let all = try reader.deadLetters(.init(includeReplayed: true))
        #expect(all.map(\.id.description) == ["1:7", "1:40", "1:41"])
        #expect(all[0].replay?.landedAt == DeadLetterID(partition: 0, offset: 99))
        #expect(all[0].replay?.at.count == 19)
        #expect(all[1].replay != nil && all[1].replay?.landedAt == nil)
        #expect(all[2].replay == nil)

        // A second mark of the same dead letter changes nothing: the first replay stands.
        let again = try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 1, offset: 7), landedAt: DeadLetterID(partition: 1, offset: 5))],
                                                     topic: "health-samples", inShardAt: path)
        #expect(again.isEmpty)
        #expect(try reader.deadLetters(.init(includeReplayed: true))[0].replay?.landedAt == DeadLetterID(partition: 0, offset: 99))
        // Another topic's dead letter at the same partition and offset is not this one.
        #expect(try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 1, offset: 41), landedAt: nil)], topic: "other", inShardAt: path).isEmpty)
    }

    @Test func marksWhileTheProjectorHoldsTheShardAndItKeepsWriting() throws {
        // The projector's Shard holds <shard>.lock for as long as it runs.
        let open = try shard(3, offsets: [5])
        let path = try reader.deadLetters()[0].shardPath
        #expect(try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 3, offset: 5), landedAt: nil)],
                                                 topic: "health-samples", inShardAt: path).count == 1)
        // Its next batch (with a new dead letter) and its outbox still work.
        var batch = Shard.Batch(nextOffset: 9)
        batch.deadLetters = [Self.letter(8)]
        try open.commit(batch)
        #expect(open.nextOffset == 9)
        #expect(try open.unforwardedDeadLetters().map(\.letter.offset) == [5, 8])
        try open.markForwarded(try open.unforwardedDeadLetters().map(\.id))
        #expect(try reader.deadLetters(.init(includeReplayed: true)).map { "\($0.id) \($0.replay == nil)" } == ["3:5 false", "3:8 true"])
    }

    @Test func aShardTheProjectorIsWritingMakesTheMarkWaitThenGiveUpNamingIt() throws {
        try shard(0, offsets: [1])
        let path = try reader.deadLetters()[0].shardPath
        let writer = try Database(path: path)
        try writer.execute("BEGIN IMMEDIATE")
        do {
            _ = try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 0, offset: 1), landedAt: nil)],
                                                 topic: "health-samples", inShardAt: path, busyTimeoutMilliseconds: 200)
            Issue.record("marked a shard another connection was writing")
        } catch let error as Shard.ShardError {
            #expect(error.kind == .locked)
            #expect(error.message.contains(path) && error.message.contains("nothing was marked"), "\(error)")
        }
        try writer.execute("COMMIT")
        #expect(try reader.deadLetters().count == 1)
    }

    @Test func aShardRemovedSinceItWasReadIsNotCreatedAgain() throws {
        let path = scratch.path + "/health-samples-0009.sqlite"
        do {
            _ = try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 9, offset: 1), landedAt: nil)],
                                                 topic: "health-samples", inShardAt: path)
            Issue.record("marked a missing shard")
        } catch let error as Shard.ShardError {
            #expect(error.kind == .storage && error.message.contains("is gone"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aShardOlderThanTheReplayColumnsIsListedMarkedAndThenMigratedWithoutAClash() throws {
        // A shard last opened by a projector before the replay columns existed.
        let path = scratch.path + "/" + Shard.fileName(topic: "health-samples", partition: 2)
        do {
            let old = try Database(path: path)
            try old.migrate(Shard.migrations.filter { $0.name != DeadLetterMarks.migrationName })
            try old.execute("""
                INSERT INTO dead_letters (topic, partition, offset, key, payload, reason, code, recorded_at)
                VALUES ('health-samples', 2, 17, CAST('ana' AS BLOB), CAST('{bad' AS BLOB), 'malformed JSON', 'malformed_json', datetime('now'));
                INSERT INTO dead_letters (topic, partition, offset, key, payload, reason, code, recorded_at)
                VALUES ('health-samples', 2, 18, CAST('ana' AS BLOB), CAST('{bad' AS BLOB), 'malformed JSON', 'malformed_json', datetime('now'));
                """)
        }
        // Read-only, it reads as waiting.
        #expect(try reader.deadLetters(.init(includeReplayed: true)).map { "\($0.id) \($0.replay == nil)" } == ["2:17 true", "2:18 true"])
        // Marking adds the columns through the shard's own migration, recorded.
        #expect(try DeadLetterMarks.markReplayed([.init(id: DeadLetterID(partition: 2, offset: 17), landedAt: DeadLetterID(partition: 1, offset: 4))],
                                                 topic: "health-samples", inShardAt: path).count == 1)
        #expect(try reader.deadLetters().map(\.id.description) == ["2:18"])
        // The projector opening it next does not apply the migration again (which would fail:
        // duplicate column), and the mark survives.
        let shard = try Shard(directory: scratch.path, topic: "health-samples", partition: 2, fingerprint: "f")
        let names = try shard.database.statement("SELECT count(*) FROM schema_migrations WHERE name = ?")
        try names.bind(1, DeadLetterMarks.migrationName)
        #expect(try names.firstRow { $0.int64(0) } == 1)
        #expect(try reader.deadLetters(.init(includeReplayed: true)).first?.replay?.landedAt == DeadLetterID(partition: 1, offset: 4))
    }

    @Test func idsAreThePartitionAndOffset() {
        #expect(DeadLetterID("3:1234") == DeadLetterID(partition: 3, offset: 1234))
        #expect(DeadLetterID("0:0")?.description == "0:0")
        for bad in ["", "3", "3:", ":4", "3:4:5", "-1:4", "3:-4", "+3:4", "3: 4", "a:b", "99999999999:1", "3:99999999999999999999", "٣:4"] {
            #expect(DeadLetterID(bad) == nil, "\(bad)")
        }
        #expect(DeadLetterID(partition: 2, offset: 100) < DeadLetterID(partition: 10, offset: 1))
    }
}
