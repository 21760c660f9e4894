import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookStore
import Foundation
import Testing

/// `Rebuilder` in process: a new generation built beside the live shards and swapped in.
@Suite(.serialized) struct RebuildInProcessTests {
    @Test func aRebuildUnderANewPrioritySwapsInTheRollupOfThatPriority() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let livePaths = try DataLayout.read(dir).shardPaths()
        let liveRows = try PipelineRig.rows(dir)

        let summary = try Rebuilder(request: RebuildRequest(dataDirectory: dir, priority: Fixture.phoneFirst), access: rig.access(), logger: .silent)
            .run(shouldStop: { false }, progress: { _ in })
        #expect(summary.generation == "gen-000001")
        #expect(!summary.resumed)
        #expect(summary.applied == events.count)
        #expect(summary.offsets.values.reduce(0, +) == Int64(events.count))

        // Readers now see the new generation, built under phone first (see Fixture.events).
        let layout = try DataLayout.read(dir)
        #expect(layout.generation == 1)
        #expect(layout.priority?.fingerprint == Fixture.phoneFirst.fingerprint)
        let rows = try PipelineRig.rows(dir)
        #expect(rows == PipelineRig.rollup(events, priority: Fixture.phoneFirst))
        #expect(Fixture.steps(rows, "ana") == 600)
        #expect(Fixture.steps(rows, "ben") == 1200)
        // The replaced shards are kept, unchanged, for readers still on them.
        for path in livePaths { #expect(FileManager.default.fileExists(atPath: path)) }
        #expect(try ShardReader(directory: dir).shardPaths() != livePaths)
        #expect(Fixture.steps(liveRows, "ana") == 750)

        // A projector configured with the old order is refused on the rebuilt directory.
        #expect {
            try rig.project(into: dir, priority: Fixture.watchFirst)
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.shardKind == .priorityMismatch && !e.message.contains("--config")
                && e.detail == .directoryPriority(directory: dir, generation: 1, built: Fixture.phoneFirst.fingerprint,
                                                  configured: Fixture.watchFirst.fingerprint)
        }
        // One under the new order goes on from the new shards' offsets: nothing applied twice.
        try rig.publish([try Fixture.sample("ana", "a-p2", "phone", "2024-03-25T12:00:00Z", "2024-03-25T12:10:00Z", 40)])
        let after = try rig.project(into: dir, priority: Fixture.phoneFirst)
        #expect(after.applied == 1)
        #expect(Fixture.steps(try PipelineRig.rows(dir), "ana") == 640)
    }

    @Test func aRebuildOfSomePartitionsMustKeepTheLiveOrder() throws {
        let rig = try PipelineRig(partitions: 2)
        try rig.publish(try Fixture.events())
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        var request = RebuildRequest(dataDirectory: dir, priority: Fixture.phoneFirst)
        request.partitions = [1]
        #expect {
            try Rebuilder(request: request, access: rig.access(), logger: .silent).run(shouldStop: { false }, progress: { _ in })
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.shardKind == .priorityMismatch && !e.message.contains("--partition")
                && e.detail == .partialRebuildPriority(live: SourcePriority.builtIn.fingerprint, wanted: Fixture.phoneFirst.fingerprint, partitions: [1])
        }
        request.partitions = [7]
        request.priority = Fixture.watchFirst
        #expect {
            try Rebuilder(request: request, access: rig.access(), logger: .silent).run(shouldStop: { false }, progress: { _ in })
        } throws: { error in
            guard let e = error as? ProjectorError else { return false }
            return e.kind == .badRequest && e.partition == 7
        }
        #expect(try DataLayout.read(dir).generation == 0)
    }

    @Test func aRebuildStoppedBeforeTheSwapLeavesTheLiveProjectionAndARerunCarriesOn() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let before = try PipelineRig.rows(dir)
        let request = RebuildRequest(dataDirectory: dir, priority: Fixture.phoneFirst)
        #expect {
            try Rebuilder(request: request, access: rig.access(), logger: .silent).run(shouldStop: { true }, progress: { _ in })
        } throws: { error in
            (error as? ProjectorError)?.kind == .interrupted
        }
        #expect(try DataLayout.read(dir).generation == 0)
        #expect(try PipelineRig.rows(dir) == before)

        let summary = try Rebuilder(request: request, access: rig.access(), logger: .silent).run(shouldStop: { false }, progress: { _ in })
        #expect(summary.resumed)
        #expect(summary.generation == "gen-000001")
        #expect(try PipelineRig.rows(dir) == PipelineRig.rollup(events, priority: Fixture.phoneFirst))
    }
}
