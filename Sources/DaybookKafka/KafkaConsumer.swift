import DaybookLog

/// One message read from Kafka. Its key and payload stay in librdkafka's buffer, uncopied,
/// for as long as the value (or a copy of it) lives; `key`, `value` and `headers` copy
/// them out, `withKey` and `withValue` lend them.
public struct ConsumedMessage: @unchecked Sendable {
    public var topicPartition: TopicPartition
    public var offset: Int64
    let storage: MessageStorage

    init(topicPartition: TopicPartition, offset: Int64, storage: MessageStorage) {
        self.topicPartition = topicPartition
        self.offset = offset
        self.storage = storage
    }

    /// A message made in process, with copies of the bytes (tests, the fuzzer).
    init(topicPartition: TopicPartition, offset: Int64, key: [UInt8], value: [UInt8], headers: [(String, [UInt8])]) {
        self.init(topicPartition: topicPartition, offset: offset, storage: MessageStorage(key: key, value: value, headers: headers))
    }

    /// The payload's length in bytes.
    public var valueCount: Int { storage.value.count }

    public func withValue<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(storage.value.bindMemory(to: UInt8.self))
    }

    public func withKey<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(storage.key.bindMemory(to: UInt8.self))
    }

    public var key: [UInt8] { Array(storage.key) }
    public var value: [UInt8] { Array(storage.value) }
    public var headers: [(String, [UInt8])] { storage.headers() }

    public func header(_ name: String) -> [UInt8]? { headers.first { $0.0 == name }?.1 }
}

/// What `KafkaConsumer.poll` returns.
public enum ConsumerEvent: Sendable {
    case message(ConsumedMessage)
    /// The consumer has read everything up to `offset` (the partition's current end).
    case endOfPartition(TopicPartition, offset: Int64)
    /// The position of a partition is outside its log: the messages there were deleted
    /// (retention) or never written (another cluster). The consumer never moves past this on
    /// its own (`auto.offset.reset=error`); the partition stops until it is started again.
    case offsetOutOfRange(TopicPartition, offset: Int64)
    /// A consumer error (broker down, unknown partition); the consumer keeps going.
    case error(KafkaError)
}

/// Reports partition assignment changes of the group. Both calls run inside `poll`, on the
/// polling thread, inside librdkafka's rebalance callback: record what changed and return;
/// do no I/O and take no locks there (the group waits for the callback).
public protocol RebalanceHandler: AnyObject {
    /// The group gave these partitions to this member. They are held (nothing is fetched)
    /// until `KafkaConsumer.start` gives each its offset, from the poll loop.
    func assigned(_ partitions: [TopicPartition])
    /// These partitions are being taken away; abandon work on them now.
    func revoked(_ partitions: [TopicPartition])
}

/// Consumes from Kafka as a member of a consumer group, without ever committing or storing
/// offsets on its own (`enable.auto.commit=false`, `enable.auto.offset.store=false`).
///
/// Not thread-safe: one thread polls; the rebalance handler runs on it during `poll`.
public final class KafkaConsumer {
    private let core: RDKafkaConsumer
    private let logger: Logger
    private weak var handler: (any RebalanceHandler)?

    public init(connection: KafkaConnection, configuration: ConsumerConfiguration, logger: Logger) throws(KafkaError) {
        self.logger = logger
        core = try RDKafkaConsumer(properties: try configuration.properties(for: connection), logger: logger)
    }

    /// Joins the group for `topics`. `handler` (held weakly) hears every assignment change.
    public func subscribe(_ topics: [String], handler: any RebalanceHandler) throws(KafkaError) {
        self.handler = handler
        core.callbacks.onRebalance = { [unowned self] assigned, partitions in
            let names = partitions.map(\.description).joined(separator: ", ")
            if assigned {
                self.logger.info("assigned \(names)")
                self.handler?.assigned(partitions)
                return [:]
            }
            self.logger.info("revoked \(names)")
            self.handler?.revoked(partitions)
            return [:]
        }
        try core.subscribe(topics)
    }

    /// Reads partitions directly, outside any group rebalancing, from the given offsets.
    public func assign(_ partitions: [TopicPartition], startingAt offsets: [TopicPartition: Int64] = [:]) throws(KafkaError) {
        try core.assign(partitions, offsets: offsets)
    }

    /// Reads partitions on its own — no group, no rebalancing — from the given offsets, with
    /// librdkafka's simple consumer, which fetches several times faster than `assign`.
    /// `seek`, `pause` and `resume` do not apply to partitions read this way.
    public func readDirectly(_ partitions: [TopicPartition], startingAt offsets: [TopicPartition: Int64]) throws(KafkaError) {
        try core.readDirectly(partitions, offsets: offsets)
    }

    /// Up to `maxMessages` events; waits at most `timeoutMilliseconds` when none is ready.
    public func poll(maxMessages: Int = 1_000, timeoutMilliseconds: Int32 = 100) -> [ConsumerEvent] {
        core.poll(max: maxMessages, timeoutMilliseconds: timeoutMilliseconds)
    }

    public func pause(_ partitions: [TopicPartition]) throws(KafkaError) { try core.pause(partitions) }
    public func resume(_ partitions: [TopicPartition]) throws(KafkaError) { try core.resume(partitions) }

    /// Starts partitions the group assigned (held until now) at the given offsets: the
    /// offsets stored with the data, never the group's committed ones.
    public func start(_ offsets: [TopicPartition: Int64], timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) {
        try core.start(offsets, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The id of the cluster the consumer talks to, when the cluster reports one.
    public func clusterID(timeoutMilliseconds: Int32 = 10_000) -> String? {
        core.client.clusterID(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Moves the read position of assigned partitions.
    public func seek(_ offsets: [TopicPartition: Int64], timeoutMilliseconds: Int32 = 5_000) throws(KafkaError) {
        try core.seek(offsets, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Low and high watermark (the next offset to be written), for lag and progress.
    public func watermarks(_ tp: TopicPartition, timeoutMilliseconds: Int32 = 5_000) throws(KafkaError) -> (low: Int64, high: Int64) {
        try core.client.watermarks(tp, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The high watermark last seen in a fetch (free; may lag behind the broker).
    public func cachedHighWatermark(_ tp: TopicPartition) -> Int64? { core.cachedHighWatermark(tp) }

    /// The number of partitions of `topic`, from the cluster's metadata.
    public func partitionCount(_ topic: String, timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> Int {
        guard let n = try core.client.topicPartitionCounts(timeoutMilliseconds: timeoutMilliseconds)[topic] else {
            throw KafkaError(.topic, "topic \(topic) does not exist; create it with 'daybook topics'")
        }
        return n
    }

    /// Commits offsets to the group, asynchronously. Informational only.
    public func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError) { try core.commit(offsets) }

    /// The partitions currently assigned to this member.
    public var assignment: [TopicPartition] { core.assignment() }

    /// Leaves the group cleanly; the handler hears the revocation.
    public func close() { core.close() }

    public var lastClientError: KafkaError? { core.callbacks.lastError }
}
