import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookStore
import Foundation
import Testing

/// `Replayer` in process: plans against the embedded broker, re-reads into real shards.
@Suite(.serialized) struct ReplayInProcessTests {
    func replayer(_ rig: PipelineRig, _ dir: String) -> Replayer {
        var r = Replayer(directory: dir, access: rig.access(), priority: .builtIn, logger: .silent)
        r.connectTimeout = .seconds(10)
        return r
    }

    /// The bytes of every shard file in `dir`.
    func shardBytes(_ dir: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        for path in try DataLayout.read(dir).shardPaths() { out[path] = try Data(contentsOf: URL(fileURLWithPath: path)) }
        return out
    }

    @Test func aReplayFromZeroRestoresHandEditedRowsAndChangesNothingOnAConsistentShard() throws {
        let rig = try PipelineRig(partitions: 1)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let expected = try PipelineRig.rows(dir)
        #expect(expected == PipelineRig.rollup(events))

        // On a consistent shard a replay of everything re-reads every event and changes no row.
        let again = try replayer(rig, dir).run(try replayer(rig, dir).plan(.offset(0), partitions: nil))
        #expect(again.reread == events.count)
        #expect(again.newlyApplied == 0)
        #expect(again.caughtUp)
        #expect(try PipelineRig.rows(dir) == expected)

        // Hand edits: ana's value (750 → 1750), and ben's row deleted outright.
        try PipelineRig.edit(try PipelineRig.shard(dir, partition: 0), """
            UPDATE totals SET value = value + 1000 WHERE user = 'ana';
            DELETE FROM total_sources WHERE user = 'ben';
            DELETE FROM totals WHERE user = 'ben';
            """)
        let edited = try PipelineRig.rows(dir)
        #expect(Fixture.steps(edited, "ana") == 1750)
        #expect(Fixture.steps(edited, "ben") == nil)

        let plans = try replayer(rig, dir).plan(.offset(0), partitions: [0])
        #expect(plans == [ReplayPlan(partition: 0, shardOffset: Int64(events.count), hasShard: true, start: 0, end: Int64(events.count))])
        let summary = try replayer(rig, dir).run(plans)
        #expect(summary.reread == events.count)
        #expect(try PipelineRig.rows(dir) == expected)
        #expect(Fixture.steps(try PipelineRig.rows(dir), "ana") == 750)
        #expect(Fixture.steps(try PipelineRig.rows(dir), "ben") == 1400)
    }

    @Test func aReplayOfOnePartitionRestoresItsSharesAndHeartRateRowsAndLeavesTheOtherAlone() throws {
        let rig = try PipelineRig(partitions: 2)
        let heart = try [("08:10", 70.0), ("08:20", 90.0)].map { time, bpm in
            Event.sampleAdded(Sample(user: "ana", uuid: "a-h-\(time)", metric: .heartRate, source: "watch",
                                     start: try Instant(rfc3339: "2024-03-25T\(time):00Z"), end: try Instant(rfc3339: "2024-03-25T\(time):00Z"),
                                     value: bpm, zone: "UTC"))
        }
        let events = try Fixture.events() + heart
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let expected = try PipelineRig.rows(dir)
        #expect(expected == PipelineRig.rollup(events))
        // ana's heart rate: min 70, max 90, average (70 + 90) / 2 = 80 over 2 samples; latest
        // 90, the 08:20 sample's.
        #expect(expected.first { $0.key.user == "ana" && $0.key.metric == .heartRate }?.summary == .discrete(min: 70, max: 90, average: 80, count: 2, latest: 90))

        let anaPartition = Partitioner.default.partition(ofKey: Array("ana".utf8), count: 2)
        let otherPath = try PipelineRig.shard(dir, partition: 1 - anaPartition)
        let otherBytes = try Data(contentsOf: URL(fileURLWithPath: otherPath))
        // Hand edits in ana's shard: a per-source share of her steps, and her heart rate.
        try PipelineRig.edit(try PipelineRig.shard(dir, partition: anaPartition), """
            UPDATE total_sources SET value = 1 WHERE user = 'ana' AND metric = 'steps';
            UPDATE totals SET max = 250, count = count + 1 WHERE user = 'ana' AND metric = 'heart_rate';
            """)
        #expect(try PipelineRig.rows(dir) != expected)

        let plans = try replayer(rig, dir).plan(.offset(0), partitions: [anaPartition])
        #expect(plans.map(\.partition) == [anaPartition])
        let summary = try replayer(rig, dir).run(plans)
        #expect(summary.newlyApplied == 0)
        #expect(try PipelineRig.rows(dir) == expected)
        #expect(try Data(contentsOf: URL(fileURLWithPath: otherPath)) == otherBytes)
    }

    @Test func planningTouchesNothingAndAStartAboveTheShardStartsAtTheShard() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let more = [try Fixture.sample("ana", "a-x", "manual", "2024-03-27T08:00:00Z", "2024-03-27T09:00:00Z", 70)]
        try rig.publish(more) // not projected yet
        let before = try shardBytes(dir)
        var notes: [ReplayNote] = []
        let plans = try replayer(rig, dir).plan(.offset(1_000), partitions: nil, note: { notes.append($0) })
        #expect(try shardBytes(dir) == before)
        #expect(plans.count == 2)
        let offsets = try ShardReader(directory: dir).offsets(topic: PipelineRig.topic)
        for plan in plans {
            let shardOffset = try #require(offsets[plan.partition]).nextOffset
            #expect(plan.start == shardOffset)
            #expect(plan.shardOffset == shardOffset)
            #expect(plan.rereads == 0)
        }
        #expect(plans.map(\.newEvents).reduce(0, +) == 1)
        #expect(notes == plans.map { ReplayNote.startAboveShard(TopicPartition(PipelineRig.topic, $0.partition), asked: 1_000, shardOffset: $0.shardOffset) })

        // Run, it applies only the new event.
        let summary = try replayer(rig, dir).run(plans)
        #expect(summary.reread == 0)
        #expect(summary.newlyApplied == 1)
        #expect(try PipelineRig.rows(dir) == PipelineRig.rollup(events + more))
    }

    @Test func aPartitionTheTopicDoesNotHaveAndAShardFromAnotherClusterAreRefusedBeforeReading() throws {
        let rig = try PipelineRig(partitions: 2)
        try rig.publish(try Fixture.events())
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        #expect {
            try replayer(rig, dir).plan(.offset(0), partitions: [0, 9])
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.kind == .badRequest && e.partition == 9 && e.message == "health-samples has no partition 9: it has 2 (0…1)"
        }
        let other = try PipelineRig(partitions: 2)
        #expect {
            try replayer(other, dir).plan(.offset(0), partitions: nil)
        } throws: { error in
            (error as? ProjectorError)?.kind == .logMismatch
        }
    }

    @Test func aShardHeldByAProjectorStopsTheReplayBeforeAnythingIsRead() throws {
        let rig = try PipelineRig(partitions: 1)
        try rig.publish(try Fixture.events())
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let path = try PipelineRig.shard(dir, partition: 0)
        let plans = try replayer(rig, dir).plan(.offset(0), partitions: nil)
        let held = try Shard(path: path, topic: PipelineRig.topic, partition: 0, fingerprint: SourcePriority.builtIn.fingerprint, lockTimeout: .zero)
        // Planning refuses a held shard, as the run would: a plan it could not carry out.
        #expect {
            try replayer(rig, dir).plan(.offset(0), partitions: nil)
        } throws: { error in
            (error as? ProjectorError)?.shardKind == .locked
        }
        // A plan made before the shard was taken is refused by the run, before anything is read.
        #expect {
            try replayer(rig, dir).run(plans)
        } throws: { error in
            (error as? ProjectorError)?.shardKind == .locked
        }
        _ = held
    }
}
