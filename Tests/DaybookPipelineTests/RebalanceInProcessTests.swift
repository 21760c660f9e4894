@testable import DaybookPipeline
import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import Foundation
import Testing

/// "Callbacks record, the loop acts": what the group gives and takes is recorded by the
/// rebalance callback (`Assignments`, no I/O) and acted on by the poll loop.
@Suite struct AssignmentsTests {
    @Test func givenPartitionsAreStartedByTheLoopNotWhenRecorded() {
        var a = Assignments()
        #expect(!a.hasAssignment)
        a.assigned([2, 0])
        #expect(a.hasAssignment)
        #expect(a.held == [0, 2])
        let actions = a.take()
        #expect(actions == .init(close: [], start: [0, 2]))
        // Held until the loop says they are started.
        #expect(a.held == [0, 2])
        a.started(actions.start)
        #expect(a.held.isEmpty)
        #expect(a.take().isEmpty)
    }

    @Test func takenPartitionsAreClosedByTheLoopAndOnesGivenBackAreOpenedAgain() {
        var a = Assignments()
        a.assigned([0, 1, 2])
        a.started(a.take().start)
        // An eager rebalance within one poll: everything taken, then a share given back.
        a.revoked([0, 1, 2])
        #expect(!a.hasAssignment)
        a.assigned([1])
        #expect(a.hasAssignment)
        #expect(a.take() == .init(close: [0, 1, 2], start: [1]))
        a.started([1])
        // Given and taken before the loop acted: nothing to start, its (absent) shard closed.
        a.assigned([3])
        a.revoked([3])
        #expect(a.take() == .init(close: [3], start: []))
        #expect(a.take().isEmpty)
    }

    @Test func aSoloProjectorTakesEverythingAtOnce() {
        var a = Assignments()
        a.took()
        #expect(a.hasAssignment)
        #expect(a.take().isEmpty)
    }
}

/// Two members of one consumer group on one data directory, in process: the second one's
/// arrival moves partitions from the first (which closes their shards in its poll loop,
/// letting go of their locks) and the shards end equal to the in-memory rollup.
@Suite(.serialized) struct RebalanceInProcessTests {
    /// A member running on its own thread until told to stop: under `clientID`, with warm
    /// standbys of `standby`, recording its roles in `dir` if `recordRoles`; what it logs
    /// at info level is kept in `records`.
    final class Member: @unchecked Sendable {
        private let lock = NSLock()
        private var stop = false
        private var _partitions: Set<Int32> = []
        private var _standbys: [(partition: Int32, next: Int64, end: Int64?)] = []
        private var _maxPartitions = 0
        private var _error: (any Error)?
        private var _standbyStatistics: StandbyStatistics?
        private let done = DispatchSemaphore(value: 0)
        let records = InMemoryLogHandler()

        init(rig: PipelineRig, dir: String, group: String, clientID: String = "daybook", standby: StandbyChoice? = nil, recordRoles: Bool = false) {
            var named = rig.connection
            named.clientID = clientID
            let connection = named
            let consumer = rig.consumer(group: group)
            let logger = Logger(label: clientID, level: .info, handler: records)
            let thread = Thread { [self] in
                defer { done.signal() }
                do {
                    var options = ProjectorOptions(dataDirectory: dir)
                    options.connectTimeout = .seconds(10)
                    options.standby = standby
                    let projector = try Projector(connection: connection, consumer: consumer, producer: ProducerConfiguration(),
                                                  priority: .builtIn, options: options, run: .live(recordingRoles: recordRoles), logger: logger)
                    defer {
                        let standbyStatistics = projector.standbyStatistics
                        locked { _standbyStatistics = standbyStatistics }
                    }
                    _ = try projector.run(shouldStop: { self.locked { self.stop } }) { progress in
                        self.locked {
                            self._partitions = Set(progress.partitions.map(\.partition))
                            self._standbys = progress.standbys
                            self._maxPartitions = max(self._maxPartitions, self._partitions.count)
                        }
                    }
                } catch {
                    locked { _error = error }
                }
            }
            thread.start()
        }

        private func locked<T>(_ body: () -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body()
        }

        var partitions: Set<Int32> { locked { _partitions } }
        var standbys: [(partition: Int32, next: Int64, end: Int64?)] { locked { _standbys } }
        var maxPartitions: Int { locked { _maxPartitions } }
        /// What its standby shards applied, once it has finished (nil without a standby choice).
        var standbyStatistics: StandbyStatistics? { locked { _standbyStatistics } }

        /// Stops the member and waits for it; its error, if it failed.
        func finish() -> (any Error)? {
            locked { stop = true }
            done.wait()
            done.signal() // a second finish returns at once
            return locked { _error }
        }
    }

    /// ana-like days for many users: watch 08:00–09:00 600, phone 08:30–09:30 300, each day
    /// 600 + 150 = 750 (naive sum 900, max 600).
    static func users(_ range: Range<Int>) throws -> [Event] {
        try range.flatMap { i in
            [
                try Fixture.sample("user-\(i)", "w-\(i)", "watch", "2024-03-25T08:00:00Z", "2024-03-25T09:00:00Z", 600),
                try Fixture.sample("user-\(i)", "p-\(i)", "phone", "2024-03-25T08:30:00Z", "2024-03-25T09:30:00Z", 300),
            ]
        }
    }

    /// What a member logged, one line a record, for a failed expectation's comment.
    static func logs(_ member: Member, _ name: String) -> String {
        member.records.records.map { "\(name) \($0.line)" }.joined(separator: "\n")
    }

    /// Waits up to `seconds` for `condition`.
    static func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try condition()
    }

    @Test(.timeLimit(.minutes(4))) func aSecondMemberTakesPartitionsAndTheShardsEqualTheRollup() throws {
        let rig = try PipelineRig(partitions: 4)
        let group = "rebalance-\(UUID().uuidString)"
        let dir = rig.dataDirectory()
        let first = try Self.users(0..<40)
        try rig.publish(first)

        let a = Member(rig: rig, dir: dir, group: group)
        var b: Member?
        defer {
            _ = b?.finish()
            _ = a.finish()
        }
        #expect(Self.eventually(30) { (try? PipelineRig.rows(dir)) == PipelineRig.rollup(first) })
        #expect(Self.eventually(10) { a.partitions.count == 4 })

        // The second member joins: the group moves some of a's partitions to it.
        b = Member(rig: rig, dir: dir, group: group)
        let second = try Self.users(40..<80)
        try rig.publish(second)
        // Each member ends with a share, and the two shares are the four partitions. A round
        // of the mock cluster's rebalance takes 5 s and can be lost (see `PipelineRig.consumer`):
        // 90 s is 18 rounds.
        let shared = Self.eventually(90) {
            let (pa, pb) = (a.partitions, b?.partitions ?? [])
            return !pa.isEmpty && !pb.isEmpty && pa.union(pb) == [0, 1, 2, 3] && pa.isDisjoint(with: pb)
        }
        #expect(shared, "a \(a.partitions.sorted()), b \((b?.partitions ?? []).sorted())\n\(Self.logs(a, "a"))\n\(b.map { Self.logs($0, "b") } ?? "")")
        #expect(Self.eventually(30) { (try? PipelineRig.rows(dir)) == PipelineRig.rollup(first + second) })

        let errorB = b?.finish()
        b = nil
        let errorA = a.finish()
        #expect(errorA == nil, "\(String(describing: errorA))")
        #expect(errorB == nil, "\(String(describing: errorB))")
        let rows = try PipelineRig.rows(dir)
        #expect(rows == PipelineRig.rollup(first + second))
        #expect(rows.count == 80)
        #expect(rows.allSatisfy { Fixture.steps([$0], $0.key.user) == 750 })
        // Every event applied exactly once: the shards' offsets sum to the log's length.
        #expect(try ShardReader(directory: dir).offsets(topic: PipelineRig.topic).values.map(\.nextOffset).reduce(0, +) == Int64(first.count + second.count))
    }

    /// The stall of `daybook bench`'s group run: librdkafka 2.0.2 can undo the seek that
    /// starts a partition at its shard's offset (a seek landing while the end-of-log lookup
    /// of the assignment is in flight; see `RDKafkaConsumer.start`), leaving the partition
    /// read from the end of the log with nothing delivered, and a log that no longer grows
    /// gave it nothing to notice: its lag stayed, `--until-caught-up` never ended. Here each
    /// partition is put there by hand as soon as it is started (sought to the end of the log
    /// before anything of it is polled); the projector must read it from its shard's offset
    /// all the same. The run is bounded by loop rounds, not time.
    @Test(.timeLimit(.minutes(2))) func aPartitionStartedAtTheEndOfTheLogIsReadFromItsShardsOffset() throws {
        let rig = try PipelineRig(partitions: 2)
        // 30 users in 2 partitions: 60 events, 30 rows of 750 (naive sum 900, max 600).
        let events = try Self.users(0..<30)
        try rig.publish(events)
        let dir = rig.dataDirectory()
        var options = ProjectorOptions(dataDirectory: dir)
        options.connectTimeout = .seconds(10)
        let projector = try Projector(connection: rig.connection, consumer: rig.consumer(), producer: ProducerConfiguration(),
                                      priority: .builtIn, options: options, run: .live(untilCaughtUp: true), logger: .silent)
        let consumer = projector.consumer
        var moved: [Int32: Int64] = [:]
        var rounds = 0, roundsSinceMoved = 0
        // shouldStop runs on the poll loop's thread, between two rounds: what was started in
        // the last round has had nothing of it polled yet.
        let summary = try projector.run(shouldStop: {
            rounds += 1
            for partition in projector.workers.keys where moved[partition] == nil {
                let tp = TopicPartition(PipelineRig.topic, partition)
                guard let end = try? consumer.watermarks(tp).high, (try? consumer.seek([tp: end])) != nil else { continue }
                moved[partition] = end
            }
            if moved.count == rig.partitions { roundsSinceMoved += 1 }
            // Stuck at the end, a partition is a round of 100 ms of nothing each time: 300
            // rounds is half a minute without the messages; caught up, the run ends long before.
            return rounds > 3_000 || roundsSinceMoved > 300
        }, progress: { _ in })

        // Both partitions had messages past offset 0, and both were moved to their end.
        #expect(moved.count == 2 && moved.values.allSatisfy { $0 > 0 }, "\(moved)")
        #expect(moved.values.reduce(0, +) == Int64(events.count))
        #expect(summary.caughtUp)
        #expect(summary.applied == events.count)
        let rows = try PipelineRig.rows(dir)
        #expect(rows == PipelineRig.rollup(events))
        #expect(rows.count == 30 && rows.allSatisfy { Fixture.steps([$0], $0.key.user) == 750 })
        // Each shard is at the end of its partition: every event applied once.
        let offsets = try ShardReader(directory: dir).offsets(topic: PipelineRig.topic)
        #expect(offsets.mapValues(\.nextOffset) == moved)
    }
}
