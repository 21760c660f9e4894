import Foundation
import DaybookLog

/// One message read from Kafka. Its key and payload stay in librdkafka's buffer, uncopied,
/// for as long as the value (or a copy of it) lives; `key`, `value` and `headers` copy
/// them out, `withKey` and `withValue` lend them.
public struct ConsumedMessage: @unchecked Sendable {
    public var topicPartition: TopicPartition
    public var offset: Int64
    /// What keeps `keyBytes` and `valueBytes` alive: the poll's messages (`PolledMessages`),
    /// or a copy of its own (`OwnedMessageBytes`).
    let owner: AnyObject
    let keyBytes: UnsafeRawBufferPointer
    let valueBytes: UnsafeRawBufferPointer
    /// When the message was produced (Kafka's CreateTime, or the broker's LogAppendTime if
    /// the topic says so), in ms since 1970; nil if the message has no timestamp. It is part
    /// of the log: a rebuild reads the same value.
    public let timestamp: Int64?
    /// librdkafka's message, for its headers (nil for a message made in process).
    let raw: OpaquePointer?

    init(topicPartition: TopicPartition, offset: Int64, owner: AnyObject, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
         timestamp: Int64?, raw: OpaquePointer?) {
        self.topicPartition = topicPartition
        self.offset = offset
        self.owner = owner
        keyBytes = key
        valueBytes = value
        self.timestamp = timestamp
        self.raw = raw
    }

    /// A message made in process, with copies of the bytes (tests, the fuzzer).
    init(topicPartition: TopicPartition, offset: Int64, key: [UInt8], value: [UInt8], headers: [(String, [UInt8])],
         timestamp: Int64? = nil) {
        let owned = OwnedMessageBytes(key: key, value: value, headers: headers)
        self.init(topicPartition: topicPartition, offset: offset, owner: owned,
                  key: UnsafeRawBufferPointer(rebasing: owned.bytes[..<key.count]),
                  value: UnsafeRawBufferPointer(rebasing: owned.bytes[key.count..<(key.count + value.count)]),
                  timestamp: timestamp, raw: nil)
    }

    /// The payload's length in bytes.
    public var valueCount: Int { valueBytes.count }

    public func withValue<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(valueBytes.bindMemory(to: UInt8.self)) }
    }

    public func withKey<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(keyBytes.bindMemory(to: UInt8.self)) }
    }

    public var key: [UInt8] { withExtendedLifetime(owner) { Array(keyBytes) } }
    public var value: [UInt8] { withExtendedLifetime(owner) { Array(valueBytes) } }
    public var headers: [(String, [UInt8])] {
        withExtendedLifetime(owner) {
            if let raw { return PolledMessages.headers(of: raw) }
            return (owner as? OwnedMessageBytes)?.headers ?? []
        }
    }

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
/// do no I/O and take no locks there (the group waits for the callback). `poll` returns
/// right after the callback, so the polling loop can act on what was recorded at once.
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
    let core: RDKafkaConsumer
    private let logger: Logger
    /// The consumer group of its configuration (joined only by `subscribe`).
    public let groupID: String
    private weak var handler: (any RebalanceHandler)?

    public init(connection: KafkaConnection, configuration: ConsumerConfiguration, logger: Logger) throws(KafkaError) {
        self.logger = logger
        groupID = configuration.groupID
        do {
            core = try RDKafkaConsumer(properties: try configuration.properties(for: connection), logger: logger)
        } catch {
            throw connection.redacting(error)
        }
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
    /// `seek` applies to partitions read this way; `pause` and `resume` do not.
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

    /// Low and high watermarks of several partitions at once: two requests per leader broker
    /// rather than two per partition (a solo start of 32 partitions asked for 47 ms).
    public func watermarks(of partitions: [TopicPartition], timeoutMilliseconds: Int32 = 5_000) throws(KafkaError) -> [TopicPartition: (low: Int64, high: Int64)] {
        try core.client.watermarks(of: partitions, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// For each partition, the earliest offset whose message timestamp (ms since 1970) is at
    /// or after `milliseconds`, from the brokers' time index (librdkafka's
    /// `rd_kafka_offsets_for_times`); nil where the broker says no message is that late.
    public func offsetsForTimes(_ partitions: [TopicPartition], milliseconds: Int64,
                                timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> [TopicPartition: Int64?] {
        try core.client.offsetsForTimes(partitions, milliseconds: milliseconds, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The first message of `tp` at or after `offset`: its offset and timestamp (ms since
    /// 1970, -1 when it has none); nil when the partition has none before its end. Read on
    /// its own, outside what `poll` returns: not for a partition this consumer reads.
    public func firstMessage(_ tp: TopicPartition, from offset: Int64,
                             timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> (offset: Int64, timestamp: Int64)? {
        try core.firstMessage(tp, from: offset, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Where a partition's messages from a moment on start.
    public struct TimeOffset: Sendable, Equatable {
        /// The earliest offset whose message's timestamp is at or after the moment; nil when
        /// no message is that late (start at the end: nothing to read).
        public var offset: Int64?
        /// The brokers' time index found nothing although the log has a message that late, so
        /// the offset was found by reading message timestamps (librdkafka's mock cluster,
        /// behind `daybook broker`, keeps no time index and answers "none" to every lookup).
        public var byReading: Bool

        public init(offset: Int64?, byReading: Bool) {
            self.offset = offset
            self.byReading = byReading
        }
    }

    /// `offsetsForTimes`, checked against the log where the index finds nothing: if the
    /// partition's last message is that late after all, the offset is found by a binary
    /// search over message timestamps, which assumes they do not decrease along the
    /// partition (true of one producer's CreateTime, and of LogAppendTime). About log2(n)
    /// single-message reads per such partition, one for a partition that is consistent.
    public func offsets(atOrAfter milliseconds: Int64, in partitions: [TopicPartition],
                        timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> [TopicPartition: TimeOffset] {
        let indexed = try offsetsForTimes(partitions, milliseconds: milliseconds, timeoutMilliseconds: timeoutMilliseconds)
        var out: [TopicPartition: TimeOffset] = [:]
        for tp in partitions {
            if case .some(.some(let offset)) = indexed[tp] {
                out[tp] = TimeOffset(offset: offset, byReading: false)
                continue
            }
            let found = try searchByReading(tp, atOrAfter: milliseconds, timeoutMilliseconds: timeoutMilliseconds)
            out[tp] = TimeOffset(offset: found, byReading: found != nil)
        }
        return out
    }

    /// The first offset of `tp` whose message is at or after `milliseconds`, by reading
    /// messages (binary search; timestamps assumed not to decrease); nil when none is.
    private func searchByReading(_ tp: TopicPartition, atOrAfter milliseconds: Int64,
                                 timeoutMilliseconds: Int32) throws(KafkaError) -> Int64? {
        let (low, high) = try watermarks(tp, timeoutMilliseconds: timeoutMilliseconds)
        guard low < high else { return nil }
        // The last message first: when it is earlier, so is every message (the usual answer).
        if let last = try firstMessage(tp, from: high - 1, timeoutMilliseconds: timeoutMilliseconds), last.timestamp < milliseconds {
            return nil
        }
        var lo = low, hi = high
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            guard let (offset, timestamp) = try firstMessage(tp, from: mid, timeoutMilliseconds: timeoutMilliseconds), offset < hi else {
                hi = mid // nothing in mid..<hi
                continue
            }
            if timestamp >= milliseconds { hi = offset } else { lo = offset + 1 }
        }
        guard lo < high else { return nil }
        // Where the next message really is (offsets without messages: transaction markers).
        return try firstMessage(tp, from: lo, timeoutMilliseconds: timeoutMilliseconds)?.offset
    }

    /// The high watermark last seen in a fetch (free; may lag behind the broker).
    public func cachedHighWatermark(_ tp: TopicPartition) -> Int64? { core.cachedHighWatermark(tp) }

    /// Makes librdkafka look again, now, at whether to fetch `partitions`; returns how many
    /// brokers it asked.
    ///
    /// librdkafka 2.0 (Debian 12's) stops fetching once the consumer's queue holds
    /// `queued.max.messages.kbytes`, and looks again only when the broker's thread next
    /// wakes: after up to a second with nothing else to do (librdkafka issue 2879; 2.3 added
    /// `fetch.queue.backoff.ms`). A reader that drains the queue faster than that waits for
    /// the rest of the second. A request to a broker wakes its thread, which then fetches for
    /// every partition whose queue has room: this asks the watermarks of one partition per
    /// leader (its leaders read from the metadata when one is not known, at most every 10 s;
    /// one more partition stands for all whose leader is still unknown) without waiting for
    /// the answers (1 ms). Reading the metadata waits up to `timeoutMilliseconds`.
    @discardableResult
    public func wakeFetchers(of partitions: [TopicPartition], timeoutMilliseconds: Int32 = 200) -> Int {
        core.wakeFetchers(of: partitions, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// `wakeFetchers`, on a thread of its own, without waiting: the caller goes on at once.
    /// librdkafka's call first waits for the handle's lock, which a broker thread can hold
    /// for tens of milliseconds while it reads a large fetch response. At most one wake is
    /// under way; while one is, this does nothing and returns false. `close` waits for it.
    @discardableResult
    public func wakeFetchersInBackground(of partitions: [TopicPartition], timeoutMilliseconds: Int32 = 200) -> Bool {
        core.wakeFetchersInBackground(of: partitions, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The number of partitions of `topic`, from the cluster's metadata.
    public func partitionCount(_ topic: String, timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> Int {
        guard let n = try core.client.topicPartitionCounts(timeoutMilliseconds: timeoutMilliseconds)[topic] else {
            throw KafkaError(.topic, "topic \(topic) does not exist", code: KafkaError.Code.unknownTopicOrPartition.rawValue)
        }
        return n
    }

    /// The topic's partition count, asked in rounds of at most a second until `timeout`
    /// has passed, so that `shouldStop` is heard meanwhile; nil when it said stop. A missing
    /// topic throws at once (kind `.topic`); a cluster that never answers throws its last
    /// error at the deadline, told as "cannot reach the Kafka cluster within `timeout`".
    public func partitionCount(_ topic: String, within timeout: Duration, shouldStop: () -> Bool = { false }) throws(KafkaError) -> Int? {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                return try partitionCount(topic, timeoutMilliseconds: max(1, min(1_000, (deadline - ContinuousClock.now).wholeMilliseconds)))
            } catch {
                if error.kind == .topic { throw error }
                if ContinuousClock.now >= deadline {
                    var late = error
                    late.message = "cannot reach the Kafka cluster within \(timeout): \(error.message)"
                    throw late
                }
                if shouldStop() { return nil }
                usleep(100_000)
            }
        }
    }

    /// Commits offsets to the group, asynchronously. Informational only.
    public func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError) { try core.commit(offsets) }

    /// The partitions currently assigned to this member.
    public var assignment: [TopicPartition] { core.assignment() }

    /// Leaves the group cleanly; the handler hears the revocation.
    public func close() { core.close() }

    public var lastClientError: KafkaError? { core.callbacks.lastError }
}

extension Duration {
    /// Whole milliseconds, clamped to what librdkafka's timeouts take.
    public var wholeMilliseconds: Int32 {
        Int32(clamping: components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000)
    }
}
