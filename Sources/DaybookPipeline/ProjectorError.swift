import DaybookKafka
import DaybookStore

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

extension ProjectorError {
    /// The projector's error for a failure of a layer below it (the store, a shard, Kafka),
    /// made where that layer's call returns.
    init(_ error: any Error) {
        switch error {
        case let e as ProjectorError:
            self = e
        case let e as DatabaseError:
            self.init(kind: .storage, message: "\(e)\(e.isStorageFault ? Projector.storageAdvice : "")")
        case let e as Shard.ShardError:
            self.init(kind: .shard, message: e.message, shardKind: e.kind, shardDetail: e.detail)
        case let e as KafkaError:
            self.init(kind: .kafka, message: "\(e)")
        default:
            self.init(kind: .storage, message: "\(error)")
        }
    }
}

extension Projector {
    /// What a storage fault's message adds for a projector; a rebuild or a comparison says
    /// its own instead (`ProjectorError.storageFault(in:)`).
    static let storageAdvice = " Fix the storage (space, permissions), then restart: no offset moved past an unapplied event."
}
