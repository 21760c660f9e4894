@testable import DaybookPipeline
import DaybookStore
import Testing

/// The projector's decisions without a broker: events into `ProjectorStateMachine`, the
/// actions it returns compared with the ones each rule asks for.
@Suite struct ProjectorStateMachineTests {
    typealias Machine = ProjectorStateMachine
    let t0 = ContinuousClock.now

    func machine(solo: Bool = false, stop: Machine.StopRule = .never, follows: Bool = true, stagingBytes: Int = 1_000, commitWidth: Int = 2) -> Machine {
        var m = Machine(policy: .init(solo: solo, stop: stop, followsGenerations: follows, minimumBatch: 100, largestBatch: 100,
                                      maximumBatchDelay: .seconds(5), stagingBytes: stagingBytes, commitWidth: commitWidth, connectTimeout: .seconds(30)), now: t0)
        if solo { m.took() }
        return m
    }

    func batch(_ offsets: [Int32: [Int64]] = [:], ends: [Int32: Int64] = [:]) -> PolledBatch {
        PolledBatch(offsets: offsets, ends: ends)
    }

    // MARK: The re-seek rule

    @Test func aGroupMembersFirstJumpIsSoughtBackToTheShardsOffsetThenAccepted() {
        var m = machine()
        let at40 = [Int32(0): PartitionFacts(next: 40)]
        #expect(m.polled(batch([0: [45, 46]]), partitions: at40) == [.seek(0, to: 40)])
        // The log jumps again from the same offset: the offsets in between hold no messages.
        #expect(m.polled(batch([0: [45, 46]]), partitions: at40) == [.acceptJump(0, from: 40, to: 45)])
        // A jump from another offset is sought back once again.
        #expect(m.polled(batch([0: [60]]), partitions: [0: PartitionFacts(next: 50)]) == [.seek(0, to: 50)])
    }

    @Test func aPartitionStartedAgainIsSoughtBackOnceMore() {
        var m = machine()
        let at40 = [Int32(0): PartitionFacts(next: 40)]
        #expect(m.polled(batch([0: [45]]), partitions: at40) == [.seek(0, to: 40)])
        m.assigned([0])
        _ = m.assignmentsChanged()
        m.started([0])
        m.polling()
        #expect(m.polled(batch([0: [45]]), partitions: at40) == [.seek(0, to: 40)])
    }

    @Test func redeliveredAndContinuousMessagesAreNoJump() {
        var m = machine()
        // Below the shard's offset (redelivered after a seek) and then the very next one.
        #expect(m.polled(batch([0: [38, 39, 40, 41]]), partitions: [0: PartitionFacts(next: 40)]).isEmpty)
        // What is staged counts: the batch goes on from its end.
        let staged = [Int32(0): PartitionFacts(next: 40, stagedEnd: 50)]
        #expect(m.polled(batch([0: [48, 49, 50]]), partitions: staged).isEmpty)
        #expect(m.polled(batch([0: [55]]), partitions: staged) == [.seek(0, to: 50)])
    }

    @Test func aSoloReadingAcceptsAJumpExceptTheFirstOnANewGenerationsShard() {
        var m = machine(solo: true)
        let at40 = [Int32(0): PartitionFacts(next: 40)]
        #expect(m.polled(batch([0: [45]]), partitions: at40) == [.acceptJump(0, from: 40, to: 45)])
        m.switched([0])
        #expect(m.polled(batch([0: [45]]), partitions: at40) == [.seek(0, to: 40)])
        #expect(m.polled(batch([0: [45]]), partitions: at40) == [.acceptJump(0, from: 40, to: 45)])
    }

    @Test func whatAPollReadOfAPartitionStartedWithinItOrPastItsStopIsNotApplied() {
        var m = machine()
        m.assigned([0, 1])
        _ = m.assignmentsChanged()
        m.polling()
        m.started([0, 1]) // started after the poll began: what it read of them is read again
        let facts: [Int32: PartitionFacts] = [0: PartitionFacts(next: 0), 1: PartitionFacts(next: 0), 2: PartitionFacts(next: 10, stop: 10)]
        #expect(m.polled(batch([0: [0], 1: [5], 2: [10, 11]], ends: [0: 1]), partitions: facts) == [.discard(0), .discard(1), .discard(2)])
        m.polling()
        #expect(m.polled(batch([0: [0], 2: [10]]), partitions: facts) == [.discard(2)])
    }

    @Test func anOffsetOutsideTheLogStopsTheRun() {
        var m = machine()
        let actions = m.polled(PolledBatch(offsets: [0: [41]], outOfRange: [0: 41]), partitions: [0: PartitionFacts(next: 40)])
        #expect(actions == [.outOfRange(0, offset: 41)])
    }

    // MARK: End of partition (librdkafka 2.0.2)

    @Test func anEndReportedPastTheNextOffsetIsAJumpSoughtBackOnce() {
        var m = machine()
        // librdkafka 2.0.2 moved the partition to the end of the log and undid the start's
        // seek: no message arrives, only the end, at 100, while the shard needs 40.
        #expect(m.polled(batch(ends: [0: 100]), partitions: [0: PartitionFacts(next: 40)]) == [.recordEnd(0, at: 100)])
        #expect(m.staged(partitions: [0: PartitionFacts(next: 40, end: 100)]) == [.seek(0, to: 40)])
        // Checked once per report.
        #expect(m.staged(partitions: [0: PartitionFacts(next: 40, end: 100)]).isEmpty)
        // Reported again from the same offset: the log has no message in between.
        _ = m.polled(batch(ends: [0: 100]), partitions: [0: PartitionFacts(next: 40)])
        #expect(m.staged(partitions: [0: PartitionFacts(next: 40, end: 100)]) == [.acceptJump(0, from: 40, to: 100)])
    }

    @Test func anEndAtTheNextOffsetOrPastTheStopOffsetIsNoJump() {
        var m = machine()
        _ = m.polled(batch([0: [40, 41]], ends: [0: 42, 1: 30]), partitions: [0: PartitionFacts(next: 40), 1: PartitionFacts(next: 20, stop: 20)])
        // Staged up to 42: the end is where the partition is.
        #expect(m.staged(partitions: [0: PartitionFacts(next: 40, stagedEnd: 42), 1: PartitionFacts(next: 20, stop: 20)]).isEmpty)
    }

    @Test func anEndFromAReadingJustSoughtBackIsNotCheckedAgain() {
        var m = machine()
        #expect(m.polled(batch([0: [45]], ends: [0: 46]), partitions: [0: PartitionFacts(next: 40)]) == [.recordEnd(0, at: 46), .seek(0, to: 40)])
        #expect(m.staged(partitions: [0: PartitionFacts(next: 40, end: 46)]).isEmpty)
    }

    // MARK: The batch policy

    @Test func aBatchIsDueAtItsMinimumItsPartitionsEndItsStopOrItsDelay() {
        let m = machine(solo: true)
        let now = t0 + .seconds(10)
        let facts: [Int32: PartitionFacts] = [
            0: PartitionFacts(next: 0, stagedEnd: 100, stagedCount: 100, stagedBytes: 10, stagedSince: now),      // minimum
            1: PartitionFacts(next: 0, stagedEnd: 7, stagedCount: 7, stagedBytes: 10, stagedSince: now, end: 7),  // end of partition
            2: PartitionFacts(next: 0, stagedEnd: 5, stagedCount: 5, stagedBytes: 10, stagedSince: now, stop: 5), // stop offset
            3: PartitionFacts(next: 0, stagedEnd: 3, stagedCount: 3, stagedBytes: 10, stagedSince: t0),           // waited 10 s
            4: PartitionFacts(next: 0, stagedEnd: 3, stagedCount: 3, stagedBytes: 10, stagedSince: now, end: 9),  // none of these
            5: PartitionFacts(next: 3),                                                                          // nothing staged
        ]
        #expect(m.due(idle: false, now: now, partitions: facts) == [.commit([0, 1, 2, 3])])
    }

    @Test func aBatchIsDueAtItsPartitionsShareOfTheEventsInFlight() {
        // 524,288 events in flight, batches of 4,096 to 16,384: 128 partitions 4,096 each,
        // 64 → 8,192, 32 → 16,384, 8 → 16,384 (the largest), 256 → 4,096 (the least).
        let policy = Machine.Policy(minimumBatch: 4_096, largestBatch: 16_384, eventsInFlight: 524_288)
        #expect([128, 64, 32, 8, 256, 1, 0].map { policy.batch(partitions: $0) } == [4_096, 8_192, 16_384, 16_384, 4_096, 16_384, 16_384])
        // Through `due`: 1,000 events in flight, batches of 100 to 400. Two partitions open:
        // 400 each, so 399 staged is not due and 400 is; ten open: 100 each.
        let m = Machine(policy: .init(solo: true, minimumBatch: 100, largestBatch: 400, eventsInFlight: 1_000), now: t0)
        func open(_ n: Int32, staged: Int) -> [Int32: PartitionFacts] {
            var facts: [Int32: PartitionFacts] = [0: PartitionFacts(next: 0, stagedEnd: Int64(staged), stagedCount: staged, stagedBytes: 1, stagedSince: t0)]
            for p in 1..<n { facts[p] = PartitionFacts(next: 0) }
            return facts
        }
        #expect(m.due(idle: false, now: t0, partitions: open(2, staged: 399)).isEmpty)
        #expect(m.due(idle: false, now: t0, partitions: open(2, staged: 400)) == [.commit([0])])
        #expect(m.due(idle: false, now: t0, partitions: open(10, staged: 99)).isEmpty)
        #expect(m.due(idle: false, now: t0, partitions: open(10, staged: 100)) == [.commit([0])])
    }

    @Test func everyStagedBatchIsDueWhenThePollIsIdleOrTheStagingIsFull() {
        let small: [Int32: PartitionFacts] = [
            0: PartitionFacts(next: 0, stagedEnd: 3, stagedCount: 3, stagedBytes: 400, stagedSince: t0),
            1: PartitionFacts(next: 0, stagedEnd: 3, stagedCount: 3, stagedBytes: 400, stagedSince: t0),
            2: PartitionFacts(next: 3),
        ]
        let m = machine(solo: true)
        #expect(m.due(idle: false, now: t0, partitions: small).isEmpty)
        #expect(m.due(idle: true, now: t0, partitions: small) == [.commit([0, 1])])
        var full = small
        full[1]?.stagedBytes = 600
        #expect(m.due(idle: false, now: t0, partitions: full) == [.commit([0, 1])])
        // A group member claims what it committed; stopping commits whatever is staged.
        #expect(machine().due(idle: true, now: t0, partitions: small) == [.commit([0, 1]), .claim([0, 1], waiting: false)])
        #expect(m.stopping(partitions: small) == [.commit([0, 1])])
        #expect(m.stopping(partitions: [2: PartitionFacts(next: 3)]).isEmpty)
    }

    @Test func overTheStagingBudgetTheFullestBatchesGoFirstUntilTheRestFit() {
        let width1 = machine(solo: true, commitWidth: 1)
        func facts(_ bytes: [Int32: Int], counts: [Int32: Int] = [:]) -> [Int32: PartitionFacts] {
            bytes.mapValues { b in PartitionFacts(next: 0, stagedEnd: 1, stagedCount: 1, stagedBytes: b, stagedSince: t0) }
                .merging(counts.mapValues { c in PartitionFacts(next: 0, stagedEnd: 1, stagedCount: c, stagedBytes: 900, stagedSince: t0) }) { $1 }
        }
        // stagingBytes 1,000; 300 + 250 + 250 + 200 + 100 = 1,100 staged: the fullest (0, 300)
        // leaves 800, under the budget, so it alone is due.
        let five = facts([0: 300, 1: 250, 2: 250, 3: 200, 4: 100])
        #expect(width1.due(idle: false, now: t0, partitions: five) == [.commit([0])])
        // Two at once (two cores): 0, then of the two 250s the lower partition, 1.
        #expect(machine(solo: true).due(idle: false, now: t0, partitions: five) == [.commit([0, 1])])
        // 600 + 500 + 400 = 1,500: 0 leaves 900 < 1,000.
        #expect(width1.due(idle: false, now: t0, partitions: facts([0: 600, 1: 500, 2: 400])) == [.commit([0])])
        // 0 is due at its minimum (100 events, 900 bytes): what stays is 1's 300, which fits.
        #expect(width1.due(idle: false, now: t0, partitions: facts([1: 300], counts: [0: 100])) == [.commit([0])])
        // Under the budget (999) nothing is due.
        #expect(width1.due(idle: false, now: t0, partitions: facts([0: 333, 1: 333, 2: 333])).isEmpty)
    }

    @Test func partitionsFillingAtOnePaceAreStaggeredIntoBatchesOfTwiceTheirShare() {
        // Three partitions each stage 100 bytes a round; stagingBytes 600, one commit at a time.
        // By hand (bytes staged in 0, 1, 2 after the round's staging → committed):
        //   r1 100 100 100 (300)
        //   r2 200 200 200 (600) → 0 (200 bytes), 400 stay
        //   r3 100 300 300 (700) → 1 (300)
        //   r4 200 100 400 (700) → 2 (400)
        //   r5 300 200 100 (600) → 0 (300)
        //   r6 100 300 200 (600) → 1 (300)
        //   r7 200 100 300 (600) → 2 (300)
        // From r5 on every batch is 300 bytes = 2 × 600 / (3 + 1); committing all at once
        // when the budget is reached gives 200 = 600 / 3 each.
        let m = machine(solo: true, stagingBytes: 600, commitWidth: 1)
        var staged: [Int32: Int] = [0: 0, 1: 0, 2: 0]
        var committed: [[Int32: Int]] = []
        for _ in 1...7 {
            for p in staged.keys { staged[p]! += 100 }
            let facts = staged.mapValues { b in PartitionFacts(next: 0, stagedEnd: 1, stagedCount: b / 100, stagedBytes: b, stagedSince: t0) }
            var round: [Int32: Int] = [:]
            for action in m.due(idle: false, now: t0, partitions: facts) {
                if case .commit(let ps) = action { for p in ps { round[p] = staged[p]; staged[p] = 0 } }
            }
            committed.append(round)
        }
        #expect(committed == [[:], [0: 200], [1: 300], [2: 400], [0: 300], [1: 300], [2: 300]])
    }

    // MARK: Catch-up

    @Test func aRunUntilCaughtUpEndsOnceEveryPartitionIsAtTheEndWithNothingStagedOrCommitted() {
        var m = machine(solo: true, stop: .caughtUp)
        let atEnd: [Int32: PartitionFacts] = [0: PartitionFacts(next: 9, end: 9), 1: PartitionFacts(next: 5, stop: 5)]
        #expect(m.roundEnded(committed: true, now: t0, partitions: atEnd).isEmpty)
        #expect(m.roundEnded(committed: false, now: t0, partitions: atEnd) == [.stop(.caughtUp)])
        var behind = atEnd
        behind[0]?.end = 10
        #expect(m.roundEnded(committed: false, now: t0, partitions: behind).isEmpty)
        behind[0] = PartitionFacts(next: 9, stagedEnd: 10, end: 10)
        #expect(m.roundEnded(committed: false, now: t0, partitions: behind).isEmpty)
        // A run that stops only when told never ends by itself.
        var live = machine(solo: true)
        #expect(live.roundEnded(committed: false, now: t0, partitions: atEnd).isEmpty)
    }

    @Test func aRunUntilCaughtUpPollsWithoutWaitingOnceEveryPartitionIsReadToItsEnd() {
        let m = machine(solo: true, stop: .caughtUp)
        // Partition 0 has read to its end (9, staged up to it), partition 1 to its stop offset.
        let read: [Int32: PartitionFacts] = [0: PartitionFacts(next: 4, stagedEnd: 9, end: 9), 1: PartitionFacts(next: 5, stop: 5)]
        #expect(m.pollWait(partitions: read) == .zero)
        // One message short of the end, or an end not reported yet: the poll waits for more.
        var short = read
        short[0]?.stagedEnd = 8
        #expect(m.pollWait(partitions: short) == Machine.pollWait)
        short[0] = PartitionFacts(next: 9)
        #expect(m.pollWait(partitions: short) == Machine.pollWait)
        #expect(m.pollWait(partitions: [:]) == Machine.pollWait)
        // A run that stops only when told, or at its targets, always waits.
        #expect(machine(solo: true).pollWait(partitions: read) == Machine.pollWait)
        #expect(machine(solo: true, stop: .caughtUpWithTargets).pollWait(partitions: read) == Machine.pollWait)
        // A group member whose given partitions are not all started waits too.
        var member = machine(stop: .caughtUp)
        member.assigned([0, 1])
        _ = member.assignmentsChanged()
        member.started([0])
        #expect(member.pollWait(partitions: [0: PartitionFacts(next: 9, end: 9)]) == Machine.pollWait)
        member.started([1])
        #expect(member.pollWait(partitions: read) == .zero)
    }

    @Test func aHighWatermarkReadUpToIsAnEndWithoutWaitingForTheConsumerToReportOne() {
        var m = machine(solo: true, stop: .caughtUp)
        // Read up to the high watermark 9 (staged), no end reported: the batch is due now,
        // the next poll does not wait, and once committed the run stops.
        let staged: [Int32: PartitionFacts] = [0: PartitionFacts(next: 4, stagedEnd: 9, stagedCount: 5, highRead: 9)]
        #expect(staged[0]?.knownEnd == 9)
        #expect(m.due(idle: false, now: t0, partitions: staged) == [.commit([0])])
        #expect(m.pollWait(partitions: staged) == .zero)
        let committed: [Int32: PartitionFacts] = [0: PartitionFacts(next: 9, highRead: 9)]
        #expect(m.roundEnded(committed: false, now: t0, partitions: committed) == [.stop(.caughtUp)])
        // Without a watermark read up to, only a reported end counts; the larger of both wins.
        #expect(PartitionFacts(next: 9).knownEnd == nil)
        #expect(PartitionFacts(next: 9, end: 7).knownEnd == 7)
        #expect(PartitionFacts(next: 9, end: 12, highRead: 9).knownEnd == 12)
        #expect(!PartitionFacts(next: 9, end: 12, highRead: 9).isCaughtUp)
        #expect(m.roundEnded(committed: false, now: t0, partitions: [0: PartitionFacts(next: 9)]).isEmpty)
    }

    @Test func aGroupMemberIsCaughtUpOnlyOnceWhatItWasGivenIsStarted() {
        var m = machine(stop: .caughtUp)
        #expect(m.roundEnded(committed: false, now: t0, partitions: [:]).isEmpty) // nothing given yet
        m.assigned([0])
        #expect(m.roundEnded(committed: false, now: t0, partitions: [:]).isEmpty) // given, not started
        _ = m.assignmentsChanged()
        m.started([0])
        #expect(m.roundEnded(committed: false, now: t0, partitions: [0: PartitionFacts(next: 4, end: 4)]) == [.stop(.caughtUp)])
        // Given nothing at all: caught up on what it owns.
        var idle = machine(stop: .caughtUp)
        idle.assigned([])
        #expect(idle.roundEnded(committed: false, now: t0, partitions: [:]) == [.stop(.caughtUp)])
    }

    @Test func aRebuildAlsoWaitsForItsTargetsAskedAtMostEvery250Milliseconds() {
        var m = machine(solo: true, stop: .caughtUpWithTargets)
        // Not yet at the end of the log as it was when started: nothing is asked.
        #expect(m.roundEnded(committed: false, now: t0, partitions: [0: PartitionFacts(next: 5, highAtStart: 9)]).isEmpty)
        let started: [Int32: PartitionFacts] = [0: PartitionFacts(next: 9, highAtStart: 9)]
        #expect(m.roundEnded(committed: false, now: t0, partitions: started) == [.askTargets])
        #expect(m.roundEnded(committed: false, now: t0 + .milliseconds(100), partitions: started).isEmpty)
        #expect(m.roundEnded(committed: false, now: t0 + .milliseconds(300), partitions: started) == [.askTargets])
        #expect(m.targets([0: 12], partitions: started).isEmpty)
        #expect(m.targets([0: 9], partitions: started) == [.stop(.caughtUp)])
        #expect(m.targets([:], partitions: started) == [.stop(.caughtUp)])
    }

    // MARK: The dead-letter outbox

    @Test func deadLettersAreForwardedOnceDeliveredRowsMarkedAndFailedOnesSentAgain() {
        var m = machine()
        #expect(m.forwarding(pending: [1, 0]) == [.readOutbox(0, after: 0), .readOutbox(1, after: 0)])
        #expect(m.unforwarded(0, rows: [3, 4], pageFull: false) == [.forward(0, row: 3, id: 0), .forward(0, row: 4, id: 1)])
        // Read again while in flight: not handed over twice.
        #expect(m.forwarding(pending: [0]) == [.readOutbox(0, after: 4)])
        #expect(m.unforwarded(0, rows: [4, 5], pageFull: true) == [.outboxPending(0), .forward(0, row: 5, id: 2)])
        // Row 3 delivered, row 4 failed: 3 is marked; the cursor goes back before 4.
        #expect(m.deliveries(delivered: [0], failed: [1]) == [.outboxPending(0), .markForwarded(0, rows: [3])])
        #expect(m.forwarding(pending: [0]) == [.readOutbox(0, after: 3)])
        // Until the shard says it marked them, delivered rows are asked to be marked again.
        #expect(m.deliveries(delivered: [2], failed: []) == [.markForwarded(0, rows: [3, 5])])
        m.markedForwarded(0)
        #expect(m.deliveries(delivered: [], failed: []).isEmpty)
        #expect(m.unforwarded(0, rows: [4], pageFull: false) == [.forward(0, row: 4, id: 3)])
    }

    @Test func aShardOpenedAgainStartsItsOutboxOver() {
        var m = machine()
        _ = m.unforwarded(0, rows: [7], pageFull: false)
        m.shardOpened(0)
        #expect(m.forwarding(pending: [0]) == [.readOutbox(0, after: 0)])
        // The report of a row of the old shard file means nothing any more.
        #expect(m.deliveries(delivered: [0], failed: []).isEmpty)
        #expect(m.unforwarded(0, rows: [7], pageFull: false) == [.forward(0, row: 7, id: 1)])
    }

    @Test func aDeadLetterTooLargeForTheDLQTopicIsForwardedAsItsHeadAndSaysSo() {
        let small = Shard.DeadLetter(offset: 7, key: Array("ana".utf8), payload: [1, 2, 3], reason: "bad", code: "invalid_json")
        let (headers, payload) = Projector.message(of: small, source: "health-samples/0/7")
        #expect(payload == [1, 2, 3])
        #expect(headers.map(\.0) == ["daybook.reason", "daybook.code", "daybook.source"])
        #expect(headers.map { String(decoding: $0.1, as: UTF8.self) } == ["bad", "invalid_json", "health-samples/0/7"])
        let limit = Projector.dlqPayloadLimit
        let large = Shard.DeadLetter(offset: 8, key: [], payload: Array(repeating: 9, count: limit + 1), reason: "too long", code: "line_too_long")
        let (largeHeaders, head) = Projector.message(of: large, source: "health-samples/0/8")
        #expect(head.count == limit)
        #expect(largeHeaders.last.map { $0.0 } == "daybook.truncated-from")
        #expect(largeHeaders.last.map { String(decoding: $0.1, as: UTF8.self) } == String(limit + 1))
        let exact = Shard.DeadLetter(offset: 9, key: [], payload: Array(repeating: 9, count: limit), reason: "", code: "")
        #expect(Projector.message(of: exact, source: "").payload.count == limit)
        #expect(Projector.message(of: exact, source: "").headers.count == 3)
    }

    // MARK: Assignments and the standby hand-over

    @Test func aGivenPartitionsStandbyIsReleasedBeforeItsShardIsOpenedAndClaimed() {
        var m = machine()
        #expect(m.assignmentsChanged().isEmpty)
        m.assigned([1, 0])
        #expect(m.waitingForGroup)
        #expect(m.assignmentsChanged() == [.releaseStandbys([0, 1]), .open([0, 1]), .ownershipChanged, .claim([0, 1], waiting: true)])
        #expect(m.owned(open: [Int32]()) == [0, 1]) // given and about to start: owned, so no standby of them
        m.started([0, 1])
        #expect(!m.waitingForGroup)
        // Taken away and given back within one poll: closed, then opened again.
        m.revoked([1])
        m.assigned([1])
        #expect(m.assignmentsChanged() == [.close([1]), .releaseStandbys([1]), .open([1]), .ownershipChanged, .claim([1], waiting: true)])
        m.started([1])
        m.revoked([0])
        // Only taken away: what is owned here changed all the same (standbys, cache, roles).
        #expect(m.assignmentsChanged() == [.close([0]), .ownershipChanged])
    }

    @Test func aShardHeldByTheMemberHandingItOverIsWaitedForASecond() {
        let m = machine()
        #expect(m.shardHeld(3, waited: .milliseconds(20)) == .retryOpen(3))
        #expect(m.shardHeld(3, waited: .milliseconds(999)) == .retryOpen(3))
        #expect(m.shardHeld(3, waited: .seconds(1)) == nil)
    }

    @Test func aSoloReaderClaimsNothing() {
        var m = machine(solo: true)
        m.assigned([0])
        #expect(m.assignmentsChanged() == [.releaseStandbys([0]), .open([0]), .ownershipChanged])
        #expect(!m.waitingForGroup)
    }

    // MARK: Generations, liveness, progress

    @Test func aNewGenerationIsFollowedUnlessTheRunBelongsToTheShardsItStartedOn() {
        #expect(machine().manifestChanged() == [.followGeneration])
        #expect(machine(solo: true, stop: .caughtUp, follows: false).manifestChanged() == [.stop(.generationSwapped)])
    }

    @Test func aSilentClusterIsAskedAfterTheConnectTimeoutAndEndsOnlyARunThatStopsByItself() {
        var m = machine(stop: .caughtUp)
        #expect(m.heard(anything: false, now: t0 + .seconds(29)).isEmpty)
        #expect(m.heard(anything: true, now: t0 + .seconds(40)).isEmpty)
        #expect(m.heard(anything: false, now: t0 + .seconds(69)).isEmpty)
        #expect(m.heard(anything: false, now: t0 + .seconds(70)) == [.probeCluster])
        #expect(m.heard(anything: false, now: t0 + .seconds(71)).isEmpty)
        #expect(m.clusterDidNotAnswer() == [.stop(.clusterStoppedAnswering)])
        #expect(machine().clusterDidNotAnswer().isEmpty)
    }

    @Test func progressIsReportedOnceASecondWithTheRateSinceTheLastReport() {
        var m = machine()
        m.committed(applied: 300)
        #expect(m.tick(now: t0 + .milliseconds(500)).isEmpty)
        #expect(m.tick(now: t0 + .seconds(2)) == [.reportProgress(eventsPerSecond: 150)])
        #expect(m.tick(now: t0 + .seconds(3)) == [.reportProgress(eventsPerSecond: 0)])
    }

    // MARK: Runs chosen by policy

    @Test func eachRunDecidesHowItStopsWhatItForwardsAndWhetherItFollowsGenerations() {
        let options = ProjectorOptions(dataDirectory: "/nonexistent")
        let live = Projector.policy(options, .live())
        #expect(!live.solo && live.stop == .never && live.followsGenerations)
        #expect(Projector.policy(options, .live(untilCaughtUp: true)).stop == .caughtUp)
        let rebuild = ProjectionRun.rebuild { [:] }
        #expect(Projector.policy(options, rebuild).solo && Projector.policy(options, rebuild).stop == .caughtUpWithTargets)
        #expect(!rebuild.forwardsDeadLetters && !ProjectionRun.shadow(stoppingAt: [0: 5]).forwardsDeadLetters)
        let replay = Projector.policy(options, .replay(from: [0: 3]))
        #expect(replay.solo && replay.stop == .caughtUp && !replay.followsGenerations)
        #expect(ProjectionRun.replay(from: [0: 3]).forwardsDeadLetters && ProjectionRun.live().forwardsDeadLetters)
    }
}
