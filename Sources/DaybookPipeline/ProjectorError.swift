import DaybookKafka
import DaybookStore

/// Why the projector stopped (or a rebuild, a comparison, a replay): a kind that says what
/// to do next, the library's words for it, and the typed facts behind it.
///
/// What caused it below the projector (a shard's refusal, a Kafka error, a partition the
/// topic does not have) is kept in one private value read through `shardKind`,
/// `shardDetail`, `kafkaError` and `partition`, so that a new cause is no breaking change.
public struct ProjectorError: Error, Sendable, CustomStringConvertible {
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
    /// What was refused, in fields, for a caller that words the next step its own way
    /// (a command line names its options); `message` says it in this library's terms.
    public var detail: Detail?
    private var cause: Cause?

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

    private enum Cause: Sendable {
        case shard(Shard.ShardError.Kind, Shard.ShardError.Detail?)
        case kafka(KafkaError)
        case partition(Int32)
    }

    public init(kind: Kind, message: String, detail: Detail? = nil) {
        self.kind = kind
        self.message = message
        self.detail = detail
    }

    /// A shard refused (`.shard`): what is wrong with it, and the store's facts when it gave them.
    static func shard(_ message: String, _ shardKind: Shard.ShardError.Kind, _ shardDetail: Shard.ShardError.Detail? = nil,
                      detail: Detail? = nil) -> ProjectorError {
        var error = ProjectorError(kind: .shard, message: message, detail: detail)
        error.cause = .shard(shardKind, shardDetail)
        return error
    }

    /// The Kafka layer failed (`.kafka`) with `error`.
    static func kafka(_ message: String, _ error: KafkaError) -> ProjectorError {
        var e = ProjectorError(kind: .kafka, message: message)
        e.cause = .kafka(error)
        return e
    }

    /// A partition was asked for that the topic does not have (`.badRequest`).
    static func noSuchPartition(_ partition: Int32, message: String) -> ProjectorError {
        var error = ProjectorError(kind: .badRequest, message: message)
        error.cause = .partition(partition)
        return error
    }

    /// For `.shard`: what is wrong with the shard (held, another priority, not a shard…).
    public var shardKind: Shard.ShardError.Kind? { if case .shard(let kind, _) = cause { kind } else { nil } }
    /// For `.shard`: the facts of the shard's refusal, when the store gave them.
    public var shardDetail: Shard.ShardError.Detail? { if case .shard(_, let detail) = cause { detail } else { nil } }
    /// For `.badRequest`: the partition asked for that the topic does not have.
    public var partition: Int32? { if case .partition(let p) = cause { p } else { nil } }
    /// For `.kafka`: the Kafka layer's error, when one caused it (its code says which).
    public var kafkaError: KafkaError? { if case .kafka(let e) = cause { e } else { nil } }

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
            self = .shard(e.message, e.kind, e.detail)
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
