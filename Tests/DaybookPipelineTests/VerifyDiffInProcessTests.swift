import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookStore
import Foundation
import Testing

/// `ProjectionComparison` (verify and diff) in process.
@Suite(.serialized) struct VerifyDiffInProcessTests {
    /// Every difference a comparison reports, in the order reported.
    func compare(_ rig: PipelineRig, _ dir: String, _ scope: ProjectionComparison.Scope, priority: SourcePriority)
        throws -> (rows: [(Int32, RowDifference)], sync: [(Int32, SyncDifference)], outcome: ShadowBuild.Outcome) {
        var rows: [(Int32, RowDifference)] = []
        var sync: [(Int32, SyncDifference)] = []
        let outcome = try ProjectionComparison(request: RebuildRequest(dataDirectory: dir, priority: priority), access: rig.access(), logger: .silent)
            .run(scope, shouldStop: { false }, row: { rows.append(($0, $1)) }, sync: { sync.append(($0, $1)) })
        return (rows, sync, outcome)
    }

    @Test func verifyFindsExactlyTheHandEditedRowAndNothingOnAConsistentProjection() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        try rig.publish(events)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)

        let clean = try compare(rig, dir, .everything, priority: try ProjectionComparison.livePriority(directory: dir, topic: PipelineRig.topic, configured: .builtIn))
        #expect(clean.rows.isEmpty)
        #expect(clean.sync.isEmpty)
        #expect(clean.outcome.rows == 2)
        #expect(clean.outcome.offsets.values.reduce(0, +) == Int64(events.count))

        // ana's row, edited by hand: 750 + 1000.
        let ana = DayKey(user: "ana", metric: .steps, day: Fixture.day)
        let reader = ShardReader(directory: dir)
        let partition = try #require(try reader.progress().first { shard in
            var found = false
            try reader.forEachTotal(inShardAt: shard.path, .init(user: "ana")) { _ in found = true }
            return found
        }).partition
        try PipelineRig.edit(try PipelineRig.shard(dir, partition: partition),
                             "UPDATE totals SET value = value + 1000 WHERE user = 'ana' AND metric = 'steps' AND day = '2024-03-25'")
        let edited = try compare(rig, dir, .everything, priority: .builtIn)
        #expect(edited.rows.count == 1)
        let (p, d) = try #require(edited.rows.first)
        #expect(p == partition)
        #expect(d.key == ana)
        #expect(Fixture.steps(d.live.map { [$0] } ?? [], "ana") == 1750)
        #expect(Fixture.steps(d.rebuilt.map { [$0] } ?? [], "ana") == 750)
        #expect(d.change == -1000)
        #expect(edited.sync.isEmpty)
    }

    @Test func diffListsExactlyTheRowsWhoseValuesTwoPrioritiesDifferOn() throws {
        let rig = try PipelineRig(partitions: 2)
        let events = try Fixture.events()
        // carl's watch and phone do not overlap: his row is the same under both orders.
        let carl = [
            try Fixture.sample("carl", "c-w", "watch", "2024-03-25T06:00:00Z", "2024-03-25T07:00:00Z", 100),
            try Fixture.sample("carl", "c-p", "phone", "2024-03-25T07:00:00Z", "2024-03-25T08:00:00Z", 200),
        ]
        try rig.publish(events + carl)
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        let before = try PipelineRig.rows(dir)

        let diff = try compare(rig, dir, .values, priority: Fixture.phoneFirst)
        let changes = diff.rows.map(\.1).sorted { $0.key < $1.key }
        // ana 750 → 600, ben 1400 → 1200 (see Fixture.events); carl stays 300.
        #expect(changes.map(\.key.user) == ["ana", "ben"])
        #expect(changes.map(\.change) == [-150, -200])
        #expect(diff.outcome.rows == 3)
        #expect(diff.sync.isEmpty)
        // The rows it reports are those of the two in-memory rollups that differ in value.
        let live = PipelineRig.rollup(events + carl), rebuilt = PipelineRig.rollup(events + carl, priority: Fixture.phoneFirst)
        let differing = zip(live, rebuilt).filter { !$0.0.hasSameValue(as: $0.1) }.map(\.0.key)
        #expect(changes.map(\.key) == differing)
        // Nothing live was touched, and no temporary directory is left.
        #expect(try PipelineRig.rows(dir) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix(".tmp") }.isEmpty)
    }

    @Test func shardsWithoutAManifestAreComparedUnderThePriorityTheyRecord() throws {
        let rig = try PipelineRig(partitions: 1)
        try rig.publish(try Fixture.events())
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        #expect(try ProjectionComparison.livePriority(directory: dir, topic: PipelineRig.topic, configured: .builtIn).fingerprint == SourcePriority.builtIn.fingerprint)
        #expect {
            try ProjectionComparison.livePriority(directory: dir, topic: PipelineRig.topic, configured: Fixture.phoneFirst)
        } throws: { error in
            guard let e = error as? LivePriorityMismatch else { return false }
            return e.recorded == SourcePriority.builtIn.fingerprint && e.configured == Fixture.phoneFirst.fingerprint
        }
    }
}
