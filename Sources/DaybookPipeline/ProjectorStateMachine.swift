import DaybookCore

/// The facts of one open partition that the projector's decisions read, taken from its
/// worker by the driver just before the event that needs them.
struct PartitionFacts: Equatable, Sendable {
    /// The shard's next offset.
    var next: Int64
    /// The offset after the last staged message; nil while nothing is staged.
    var stagedEnd: Int64? = nil
    /// Staged events and dead letters, and the bytes the events take.
    var stagedCount = 0
    var stagedBytes = 0
    /// When the oldest staged message was staged.
    var stagedSince: ContinuousClock.Instant? = nil
    /// The end of the partition as last reported by the consumer.
    var end: Int64? = nil
    /// Messages are applied only below this offset (`ProjectionRun.shadow`).
    var stop: Int64? = nil
    /// The high watermark when the partition was started.
    var highAtStart: Int64? = nil
    /// A high watermark (the last fetch's, or `highAtStart`) that the partition has been
    /// read up to, staged or applied; nil while it has not.
    var highRead: Int64? = nil

    /// The offset the next message must have for the log to be continuous.
    var expectedNext: Int64 { max(stagedEnd ?? next, next) }

    /// The end of the partition as far as this run knows: the end the consumer reported, or
    /// a high watermark read up to. librdkafka reports an end only once a further fetch has
    /// come back empty, which a broker holds for `fetch.wait.max.ms` (100 ms): up to 0.2 s of
    /// a short catch-up waited for that, and a restart with nothing new waited only for it.
    var knownEnd: Int64? {
        guard let highRead else { return end }
        return max(end ?? highRead, highRead)
    }

    var isCaughtUp: Bool {
        if let stop, next >= stop { return true }
        return knownEnd.map { next >= $0 } ?? false
    }
}

/// What one poll of the consumer read, in offsets (the messages themselves stay with the driver).
struct PolledBatch: Equatable, Sendable {
    /// Per partition, the offsets of the messages read, in order.
    var offsets: [Int32: [Int64]] = [:]
    /// Partitions whose end the consumer reported, at that offset.
    var ends: [Int32: Int64] = [:]
    /// Partitions the consumer reported an offset outside the log for.
    var outOfRange: [Int32: Int64] = [:]
}

/// The projector's decisions, without I/O: events in (a polled batch, an assignment or a
/// revocation, a manifest change, a delivery report, a clock tick, a shard held), actions
/// out, which `Projector` performs against Kafka and the shards (the shape of postgres-nio's
/// connection state machines and swift-kafka-client's `KafkaConsumer.StateMachine`).
///
/// The facts of the open partitions (`PartitionFacts`) are passed in with the events that
/// read them; what the machine keeps is only what its own rules remember: the group's
/// assignments, which partitions were sought back and where, the dead-letter outbox, and
/// the clocks of progress, liveness and catch-up.
struct ProjectorStateMachine {
    /// The settings the decisions follow (from `ProjectorOptions` and `ProjectionRun`).
    struct Policy: Sendable {
        /// Reads its partitions directly, not as a member of a group.
        var solo = false
        var stop: StopRule = .never
        /// Moves to the shards of a generation a rebuild swaps in; else the run stops.
        var followsGenerations = true
        var minimumBatch = 4_096
        /// The most events a partition's batch waits for (`batch(partitions:)`).
        var largestBatch = 16_384
        /// The events all partitions' batches hold together, at most, before each is due
        /// (`batch(partitions:)`).
        var eventsInFlight = 524_288
        var maximumBatchDelay: Duration = .seconds(5)
        var stagingBytes = 72 << 20
        /// How many batches are committed at once (one per core), so that staging that must
        /// make room still keeps every core busy.
        var commitWidth = 2
        /// How long the cluster may say nothing before it is asked whether it still answers.
        var connectTimeout: Duration = .seconds(30)

        /// The events a batch is due at with `partitions` partitions open: their share of
        /// `eventsInFlight`, within `minimumBatch` … `largestBatch` (128 partitions: 4,096;
        /// 64: 8,192; 32 or fewer: 16,384). The staged events of all partitions then take
        /// about as much memory whatever their number (`ProjectorOptions.eventsInFlight`).
        func batch(partitions: Int) -> Int {
            max(minimumBatch, min(largestBatch, eventsInFlight / max(1, partitions)))
        }
    }

    /// When a run ends by itself.
    enum StopRule: Sendable, Equatable {
        /// Only when the caller says so.
        case never
        /// Once every partition has reached the end of the log (or its stop offset).
        case caughtUp
        /// ... and the offsets the driver is asked for (`Action.askTargets`).
        case caughtUpWithTargets
    }

    /// Why a run ends.
    enum Ending: Equatable, Sendable {
        case caughtUp
        /// A rebuild swapped in a generation and the run does not follow generations.
        case generationSwapped
        /// The cluster said nothing for `connectTimeout` and did not answer when asked.
        case clusterStoppedAnswering
    }

    enum Action: Equatable, Sendable {
        /// Close these partitions' shards (the group took them away).
        case close([Int32])
        /// Close the standby shards of these partitions: this member's owner opens them next.
        case releaseStandbys([Int32])
        /// Open these partitions' shards, check each against the log, start them at their offsets.
        case open([Int32])
        /// What is owned here changed: follow it with the standby shards, share the cache
        /// among the open shards again, and record the roles.
        case ownershipChanged
        /// Commit these partitions' shard offsets to the group with this member's owner
        /// claim; `waiting` for the answer (once per assignment).
        case claim([Int32], waiting: Bool)
        /// Open the shard again after a short wait: its lock is being handed over.
        case retryOpen(Int32)
        /// Move to the shards of the generation a rebuild swapped in.
        case followGeneration
        /// Record the end of the partition the consumer reported.
        case recordEnd(Int32, at: Int64)
        /// Apply nothing this poll read of the partition.
        case discard(Int32)
        /// Check that the log still holds the shard's next offset (a gap is an error), then
        /// seek the partition back to it; what this poll read of it is not applied.
        case seek(Int32, to: Int64)
        /// Check that the log still holds `from` (a gap is an error): the offsets up to
        /// `to` hold no messages (transaction markers, compaction).
        case acceptJump(Int32, from: Int64, to: Int64)
        /// The consumer read outside the log: say which (a gap, another log) and stop.
        case outOfRange(Int32, offset: Int64)
        /// Commit these partitions' staged batches, each in one transaction with its offset.
        case commit([Int32])
        /// Ask the cluster whether it still answers.
        case probeCluster
        /// Ask for the offsets the run must also reach (`StopRule.caughtUpWithTargets`).
        case askTargets
        case reportProgress(eventsPerSecond: Double)
        /// Read the partition's unforwarded dead letters after this row.
        case readOutbox(Int32, after: Int64)
        /// Hand this dead letter to the DLQ producer under `id`.
        case forward(Int32, row: Int64, id: Int)
        /// The partition's outbox has more to forward in a later round.
        case outboxPending(Int32)
        /// Mark these rows of the partition's shard forwarded.
        case markForwarded(Int32, rows: [Int64])
        case stop(Ending)
    }

    let policy: Policy
    /// What the group gave and took, waiting for the poll loop to act on it.
    private(set) var assignments = Assignments()
    /// Partitions sought back once after a jump in offsets, and where.
    private var resought: [Int32: Int64] = [:]
    /// Partitions moved to a new generation's shard: a first jump there is sought back, solo too.
    private var switched: Set<Int32> = []
    /// Partitions started since the last poll began: what that poll read of them is read again.
    private var startedSincePoll: Set<Int32> = []
    /// Ends the last poll reported, checked once its messages are staged.
    private var endsToCheck: [Int32: Int64] = [:]
    private(set) var outbox = DeadLetterOutbox()
    private var lastHeard: ContinuousClock.Instant
    private var lastProgress: ContinuousClock.Instant
    private var appliedSinceProgress = 0
    private var targetsAsked: ContinuousClock.Instant?

    /// How long the shard of a partition just given is waited for while another member on
    /// the same data directory still holds it (it closes it right after its rebalance).
    static let handoverWait: Duration = .seconds(1)
    /// How often the catch-up targets are asked at most.
    static let targetsInterval: Duration = .milliseconds(250)

    init(policy: Policy, now: ContinuousClock.Instant = .now) {
        self.policy = policy
        lastHeard = now
        lastProgress = now
    }

    // MARK: Assignments

    mutating func assigned(_ partitions: some Sequence<Int32>) { assignments.assigned(partitions) }
    mutating func revoked(_ partitions: some Sequence<Int32>) { assignments.revoked(partitions) }
    /// Every partition was taken at once (a solo run).
    mutating func took() { assignments.took() }

    /// Partitions owned here now: started, or given and about to start.
    func owned(open: some Sequence<Int32>) -> Set<Int32> { Set(open).union(assignments.held) }

    /// Waiting for the group: it has given nothing yet, or what it gave is not started.
    var waitingForGroup: Bool { !policy.solo && (!assignments.hasAssignment || !assignments.held.isEmpty) }

    /// What the group changed since the loop last acted: close what was taken away; release
    /// the standby shards of what was given and open it; follow the new ownership; claim
    /// what was given.
    mutating func assignmentsChanged() -> [Action] {
        let changes = assignments.take()
        guard !changes.isEmpty else { return [] }
        var actions: [Action] = []
        if !changes.close.isEmpty { actions.append(.close(changes.close)) }
        if !changes.start.isEmpty { actions += [.releaseStandbys(changes.start), .open(changes.start)] }
        actions.append(.ownershipChanged)
        if !changes.start.isEmpty, !policy.solo { actions.append(.claim(changes.start, waiting: true)) }
        return actions
    }

    /// The driver opened and started these: a jump in their new reading is sought back once again.
    mutating func started(_ partitions: [Int32]) {
        assignments.started(partitions)
        for p in partitions {
            resought[p] = nil
            startedSincePoll.insert(p)
        }
    }

    /// The shard of a partition just given is locked: wait for the member that held it to
    /// let go, for `handoverWait`; after that the lock is refused as any other (nil).
    func shardHeld(_ partition: Int32, waited: Duration) -> Action? {
        waited < Self.handoverWait ? .retryOpen(partition) : nil
    }

    /// A shard of `partition` was opened: its dead-letter rows are new to the outbox.
    mutating func shardOpened(_ partition: Int32) { outbox.forget(partition) }

    // MARK: Generations

    /// A rebuild swapped in a new manifest.
    func manifestChanged() -> [Action] {
        [policy.followsGenerations ? .followGeneration : .stop(.generationSwapped)]
    }

    /// The driver moved these partitions to their new generation's shards.
    mutating func switched(_ partitions: [Int32]) {
        for p in partitions {
            resought[p] = nil
            switched.insert(p)
        }
    }

    // MARK: Polls

    /// The driver is about to poll: a partition started from here on has a new reading.
    mutating func polling() { startedSincePoll.removeAll() }

    /// How long a poll waits for a message when none is there.
    static let pollWait: Duration = .milliseconds(100)

    /// How long the next poll may wait for a message: not at all once a run that ends when
    /// caught up has read every partition to its known end (`PartitionFacts.knownEnd`) or to
    /// its stop offset. Nothing more is coming: that poll only lets the round commit what is staged
    /// and the next one stop, and waiting out `pollWait` there was ~0.1 s of a 0.6 s
    /// catch-up, in half the runs (BENCHMARKS.md, "Issue 26, eleventh steps").
    func pollWait(partitions: [Int32: PartitionFacts]) -> Duration {
        guard policy.stop == .caughtUp, assignments.hasAssignment, assignments.held.isEmpty, !partitions.isEmpty,
              partitions.values.allSatisfy({ f in
                  f.stop.map { f.expectedNext >= $0 } == true || f.knownEnd.map { f.expectedNext >= $0 } == true
              }) else { return Self.pollWait }
        return .zero
    }

    /// What a poll read, before it is staged. Messages of a partition started again within
    /// the poll are read again from its shard's offset; those from a partition's stop offset
    /// on are no work; a batch that starts after the offset the partition needs next is a
    /// jump (`jumped`). The ends reported are checked once the batch is staged (`staged`).
    mutating func polled(_ batch: PolledBatch, partitions: [Int32: PartitionFacts]) -> [Action] {
        var actions: [Action] = []
        for (p, offset) in batch.outOfRange.sorted(by: { $0.key < $1.key })
        where partitions[p] != nil && !startedSincePoll.contains(p) {
            return [.outOfRange(p, offset: offset)]
        }
        endsToCheck = [:]
        for (p, end) in batch.ends.sorted(by: { $0.key < $1.key }) where !startedSincePoll.contains(p) {
            actions.append(.recordEnd(p, at: end))
            endsToCheck[p] = end
        }
        for (p, offsets) in batch.offsets.sorted(by: { $0.key < $1.key }) {
            guard let facts = partitions[p], !startedSincePoll.contains(p) else {
                actions.append(.discard(p))
                continue
            }
            if let stop = facts.stop, facts.next >= stop {
                actions.append(.discard(p))
                continue
            }
            let next = facts.expectedNext
            guard let first = offsets.first(where: { $0 >= next }), first > next else { continue }
            let decision = jumped(p, from: next, to: first)
            if case .seek = decision { endsToCheck[p] = nil } // that end was reached by the reading just undone
            actions.append(decision)
        }
        return actions
    }

    /// The poll's messages are staged. A partition whose end the consumer reported past the
    /// offset it needs next (with its staged batch) skipped the messages in between: every
    /// message before an end of partition is delivered ahead of it. librdkafka 2.0.2 does
    /// this to a partition that `start` seeks while the end-of-log lookup of its assignment
    /// is in flight (the lookup's outdated reply moves it to the end of the log); on a log
    /// that does not grow it would keep its lag for ever. Handled as a jump (`jumped`).
    mutating func staged(partitions: [Int32: PartitionFacts]) -> [Action] {
        defer { endsToCheck = [:] }
        return endsToCheck.sorted(by: { $0.key < $1.key }).compactMap { p, end in
            guard let facts = partitions[p] else { return nil }
            // Messages from the stop offset on are not applied: an end past it is no gap.
            let reach = facts.stop.map { min($0, end) } ?? end
            guard reach > facts.expectedNext else { return nil }
            return jumped(p, from: facts.expectedNext, to: reach)
        }
    }

    /// The re-seek rule: a batch that starts after the offset a partition needs next is a gap
    /// unless the log really has no message in between. The first time the partition is
    /// sought back there (a fetch from before its start may be stale); if the log still jumps
    /// from the same offset, the offsets in between hold no messages. A solo reading accepts
    /// a jump at once, except the first on a generation's new shard. Either way the driver
    /// first checks that the log still holds `next` (else a gap: an error).
    private mutating func jumped(_ partition: Int32, from next: Int64, to first: Int64) -> Action {
        if (policy.solo && !switched.contains(partition)) || resought[partition] == next {
            return .acceptJump(partition, from: next, to: first)
        }
        resought[partition] = next
        switched.remove(partition)
        return .seek(partition, to: next)
    }

    // MARK: Batches

    /// The batch policy: the partitions whose staged batch is committed now, and claimed
    /// (a group member's). One is due when it has grown to `policy.batch(partitions:)`
    /// events (for the partitions open now), reached the
    /// end of its partition or its stop offset (a live stream commits what it has), or
    /// waited `maximumBatchDelay`; every staged one is when the poll came back empty.
    ///
    /// When the staged batches together outgrow `stagingBytes`, the fullest go first (at
    /// least `commitWidth` of them) until the rest fit again, not all at once: partitions
    /// that fill at the same pace are then staggered, the staged bytes form a staircase from
    /// empty to full whose sum is the budget, and each batch grows to twice the budget's even
    /// share (to `batch(partitions:)` when that is smaller). Committing every partition at once
    /// gave each only one even share: ~2,900 events at 128 partitions with 96 MiB.
    func due(idle: Bool, now: ContinuousClock.Instant, partitions: [Int32: PartitionFacts]) -> [Action] {
        let staged = partitions.filter { $0.value.stagedEnd != nil }
        if idle { return commit(staged.keys.sorted()) }
        let batch = policy.batch(partitions: partitions.count)
        var due = Set(staged.filter { _, f in
            let end = f.stagedEnd ?? 0
            return f.stagedCount >= batch
                || end >= (f.knownEnd ?? .max)
                || (f.stop.map { end >= $0 } ?? false)
                || (f.stagedSince.map { now - $0 >= policy.maximumBatchDelay } ?? false)
        }.keys)
        var kept = staged.filter { !due.contains($0.key) }.values.reduce(0) { $0 + $1.stagedBytes }
        if kept >= policy.stagingBytes {
            let fullestFirst = staged.filter { !due.contains($0.key) }
                .sorted { ($0.value.stagedBytes, $1.key) > ($1.value.stagedBytes, $0.key) }
            for (p, f) in fullestFirst where kept >= policy.stagingBytes || due.count < policy.commitWidth {
                due.insert(p)
                kept -= f.stagedBytes
            }
        }
        return commit(due.sorted())
    }

    /// Stopping: every staged batch is committed, not read again.
    func stopping(partitions: [Int32: PartitionFacts]) -> [Action] {
        commit(partitions.filter { $0.value.stagedEnd != nil }.keys.sorted())
    }

    private func commit(_ partitions: [Int32]) -> [Action] {
        guard !partitions.isEmpty else { return [] }
        // Informational only (lag dashboards); a solo reader is no member of the group.
        return policy.solo ? [.commit(partitions)] : [.commit(partitions), .claim(partitions, waiting: false)]
    }

    /// The driver committed batches with this many events and dead letters.
    mutating func committed(applied: Int) { appliedSinceProgress += applied }

    // MARK: Clocks

    /// Liveness: when the consumer delivered nothing for `connectTimeout`, ask the cluster.
    mutating func heard(anything: Bool, now: ContinuousClock.Instant) -> [Action] {
        if anything { lastHeard = now }
        guard now - lastHeard >= policy.connectTimeout else { return [] }
        lastHeard = now
        return [.probeCluster]
    }

    /// The cluster did not answer: a run that ends by itself stops (rather than keep a lag
    /// that never moves); one that runs until told keeps trying (librdkafka reconnects).
    func clusterDidNotAnswer() -> [Action] {
        policy.stop == .never ? [] : [.stop(.clusterStoppedAnswering)]
    }

    /// Progress, once a second: the events and dead letters committed since, per second.
    mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        guard now - lastProgress >= .seconds(1) else { return [] }
        let rate = Double(appliedSinceProgress) / (now - lastProgress).inSeconds
        appliedSinceProgress = 0
        lastProgress = now
        return [.reportProgress(eventsPerSecond: rate)]
    }

    // MARK: Catch-up

    /// Catch-up: a run that stops by itself ends once the group has given its share (a member
    /// given nothing is caught up on what it owns, too), nothing is staged, and every
    /// partition is at the end of the log with nothing committed this round; with targets,
    /// once every partition has reached the end of the log as it was when it started and
    /// then the targets (asked at most every `targetsInterval`: a log that keeps growing
    /// does not keep the run going).
    mutating func roundEnded(committed: Bool, now: ContinuousClock.Instant, partitions: [Int32: PartitionFacts]) -> [Action] {
        guard policy.stop != .never, assignments.hasAssignment, assignments.held.isEmpty,
              !partitions.values.contains(where: { $0.stagedEnd != nil }) else { return [] }
        if policy.stop == .caughtUp {
            return partitions.values.allSatisfy(\.isCaughtUp) && !committed ? [.stop(.caughtUp)] : []
        }
        guard partitions.values.allSatisfy(Self.reachedStart) else { return [] }
        if let asked = targetsAsked, now - asked < Self.targetsInterval { return [] }
        targetsAsked = now
        return [.askTargets]
    }

    /// The targets asked for (`askTargets`): met when every partition's shard has reached its own.
    func targets(_ wanted: [Int32: Int64], partitions: [Int32: PartitionFacts]) -> [Action] {
        partitions.allSatisfy { p, f in Self.reachedStart(f) && f.next >= wanted[p] ?? 0 } ? [.stop(.caughtUp)] : []
    }

    private static func reachedStart(_ f: PartitionFacts) -> Bool { f.isCaughtUp || f.next >= f.highAtStart ?? 0 }

    // MARK: Dead-letter outbox

    /// The round of forwarding for the partitions with pending dead letters: read each one's outbox.
    func forwarding(pending: [Int32]) -> [Action] {
        pending.sorted().map { .readOutbox($0, after: outbox.cursor(of: $0)) }
    }

    /// A page of the partition's unforwarded dead-letter rows was read (`readOutbox`).
    mutating func unforwarded(_ partition: Int32, rows: [Int64], pageFull: Bool) -> [Action] {
        outbox.unforwarded(partition, rows: rows, pageFull: pageFull)
    }

    /// The DLQ producer reported these deliveries.
    mutating func deliveries(delivered: [Int], failed: [Int]) -> [Action] {
        outbox.deliveries(delivered: delivered, failed: failed)
    }

    /// The driver marked the partition's forwarded rows in its shard.
    mutating func markedForwarded(_ partition: Int32) { outbox.marked(partition) }
}
