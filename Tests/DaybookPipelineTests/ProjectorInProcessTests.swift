import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookStore
import Foundation
import Testing

/// The projector driven in process against the embedded broker, into real shard files.
@Suite(.serialized) struct ProjectorInProcessTests {
    @Test func aSoloProjectionEqualsTheInMemoryRollupOfTheSameEvents() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        let summary = try rig.project(into: dir)
        #expect(summary.applied == events.count)
        #expect(summary.deadLetters == 0)

        let rows = try PipelineRig.rows(dir)
        #expect(rows == PipelineRig.rollup(events))
        // The fixture's arithmetic (see Fixture.events): not the naive sums 900 and 2000, nor the maxima.
        #expect(Fixture.steps(rows, "ana") == 750)
        #expect(Fixture.steps(rows, "ben") == 1400)
        #expect(Fixture.steps(rows, "ben", day: CivilDay(year: 2024, month: 3, day: 26)) == nil)
        #expect(rows.count == 2)
        // Each shard's offset is the end of its partition's log.
        let offsets = try ShardReader(directory: dir).offsets(topic: PipelineRig.topic)
        #expect(offsets.values.map(\.nextOffset).reduce(0, +) == Int64(events.count))
    }

    @Test func theSameEventsTwiceChangeNothing() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let first = try PipelineRig.rows(dir)

        // A second run on the same log applies nothing: it starts at the shards' offsets.
        let again = try rig.project(into: dir)
        #expect(again.applied == 0)
        #expect(try PipelineRig.rows(dir) == first)

        // The same events published again (a producer's retry) are applied and change no row.
        try rig.publish(events)
        let resent = try rig.project(into: dir)
        #expect(resent.applied == events.count)
        #expect(try PipelineRig.rows(dir) == first)
        #expect(Fixture.steps(try PipelineRig.rows(dir), "ana") == 750)
    }

    @Test func aMalformedEventBecomesADeadLetterAndThePartitionGoesOn() throws {
        let rig = try PipelineRig(partitions: 1)
        let events = try Fixture.events()
        try rig.publish(Array(events.prefix(3)))
        try rig.publishRaw([(key: "ana", value: "{\"type\":\"sample-added\",\"user\":\"ana\"}"), (key: "ana", value: "not json")])
        try rig.publish(Array(events.dropFirst(3)))
        let dir = rig.dataDirectory()
        let summary = try rig.project(into: dir, run: .live(untilCaughtUp: true, forwardingDeadLetters: false))
        #expect(summary.deadLetters == 2)
        #expect(summary.applied == events.count)
        // The events after the bad ones were applied: the rows are those of the good events.
        #expect(try PipelineRig.rows(dir) == PipelineRig.rollup(events))
        let progress = try ShardReader(directory: dir).progress()
        #expect(progress.map(\.nextOffset) == [Int64(events.count + 2)])
        #expect(progress.map(\.deadLetters) == [2])
    }

    @Test func aPartitionTheTopicDoesNotHaveIsABadRequestAndCreatesNothing() throws {
        let rig = try PipelineRig(partitions: 2)
        let dir = rig.dataDirectory()
        #expect {
            try rig.project(into: dir) { $0.partitions = [0, 5] }
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.kind == .badRequest && e.message.contains("has no partition 5: it has 2 (0…1)")
        }
        #expect(try ShardReader(directory: dir).progress().isEmpty)
    }

    // MARK: LiveLogCheck: shards refused against a log that is not theirs

    @Test func shardsOfAnotherClusterAreRefused() throws {
        let rig = try PipelineRig(partitions: 2)
        try rig.publish(try Fixture.events())
        let dir = rig.dataDirectory()
        try rig.project(into: dir)

        let other = try PipelineRig(partitions: 2)
        try other.publish(try Fixture.events())
        #expect {
            try check(dir, against: other, count: 2)
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            guard case .otherCluster(_, let recorded, let reached)? = e.detail else { return false }
            // Library words: no command-line option is named (the executable adds those).
            return e.kind == .logMismatch && e.message.contains("was built from the log of Kafka cluster \(recorded)")
                && recorded != reached && !e.message.contains("--")
        }
        // The same cluster passes.
        try check(dir, against: rig, count: 2)
    }

    @Test func aShardOfAPartitionTheTopicDoesNotHaveIsRefused() throws {
        let rig = try PipelineRig(partitions: 2)
        try rig.publish(try Fixture.events())
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let path = try PipelineRig.shard(dir, partition: 1)
        #expect {
            try check(dir, against: rig, count: 1)
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.kind == .logMismatch && e.message.contains("partition 1") && e.message.contains("the topic has 1 partition in")
                && e.detail == .partitionMissing(directory: dir, topic: PipelineRig.topic, partition: 1,
                                                 path: path, count: 1)
        }
    }

    @Test func aShardAheadOfItsLogIsRefusedAndTheProjectorAppliesNothing() throws {
        let rig = try PipelineRig(partitions: 1)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        // The same shards beside a shorter log of the same cluster id cannot be made; a
        // hand-moved offset stands in for a recreated topic.
        let path = try PipelineRig.shard(dir, partition: 0)
        try PipelineRig.edit(path, "UPDATE progress SET next_offset = next_offset + 5")
        let before = try PipelineRig.rows(dir)
        #expect {
            try check(dir, against: rig, count: 1)
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.kind == .logMismatch && e.message.contains("the log ends at offset \(events.count)")
                && e.message.contains("has already applied offsets up to \(events.count + 4)")
                && e.detail == .aheadOfLog(path: path, tp: TopicPartition(PipelineRig.topic, 0), next: Int64(events.count + 5), high: Int64(events.count))
        }
        #expect(throws: ProjectorError.self) { try rig.project(into: dir) }
        #expect(try PipelineRig.rows(dir) == before)
    }

    private func check(_ dir: String, against rig: PipelineRig, count: Int) throws {
        let consumer = try KafkaConsumer(connection: rig.connection, configuration: rig.consumer(), logger: .silent)
        defer { consumer.close() }
        try LiveLogCheck.check(directory: dir, topic: PipelineRig.topic, count: count, consumer: consumer, timeout: .seconds(10))
    }
}
