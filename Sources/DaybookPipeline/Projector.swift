import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
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
    /// Messages read per poll; each partition's share becomes one transaction. Default: 100000.
    public var batchSize = 100_000

    public init(dataDirectory: String) { self.dataDirectory = dataDirectory }
}

/// A moment of a projector's progress, for live lines and logs.
public struct ProjectorProgress: Sendable {
    public var applied: Int
    public var deadLetters: Int
    public var eventsPerSecond: Double
    /// Per assigned partition: (partition, next offset in the shard, end of the log if known).
    public var partitions: [(partition: Int32, next: Int64, end: Int64?)]

    public var lag: Int64 { partitions.reduce(0) { $0 + max(0, ($1.end ?? $1.next) - $1.next) } }

    /// Seconds until caught up at the current rate, when it can be told.
    public var eta: Double? { eventsPerSecond > 0 ? Double(lag) / eventsPerSecond : nil }

    public var line: String {
        let lags = partitions.map { "p\($0.partition):\(max(0, ($0.end ?? $0.next) - $0.next))" }.joined(separator: " ")
        let etaText = eta.map { String(format: "%.0fs", $0) } ?? "?"
        return "project: \(applied) applied, \(String(format: "%.0f", eventsPerSecond)) events/s, lag \(lag) [\(lags)], eta \(etaText), dead letters \(deadLetters)"
    }
}

/// What `Projector.run` returns.
public struct ProjectorSummary: Sendable {
    public var applied: Int
    public var skipped: Int
    public var deadLetters: Int
    public var rowsChanged: Int
    public var seconds: Double
    public var caughtUp: Bool
    /// (user, metric, day) rows recomputed, when `recordChangedKeys` was set.
    public var changedKeys: Set<DayKey>
}

/// Why the projector stopped.
public struct ProjectorError: Error, CustomStringConvertible {
    public enum Kind: Sendable { case storage, kafka, shard }
    public var kind: Kind
    public var message: String
    /// For `.shard`: what is wrong with the shard (held, another priority, not a shard…).
    public var shardKind: Shard.ShardError.Kind? = nil
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
    private let priority: SourcePriority
    private let logger: Logger
    private let consumer: KafkaConsumer
    private let deadLetters: KafkaProducer
    /// Delivery reports of the DLQ producer, waiting to be marked in the shards.
    private let reports = DeadLetterReports()
    /// Dead-letter rows handed to the producer and not yet reported, per partition.
    private var inFlight: [Int32: Set<Int64>] = [:]
    private var workers: [Int32: PartitionWorker] = [:]
    private var fatal: Error?
    private var forwardedIDs: [Int32: [Int64]] = [:]
    private var outboxIDs: [Int: (partition: Int32, row: Int64)] = [:]
    private var nextOutboxID = 0
    /// Record the keys of recomputed rows in the summary (the demo shows them).
    public var recordChangedKeys = false

    public init(connection: KafkaConnection, consumer consumerConfiguration: ConsumerConfiguration,
                producer producerConfiguration: ProducerConfiguration, priority: SourcePriority,
                options: ProjectorOptions, logger: Logger) throws {
        self.options = options
        self.priority = priority
        self.logger = logger
        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        consumer = try KafkaConsumer(connection: connection, configuration: consumerConfiguration, logger: logger)
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

    public func assigned(_ partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        hasAssignment = true
        var offsets: [TopicPartition: Int64] = [:]
        for tp in partitions where tp.topic == options.topic {
            do {
                let worker = try openWorker(tp.partition)
                offsets[tp] = worker.shard.nextOffset
            } catch {
                fatal = fatal ?? error
            }
        }
        return offsets
    }

    public func revoked(_ partitions: [TopicPartition]) {
        hasAssignment = false
        for tp in partitions { workers[tp.partition] = nil }
    }

    /// The group has given this member its share (possibly none) and not taken it back.
    private var hasAssignment = false

    private func openWorker(_ partition: Int32) throws -> PartitionWorker {
        if let existing = workers[partition], !existing.broken { return existing }
        let shard = try Shard(directory: options.dataDirectory, topic: options.topic, partition: partition, fingerprint: priority.fingerprint)
        let worker = try PartitionWorker(shard: shard, priority: priority)
        workers[partition] = worker
        logger.info("partition \(partition): shard at offset \(shard.nextOffset), \(worker.ledger.liveSampleCount) live samples")
        return worker
    }

    // MARK: Running

    /// Projects until `shouldStop()` says so, or (with `untilCaughtUp`) until every assigned
    /// partition is at the end of the log. Throws `ProjectorError` on a storage or shard
    /// failure, after which no offset has moved past an unapplied event.
    public func run(shouldStop: () -> Bool, progress: (ProjectorProgress) -> Void) throws -> ProjectorSummary {
        var summary = ProjectorSummary(applied: 0, skipped: 0, deadLetters: 0, rowsChanged: 0, seconds: 0, caughtUp: false, changedKeys: [])
        let started = ContinuousClock.now
        var lastProgress = started
        var appliedSinceProgress = 0
        var rate = 0.0

        do {
            if options.solo {
                let count = try consumer.partitionCount(options.topic)
                let partitions = (0..<Int32(count)).map { TopicPartition(options.topic, $0) }
                let offsets = assigned(partitions)
                if let fatal { throw classify(fatal) }
                try consumer.readDirectly(partitions, startingAt: offsets)
            } else {
                try consumer.subscribe([options.topic], handler: self)
            }
        } catch let error as KafkaError {
            throw ProjectorError(kind: .kafka, message: "\(error)")
        }

        defer {
            flushDeadLetters(timeoutMilliseconds: 5_000)
            consumer.close()
            workers.removeAll()
        }

        while !shouldStop() {
            if let fatal { throw classify(fatal) }
            let events = consumer.poll(maxMessages: options.batchSize, timeoutMilliseconds: 100)
            var byPartition: [Int32: [ConsumedMessage]] = [:]
            for event in events {
                switch event {
                case .message(let m) where m.topicPartition.topic == options.topic:
                    byPartition[m.topicPartition.partition, default: []].append(m)
                case .endOfPartition(let tp, let offset):
                    workers[tp.partition]?.endOffset = offset
                case .error(let e):
                    logger.warning("consumer: \(e)")
                default:
                    break
                }
            }
            if !byPartition.isEmpty {
                let outcomes = try applyInParallel(byPartition)
                // Informational only (for lag dashboards): the truth is the shard's offset.
                let committed = Dictionary(uniqueKeysWithValues: byPartition.keys.compactMap { p in
                    workers[p].map { (TopicPartition(options.topic, p), $0.shard.nextOffset) }
                })
                try? consumer.commit(committed)
                for outcome in outcomes {
                    summary.applied += outcome.applied
                    summary.skipped += outcome.skipped
                    summary.deadLetters += outcome.deadLetters
                    summary.rowsChanged += outcome.rowsChanged
                    appliedSinceProgress += outcome.applied + outcome.deadLetters
                    if recordChangedKeys { summary.changedKeys.formUnion(outcome.changedKeys) }
                }
            }
            forwardDeadLetters()

            let now = ContinuousClock.now
            if now - lastProgress >= .seconds(1) {
                let seconds = Self.seconds(now - lastProgress)
                rate = Double(appliedSinceProgress) / seconds
                appliedSinceProgress = 0
                lastProgress = now
                progress(snapshot(summary, rate: rate))
            }
            // A shard that could not be opened on assignment stops the run (never "caught up").
            if let fatal { throw classify(fatal) }
            // A member the group gave nothing to is caught up on what it owns, too.
            if options.untilCaughtUp, hasAssignment, workers.values.allSatisfy(\.isCaughtUp), byPartition.isEmpty {
                summary.caughtUp = true
                break
            }
        }
        summary.seconds = Self.seconds(ContinuousClock.now - started)
        progress(snapshot(summary, rate: summary.seconds > 0 ? Double(summary.applied + summary.deadLetters) / summary.seconds : 0))
        return summary
    }

    private func applyInParallel(_ byPartition: [Int32: [ConsumedMessage]]) throws -> [PartitionWorker.Outcome] {
        let jobs: [(PartitionWorker, [ConsumedMessage])] = byPartition.compactMap { partition, messages in
            workers[partition].map { ($0, messages) } // revoked since the poll: not ours any more
        }
        nonisolated(unsafe) var results = [Result<PartitionWorker.Outcome, Error>?](repeating: nil, count: jobs.count)
        nonisolated(unsafe) let work = jobs
        results.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let out = buffer
            DispatchQueue.concurrentPerform(iterations: work.count) { i in
                out[i] = Result { try work[i].0.apply(work[i].1[...]) }
            }
        }
        var outcomes: [PartitionWorker.Outcome] = []
        var firstError: Error?
        for (i, result) in results.enumerated() {
            let worker = jobs[i].0
            switch result {
            case .success(let o)?:
                outcomes.append(o)
            case .failure(let e)?:
                firstError = firstError ?? e
                workers[worker.partition.partition] = nil
            case nil:
                break
            }
        }
        if let firstError {
            throw classify(firstError)
        }
        return outcomes
    }

    private func classify(_ error: Error) -> ProjectorError {
        if let e = error as? ProjectorError { return e }
        if let e = error as? DatabaseError {
            let advice = e.isStorageFault ? " Fix the storage (space, permissions), then restart: no offset moved past an unapplied event." : ""
            return ProjectorError(kind: .storage, message: "\(e)\(advice)")
        }
        if let e = error as? Shard.ShardError { return ProjectorError(kind: .shard, message: e.message, shardKind: e.kind) }
        if let e = error as? KafkaError { return ProjectorError(kind: .kafka, message: "\(e)") }
        return ProjectorError(kind: .storage, message: "\(error)")
    }

    private func snapshot(_ summary: ProjectorSummary, rate: Double) -> ProjectorProgress {
        let parts = workers.keys.sorted().map { p -> (Int32, Int64, Int64?) in
            let w = workers[p]!
            return (p, w.shard.nextOffset, consumer.cachedHighWatermark(w.partition) ?? w.endOffset)
        }
        return ProjectorProgress(applied: summary.applied, deadLetters: summary.deadLetters, eventsPerSecond: rate, partitions: parts)
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    // MARK: Dead-letter outbox

    /// Hands unforwarded dead letters to the DLQ producer and marks delivered ones.
    private func forwardDeadLetters() {
        let producer = deadLetters
        for (partition, worker) in workers where worker.deadLettersPending {
            worker.deadLettersPending = false
            do {
                for (row, letter) in try worker.shard.unforwardedDeadLetters() where !inFlight[partition, default: []].contains(row) {
                    inFlight[partition, default: []].insert(row)
                    let id = nextOutboxID
                    nextOutboxID += 1
                    outboxIDs[id] = (partition, row)
                    try producer.send(topic: options.deadLetterTopic, key: letter.key, value: letter.payload, headers: [
                        ("daybook.reason", Array(letter.reason.utf8)),
                        ("daybook.code", Array(letter.code.utf8)),
                        ("daybook.source", Array("\(options.topic)/\(partition)/\(letter.offset)".utf8)),
                    ], id: id)
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
