import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookPublish
import DaybookStore
import Foundation
import Testing

/// What operators see across machines: `UserLocator` (locate), `ProjectionStatus`
/// (status) and warm standby shards, against the embedded broker over TCP.
@Suite(.serialized) struct OperationsInProcessTests {
    /// The first users `user-0`, `user-1`, … whose home partition (murmur2, `count`
    /// partitions) is `partition`.
    static func users(in partition: Int32, count: Int, _ n: Int) -> [String] {
        (0..<10_000).lazy.map { "user-\($0)" }.filter { Partitioner.murmur2Random.partition(ofKey: $0.utf8, count: count) == partition }.prefix(n).map { $0 }
    }

    /// One steps sample of `user` at minute `i` of 2024-03-25 (distinct uuids: each adds a row's worth).
    static func sample(_ user: String, _ i: Int) throws -> Event {
        let start = 8 * 60 + i
        let text = { (m: Int) in String(format: "2024-03-25T%02d:%02d:00Z", m / 60, m % 60) }
        return try Fixture.sample(user, "\(user)-s\(i)", "watch", text(start), text(start + 1), 10)
    }

    @Test func locateAgreesWithThePartitionPublishChose() throws {
        let rig = try PipelineRig(partitions: 4)
        let publisher = try EventPublisher(connection: rig.connection)
        let names = ["ana", "ben", "chloé", "user-17", "Δ-42", "zoë@example.com", "x"]
        let outcomes = try publisher.publish(try names.enumerated().map { try Self.sample($0.element, $0.offset) })
        try publisher.close()
        let locator = try UserLocator(access: rig.access(), group: false, timeout: .seconds(10))
        #expect(locator.partitionCount == 4)
        var seen = Set<Int32>()
        for (name, outcome) in zip(names, outcomes) {
            guard case .delivered(let partition, _) = outcome else {
                Issue.record("\(name) not delivered: \(outcome)")
                continue
            }
            let location = try locator.locate(user: name)
            #expect(location.partition == partition, "\(name)")
            #expect(location.shard == Shard.fileName(topic: PipelineRig.topic, partition: partition))
            #expect(location.owner == nil)
            #expect(UserLocator.locate(user: name, count: 4, partitioner: .murmur2Random) == location)
            seen.insert(partition)
        }
        // The users are spread: the check is not one partition compared with itself.
        #expect(seen.count >= 2)
    }

    @Test func lagIsTheEventsPublishedAfterTheLastProjectionPerPartition() throws {
        let rig = try PipelineRig(partitions: 2)
        let (u0, u1) = (Self.users(in: 0, count: 2, 1)[0], Self.users(in: 1, count: 2, 1)[0])
        // Before: 4 events of u0 (partition 0), 2 of u1 (partition 1), and one malformed
        // message keyed by u1 (a dead letter in partition 1, not forwarded: pending 1).
        try rig.publish(try (0..<4).map { try Self.sample(u0, $0) } + (0..<2).map { try Self.sample(u1, $0) })
        try rig.publishRaw([(key: u1, value: "{not json")])
        let dir = rig.dataDirectory()
        try rig.project(into: dir, run: .live(untilCaughtUp: true, forwardingDeadLetters: false))
        // After: 3 more of u0 and 5 more of u1: lag 3 in partition 0 and 5 in partition 1
        // (not the 8 of the whole topic, nor 0 as the shards alone would say).
        try rig.publish(try (4..<7).map { try Self.sample(u0, $0) } + (2..<7).map { try Self.sample(u1, $0) })

        let status = try ProjectionStatus.read(directory: dir, access: rig.access(), timeout: .seconds(10))
        #expect(status.partitions.map(\.partition) == [0, 1])
        let (p0, p1) = (status.partitions[0], status.partitions[1])
        // Partition 0: 4 applied, log end 4 + 3 = 7. Partition 1: 2 + 1 applied, end 3 + 5 = 8.
        #expect(p0.nextOffset == 4)
        #expect(p0.logEndOffset == 7)
        #expect(p0.lag == 3)
        #expect(p1.nextOffset == 3)
        #expect(p1.logEndOffset == 8)
        #expect(p1.lag == 5)
        #expect(p0.deadLettersPending == 0)
        #expect(p1.deadLetters == 1)
        #expect(p1.deadLettersPending == 1)
        #expect(p0.clusterMatches != false && p1.clusterMatches != false)
        #expect(p0.shard == dir + "/" + Shard.fileName(topic: PipelineRig.topic, partition: 0))
        #expect(p0.lastCommit != nil)
        #expect(status.warnings.isEmpty, "\(status.warnings)")

        // Without a cluster: the shards' own figures, no lag.
        let offline = try ProjectionStatus.read(directory: dir)
        #expect(offline.partitions.map(\.nextOffset) == [4, 3])
        #expect(offline.partitions.allSatisfy { $0.lag == nil && $0.logEndOffset == nil })
        // A directory that is not there is said so.
        #expect(throws: Shard.ShardError.self) { try ProjectionStatus.read(directory: dir + "-missing") }
    }

    /// A shard not from the log reached has no lag behind it: status warns and leaves lag
    /// null rather than print a difference of unrelated offsets.
    @Test func aShardOfAnotherLogHasNoLag() throws {
        let rig = try PipelineRig(partitions: 2)
        let (u0, u1) = (Self.users(in: 0, count: 2, 1)[0], Self.users(in: 1, count: 2, 1)[0])
        // 3 events of u0 (partition 0, log end 3) and 2 of u1 (partition 1, log end 2).
        try rig.publish(try (0..<3).map { try Self.sample(u0, $0) } + (0..<2).map { try Self.sample(u1, $0) })
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        // Partition 0's shard now says another cluster built it; partition 1's that it
        // applied up to offset 9 (next 10), past the log's end of 2: lag 3 - 3 = 0 and
        // 2 - 10 = -8 would be numbers about another log.
        try PipelineRig.edit(try PipelineRig.shard(dir, partition: 0), "UPDATE meta SET value = 'another-cluster' WHERE key = 'cluster_id'")
        try PipelineRig.edit(try PipelineRig.shard(dir, partition: 1), "UPDATE progress SET next_offset = 10")

        let status = try ProjectionStatus.read(directory: dir, access: rig.access(), timeout: .seconds(10))
        let (p0, p1) = (status.partitions[0], status.partitions[1])
        #expect(p0.clusterMatches == false)
        #expect(p0.logEndOffset == 3)
        #expect(p0.lag == nil)
        #expect(p1.nextOffset == 10)
        #expect(p1.logEndOffset == 2)
        #expect(p1.lag == nil)
        // One warning for each: the other cluster, and the shard ahead of the log.
        #expect(status.warnings.count == 2, "\(status.warnings)")
        #expect(status.warnings.contains { $0.hasPrefix("partition 0:") && $0.contains("another-cluster") })
        #expect(status.warnings.contains { $0.hasPrefix("partition 1:") && $0.contains("log ends at 2") })
    }

    /// A standby partition the topic does not have is a bad request naming it and the
    /// topic's range, told by asking the cluster before any projector starts; `all` and
    /// partitions it has pass (and `all` asks nothing: an unreachable cluster is not asked).
    @Test func aStandbyPartitionTheTopicDoesNotHaveIsABadRequest() throws {
        try StandbyChoice.all.check(topic: "health-samples", count: 2)
        try StandbyChoice.partitions([0, 1]).check(topic: "health-samples", count: 2)
        let pure = #expect(throws: ProjectorError.self) { try StandbyChoice.partitions([1, 4, 7]).check(topic: "health-samples", count: 4) }
        #expect(pure?.kind == .badRequest && pure?.partition == 4)
        #expect(pure?.message == "health-samples has no partition 4: it has 4 (0…3)")

        let rig = try PipelineRig(partitions: 2)
        try StandbyChoice.partitions([1]).check(topic: PipelineRig.topic, in: rig.access(), timeout: .seconds(10), logger: .silent)
        let asked = #expect(throws: ProjectorError.self) {
            try StandbyChoice.partitions([0, 2]).check(topic: PipelineRig.topic, in: rig.access(), timeout: .seconds(10), logger: .silent)
        }
        #expect(asked?.kind == .badRequest && asked?.partition == 2)
        #expect(asked?.message == "health-samples has no partition 2: it has 2 (0…1)")
        let nowhere = LogAccess(connection: KafkaConnection(bootstrapServers: "127.0.0.1:1"), consumer: rig.consumer(), producer: ProducerConfiguration())
        try StandbyChoice.all.check(topic: PipelineRig.topic, in: nowhere, timeout: .seconds(1), logger: .silent)
    }

    /// A damaged roles file costs the roles and a warning, not the shards' figures.
    @Test func aDamagedRolesFileIsAWarningNotAFailure() throws {
        let rig = try PipelineRig(partitions: 2)
        let (u0, u1) = (Self.users(in: 0, count: 2, 1)[0], Self.users(in: 1, count: 2, 1)[0])
        // 2 events of u0 (partition 0: next offset 2) and 1 of u1 (partition 1: next 1).
        try rig.publish(try (0..<2).map { try Self.sample(u0, $0) } + [try Self.sample(u1, 0)])
        let dir = rig.dataDirectory()
        try rig.project(into: dir)
        try "{broken".write(toFile: dir + "/roles.json", atomically: true, encoding: .utf8)
        let status = try ProjectionStatus.read(directory: dir)
        #expect(status.partitions.map(\.nextOffset) == [2, 1])
        #expect(status.roles == nil)
        #expect(status.partitions.allSatisfy { $0.role == nil })
        #expect(status.warnings.count == 1 && status.warnings[0].contains("roles.json is damaged"), "\(status.warnings)")
    }

    typealias Member = RebalanceInProcessTests.Member

    static func offset(_ dir: String, _ partition: Int32) -> Int64? {
        (try? ShardReader(directory: dir).offsets(topic: PipelineRig.topic))?[partition]?.nextOffset
    }

    /// Two members; `a` keeps standbys of what it does not own. When `b` goes, `a` takes
    /// its partition and starts it at the standby's offset, not 0; `a`'s directory equals
    /// the rollup of the whole log throughout (owned plus standby shards).
    @Test(.timeLimit(.minutes(5))) func theSurvivorTakesOverFromItsStandbyNotFromZero() throws {
        let rig = try PipelineRig(partitions: 2)
        let group = "standby-\(UUID().uuidString)"
        let (dirA, dirB) = (rig.dataDirectory(), rig.dataDirectory())
        // Five users per partition, 3 samples each: 15 events per partition.
        let names = Self.users(in: 0, count: 2, 5) + Self.users(in: 1, count: 2, 5)
        let first = try names.flatMap { u in try (0..<3).map { try Self.sample(u, $0) } }

        let a = Member(rig: rig, dir: dirA, group: group, clientID: "member-a", standby: .all, recordRoles: true)
        var b: Member?
        defer {
            _ = b?.finish()
            _ = a.finish()
        }
        // Published once a owns both partitions: until the group answers, a keeps standbys of
        // both, and what they would apply meanwhile depends on how fast the group is.
        #expect(RebalanceInProcessTests.eventually(30) { a.partitions == [0, 1] })
        try rig.publish(first)
        #expect(RebalanceInProcessTests.eventually(30) { (try? PipelineRig.rows(dirA)) == PipelineRig.rollup(first) })
        b = Member(rig: rig, dir: dirB, group: group, clientID: "member-b", recordRoles: true)
        // The group splits the two partitions; a keeps a standby of the one b owns.
        // Rebalance rounds of the mock cluster can be lost (see `PipelineRig.consumer`).
        #expect(RebalanceInProcessTests.eventually(90) { a.partitions.count == 1 && (b?.partitions.count ?? 0) == 1 && a.standbys.count == 1 })
        let taken = try #require(b?.partitions.first)
        #expect(a.standbys.map(\.partition) == [taken])

        let second = try names.flatMap { u in try (3..<6).map { try Self.sample(u, $0) } }
        try rig.publish(second)
        // 15 + 15 events per partition: b's shard and a's standby of it both reach 30.
        // (a's own partition too: its batch commits once it reaches the partition's end.)
        #expect(RebalanceInProcessTests.eventually(30) {
            Self.offset(dirB, taken) == 30 && Self.offset(dirA, taken) == 30 && Self.offset(dirA, 1 - taken) == 30
        })
        #expect(try PipelineRig.rows(dirA) == PipelineRig.rollup(first + second))
        let before = try ProjectionStatus.read(directory: dirA, access: rig.access(), timeout: .seconds(10))
        #expect(before.partitions.first { $0.partition == taken }?.role == "standby")
        #expect(before.partitions.first { $0.partition == taken }?.lag == 0)
        #expect(try ProjectionStatus.standbyShards(in: dirA, user: nil) == [taken])
        #expect(RebalanceInProcessTests.eventually(10) { a.standbys.first.map { $0.end == 30 && $0.next == 30 } ?? false })

        // b goes; a owns both partitions, the taken one from its standby's offset 30.
        let errorB = b?.finish()
        b = nil
        #expect(errorB == nil, "\(String(describing: errorB))")
        #expect(RebalanceInProcessTests.eventually(40) { a.partitions == [0, 1] && a.standbys.isEmpty })
        let third = try names.flatMap { u in try (6..<7).map { try Self.sample(u, $0) } }
        try rig.publish(third)
        #expect(RebalanceInProcessTests.eventually(30) { (try? PipelineRig.rows(dirA)) == PipelineRig.rollup(first + second + third) })
        // The owner started the shard where the standby had left it, not at 0.
        let opened = a.records.records.map(\.message).filter { $0.hasPrefix("partition \(taken): shard at offset") }
        #expect(opened.last == "partition \(taken): shard at offset 30", "\(opened)")
        let after = try ProjectionStatus.read(directory: dirA)
        #expect(after.partitions.first { $0.partition == taken }?.role == "owned")
        #expect(try ProjectionStatus.standbyShards(in: dirA, user: nil) == [])
        let errorA = a.finish()
        #expect(errorA == nil, "\(String(describing: errorA))")
        // 15 + 15 + 5 events per partition.
        #expect(Self.offset(dirA, 0) == 35 && Self.offset(dirA, 1) == 35)
        // a's standby applied only the second 15 of the taken partition: the first 15 it
        // applied as their owner before b came, the last 5 as their owner after b went.
        #expect(a.standbyStatistics == StandbyStatistics(applied: 15, deadLetters: 0))
    }

    /// With a group: the members (from the owners' claims on the embedded broker), who
    /// holds each partition, and a warning for a partition owned here whose shard starts at 0.
    @Test(.timeLimit(.minutes(2))) func statusNamesTheMembersAndWarnsOfAnOwnedShardAtZero() throws {
        let rig = try PipelineRig(partitions: 2)
        let group = "status-\(UUID().uuidString)"
        let dir = rig.dataDirectory()
        let names = Self.users(in: 0, count: 2, 2) + Self.users(in: 1, count: 2, 2)
        let events = try names.map { try Self.sample($0, 0) }
        try rig.publish(events)
        let a = Member(rig: rig, dir: dir, group: group, clientID: "member-a", recordRoles: true)
        #expect(RebalanceInProcessTests.eventually(30) { (try? PipelineRig.rows(dir)) == PipelineRig.rollup(events) })
        var access = rig.access()
        access.consumer.groupID = group
        let status = try ProjectionStatus.read(directory: dir, access: access, withGroup: true, timeout: .seconds(10))
        let members = try #require(status.group?.members)
        #expect(members.count == 1)
        #expect(members.first?.clientID == "member-a")
        #expect(members.first?.partitions == [0, 1])
        #expect(status.partitions.allSatisfy { $0.owner?.clientID == "member-a" && $0.role == "owned" && $0.lag == 0 })
        #expect(status.warnings.isEmpty, "\(status.warnings)")
        let locator = try UserLocator(access: access, group: true, timeout: .seconds(10))
        #expect(try locator.locate(user: names[0]).owner?.clientID == "member-a")
        #expect(a.finish() == nil)

        // The shard of partition 0 is lost here: the member that owns it would start it at 0.
        try FileManager.default.removeItem(atPath: dir + "/" + Shard.fileName(topic: PipelineRig.topic, partition: 0))
        let lost = try ProjectionStatus.read(directory: dir, access: access, withGroup: true, timeout: .seconds(10))
        #expect(lost.partitions.first?.shard == nil)
        #expect(lost.partitions.first?.lag == 2)
        #expect(lost.warnings.count == 1)
        #expect(lost.warnings.first?.hasPrefix("partition 0 is owned by this directory's member (member-a") == true, "\(lost.warnings)")

        // roles.json of a projector here that runs (this process) as another member and
        // says it owns both partitions, which the group gives to member-a: both are named.
        var stale = try #require(try ProjectorRoles.read(dir))
        #expect(stale.owned == [0, 1] && !stale.running)
        stale.member = "another-member"
        stale.running = true
        stale.pid = ProcessInfo.processInfo.processIdentifier
        try stale.write(in: dir)
        let disowned = try ProjectionStatus.read(directory: dir, access: access, withGroup: true, timeout: .seconds(10))
        let named = disowned.warnings.filter { $0.contains("is recorded as owned here") && $0.contains("but the group gives it to member-a") }
        #expect(named.count == 2 && named[0].hasPrefix("partition 0 ") && named[1].hasPrefix("partition 1 "), "\(disowned.warnings)")
    }
}
