import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import DaybookSupport
import Foundation

/// What a projector is asked to do.
public struct ProjectorOptions: Sendable {
    /// Where the shards live (created if missing).
    public var dataDirectory: String
    /// Default: `health-samples`.
    public var topic = "health-samples"
    /// Where dead letters are forwarded. Default: `health-samples.dlq`.
    public var deadLetterTopic = "health-samples.dlq"
    /// Exit once every assigned partition has reached the end of the log. Default: false.
    public var untilCaughtUp = false
    /// Take every partition directly instead of joining the group (restart without waiting
    /// for a session timeout; shard locks still keep a second projector out). Default: false.
    public var solo = false
    /// Messages read per poll, decoded into each partition's staged batch at once (librdkafka's
    /// buffers go back after each poll). Default: 16384 (measured on 1M events in arrival
    /// order, 64 partitions: 236–245 MiB peak against 257–268 with 50000, ~5 % more CPU).
    public var batchSize = 16_384
    /// A partition's staged events are committed as one transaction once there are this
    /// many (a load and a commit cost about the same for 800 events of a shard's users as
    /// for 4,000). Default: 4096.
    public var minimumBatch = 4_096
    /// ... or once the oldest of them has waited this long. A live stream does not wait for
    /// it: a batch that reaches the partition's end commits at once; this bounds a catch-up
    /// whose end is not known yet. Default: 5 s (1 s cut the 1M arrival-order batches
    /// short: 29k cache misses against 22k, ~12 % more CPU).
    public var maximumBatchDelay: Duration = .seconds(5)
    /// ... or once all partitions' staged events together take about this many bytes
    /// (decoded, not librdkafka's buffers, which go back after each poll). Default: 96 MiB
    /// (48 left 4M events over 128 partitions with batches of ~1,900: 62k events/s against
    /// 77k; at 1M over 64 the 4,096 minimum decides either way).
    public var stagingBytes = 96 << 20
    /// How long to wait for the cluster to answer at start-up before giving up. Default: 30 s.
    public var connectTimeout: Duration = .seconds(30)
    /// Memory for cached samples and SQLite pages, in bytes, shared by all partitions
    /// (config `state.cache_mb`). Default: 32 MiB.
    public var cacheBytes = 32 << 20
    /// With `solo`: only these partitions (default: all of the topic's).
    public var partitions: [Int32]?
    /// Apply each listed partition only below this offset, and count it caught up there
    /// (`verify` and `diff` rebuild up to the live shards' offsets). Default: none.
    public var stopOffsets: [Int32: Int64] = [:]
    /// With `untilCaughtUp`: offsets each partition must also have reached before the run
    /// ends, asked again while the run is at the end of the log (`rebuild` catches up with a
    /// live projector that keeps moving). Default: none.
    public var catchUpTargets: (@Sendable () throws -> [Int32: Int64])?
    /// With `solo`: start these partitions here instead of at their shard's offset. Offsets
    /// below the shard's are re-read (`Ledger.reapply`): nothing steps back, and every day
    /// a re-read event covers is recomputed (`daybook replay`). Default: none.
    public var startOffsets: [Int32: Int64] = [:]
    /// Forward dead letters to the DLQ topic. A rebuild meets the dead letters the live
    /// projector already forwarded, so it does not. Default: true.
    public var forwardDeadLetters = true
    /// Move to the shards of a generation a rebuild swaps in (a projector). When false the
    /// run stops instead (`replay`: its re-reading belongs to the shards it started on).
    /// Default: true.
    public var followGenerations = true
    /// Also keep warm standby shards of these partitions while this member does not own
    /// them (`StandbyReplicas`). Default: none.
    public var standby: StandbyChoice?
    /// Record what this projector does with each partition in the data directory
    /// (`ProjectorRoles`), for `status` and readers. Default: false (a rebuild's or a
    /// verify's projection is nobody's).
    public var recordRoles = false

    public init(dataDirectory: String) { self.dataDirectory = dataDirectory }
}

/// A moment of a projector's progress, for live lines and logs.
public struct ProjectorProgress: Sendable {
    public var applied: Int
    public var deadLetters: Int
    public var eventsPerSecond: Double
    /// Per assigned partition: (partition, next offset to apply — below the shard's while
    /// re-reading — end of the log if known).
    public var partitions: [(partition: Int32, next: Int64, end: Int64?)]
    /// Set while a group member has no partitions yet: what it is waiting for.
    public var waiting: String?
    /// Per warm standby partition (`ProjectorOptions.standby`): (partition, next offset, end of the log if known).
    public var standbys: [(partition: Int32, next: Int64, end: Int64?)] = []
    /// Everything counted since the projector started (for a metrics file).
    public var statistics = ProjectorStatistics()

    public var lag: Int64 { partitions.reduce(0) { $0 + max(0, ($1.end ?? $1.next) - $1.next) } }

    /// Seconds until caught up at the current rate, when it can be told.
    public var eta: Double? { eventsPerSecond > 0 ? Double(lag) / eventsPerSecond : nil }

    public var line: String { line("project") }

    /// The progress line of `command` (project, rebuild, verify…).
    public func line(_ command: String) -> String {
        if let waiting { return "\(command): \(applied) applied; \(waiting)" }
        let lags = partitions.map { "p\($0.partition):\(max(0, ($0.end ?? $0.next) - $0.next))" }.joined(separator: " ")
        let etaText = eta.map { String(format: "%.0fs", $0) } ?? "?"
        let standbyText = standbys.isEmpty ? "" : "; standby lag " + standbys.map { "p\($0.partition):\(max(0, ($0.end ?? $0.next) - $0.next))" }.joined(separator: " ")
        return "\(command): \(applied) applied, \(String(format: "%.0f", eventsPerSecond)) events/s, lag \(lag) [\(lags)], eta \(etaText), dead letters \(deadLetters)" + standbyText
    }
}

/// What `Projector.run` returns: its statistics as they ended, and how the run ended.
public struct ProjectorSummary: Sendable {
    public var statistics = ProjectorStatistics()
    public var seconds: Double = 0
    public var caughtUp = false
    /// (user, metric, day) rows recomputed, when `recordChangedKeys` was set.
    public var changedKeys: Set<DayKey> = []

    public var applied: Int { statistics.applied }
    public var skipped: Int { statistics.skipped }
    /// Events re-read below a shard's offset (`startOffsets`).
    public var reread: Int { statistics.reread }
    public var deadLetters: Int { statistics.deadLetters }
    public var rowsChanged: Int { statistics.rowsChanged }
    public var staleResends: Int { statistics.staleResends }
    /// Polls whose messages were applied (each partition's share one transaction).
    public var batches: Int { statistics.batches }
}

/// Why the projector stopped.
public struct ProjectorError: Error, CustomStringConvertible {
    public enum Kind: Sendable {
        case storage, kafka, shard
        /// The request names something the log does not have (a partition, an offset).
        case badRequest
        /// Stopped (a signal) before the work was done; rerunning carries on or starts over.
        case interrupted
        /// The log does not hold what the shard needs next: a gap (retention deleted it) or a
        /// log that ends before the shard's offset (topic recreated, another cluster).
        case logMismatch
    }
    public var kind: Kind
    public var message: String
    /// For `.shard`: what is wrong with the shard (held, another priority, not a shard…).
    public var shardKind: Shard.ShardError.Kind? = nil
    /// For `.shard`: the facts of the shard's refusal, when the store gave them.
    public var shardDetail: Shard.ShardError.Detail? = nil
    /// For `.badRequest`: the partition asked for that the topic does not have.
    public var partition: Int32? = nil
    /// What was refused, in fields, for a caller that words the next step its own way
    /// (a command line names its options); `message` says it in this library's terms.
    public var detail: Detail? = nil

    public enum Detail: Sendable, Equatable {
        /// The shard at `path` records another cluster than the one the consumer reaches.
        case otherCluster(path: String, recorded: String, reached: String)
        /// `directory` has a shard of a partition the topic (of `count`) does not have.
        case partitionMissing(directory: String, topic: String, partition: Int32, path: String, count: Int)
        /// The log starts after the offset the shard needs next: messages are gone.
        case gap(path: String, tp: TopicPartition, next: Int64, low: Int64)
        /// The log ends before the shard's offset: it is not the log the shard was built from.
        case aheadOfLog(path: String, tp: TopicPartition, next: Int64, high: Int64)
        /// `directory` holds a generation built (by a rebuild) under another priority.
        case directoryPriority(directory: String, generation: Int, built: String, configured: String)
        /// A rebuild of some `partitions` under another priority than the live projection's.
        case partialRebuildPriority(live: String, wanted: String, partitions: [Int32])
    }
    /// For `.kafka`: the Kafka layer's error, when one caused it (its code says which).
    public var kafkaError: KafkaError? = nil
    public var description: String { message }
}

/// Consumes `health-samples`, applies every event through the core, and keeps one SQLite
/// shard per partition equal to what `daybook rollup` computes from the same log.
///
/// Exactly-once effects: a shard's next offset is written in the same transaction as the
/// changes it covers, and on assignment the consumer is started at that offset, so a
/// crash, a redelivery or a rebalance can neither lose nor double-apply an event. Shards
/// of different partitions are written in parallel.
public final class Projector: RebalanceHandler {
    private let options: ProjectorOptions
    /// The source priority in force: the configuration's, then the one of each generation a
    /// rebuild swaps in.
    public private(set) var priority: SourcePriority
    /// Where each partition's shard is (re-read when a rebuild swaps the manifest).
    private var layout: DataLayout
    private let logger: Logger
    private let consumer: KafkaConsumer
    private let deadLetters: KafkaProducer
    /// Delivery reports of the DLQ producer, waiting to be marked in the shards.
    private let reports = DeadLetterReports()
    /// Dead-letter rows handed to the producer and not yet reported, per partition.
    private var inFlight: [Int32: Set<Int64>] = [:]
    private var workers: [Int32: PartitionWorker] = [:]
    private var forwardedIDs: [Int32: [Int64]] = [:]
    private var outboxIDs: [Int: (partition: Int32, row: Int64)] = [:]
    private var nextOutboxID = 0
    /// Record the keys of recomputed rows in the summary (the demo shows them).
    public var recordChangedKeys = false
    /// What this projector has done so far: the summary's counts, batch times and the newest
    /// applied message's time. Valid during and after `run`, also after it threw.
    public private(set) var statistics = ProjectorStatistics()

    public init(connection: KafkaConnection, consumer consumerConfiguration: ConsumerConfiguration,
                producer producerConfiguration: ProducerConfiguration, priority: SourcePriority,
                options: ProjectorOptions, logger: Logger) throws {
        self.options = options
        self.priority = priority
        groupID = consumerConfiguration.groupID
        sessionTimeoutMilliseconds = consumerConfiguration.sessionTimeoutMilliseconds
        self.logger = logger
        partitioner = producerConfiguration.partitioner
        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        layout = try DataLayout.read(options.dataDirectory)
        if let built = layout.priority, !built.ranksLike(priority) {
            var error = ProjectorError(kind: .shard, message: """
                \(options.dataDirectory) holds a projection built under source priority \(built.fingerprint) (generation \
                \(layout.generation), by a rebuild), not \(priority.fingerprint) as configured. Project under that order, \
                or rebuild the directory under yours.
                """, shardKind: .priorityMismatch)
            error.detail = .directoryPriority(directory: options.dataDirectory, generation: layout.generation,
                                              built: built.fingerprint, configured: priority.fingerprint)
            throw error
        }
        consumer = try KafkaConsumer(connection: connection, configuration: consumerConfiguration, logger: logger)
        clientID = connection.clientID
        standby = try options.standby.map {
            try StandbyReplicas(choice: $0, connection: connection, consumer: consumerConfiguration, logger: logger)
        }
        let reports = self.reports
        deadLetters = try KafkaProducer(connection: connection, configuration: producerConfiguration, logger: logger) { report in
            if report.error == nil { reports.delivered.append(report.id) } else { reports.failed.append(report.id) }
        }
    }

    private final class DeadLetterReports {
        var delivered: [Int] = []
        var failed: [Int] = []
    }

    // MARK: RebalanceHandler

    // Run inside librdkafka's rebalance callback: only record. The poll loop closes what
    // was taken away and opens, checks and starts what was given (`actOnAssignments`).
    public func assigned(_ partitions: [TopicPartition]) {
        assignments.assigned(partitions.filter { $0.topic == options.topic }.map(\.partition))
    }

    public func revoked(_ partitions: [TopicPartition]) {
        assignments.revoked(partitions.map(\.partition))
    }

    /// What the group gave and took, waiting for the poll loop to act on it.
    private var assignments = Assignments()
    /// The cluster's id, when it reports one; recorded in each shard and checked on open.
    private var clusterID: String?
    /// The producers' partitioner (`ProducerConfiguration.partitioner`) and the topic's
    /// partition count: every message's key is checked against its partition.
    private let partitioner: Partitioner
    private var partitionCount: Int?
    /// Each partition's high watermark when it was started (for lag before the first fetch).
    private var highAtStart: [Int32: Int64] = [:]
    private let groupID: String
    /// This client's id (`KafkaConnection.clientID`), in owner claims and the roles file.
    let clientID: String
    /// Warm standby shards (`ProjectorOptions.standby`), nil without.
    let standby: StandbyReplicas?
    /// The roles last written to the data directory (`ProjectorOptions.recordRoles`).
    var recordedRoles: ProjectorRoles?
    /// The manifest the standby shards were opened under.
    var standbyLayoutStamp: DataLayout.Stamp?

    // What Projector+Standby.swift reads of the projector.
    var workersByPartition: Dictionary<Int32, PartitionWorker>.Keys { workers.keys }
    var assignmentsHeld: Set<Int32> { assignments.held }
    var topicPartitionCount: Int? { partitionCount }
    var currentLayoutStamp: DataLayout.Stamp { layout.stamp }
    var batchSizeOption: Int { options.batchSize }
    var isSolo: Bool { options.solo }
    var kafkaConsumer: KafkaConsumer { consumer }
    var recordsRoles: Bool { options.recordRoles }
    var topicName: String { options.topic }
    var dataDirectory: String { options.dataDirectory }
    var partitionerName: String { partitioner.rawValue }
    func logWarning(_ message: String) { logger.warning(message) }
    func resizeCaches() { shareCache() }
    /// Opens a standby shard as an owned one is opened, and checks it against the log.
    func openStandbyWorker(_ partition: Int32) throws -> PartitionWorker {
        let worker = try openWorker(partition)
        try checkLog(worker.shard)
        return worker
    }
    private let sessionTimeoutMilliseconds: Int
    /// Per partition, the last dead-letter row handed to the DLQ producer.
    private var outboxCursor: [Int32: Int64] = [:]
    static let outboxPage = 1_000
    static let dlqPayloadLimit = 512 * 1_024
    /// Partitions re-sought once after a jump in offsets, and where (see `checkContinuity`).
    private var resought: [Int32: Int64] = [:]
    /// Partitions sought to a new generation's shard: a first jump there is re-sought, solo too.
    private var switched: Set<Int32> = []
    /// When `catchUpTargets` was last asked, and whether the targets were met.
    private var targetsAsked: ContinuousClock.Instant?

    private func openWorker(_ partition: Int32) throws -> PartitionWorker {
        if let existing = workers[partition], !existing.broken { return existing }
        // Never wait for a lock: a second projector on the same data must stop at once.
        let path = layout.path(topic: options.topic, partition: partition)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let shard = try Shard(path: path, topic: options.topic, partition: partition,
                              fingerprint: priority.fingerprint, lockTimeout: .zero)
        try checkCluster(shard)
        let worker = PartitionWorker(shard: shard, priority: priority, cacheBudgetBytes: options.cacheBytes)
        let recomputed = try worker.projection.recomputeRowsBeforeVersions()
        if recomputed > 0 {
            // Once per shard, on the first open after an upgrade: worth saying without --verbose.
            logger.warning("partition \(partition): \(recomputed) rows written before sample versions recomputed from the shard's samples (same-rank ties now go by version, not log position)")
        }
        worker.stopOffset = options.stopOffsets[partition]
        worker.placement = partitionCount.map { (partitioner, $0) }
        forgetOutbox(partition)
        logger.info("partition \(partition): shard at offset \(shard.nextOffset)")
        return worker
    }

    /// One cache budget for the process: three quarters shared equally by the open shards'
    /// ledgers, a quarter for SQLite's page cache, shared by the shards a batch works on at
    /// once (one per core; a shard gives its pages back after each commit).
    private func shareCache() {
        // Standby shards share the one budget with the owned ones.
        let all = Array(workers.values) + Array(standby?.workers.values ?? [:].values)
        let share = options.cacheBytes / max(1, all.count)
        let pages = options.cacheBytes / 4 / max(1, min(all.count, ProcessInfo.processInfo.activeProcessorCount))
        for worker in all {
            worker.ledger.cacheBudgetBytes = share / 4 * 3
            do {
                try worker.shard.setPageCache(kilobytes: pages / 1_024)
            } catch {
                logger.warning("partition \(worker.partition.partition): cannot size the page cache: \(error)")
            }
        }
    }

    /// Closes the shards of partitions the group took away and opens, checks and starts
    /// those it gave, since the loop last acted; returns the partitions it started.
    @discardableResult
    private func actOnAssignments() throws -> Set<Int32> {
        let actions = assignments.take()
        guard !actions.isEmpty else { return [] }
        for partition in actions.close {
            workers[partition] = nil // closes the shard and lets go of its lock
        }
        standby?.release(actions.start) // their owner opens the same shards next
        var offsets: [TopicPartition: Int64] = [:]
        for partition in actions.start {
            let worker = try openHandedOver(partition)
            try checkLog(worker.shard)
            workers[partition] = worker
            offsets[worker.partition] = worker.shard.nextOffset
            resought[partition] = nil // a new reading: a jump in it is sought back once again
        }
        assignments.started(actions.start)
        followStandbys()
        shareCache()
        recordRoles()
        guard !offsets.isEmpty else { return [] }
        do {
            try consumer.start(offsets)
        } catch {
            throw ProjectorError(kind: .kafka, message: "starting \(offsets.keys.sorted().map(\.description).joined(separator: ", ")): \(error)")
        }
        claim(offsets, waiting: true)
        return Set(actions.start)
    }

    /// Opens the shard of a partition the group gave. A member of the group on the same
    /// data directory that was given it before closes it from its own poll loop, right after
    /// its rebalance callback: its lock is waited for briefly, then refused as any other.
    private func openHandedOver(_ partition: Int32) throws -> PartitionWorker {
        let deadline = ContinuousClock.now + Self.handoverWait
        while true {
            do {
                return try openWorker(partition)
            } catch let error as Shard.ShardError where error.kind == .locked && ContinuousClock.now < deadline {
                usleep(20_000)
            }
        }
    }

    static let handoverWait: Duration = .seconds(1)

    /// Refuses a shard whose offsets belong to another cluster's log.
    private func checkCluster(_ shard: Shard) throws {
        guard let clusterID else { return }
        if let recorded = try shard.clusterID() {
            try LiveLogCheck.checkCluster(path: shard.path, recorded: recorded, reached: clusterID)
        } else {
            try shard.recordClusterID(clusterID)
        }
    }

    /// Before reading, the shard's next offset must lie inside the partition's log:
    /// `low ≤ next ≤ high`. Anything else is a gap or a different log, never skipped silently.
    @discardableResult
    private func checkLog(_ shard: Shard) throws -> (low: Int64, high: Int64) {
        let tp = TopicPartition(options.topic, shard.partition)
        let marks: (low: Int64, high: Int64)
        do {
            marks = try consumer.watermarks(tp, timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
        } catch {
            throw ProjectorError(kind: .kafka, message: "reading the offsets of \(tp): \(error)")
        }
        try Self.check(shard: shard, tp: tp, low: marks.low, high: marks.high)
        highAtStart[shard.partition] = marks.high
        return marks
    }

    /// A re-read (`startOffsets`) cannot start before the first offset the log still holds.
    static func checkRereadStart(_ start: Int64, tp: TopicPartition, low: Int64) throws(ProjectorError) {
        guard start >= low else {
            throw ProjectorError(kind: .badRequest, message: "\(tp): offset \(start) is before the first offset the log still holds (\(low)); re-read from \(low) or later")
        }
    }

    static func check(shard: Shard, tp: TopicPartition, low: Int64, high: Int64) throws {
        try LiveLogCheck.checkOffset(path: shard.path, next: shard.nextOffset, tp: tp, low: low, high: high)
    }

    /// A batch that starts after the shard's next offset is a gap unless the log really has
    /// no message in between (transaction markers, compaction). The first time, the
    /// partition is sought back to the shard's offset (a fetch from before its start may be
    /// stale); if the log still jumps there, the offsets in between hold no messages.
    private func checkContinuity(_ worker: PartitionWorker, first: Int64) throws -> Bool {
        let next = worker.expectedNext
        guard first > next else { return true }
        let tp = worker.partition
        let low: Int64
        let high: Int64
        do {
            (low, high) = try consumer.watermarks(tp, timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
        } catch {
            throw ProjectorError(kind: .kafka, message: "reading the offsets of \(tp): \(error)")
        }
        try Self.check(shard: worker.shard, tp: tp, low: low, high: high)
        if (options.solo && !switched.contains(tp.partition)) || resought[tp.partition] == next {
            logger.info("\(tp): offsets \(next)..<\(first) hold no messages (transaction markers or compaction)")
            return true
        }
        resought[tp.partition] = next
        switched.remove(tp.partition)
        do {
            try consumer.seek([tp: next])
        } catch {
            throw ProjectorError(kind: .kafka, message: "seeking \(tp) back to \(next): \(error)")
        }
        return false
    }

    /// A partition whose end the consumer reports past the next offset its shard (with the
    /// staged batch) needs has skipped the messages in between: every message before an end
    /// of partition is delivered ahead of it. librdkafka 2.0.2 does this to a partition that
    /// `start` seeks while the end-of-log lookup of its assignment is still in flight: the
    /// lookup's reply, outdated by the seek, restarts the lookup, which moves the partition
    /// to the end of the log and undoes the seek. On a log that is not growing nothing else
    /// arrives, and the partition would keep its lag for ever. Handled as a jump in the
    /// offsets (`checkContinuity`): sought back to the shard's offset once.
    private func checkEnds(_ ends: [Int32: Int64]) throws {
        for (partition, end) in ends {
            guard let worker = workers[partition] else { continue }
            // Messages from the stop offset on are not applied: an end past it is no gap.
            let reach = worker.stopOffset.map { min($0, end) } ?? end
            guard reach > worker.expectedNext else { continue }
            logger.info("\(worker.partition): the consumer reached the end of the log at \(end) while the shard needs \(worker.expectedNext) next")
            _ = try checkContinuity(worker, first: reach)
        }
    }

    /// When the consumer delivered nothing for `connectTimeout`, asks the cluster for its
    /// metadata: a cluster that went away ends an `--until-caught-up` run with a Kafka error
    /// (exit 69) instead of a lag that never moves; a long-running projector warns and
    /// keeps trying (librdkafka reconnects by itself).
    private func checkClusterStillAnswers(heardFrom: Bool) throws {
        let now = ContinuousClock.now
        if heardFrom { lastHeard = now }
        guard now - lastHeard >= options.connectTimeout else { return }
        lastHeard = now
        do {
            _ = try consumer.partitionCount(options.topic, timeoutMilliseconds: max(1, min(5_000, options.connectTimeout.wholeMilliseconds)))
        } catch {
            let message = "the Kafka cluster stopped answering (nothing for \(options.connectTimeout), then \(error))"
            if options.untilCaughtUp { throw ProjectorError(kind: .kafka, message: message + "; nothing past the shards' offsets was lost: rerun once it is back") }
            logger.warning(message + "; retrying")
        }
    }

    private var lastHeard = ContinuousClock.now

    /// With `catchUpTargets`: whether every partition has reached the end of the log as it
    /// was when it started, and its target (asked at most every 250 ms; a live projector's
    /// offsets only move forward). A log that keeps growing does not keep the run going.
    private func targetsMet() throws -> Bool {
        guard let targets = options.catchUpTargets else { return true }
        guard workers.allSatisfy({ $0.value.isCaughtUp || $0.value.shard.nextOffset >= highAtStart[$0.key] ?? 0 }) else { return false }
        let now = ContinuousClock.now
        if let asked = targetsAsked, now - asked < .milliseconds(250) { return false }
        targetsAsked = now
        let wanted: [Int32: Int64]
        do {
            wanted = try targets()
        } catch {
            throw classify(error)
        }
        return workers.allSatisfy { partition, worker in
            let next = worker.shard.nextOffset
            return (worker.isCaughtUp || next >= highAtStart[partition] ?? 0) && next >= wanted[partition] ?? 0
        }
    }

    // MARK: Generations

    /// Moves to the shards of a generation a rebuild swapped in: each partition whose shard
    /// moved (or whose priority changed) is closed, opened at its new place under the new
    /// generation's priority, and sought to that shard's offset. Every shard's offset is
    /// committed with its changes, so nothing is lost or applied twice across the move.
    private func followManifest() throws {
        guard DataLayout.currentStamp(options.dataDirectory) != layout.stamp else { return }
        guard options.followGenerations else {
            throw ProjectorError(kind: .interrupted, message: "a rebuild swapped in a new generation of shards in \(options.dataDirectory) meanwhile; this run worked on the previous one and stopped. The new shards were built from the log: run verify, and rerun this command if it is still needed")
        }
        let new = try DataLayout.read(options.dataDirectory)
        let old = layout
        layout = new
        let newPriority = new.priority ?? priority
        let reprioritised = !newPriority.ranksLike(priority)
        if reprioritised {
            logger.warning("generation \(new.generation) swapped in: projecting under source priority \(newPriority.fingerprint) (was \(priority.fingerprint))")
            priority = newPriority
        }
        var offsets: [TopicPartition: Int64] = [:]
        for partition in workers.keys.sorted() {
            let from = old.path(topic: options.topic, partition: partition)
            guard reprioritised || new.path(topic: options.topic, partition: partition) != from else { continue }
            workers[partition] = nil // closes the old shard and lets go of its lock
            // (Its cluster is checked on opening; its offset against the log at the first
            // batch, like any jump: a watermark round trip per partition here would stall the
            // move for seconds at many partitions.)
            let worker = try openWorker(partition)
            workers[partition] = worker
            offsets[worker.partition] = worker.shard.nextOffset
            resought[partition] = nil
            switched.insert(partition)
            logger.warning("partition \(partition): now \(worker.shard.path) at offset \(worker.shard.nextOffset) (was \(from))")
        }
        guard !offsets.isEmpty else { return }
        shareCache()
        // A seek can time out on a busy broker; the shards are already the new ones, so try
        // again rather than stop (messages fetched meanwhile are skipped or re-sought).
        var attempt = 0
        while true {
            do {
                try consumer.seek(offsets)
                return
            } catch {
                attempt += 1
                guard attempt < 10 else {
                    throw ProjectorError(kind: .kafka, message: "seeking \(offsets.keys.sorted().map(\.description).joined(separator: ", ")) to the new shards: \(error) (10 attempts over ~20 s); restart the projector: it starts each partition at its new shard's offset")
                }
                logger.warning("seeking to the new shards: \(error); retrying")
                usleep(UInt32(400_000 * min(attempt, 5)))
            }
        }
    }

    /// Forgets what the dead-letter outbox knew of a partition's shard (its row ids mean
    /// nothing in another shard file).
    private func forgetOutbox(_ partition: Int32) {
        outboxCursor[partition] = 0
        inFlight[partition] = nil
        forwardedIDs[partition] = nil
        outboxIDs = outboxIDs.filter { $0.value.partition != partition }
    }

    // MARK: Running

    /// Projects until `shouldStop()` says so, or (with `untilCaughtUp`) until every assigned
    /// partition is at the end of the log. Throws `ProjectorError` on a storage or shard
    /// failure, after which no offset has moved past an unapplied event.
    public func run(shouldStop: () -> Bool, progress: (ProjectorProgress) -> Void) throws -> ProjectorSummary {
        var summary = ProjectorSummary()
        let started = ContinuousClock.now
        var lastProgress = started
        var appliedSinceProgress = 0
        var rate = 0.0
        lastHeard = started

        // One metadata round trip first: an unreachable cluster or a missing topic ends the
        // run within `connectTimeout`, in both modes, instead of polling forever.
        // Asked in rounds of at most a second, so that SIGINT/SIGTERM are heard meanwhile.
        let count: Int
        do {
            guard let n = try consumer.partitionCount(options.topic, within: options.connectTimeout, shouldStop: shouldStop) else { return summary }
            count = n
        } catch {
            throw ProjectorError(kind: .kafka, message: "\(error)", kafkaError: error)
        }
        partitionCount = count
        // A standby partition the topic does not have is a bad request, not a warning.
        try options.standby?.check(topic: options.topic, count: count)
        // So is a shard of a partition it does not have (rebuild, verify, diff and replay refuse it too).
        try LiveLogCheck.checkPartitions(try layout.shardPaths(), directory: options.dataDirectory, topic: options.topic, count: count)
        clusterID = consumer.clusterID(timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
        do {
            if options.solo {
                var offsets: [TopicPartition: Int64] = [:]
                // Every partition is checked before any shard is created.
                for partition in try PartitionChoice.resolve(options.partitions, topic: options.topic, count: count) {
                    let worker = try openWorker(partition)
                    let marks = try checkLog(worker.shard)
                    workers[partition] = worker
                    offsets[worker.partition] = worker.shard.nextOffset
                    if let start = options.startOffsets[partition], start < worker.shard.nextOffset {
                        try Self.checkRereadStart(start, tp: worker.partition, low: marks.low)
                        worker.rereadFrom = start
                        offsets[worker.partition] = start
                    }
                }
                assignments.took()
                followStandbys()
                shareCache()
                recordRoles()
                try consumer.readDirectly(offsets.keys.sorted(), startingAt: offsets)
            } else {
                try consumer.subscribe([options.topic], handler: self)
            }
        } catch let error as KafkaError {
            throw ProjectorError(kind: .kafka, message: "\(error)")
        } catch {
            workers.removeAll()
            throw classify(error)
        }

        defer {
            if options.forwardDeadLetters { flushDeadLetters(timeoutMilliseconds: 5_000) }
            consumer.close()
            workers.removeAll()
            standby?.close()
            recordRoles(running: false)
        }

        while !shouldStop() {
            do {
                try followManifest()
                try actOnAssignments()
            } catch {
                throw classify(error)
            }
            followStandbysAcrossGenerations()
            let events = consumer.poll(maxMessages: options.batchSize, timeoutMilliseconds: 100)
            try checkClusterStillAnswers(heardFrom: !events.isEmpty)
            // What the group changed during this poll is acted on before its messages count:
            // a revoked partition's messages are not applied, and neither is what was read of
            // a partition before it was started again (taken and given back within the poll):
            // it is read again from its shard's offset.
            let restarted: Set<Int32>
            do {
                restarted = try actOnAssignments()
            } catch {
                throw classify(error)
            }
            var byPartition: [Int32: [ConsumedMessage]] = [:]
            var ends: [Int32: Int64] = [:]
            for event in events {
                switch event {
                case .message(let m) where m.topicPartition.topic == options.topic:
                    guard !restarted.contains(m.topicPartition.partition) else { break }
                    byPartition[m.topicPartition.partition, default: []].append(m)
                case .endOfPartition(let tp, let offset):
                    guard !restarted.contains(tp.partition) else { break }
                    workers[tp.partition]?.endOffset = offset
                    ends[tp.partition] = offset
                case .offsetOutOfRange(let tp, let offset) where tp.topic == options.topic:
                    guard !restarted.contains(tp.partition), let worker = workers[tp.partition] else { break }
                    // Retention deleted what the shard needs (or the log was replaced): say which.
                    try checkLog(worker.shard)
                    throw ProjectorError(kind: .logMismatch, message: "\(tp): offset \(offset) is outside the log; nothing past \(worker.shard.nextOffset) was applied")
                case .error(let e):
                    logger.warning("consumer: \(e)")
                default:
                    break
                }
            }
            // Messages past a partition's stop offset are never applied: they are no work, and
            // must not keep a run that has reached its stop offsets from ending.
            for partition in byPartition.keys {
                if let worker = workers[partition], let stop = worker.stopOffset, worker.shard.nextOffset >= stop { byPartition[partition] = nil }
            }
            for (partition, messages) in byPartition {
                guard let worker = workers[partition],
                      let first = messages.first(where: { $0.offset >= worker.expectedNext })?.offset else { continue }
                if try !checkContinuity(worker, first: first) {
                    byPartition[partition] = nil
                    ends[partition] = nil // sought back: that end was reached by the reading just undone
                }
            }
            let polled = byPartition.values.reduce(0) { $0 + $1.count }
            stageInParallel(byPartition)
            byPartition.removeAll() // librdkafka's buffers go back now; the staged events are copies
            try checkEnds(ends)
            let due = duePartitions(idle: polled == 0)
            appliedSinceProgress += try commit(due, into: &summary)
            if options.forwardDeadLetters { forwardDeadLetters() }
            applyStandbys()

            let now = ContinuousClock.now
            if now - lastProgress >= .seconds(1) {
                let seconds = (now - lastProgress).inSeconds
                rate = Double(appliedSinceProgress) / seconds
                appliedSinceProgress = 0
                lastProgress = now
                progress(snapshot(rate: rate))
            }
            // A member the group gave nothing to is caught up on what it owns, too.
            if options.untilCaughtUp, assignments.hasAssignment, assignments.held.isEmpty,
               !workers.values.contains(where: { $0.stagedEnd != nil }),
               options.catchUpTargets == nil ? workers.values.allSatisfy(\.isCaughtUp) && due.isEmpty : try targetsMet() {
                summary.caughtUp = true
                break
            }
        }
        // Stopped (a signal, the caller): what is staged is committed, not read again.
        _ = try commit(workers.filter { $0.value.stagedEnd != nil }.keys.sorted(), into: &summary)
        summary.seconds = (ContinuousClock.now - started).inSeconds
        summary.statistics = statistics
        progress(snapshot(rate: summary.seconds > 0 ? Double(summary.applied + summary.deadLetters) / summary.seconds : 0))
        return summary
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

    /// The partitions whose staged batch is to be committed now: one that has grown to
    /// `ProjectorOptions.minimumBatch` events, reached the end of its partition (a live
    /// stream commits what it has), or waited `maximumBatchDelay`; every staged one when the
    /// poll came back empty or the staged batches together outgrow `stagingBytes`.
    private func duePartitions(idle: Bool) -> [Int32] {
        let staged = workers.filter { $0.value.stagedEnd != nil }
        let total = staged.values.reduce(0) { $0 + $1.stagedBytes }
        if idle || total >= options.stagingBytes { return staged.keys.sorted() }
        let now = ContinuousClock.now
        return staged.filter { _, w in
            w.stagedCount >= options.minimumBatch
                || (w.stagedEnd ?? 0) >= (w.endOffset ?? .max)
                || (w.stopOffset.map { (w.stagedEnd ?? 0) >= $0 } ?? false)
                || w.stagedSince.map { now - $0 >= options.maximumBatchDelay } ?? false
        }.keys.sorted()
    }

    /// Commits the staged batches of `partitions` and counts what they did; returns the
    /// events and dead letters applied.
    private func commit(_ partitions: [Int32], into summary: inout ProjectorSummary) throws -> Int {
        guard !partitions.isEmpty else { return 0 }
        let batchStarted = ContinuousClock.now
        let outcomes = try commitInParallel(partitions)
        statistics.batchSeconds.observe((ContinuousClock.now - batchStarted).inSeconds)
        // Informational only (for lag dashboards): the truth is the shard's offset. A solo
        // projector is no member of the group, whose coordinator would refuse it.
        if !options.solo {
            let committed = Dictionary(uniqueKeysWithValues: partitions.compactMap { p in
                workers[p].map { (TopicPartition(options.topic, p), $0.shard.nextOffset) }
            })
            claim(committed)
        }
        var applied = 0
        for outcome in outcomes {
            statistics.applied += outcome.applied
            statistics.deadLetters += outcome.deadLetters
            statistics.rowsChanged += outcome.rowsChanged
            statistics.staleResends += outcome.staleResends
            statistics.cacheHits += outcome.cacheHits
            statistics.cacheMisses += outcome.cacheMisses
            statistics.cacheEvictions += outcome.cacheEvictions
            applied += outcome.applied + outcome.deadLetters
            if let time = outcome.newestTimestamp {
                statistics.lastAppliedTimestampMilliseconds = max(statistics.lastAppliedTimestampMilliseconds ?? time, time)
            }
            if recordChangedKeys { summary.changedKeys.formUnion(outcome.changedKeys) }
        }
        return applied
    }

    /// Commits the staged batches of `partitions`, in parallel (each its own shard).
    private func commitInParallel(_ partitions: [Int32]) throws -> [PartitionWorker.Outcome] {
        let jobs = partitions.compactMap { workers[$0] }
        // Each task commits its own worker's shard; every partition's outcome is kept (a
        // failed one's worker is dropped, the others' commits stand).
        let results = jobs.parallelMap { worker in Result { try worker.commitStaged() } }
        var outcomes: [PartitionWorker.Outcome] = []
        var firstError: Error?
        for (i, result) in results.enumerated() {
            switch result {
            case .success(let o):
                outcomes.append(o)
            case .failure(let e):
                firstError = firstError ?? e
                workers[jobs[i].partition.partition] = nil
            }
        }
        if let firstError {
            throw classify(firstError)
        }
        return outcomes
    }

    /// What a storage fault's message adds for a projector; a rebuild or a comparison says
    /// its own instead (`ProjectorError.storageFault(in:)`).
    static let storageAdvice = " Fix the storage (space, permissions), then restart: no offset moved past an unapplied event."

    private func classify(_ error: Error) -> ProjectorError {
        if let e = error as? ProjectorError { return e }
        if let e = error as? DatabaseError {
            let advice = e.isStorageFault ? Projector.storageAdvice : ""
            return ProjectorError(kind: .storage, message: "\(e)\(advice)")
        }
        if let e = error as? Shard.ShardError { return ProjectorError(kind: .shard, message: e.message, shardKind: e.kind, shardDetail: e.detail) }
        if let e = error as? KafkaError { return ProjectorError(kind: .kafka, message: "\(e)") }
        return ProjectorError(kind: .storage, message: "\(error)")
    }

    private func snapshot(rate: Double) -> ProjectorProgress {
        let parts = workers.keys.sorted().map { p -> (Int32, Int64, Int64?) in
            let w = workers[p]!
            // The end seen in the last fetch, else at the last end of partition, else when the
            // partition was started: never "lag 0" only because no fetch has answered yet.
            return (p, w.position, consumer.cachedHighWatermark(w.partition) ?? w.endOffset ?? highAtStart[p])
        }
        var progress = ProjectorProgress(applied: statistics.applied, deadLetters: statistics.deadLetters, eventsPerSecond: rate, partitions: parts)
        progress.statistics = statistics
        progress.standbys = standby?.lags() ?? []
        if !options.solo, !assignments.hasAssignment || !assignments.held.isEmpty {
            progress.waiting = "waiting for consumer group \(groupID) to assign partitions (a member that restarted waits until its old membership expires: session.timeout.ms = \(sessionTimeoutMilliseconds / 1_000) s)"
        }
        return progress
    }


    // MARK: Dead-letter outbox

    /// Hands unforwarded dead letters to the DLQ producer and marks delivered ones.
    private func forwardDeadLetters() {
        let producer = deadLetters
        for (partition, worker) in workers where worker.deadLettersPending {
            worker.deadLettersPending = false
            do {
                // Rows after the last one handed over, a page at a time: a full page means more
                // are waiting, so the outbox drains over the next rounds, whatever its size.
                let page = try worker.shard.unforwardedDeadLetters(after: outboxCursor[partition] ?? 0, limit: Self.outboxPage)
                if page.count == Self.outboxPage { worker.deadLettersPending = true }
                for (row, letter) in page where !inFlight[partition, default: []].contains(row) {
                    inFlight[partition, default: []].insert(row)
                    outboxCursor[partition] = max(outboxCursor[partition] ?? 0, row)
                    let id = nextOutboxID
                    nextOutboxID += 1
                    outboxIDs[id] = (partition, row)
                    var headers: [(String, [UInt8])] = [
                        ("daybook.reason", Array(letter.reason.utf8)),
                        ("daybook.code", Array(letter.code.utf8)),
                        ("daybook.source", Array("\(options.topic)/\(partition)/\(letter.offset)".utf8)),
                    ]
                    // A payload too large for the DLQ topic would fail forever: forward its head
                    // and say so; the shard keeps it whole.
                    var payload = letter.payload
                    if payload.count > Self.dlqPayloadLimit {
                        headers.append(("daybook.truncated-from", Array(String(payload.count).utf8)))
                        payload = Array(payload.prefix(Self.dlqPayloadLimit))
                    }
                    try producer.send(topic: options.deadLetterTopic, key: letter.key, value: payload, headers: headers, id: id)
                }
            } catch {
                logger.warning("dead-letter outbox of partition \(partition): \(error); will retry")
                worker.deadLettersPending = true
            }
        }
        producer.poll()
        markDelivered()
    }

    /// Marks delivered dead letters forwarded; failed ones are sent again after the next batch.
    private func markDelivered() {
        for id in reports.delivered {
            guard let (partition, row) = outboxIDs.removeValue(forKey: id) else { continue }
            inFlight[partition]?.remove(row)
            forwardedIDs[partition, default: []].append(row)
        }
        for id in reports.failed {
            guard let (partition, row) = outboxIDs.removeValue(forKey: id) else { continue }
            inFlight[partition]?.remove(row)
            outboxCursor[partition] = min(outboxCursor[partition] ?? 0, row - 1)
            workers[partition]?.deadLettersPending = true
        }
        reports.delivered.removeAll()
        reports.failed.removeAll()
        for (partition, rows) in forwardedIDs {
            guard let worker = workers[partition] else { continue }
            do {
                try worker.shard.markForwarded(rows)
                forwardedIDs[partition] = nil
            } catch {
                logger.warning("marking dead letters forwarded in partition \(partition): \(error)")
            }
        }
    }

    private func flushDeadLetters(timeoutMilliseconds: Int) {
        forwardDeadLetters()
        try? deadLetters.flush(timeoutMilliseconds: timeoutMilliseconds)
        markDelivered()
    }
}
