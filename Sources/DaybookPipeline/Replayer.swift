import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import Foundation

/// Where a replay starts re-reading, as asked.
public enum ReplayStart: Equatable, Sendable {
    case offset(Int64)
    /// Milliseconds since 1970 (Kafka timestamps), and the moment as the caller gave it.
    case time(milliseconds: Int64, described: String)
}

/// One partition's part of a replay.
public struct ReplayPlan: Equatable, Sendable {
    public var partition: Int32
    /// The shard's next offset (0 when there is no shard yet).
    public var shardOffset: Int64
    public var hasShard: Bool
    /// Where the replay starts: the asked start, or the shard's offset when that is lower.
    public var start: Int64
    /// The log's end when planned.
    public var end: Int64

    public init(partition: Int32, shardOffset: Int64, hasShard: Bool, start: Int64, end: Int64) {
        self.partition = partition
        self.shardOffset = shardOffset
        self.hasShard = hasShard
        self.start = start
        self.end = end
    }

    /// Events below the shard's offset that are read again.
    public var rereads: Int64 { shardOffset - start }
    /// Events past the shard's offset, applied for the first time.
    public var newEvents: Int64 { max(0, end - shardOffset) }
}

/// What planning found worth telling, though it does not stop the replay.
public enum ReplayNote: Equatable, Sendable {
    /// The cluster's time index found no message at or after the start in these partitions,
    /// although the log has some; their start was found by reading message timestamps.
    case foundByReading([TopicPartition], described: String)
    /// The start asked for is above the shard's offset: starting there would skip what the
    /// shard has not applied yet, so the partition starts at its shard's offset.
    case startAboveShard(TopicPartition, asked: Int64, shardOffset: Int64)
}

/// Re-reads a suffix of the log into the live shards of a data directory: plans where each
/// partition starts (reading only: safe beside a projector), then runs a solo projector
/// from there to the end of the log. Nothing is rolled back: events below a shard's offset
/// are re-applied against the version in force of their sample (`Ledger.reapply`).
public struct Replayer {
    public var directory: String
    public var topic = "health-samples"
    public var access: LogAccess
    public var priority: SourcePriority
    public var connectTimeout: Duration = .seconds(30)
    /// Memory for cached samples and SQLite pages (config `state.cache_mb`). Default: 32 MiB.
    public var cacheBytes = 32 << 20
    private let logger: Logger

    public init(directory: String, access: LogAccess, priority: SourcePriority, logger: Logger) {
        self.directory = directory
        self.access = access
        self.priority = priority
        self.logger = logger
    }

    /// Reads the shards' offsets and the log's, and decides where each partition starts.
    /// Touches nothing.
    /// - Parameters:
    ///   - partitions: the partitions to replay; nil for every partition of the topic.
    ///   - note: hears what planning tells without stopping (see `ReplayNote`).
    /// - Throws: `ProjectorError`: `.badRequest` for a partition the topic does not have or
    ///   a start before the log's first offset; `.logMismatch` when the log is not the
    ///   shards' (`LiveLogCheck`); `.shard` with `.locked` while another process (a
    ///   projector) holds a planned shard, which `run` would only meet later; `.kafka` when
    ///   the cluster does not answer (also when `shouldStop` interrupts the wait); a
    ///   `ShardError` or `DatabaseError` from the shards.
    public func plan(_ start: ReplayStart, partitions chosen: [Int32]?, shouldStop: () -> Bool = { false },
                     note: (ReplayNote) -> Void = { _ in }) throws -> [ReplayPlan] {
        let layout = try DataLayout.read(directory)
        var connection = access.connection
        // Each message read for a time lookup waits for the fetch before it: keep those short.
        connection.properties["fetch.wait.max.ms"] = "10"
        let consumer = try KafkaConsumer(connection: connection, configuration: access.consumer, logger: logger)
        defer { consumer.close() }
        let timeout = connectTimeout.wholeMilliseconds

        // The topic, asked in rounds of at most a second so that a stop request is heard.
        let count: Int
        do {
            guard let n = try consumer.partitionCount(topic, within: connectTimeout, shouldStop: shouldStop) else {
                throw ProjectorError(kind: .kafka, message: "interrupted while reaching the Kafka cluster")
            }
            count = n
        } catch let error as KafkaError {
            throw ProjectorError(kind: .kafka, message: "\(error)")
        }
        let partitions = try PartitionChoice.resolve(chosen, topic: topic, count: count)
        // The shards' cluster, partitions and offsets, as the run's projector checks them:
        // a dry run refuses what the run would.
        try LiveLogCheck.check(directory: directory, topic: topic, count: count, consumer: consumer, timeout: connectTimeout)

        var shardOffsets: [Int32: Int64] = [:]
        for shard in try ShardReader(directory: directory).progress() where shard.topic == topic {
            shardOffsets[shard.partition] = shard.nextOffset
        }

        var marks: [Int32: (low: Int64, high: Int64)] = [:]
        do {
            for p in partitions { marks[p] = try consumer.watermarks(TopicPartition(topic, p), timeoutMilliseconds: timeout) }
        } catch {
            throw ProjectorError(kind: .kafka, message: "reading the offsets of \(topic): \(error)")
        }

        var asked: [Int32: Int64] = [:]
        switch start {
        case .offset(let n):
            for p in partitions { asked[p] = n }
        case .time(let ms, let described):
            let tps = partitions.map { TopicPartition(topic, $0) }
            let found: [TopicPartition: KafkaConsumer.TimeOffset]
            do {
                found = try consumer.offsets(atOrAfter: ms, in: tps, timeoutMilliseconds: timeout)
            } catch {
                throw ProjectorError(kind: .kafka, message: "looking up the offsets of \(described) in \(topic): \(error)")
            }
            let read = tps.filter { found[$0]?.byReading == true }
            if !read.isEmpty { note(.foundByReading(read, described: described)) }
            for tp in tps {
                // No message that late: start at the end, nothing to re-read.
                asked[tp.partition] = found[tp]?.offset ?? marks[tp.partition]?.high ?? 0
            }
        }

        var plans: [ReplayPlan] = []
        for p in partitions {
            let tp = TopicPartition(topic, p)
            let (low, high) = marks[p] ?? (0, 0)
            let path = layout.path(topic: topic, partition: p)
            let hasShard = FileManager.default.fileExists(atPath: path)
            let shardOffset = shardOffsets[p] ?? 0
            // The projector's own check of a shard against its log (a partition without a
            // shard needs offset 0).
            try LiveLogCheck.checkOffset(path: path, next: shardOffset, tp: tp, low: low, high: high)
            // One writer per shard: a replay beside a running projector would only fail later.
            if Shard.isHeld(path) {
                throw ProjectorError.shard("\(path): another projector holds this shard; stop it first", .locked, .held(path: path, waited: .zero))
            }
            let wanted = asked[p] ?? shardOffset
            try Projector.checkRereadStart(wanted, tp: tp, low: low)
            if wanted > shardOffset { note(.startAboveShard(tp, asked: wanted, shardOffset: shardOffset)) }
            plans.append(ReplayPlan(partition: p, shardOffset: shardOffset, hasShard: hasShard, start: min(wanted, shardOffset), end: high))
        }
        return plans
    }

    /// Re-reads each planned partition from its start to the end of the log into the live
    /// shards, as one solo projector that stops when caught up (or when `shouldStop` says so:
    /// the summary's `caughtUp` is then false, and running the replay again finishes it).
    /// - Throws: `ProjectorError` as `Projector.run` (`.shard` with `.locked` while a
    ///   projector holds a shard: nothing was re-read or applied).
    public func run(_ plans: [ReplayPlan], shouldStop: () -> Bool = { false },
                    progress: (ProjectorProgress) -> Void = { _ in }) throws -> ProjectorSummary {
        var options = ProjectorOptions(dataDirectory: directory)
        options.partitions = plans.map(\.partition)
        options.connectTimeout = connectTimeout
        options.topic = topic
        options.cacheBytes = cacheBytes
        let run = ProjectionRun.replay(from: Dictionary(uniqueKeysWithValues: plans.filter { $0.start < $0.shardOffset }.map { ($0.partition, $0.start) }))
        let projector = try Projector(connection: access.connection, consumer: access.consumer, producer: access.producer,
                                      priority: priority, options: options, run: run, logger: logger)
        return try projector.run(shouldStop: shouldStop, progress: progress)
    }
}

extension ProjectorSummary {
    /// With a replay: events read past the shards' offsets (applied or dead letters).
    public var newlyApplied: Int { applied + deadLetters - reread }
}
