import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import Foundation

/// Which partitions a projector keeps warm standby shards of (`ProjectorOptions.standby`).
public enum StandbyChoice: Sendable, Equatable {
    /// Every partition of the topic this member does not own.
    case all
    /// These partitions, whenever this member does not own them.
    case partitions([Int32])

    /// The standby partitions of a topic of `count` partitions while `owned` are owned here.
    func partitions(count: Int, owned: Set<Int32>) -> [Int32] {
        let wanted: [Int32] = switch self {
        case .all: Array(0..<Int32(count))
        case .partitions(let list): list.filter { (0..<Int32(count)).contains($0) }
        }
        return wanted.filter { !owned.contains($0) }.sorted()
    }

    /// Refuses partitions a topic of `count` partitions does not have (`all` is never refused).
    /// - Throws: `ProjectorError` `.badRequest`, with `partition` set, for the first chosen
    ///   partition outside `0..<count` (`PartitionChoice`).
    public func check(topic: String, count: Int) throws(ProjectorError) {
        guard case .partitions(let chosen) = self else { return }
        _ = try PartitionChoice.resolve(chosen, topic: topic, count: count)
    }

    /// Asks the cluster for `topic`'s partition count (until `timeout`) and checks the choice
    /// against it, before a projector is started with it: a partition the topic does not
    /// have is a mistake to refuse, where a running projector would only warn and follow
    /// the others. `all` asks nothing.
    /// - Throws: `ProjectorError`: `.badRequest` as `check(topic:count:)`; `.kafka` when the
    ///   cluster does not answer or the topic is missing.
    public func check(topic: String, in log: LogAccess, timeout: Duration, logger: Logger) throws {
        guard case .partitions = self else { return }
        let (consumer, count) = try log.consumer(counting: topic, timeout: timeout, logger: logger)
        defer { consumer.close() }
        try check(topic: topic, count: count)
    }
}

/// What a projector's warm standby shards did (`Projector.standbyStatistics`): counted as
/// they are applied, since the projector started.
public struct StandbyStatistics: Sendable, Equatable {
    /// Events applied to standby shards (each in one transaction with its shard's offset).
    public var applied = 0
    /// Dead letters recorded in standby shards (not forwarded: the owner forwards them).
    public var deadLetters = 0

    public init(applied: Int = 0, deadLetters: Int = 0) {
        self.applied = applied
        self.deadLetters = deadLetters
    }
}

/// Warm standby shards: partitions this member does not own, followed read-only in its own
/// data directory so that when the group moves one here its shard is close behind the log
/// and the owner starts from the shard's offset instead of 0 (Kafka Streams' standby
/// replicas).
///
/// Read with a consumer of its own that never joins the group (the simple consumer, at
/// each shard's offset) and never commits; dead letters are recorded in the shard but not
/// forwarded (the owner forwards them; a standby shard's are forwarded again when it
/// becomes owned, so the dead-letter topic may hold them twice). Shards are written as an
/// owner writes them, in one transaction with their offset, so a standby shard is a
/// projection of a prefix of the log like any other. A standby that fails (its shard is
/// held, a gap in the log) is dropped with a warning and tried again later: it never stops
/// the partitions this member owns.
final class StandbyReplicas {
    let choice: StandbyChoice
    private let consumer: KafkaConsumer
    private let logger: Logger
    /// The open standby shards, by partition.
    private(set) var workers: [Int32: PartitionWorker] = [:]
    /// The partitions the consumer reads now (restarted whenever the set changes).
    private var reading: [Int32] = []
    /// Partitions whose standby failed, and when: tried again after `retryAfter`.
    private var failed: [Int32: ContinuousClock.Instant] = [:]
    static let retryAfter: Duration = .seconds(10)
    private var warnedOutOfRange = false

    init(choice: StandbyChoice, connection: KafkaConnection, consumer configuration: ConsumerConfiguration, logger: Logger) throws {
        self.choice = choice
        self.logger = logger
        var own = configuration
        // Never a member of the group: a group id of its own, no static membership.
        own.groupID = configuration.groupID + ".standby"
        own.groupInstanceID = nil
        do {
            consumer = try KafkaConsumer(connection: connection, configuration: own, logger: logger)
        } catch {
            throw ProjectorError.kafka("\(error)", error)
        }
    }

    var partitions: [Int32] { workers.keys.sorted() }

    /// Closes the standby shards of `partitions` (the group gave them to this member: its
    /// owner opens the same shards next) and stops reading them.
    func release(_ partitions: [Int32]) {
        let released = partitions.filter { workers[$0] != nil }
        guard !released.isEmpty else { return }
        for p in released {
            logger.info("partition \(p): standby handed over to this member's owner at offset \(workers[p]?.shard.nextOffset ?? -1)")
            workers[p] = nil // closes the shard and lets go of its lock
        }
        restartReading()
    }

    /// Closes every standby shard (a rebuild swapped in new shards: they are opened again at their new place).
    func closeAll() {
        workers.removeAll()
        restartReading()
    }

    /// Opens the standby shards that are wanted now that `owned` are owned here (through
    /// `open`, which checks each against the log) and closes those that are not; true when
    /// the set of standby shards changed.
    @discardableResult
    func follow(count: Int, owned: Set<Int32>, open: (Int32) throws -> PartitionWorker) -> Bool {
        if !warnedOutOfRange, case .partitions(let asked) = choice, let outside = asked.first(where: { $0 >= count }) {
            warnedOutOfRange = true
            logger.warning("standby: the topic has \(count) partition\(count == 1 ? "" : "s") (0..\(count - 1)); partition \(outside) and any other outside that range are not followed")
        }
        let wanted = choice.partitions(count: count, owned: owned)
        var changed = false
        for p in workers.keys where !wanted.contains(p) {
            workers[p] = nil
            changed = true
        }
        let now = ContinuousClock.now
        for p in wanted where workers[p] == nil {
            if let at = failed[p], now - at < Self.retryAfter { continue }
            do {
                let worker = try open(p)
                worker.deadLettersPending = false // never forwarded from here
                workers[p] = worker
                failed[p] = nil
                changed = true
                logger.info("partition \(p): warm standby from offset \(worker.shard.nextOffset)")
            } catch {
                failed[p] = now
                logger.warning("partition \(p): cannot keep a standby shard: \(error); trying again in \(Self.retryAfter.components.seconds) s")
            }
        }
        if changed || reading != partitions { restartReading() }
        return changed
    }

    private func restartReading() {
        let list = partitions
        reading = list
        let offsets = Dictionary(uniqueKeysWithValues: workers.values.map { ($0.partition, $0.shard.nextOffset) })
        do {
            try consumer.readDirectly(offsets.keys.sorted(), startingAt: offsets)
        } catch {
            logger.warning("standby: cannot read \(list): \(error); trying again in \(Self.retryAfter.components.seconds) s")
            let now = ContinuousClock.now
            for p in list { failed[p] = now }
            workers.removeAll()
            reading = []
        }
    }

    private func drop(_ partition: Int32, _ why: String) {
        logger.warning("partition \(partition): standby stopped: \(why); trying again in \(Self.retryAfter.components.seconds) s")
        workers[partition] = nil
        failed[partition] = .now
        restartReading()
    }

    /// What the standby shards applied since this projector started (`Projector.standbyStatistics`).
    private(set) var statistics = StandbyStatistics()

    /// Reads what has arrived (without waiting) and applies it to the standby shards;
    /// returns what this round applied (also added to `statistics`).
    @discardableResult
    func applyArrived(maxMessages: Int) -> StandbyStatistics {
        var round = StandbyStatistics()
        defer {
            statistics.applied += round.applied
            statistics.deadLetters += round.deadLetters
        }
        guard !workers.isEmpty else { return round }
        var byPartition: [Int32: [ConsumedMessage]] = [:]
        for event in consumer.poll(maxMessages: maxMessages, timeoutMilliseconds: 0) {
            switch event {
            case .message(let m):
                byPartition[m.topicPartition.partition, default: []].append(m)
            case .endOfPartition(let tp, let offset):
                workers[tp.partition]?.endOffset = offset
            case .offsetOutOfRange(let tp, let offset):
                if workers[tp.partition] != nil { drop(tp.partition, "offset \(offset) is outside the log") }
            case .error(let e):
                logger.warning("standby consumer: \(e)")
            }
        }
        for (partition, messages) in byPartition.sorted(by: { $0.key < $1.key }) {
            guard let worker = workers[partition] else { continue }
            let next = worker.shard.nextOffset
            if let first = messages.first(where: { $0.offset >= next })?.offset, first > next {
                // A jump: offsets without messages (transaction markers, compaction) when the
                // log still holds `next`; a gap (retention) when it does not.
                do {
                    let marks = try consumer.watermarks(worker.partition, timeoutMilliseconds: 5_000)
                    try LiveLogCheck.checkOffset(path: worker.shard.path, next: next, tp: worker.partition, low: marks.low, high: marks.high)
                } catch {
                    drop(partition, "\(error)")
                    continue
                }
            }
            do {
                let outcome = try worker.apply(messages[...])
                worker.deadLettersPending = false
                round.applied += outcome.applied
                round.deadLetters += outcome.deadLetters
            } catch {
                drop(partition, "\(error)")
            }
        }
        return round
    }

    /// Per standby partition: (partition, next offset, end of the log if known).
    func lags() -> [(partition: Int32, next: Int64, end: Int64?)] {
        partitions.compactMap { p in
            workers[p].map { w in (p, w.shard.nextOffset, consumer.cachedHighWatermark(w.partition) ?? w.endOffset) }
        }
    }

    func close() {
        workers.removeAll()
        consumer.close()
    }
}
