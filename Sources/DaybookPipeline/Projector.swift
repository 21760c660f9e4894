import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import DaybookSupport
import Foundation

/// Consumes `health-samples`, applies every event through the core, and keeps one SQLite
/// shard per partition equal to what `daybook rollup` computes from the same log.
///
/// Exactly-once effects: a shard's next offset is written in the same transaction as the
/// changes it covers, and on assignment the consumer is started at that offset, so a
/// crash, a redelivery or a rebalance can neither lose nor double-apply an event. Shards
/// of different partitions are written in parallel.
///
/// The projector is the driver of a `ProjectorStateMachine`: it hands the machine what
/// happened (a poll, the group's changes, a delivery report, the clock) and performs the
/// actions it returns against Kafka and the shards.
public final class Projector: RebalanceHandler {
    let options: ProjectorOptions
    /// What this run is for (`ProjectionRun`).
    let projection: ProjectionRun
    /// The source priority in force: the configuration's, then the one of each generation a
    /// rebuild swaps in.
    public internal(set) var priority: SourcePriority
    /// Where each partition's shard is (re-read when a rebuild swaps the manifest).
    var layout: DataLayout
    let logger: Logger
    let consumer: KafkaConsumer
    let deadLetterProducer: KafkaProducer
    /// Delivery reports of the DLQ producer, waiting to be handed to the machine.
    let reports = DeadLetterReports()
    var workers: [Int32: PartitionWorker] = [:]
    var machine: ProjectorStateMachine
    /// When to wake librdkafka's fetchers after a poll.
    var fetchWake = FetchWake()
    /// Record the keys of recomputed rows in the summary (the demo shows them).
    public var recordChangedKeys = false
    /// What this projector has done so far: the summary's counts, batch times and the newest
    /// applied message's time. Valid during and after `run`, also after it threw.
    public internal(set) var statistics = ProjectorStatistics()
    /// The cluster's id, when it reports one; recorded in each shard and checked on open.
    var clusterID: String?
    /// The producers' partitioner (`ProducerConfiguration.partitioner`) and the topic's
    /// partition count: every message's key is checked against its partition.
    let partitioner: Partitioner
    var partitionCount: Int?
    /// Each partition's high watermark when it was started (for lag before the first fetch).
    var highAtStart: [Int32: Int64] = [:]
    let groupID: String
    let sessionTimeoutMilliseconds: Int
    /// This client's id (`KafkaConnection.clientID`), in owner claims and the roles file.
    let clientID: String
    /// Warm standby shards (`ProjectorOptions.standby`), nil without.
    let standby: StandbyReplicas?
    /// The roles last written to the data directory (`ProjectionRun.recordsRoles`).
    var recordedRoles: ProjectorRoles?
    /// The manifest the standby shards were opened under.
    var standbyLayoutStamp: DataLayout.Stamp?

    public init(connection: KafkaConnection, consumer consumerConfiguration: ConsumerConfiguration,
                producer producerConfiguration: ProducerConfiguration, priority: SourcePriority,
                options: ProjectorOptions, run: ProjectionRun = .live(), logger: Logger) throws {
        self.options = options
        projection = run
        self.priority = priority
        groupID = consumerConfiguration.groupID
        sessionTimeoutMilliseconds = consumerConfiguration.sessionTimeoutMilliseconds
        self.logger = logger
        partitioner = producerConfiguration.partitioner
        machine = ProjectorStateMachine(policy: Self.policy(options, run))
        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        layout = try DataLayout.read(options.dataDirectory)
        try Self.checkPriority(of: layout, directory: options.dataDirectory, configured: priority)
        consumer = try KafkaConsumer(connection: connection, configuration: consumerConfiguration, logger: logger)
        clientID = connection.clientID
        standby = try options.standby.map {
            try StandbyReplicas(choice: $0, connection: connection, consumer: consumerConfiguration, logger: logger)
        }
        let reports = self.reports
        deadLetterProducer = try KafkaProducer(connection: connection, configuration: producerConfiguration, logger: logger) { report in
            if report.error == nil { reports.delivered.append(report.id) } else { reports.failed.append(report.id) }
        }
    }

    static func policy(_ options: ProjectorOptions, _ run: ProjectionRun) -> ProjectorStateMachine.Policy {
        ProjectorStateMachine.Policy(
            solo: options.solo || run.readsDirectly,
            stop: !run.untilCaughtUp ? .never : run.catchUpTargets == nil ? .caughtUp : .caughtUpWithTargets,
            followsGenerations: run.followsGenerations, minimumBatch: options.minimumBatch,
            largestBatch: options.largestBatch, eventsInFlight: options.eventsInFlight,
            maximumBatchDelay: options.maximumBatchDelay, stagingBytes: options.stagingBytes,
            commitWidth: max(1, ProcessInfo.processInfo.activeProcessorCount), connectTimeout: options.connectTimeout)
    }

    final class DeadLetterReports {
        var delivered: [Int] = []
        var failed: [Int] = []
    }

    var solo: Bool { machine.policy.solo }

    // MARK: RebalanceHandler

    // Run inside librdkafka's rebalance callback (within `poll`, on the loop's thread): only
    // record. The loop acts on them (`ProjectorStateMachine.assignmentsChanged`).
    public func assigned(_ partitions: [TopicPartition]) {
        machine.assigned(partitions.filter { $0.topic == options.topic }.map(\.partition))
    }

    public func revoked(_ partitions: [TopicPartition]) {
        machine.revoked(partitions.map(\.partition))
    }

    // MARK: Running

    /// Projects until `shouldStop()` says so, or (a run `untilCaughtUp`) until every assigned
    /// partition is at the end of the log. Throws `ProjectorError` on a storage, shard or
    /// Kafka failure, after which no offset has moved past an unapplied event.
    public func run(shouldStop: () -> Bool, progress: (ProjectorProgress) -> Void) throws(ProjectorError) -> ProjectorSummary {
        var summary = ProjectorSummary()
        let started = ContinuousClock.now
        machine = ProjectorStateMachine(policy: machine.policy, now: started)
        guard try start(shouldStop: shouldStop) else { return summary }
        defer { finish() }
        var ending: ProjectorStateMachine.Ending?
        while ending == nil, !shouldStop() {
            ending = try round(&summary, progress: progress)
        }
        summary.caughtUp = ending == .caughtUp
        // Stopped (caught up, a signal, the caller): what is staged is committed, not read again.
        _ = try perform(machine.stopping(partitions: facts()), into: &summary)
        summary.seconds = (ContinuousClock.now - started).inSeconds
        summary.statistics = statistics
        progress(snapshot(rate: summary.seconds > 0 ? Double(summary.applied + summary.deadLetters) / summary.seconds : 0))
        return summary
    }

    /// One round of the loop: follow a new generation and the group, poll, check and stage
    /// what the poll read, commit what is due, forward dead letters, feed the standbys,
    /// report progress; returns how the run ends, if it does.
    private func round(_ summary: inout ProjectorSummary,
                       progress: (ProjectorProgress) -> Void) throws(ProjectorError) -> ProjectorStateMachine.Ending? {
        if DataLayout.currentStamp(options.dataDirectory) != layout.stamp, let e = try perform(machine.manifestChanged(), into: &summary) { return e }
        if let e = try perform(machine.assignmentsChanged(), into: &summary) { return e }
        followStandbysAcrossGenerations()
        machine.polling()
        let wait = machine.pollWait(partitions: facts())
        var events = consumer.poll(maxMessages: options.batchSize, timeoutMilliseconds: wait.wholeMilliseconds)
        if fetchWake.afterPoll(read: events.count, asked: options.batchSize, now: .now, behind: anyPartitionBehind) {
            if consumer.wakeFetchersInBackground(of: workers.values.map(\.partition).sorted()) { statistics.fetcherWakes += 1 }
        }
        if let e = try perform(machine.heard(anything: !events.isEmpty, now: .now), into: &summary) { return e }
        // What the group changed during this poll is acted on before its messages count:
        // a revoked partition's messages are not applied, and neither is what was read of
        // a partition before it was started again: it is read again from its shard's offset.
        if let e = try perform(machine.assignmentsChanged(), into: &summary) { return e }
        let (batch, sorted) = sort(&events)
        var messages = sorted
        if let e = try perform(machine.polled(batch, partitions: facts()), into: &summary, messages: &messages) { return e }
        let idle = messages.values.allSatisfy(\.isEmpty)
        stageInParallel(messages)
        messages.removeAll() // librdkafka's buffers go back now; the staged events are copies
        if let e = try perform(machine.staged(partitions: facts()), into: &summary) { return e }
        let due = machine.due(idle: idle, now: .now, partitions: facts())
        if let e = try perform(due, into: &summary) { return e }
        if projection.forwardsDeadLetters { forwardDeadLetters() }
        applyStandbys()
        if let rate = machine.tick(now: .now).eventsPerSecond { progress(snapshot(rate: rate)) }
        return try perform(machine.roundEnded(committed: !due.isEmpty, now: .now, partitions: facts()), into: &summary)
    }

    /// Performs the machine's actions in order; returns how the run ends, if one says so.
    /// `messages` are this poll's, by partition, for the actions that drop some of them.
    func perform(_ actions: [ProjectorStateMachine.Action], into summary: inout ProjectorSummary,
                 messages: inout [Int32: [ConsumedMessage]]) throws(ProjectorError) -> ProjectorStateMachine.Ending? {
        for action in actions {
            switch action {
            case .close(let partitions): for p in partitions { workers[p] = nil } // closes the shard, lets go of its lock
            case .releaseStandbys(let partitions): standby?.release(partitions) // their owner opens the same shards next
            case .open(let partitions): try open(partitions)
            case .ownershipChanged: ownershipChanged()
            case .claim(let partitions, let waiting): claim(partitions, waiting: waiting)
            case .followGeneration: try followManifest()
            case .recordEnd(let p, let end): workers[p]?.endOffset = end
            case .discard(let p): messages[p] = nil
            case .seek(let p, let next): try seekBack(p, to: next, messages: &messages)
            case .acceptJump(let p, let next, let first): try acceptJump(p, from: next, to: first)
            case .outOfRange(let p, let offset): try outOfRange(p, offset: offset)
            case .commit(let partitions): machine.committed(applied: try commit(partitions, into: &summary))
            case .probeCluster:
                guard let silence = probeCluster() else { break }
                guard machine.clusterDidNotAnswer().isEmpty else {
                    throw ProjectorError(kind: .kafka, message: silence + "; nothing past the shards' offsets was lost: rerun once it is back")
                }
                logger.warning(silence + "; retrying")
            case .askTargets: return try perform(machine.targets(try catchUpTargets(), partitions: facts()), into: &summary)
            case .readOutbox, .forward, .outboxPending, .markForwarded, .retryOpen, .reportProgress:
                break // performed where they are asked for (`forwardDeadLetters`, `openHandedOver`, `run`)
            case .stop(.generationSwapped):
                throw ProjectorError(kind: .interrupted, message: "a rebuild swapped in a new generation of shards in \(options.dataDirectory) meanwhile; this run worked on the previous one and stopped. The new shards were built from the log: run verify, and rerun this command if it is still needed")
            case .stop(let ending): return ending
            }
        }
        return nil
    }

    func perform(_ actions: [ProjectorStateMachine.Action], into summary: inout ProjectorSummary) throws(ProjectorError) -> ProjectorStateMachine.Ending? {
        var none: [Int32: [ConsumedMessage]] = [:]
        return try perform(actions, into: &summary, messages: &none)
    }

    /// The facts of each open partition, for the machine's decisions.
    func facts() -> [Int32: PartitionFacts] {
        workers.mapValues { w in
            let start = highAtStart[w.partition.partition]
            // Where reading resumes: after what is staged, else the shard's offset or a re-read's.
            let read = w.stagedEnd ?? w.position
            let high = max(consumer.cachedHighWatermark(w.partition) ?? -1, start ?? -1)
            return PartitionFacts(next: w.shard.nextOffset, stagedEnd: w.stagedEnd, stagedCount: w.stagedCount, stagedBytes: w.stagedBytes,
                                  stagedSince: w.stagedSince, end: w.endOffset, stop: w.stopOffset, highAtStart: start,
                                  highRead: high >= 0 && read >= high ? high : nil)
        }
    }

    /// Whether a worker's partition has messages it has not read, by the high watermark of
    /// the last fetch (no broker asked).
    private func anyPartitionBehind() -> Bool {
        workers.values.contains { w in (consumer.cachedHighWatermark(w.partition) ?? 0) > w.expectedNext }
    }

    /// Sorts this poll's messages of the topic by partition; returns what the machine reads of
    /// the poll, and the messages by partition.
    private func sort(_ events: inout [ConsumerEvent]) -> (PolledBatch, [Int32: [ConsumedMessage]]) {
        var batch = PolledBatch()
        var messages: [Int32: [ConsumedMessage]] = [:]
        // By partition number while sorting (a dictionary probe per message cost ~200
        // instructions of SipHash); partitions are numbered from 0.
        var byNumber: [[ConsumedMessage]] = []
        // Each event moved out of the poll's array, a placeholder left in its slot (no
        // reference): a `for` over the array copied every message and released it again
        // (~230 instructions a message). The array is emptied at the end.
        let placeholder = ConsumerEvent.endOfPartition(TopicPartition("", -1), offset: 0)
        events.withUnsafeMutableBufferPointer { slots in
            guard let base = slots.baseAddress else { return }
            for i in slots.indices {
                let event = (base + i).move()
                (base + i).initialize(to: placeholder)
                // No `where` on a case: a guard that may fall through to the next case made the
                // switch copy the message out instead of moving it.
                switch consume event {
                case .message(let m):
                    guard m.topicPartition.topic == options.topic else { continue }
                    let p = Int(m.topicPartition.partition)
                    guard p >= 0 else {
                        messages[m.topicPartition.partition, default: []].append(m)
                        continue
                    }
                    if p >= byNumber.count { byNumber += Array(repeating: [], count: p + 1 - byNumber.count) }
                    byNumber[p].append(m)
                case .endOfPartition(let tp, let offset):
                    batch.ends[tp.partition] = offset
                case .offsetOutOfRange(let tp, let offset):
                    guard tp.topic == options.topic else { continue }
                    batch.outOfRange[tp.partition] = batch.outOfRange[tp.partition] ?? offset
                case .error(let e):
                    logger.warning("consumer: \(e)")
                }
            }
        }
        events.removeAll()
        // Each array itself, not its messages one by one (each a retain); only a negative
        // partition number (never one of Kafka's) went to the dictionary above.
        for p in byNumber.indices where !byNumber[p].isEmpty { messages[Int32(p)] = byNumber[p] }
        batch.offsets = messages.mapValues { $0.map(\.offset) }
        return (batch, messages)
    }

    /// Decodes each partition's messages into its worker's staged batch, the partitions in
    /// parallel (decoding is a tenth of the work).
    private func stageInParallel(_ byPartition: [Int32: [ConsumedMessage]]) {
        let jobs: [(PartitionWorker, [ConsumedMessage])] = byPartition.compactMap { partition, messages in
            workers[partition].map { ($0, messages) } // revoked since the poll: not ours any more
        }
        guard !jobs.isEmpty else { return }
        // Each task stages into its own worker only.
        for c in jobs.parallelMap({ worker, messages in worker.stage(messages[...]) }) {
            statistics.skipped += c.skipped
            statistics.reread += c.reread
        }
    }

    /// Commits the staged batches of `partitions`, in parallel (each its own shard), and
    /// counts what they did; returns the events and dead letters applied. Every partition's
    /// outcome is kept: a failed one's worker is dropped, the others' commits stand.
    private func commit(_ partitions: [Int32], into summary: inout ProjectorSummary) throws(ProjectorError) -> Int {
        let jobs = partitions.compactMap { workers[$0] }
        guard !jobs.isEmpty else { return 0 }
        let batchStarted = ContinuousClock.now
        let results = jobs.parallelMap { worker in Result { try worker.commitStaged() } }
        statistics.batchSeconds.observe((ContinuousClock.now - batchStarted).inSeconds)
        var applied = 0
        var firstError: Error?
        for (worker, result) in zip(jobs, results) {
            switch result {
            case .success(let outcome):
                statistics.add(outcome)
                applied += outcome.applied + outcome.deadLetters
                if recordChangedKeys { summary.changedKeys.formUnion(outcome.rows.keys) }
            case .failure(let error):
                firstError = firstError ?? error
                workers[worker.partition.partition] = nil
            }
        }
        if let firstError { throw ProjectorError(firstError) }
        return applied
    }

    private func snapshot(rate: Double) -> ProjectorProgress {
        let parts = workers.sorted(by: { $0.key < $1.key }).map { p, w -> (Int32, Int64, Int64?) in
            // The end seen in the last fetch, else at the last end of partition, else when the
            // partition was started: never "lag 0" only because no fetch has answered yet.
            (p, w.position, consumer.cachedHighWatermark(w.partition) ?? w.endOffset ?? highAtStart[p])
        }
        var progress = ProjectorProgress(applied: statistics.applied, deadLetters: statistics.deadLetters, eventsPerSecond: rate, partitions: parts)
        progress.statistics = statistics
        progress.standbys = standby?.lags() ?? []
        if machine.waitingForGroup {
            progress.waiting = "waiting for consumer group \(groupID) to assign partitions (a member that restarted waits until its old membership expires: session.timeout.ms = \(sessionTimeoutMilliseconds / 1_000) s)"
        }
        return progress
    }
}

extension [ProjectorStateMachine.Action] {
    /// The rate a progress report asks for, if one does.
    var eventsPerSecond: Double? {
        for case .reportProgress(let rate) in self { return rate }
        return nil
    }
}
