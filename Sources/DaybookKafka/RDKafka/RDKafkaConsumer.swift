import CRdKafka
import DaybookLog
import Dispatch
import Synchronization

/// The librdkafka side of `KafkaConsumer`.
final class RDKafkaConsumer {
    let client: RDKafkaClient
    private var queue: OpaquePointer
    private var topicNames: [OpaquePointer: String] = [:]
    private(set) var closed = false
    /// Partitions read with the simple (legacy) consumer, and their topic handles.
    private var direct: [(rkt: OpaquePointer, partition: Int32)] = []

    init(properties: [String: String], logger: Logger) throws(KafkaError) {
        let callbacks = ClientCallbacks(logger: logger)
        client = try RDKafkaClient(type: RD_KAFKA_CONSUMER, properties: properties, callbacks: callbacks) { conf in
            rd_kafka_conf_set_rebalance_cb(conf) { rk, code, partitions, opaque in
                guard let rk, let partitions, let opaque else { return }
                let callbacks = Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue()
                let list = PartitionList.read(partitions).map(\.0).sorted()
                if code == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS {
                    // Take the partitions but hold them (paused, at a concrete offset so that no
                    // committed offset or reset policy is consulted): the caller opens its store
                    // in its poll loop, where failures can be thrown, then starts each partition
                    // at its own offset with `start`. Nothing here may block or fail.
                    PartitionList.setOffsets(partitions, Dictionary(uniqueKeysWithValues: list.map { ($0, daybook_offset_end()) }))
                    rd_kafka_assign(rk, partitions)
                    rd_kafka_pause_partitions(rk, partitions)
                    _ = callbacks.onRebalance?(true, list)
                } else {
                    _ = callbacks.onRebalance?(false, list)
                    rd_kafka_assign(rk, nil)
                }
                // The handler only recorded the change: return from this poll at once, so that
                // the caller's loop acts on it (closes what was taken away before another
                // member is given it) instead of waiting out the poll's timeout.
                rd_kafka_yield(rk)
            }
        }
        rd_kafka_poll_set_consumer(client.handle)
        // librdkafka has no consumer queue without a usable group.id (e.g. an empty one).
        guard let consumerQueue = rd_kafka_queue_get_consumer(client.handle) else {
            throw KafkaError(.configuration, "group.id '\(properties["group.id"] ?? "")' is not usable: give a consumer group name", property: "group.id")
        }
        queue = consumerQueue
    }

    deinit {
        stopDirect()
        rd_kafka_queue_destroy(queue)
        if !closed { rd_kafka_consumer_close(client.handle) }
    }

    /// Reads partitions with librdkafka's simple consumer (no group, no rebalancing) into
    /// one queue, from the given offsets. It fetches several times faster than an assigned
    /// high-level consumer (BENCHMARKS.md, "Figures behind choices in the code").
    func readDirectly(_ partitions: [TopicPartition], offsets: [TopicPartition: Int64]) throws(KafkaError) {
        stopDirect()
        let directQueue = rd_kafka_queue_new(client.handle)!
        rd_kafka_queue_destroy(queue)
        queue = directQueue
        for tp in partitions {
            guard let rkt = rd_kafka_topic_new(client.handle, tp.topic, nil) else {
                throw RDKafkaClient.error(rd_kafka_last_error(), "opening topic \(tp.topic)", kind: .topic)
            }
            let start = offsets[tp] ?? daybook_offset_beginning()
            guard rd_kafka_consume_start_queue(rkt, tp.partition, start, directQueue) == 0 else {
                let code = rd_kafka_last_error()
                rd_kafka_topic_destroy(rkt)
                throw RDKafkaClient.error(code, "starting \(tp)", kind: .broker)
            }
            direct.append((rkt, tp.partition))
        }
    }

    private func stopDirect() {
        for (rkt, partition) in direct {
            rd_kafka_consume_stop(rkt, partition)
            rd_kafka_topic_destroy(rkt)
        }
        direct.removeAll()
    }

    var callbacks: ClientCallbacks { client.callbacks }

    func subscribe(_ topics: [String]) throws(KafkaError) {
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for t in topics { rd_kafka_topic_partition_list_add(list, t, -1) }
        let code = rd_kafka_subscribe(client.handle, list)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "subscribing to \(topics)", kind: .broker) }
    }

    /// Assigns partitions directly (no group coordination), starting at the given offsets.
    func assign(_ partitions: [TopicPartition], offsets: [TopicPartition: Int64]) throws(KafkaError) {
        try call(partitions, offsets: offsets, "assigning \(partitions)", kind: .state) { rd_kafka_assign(client.handle, $0) }
    }

    /// Runs one librdkafka call on a temporary partition list and throws its error code.
    private func call(_ partitions: [TopicPartition], offsets: [TopicPartition: Int64] = [:], _ what: @autoclosure () -> String,
                      kind: KafkaError.Kind,
                      _ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> rd_kafka_resp_err_t) throws(KafkaError) {
        let list = PartitionList.make(partitions, offsets: offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let code = body(list)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, what(), kind: kind) }
    }

    /// Up to `max` events, waiting at most `timeoutMilliseconds` for the first.
    ///
    /// `rd_kafka_consume_batch_queue` waits for the whole timeout unless the batch fills,
    /// so it is only ever called without waiting; the wait is for one message at most.
    func poll(max: Int, timeoutMilliseconds: Int32) -> [ConsumerEvent] {
        var events: [ConsumerEvent] = []
        var messages = [UnsafeMutablePointer<rd_kafka_message_t>?](repeating: nil, count: max)
        // The poll's messages live in one object, not one each.
        let polled = PolledMessages(client: client)
        var n = rd_kafka_consume_batch_queue(queue, 0, &messages, max)
        if n <= 0 {
            let waited = direct.isEmpty ? rd_kafka_consumer_poll(client.handle, timeoutMilliseconds) : rd_kafka_consume_queue(queue, timeoutMilliseconds)
            guard let first = waited else { return [] }
            convert(first, into: &events, polled: polled)
            n = rd_kafka_consume_batch_queue(queue, 0, &messages, max - 1)
        }
        guard n > 0 else { return events }
        events.reserveCapacity(events.count + n)
        polled.messages.reserveCapacity(n + 1)
        for i in 0..<n {
            if let message = messages[i] { convert(message, into: &events, polled: polled) }
        }
        return events
    }

    /// Turns one librdkafka message into an event: a message keeps librdkafka's buffer (no
    /// copy); anything else is copied and destroyed at once.
    private func convert(_ message: UnsafeMutablePointer<rd_kafka_message_t>, into events: inout [ConsumerEvent], polled: PolledMessages) {
        var keep = false
        defer { if !keep { rd_kafka_message_destroy(message) } }
        let m = message.pointee
        let topic = m.rkt.map(name(of:)) ?? ""
        if m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF {
            events.append(.endOfPartition(TopicPartition(topic, m.partition), offset: m.offset))
            return
        }
        if m.err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET || m.err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE {
            // auto.offset.reset=error: the wanted offset is not in the log any more (or not yet).
            events.append(.offsetOutOfRange(TopicPartition(topic, m.partition), offset: m.offset))
            return
        }
        if m.err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let text = m.payload.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: m.len), as: UTF8.self) } ?? ""
            events.append(.error(RDKafkaClient.error(m.err, "consuming \(topic)[\(m.partition)] \(text)", kind: .broker)))
            return
        }
        keep = true // the message now belongs to the poll's messages, destroyed with them
        polled.messages.append(message)
        var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ms = rd_kafka_message_timestamp(message, &type)
        events.append(.message(ConsumedMessage(
            topicPartition: TopicPartition(topic, m.partition), offset: m.offset, owner: polled,
            key: m.key.map { UnsafeRawBufferPointer(start: $0, count: m.key_len) } ?? UnsafeRawBufferPointer(start: nil, count: 0),
            value: m.payload.map { UnsafeRawBufferPointer(start: $0, count: m.len) } ?? UnsafeRawBufferPointer(start: nil, count: 0),
            timestamp: type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ms < 0 ? nil : ms, raw: OpaquePointer(message))))
    }

    private func name(of rkt: OpaquePointer) -> String {
        // Nearly every message is of the topic before it: no dictionary (SipHash of the
        // pointer, ~200 instructions a message).
        if let last = lastTopic, last.handle == rkt { return last.name }
        let name: String
        if let cached = topicNames[rkt] {
            name = cached
        } else {
            name = String(cString: rd_kafka_topic_name(rkt))
            topicNames[rkt] = name
        }
        lastTopic = (rkt, name)
        return name
    }
    /// The topic `name(of:)` answered last.
    private var lastTopic: (handle: OpaquePointer, name: String)?

    func pause(_ partitions: [TopicPartition]) throws(KafkaError) {
        try call(partitions, "pausing \(partitions)", kind: .state) { rd_kafka_pause_partitions(client.handle, $0) }
    }

    func resume(_ partitions: [TopicPartition]) throws(KafkaError) {
        try call(partitions, "resuming \(partitions)", kind: .state) { rd_kafka_resume_partitions(client.handle, $0) }
    }

    /// Starts partitions held since their assignment: resumes them, then seeks each to its
    /// offset. In this order the seek's op wakes the broker threads, which fetch at once;
    /// seek-then-resume leaves them asleep until their next wake-up (BENCHMARKS.md, "Figures
    /// behind choices in the code"). Anything fetched between the two calls is of an older
    /// fetch version and is discarded by librdkafka; the projector also skips offsets below
    /// a shard's and re-checks any jump.
    ///
    /// librdkafka 2.0.2 can undo a seek that lands while the assignment's end-of-log lookup
    /// (`OFFSET_END`, above) is in flight, silently; the projector seeks again when it sees
    /// the end of a partition past its shard's offset.
    func start(_ offsets: [TopicPartition: Int64], timeoutMilliseconds: Int32) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        try resume(Array(offsets.keys))
        try seek(offsets, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Moves read positions; fails on the first partition librdkafka could not seek.
    /// Partitions read directly (the simple consumer) are sought with its own call: the
    /// group consumer's `rd_kafka_seek_partitions` is for assigned partitions.
    func seek(_ offsets: [TopicPartition: Int64], timeoutMilliseconds: Int32) throws(KafkaError) {
        var offsets = offsets
        for (rkt, partition) in direct {
            guard let entry = offsets.first(where: { $0.key.partition == partition && $0.key.topic == name(of: rkt) }) else { continue }
            offsets[entry.key] = nil
            let code = rd_kafka_seek(rkt, partition, entry.value, timeoutMilliseconds)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "seeking \(entry.key) to \(entry.value)", kind: .state) }
        }
        guard !offsets.isEmpty else { return }
        let wait = Self.seekWait(timeoutMilliseconds)
        try call(Array(offsets.keys), offsets: offsets, "seeking", kind: .state) { list in
            if let error = rd_kafka_seek_partitions(client.handle, list, wait) {
                let code = rd_kafka_error_code(error)
                rd_kafka_error_destroy(error)
                return code
            }
            return (0..<Int(list.pointee.cnt)).lazy.map { list.pointee.elems[$0].err }
                .first { $0 != RD_KAFKA_RESP_ERR_NO_ERROR } ?? RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// The timeout to give `rd_kafka_seek_partitions` for a wait of `milliseconds`. Before
    /// 2.1.0 librdkafka reads this timeout as microseconds (its issue 4230), so there it is
    /// given a thousand times more.
    static func seekWait(_ milliseconds: Int32, libraryVersion: Int32 = rd_kafka_version()) -> Int32 {
        libraryVersion < 0x0201_0000 ? Int32(clamping: Int64(milliseconds) * 1_000) : milliseconds
    }

    /// Commits offsets to the group (informational: the truth is stored with the data).
    func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        try call(Array(offsets.keys), offsets: offsets, "committing offsets", kind: .broker) { rd_kafka_commit(client.handle, $0, 1) }
    }

    func assignment() -> [TopicPartition] {
        if !direct.isEmpty {
            return direct.map { TopicPartition(name(of: $0.rkt), $0.partition) }.sorted()
        }
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>? = nil
        guard rd_kafka_assignment(client.handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return PartitionList.read(list).map(\.0).sorted()
    }

    /// Wakes the broker threads that fetch `partitions`: asks the watermarks of one partition
    /// of each leader (see `KafkaConsumer.wakeFetchers`). Returns how many brokers were asked.
    /// Runs on `waker`, like every wake: `leaders` is only touched there.
    func wakeFetchers(of partitions: [TopicPartition], timeoutMilliseconds: Int32) -> Int {
        waker.sync { wakeNow(partitions, timeoutMilliseconds: timeoutMilliseconds) }
    }

    /// `wakeFetchers` on `waker`, without waiting for it; nothing when a wake is still under
    /// way (it is about to wake the same threads). Returns whether it started one.
    ///
    /// `rd_kafka_query_watermark_offsets` first waits for the handle's lock, which a broker
    /// thread holds while it reads a large fetch response: the wake near the end of a
    /// catch-up took 23–60 ms however short its timeout, and the projector's loop stood still
    /// meanwhile (BENCHMARKS.md, "Issue 26, thirteenth steps").
    func wakeFetchersInBackground(of partitions: [TopicPartition], timeoutMilliseconds: Int32) -> Bool {
        guard wakePending.withLock({ pending in
            if pending { return false }
            pending = true
            return true
        }) else { return false }
        let me = Unchecked(self)
        waker.async {
            _ = me.value.wakeNow(partitions, timeoutMilliseconds: timeoutMilliseconds)
            me.value.wakePending.withLock { $0 = false }
        }
        return true
    }

    /// Waits for a wake under way (before the handle is closed).
    func waitForWakes() { waker.sync {} }

    private let waker = DispatchQueue(label: "daybook.kafka.wake-fetchers")
    private let wakePending = Mutex(false)

    private struct Unchecked: @unchecked Sendable {
        let value: RDKafkaConsumer
        init(_ value: RDKafkaConsumer) { self.value = value }
    }

    /// The wake itself, on `waker`.
    private func wakeNow(_ partitions: [TopicPartition], timeoutMilliseconds: Int32) -> Int {
        if partitions.contains(where: { leaders[$0] == nil }), leadersAsked.map({ ContinuousClock.now - $0 >= .seconds(10) }) ?? true {
            leadersAsked = .now
            if let known = try? client.partitionLeaders(timeoutMilliseconds: timeoutMilliseconds) { leaders = known }
        }
        // One partition per leader, and one for all whose leader is unknown (the metadata
        // could not be read: asking each of them, each waiting up to the timeout, would hold
        // the caller for as many timeouts as there are partitions).
        var asked = Set<Int32>()
        var woken = 0
        for tp in partitions where asked.insert(leaders[tp] ?? -1).inserted {
            // The answer is not wanted: the request is what wakes the leader's broker thread,
            // as soon as it is queued for it. Waiting for the answer cost up to 140 ms when
            // the broker was holding a fetch with nothing to send (`fetch.wait.max.ms`):
            // the answer waits behind it. A late answer goes to a queue already gone.
            _ = try? client.watermarks(tp, timeoutMilliseconds: 1)
            woken += 1
        }
        return woken
    }
    /// Each partition's leader as last read from the metadata, for `wakeFetchers`.
    private var leaders: [TopicPartition: Int32] = [:]
    /// When `wakeFetchers` last read the leaders (at most every 10 s).
    private var leadersAsked: ContinuousClock.Instant?

    /// The high watermark from the last fetch response (no broker round trip); nil if unknown.
    func cachedHighWatermark(_ tp: TopicPartition) -> Int64? {
        var low: Int64 = 0, high: Int64 = 0
        guard rd_kafka_get_watermark_offsets(client.handle, tp.topic, tp.partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR,
              high >= 0 else { return nil }
        return high
    }

    /// The first message of `tp` at or after `offset`: its offset and timestamp (ms since
    /// 1970; -1 when it carries none), read with the simple consumer outside the consumer's
    /// queue; nil when there is none before the end of the partition.
    func firstMessage(_ tp: TopicPartition, from offset: Int64, timeoutMilliseconds: Int32) throws(KafkaError) -> (offset: Int64, timestamp: Int64)? {
        guard let rkt = rd_kafka_topic_new(client.handle, tp.topic, nil) else {
            throw RDKafkaClient.error(rd_kafka_last_error(), "opening topic \(tp.topic)", kind: .topic)
        }
        defer { rd_kafka_topic_destroy(rkt) }
        guard rd_kafka_consume_start(rkt, tp.partition, offset) == 0 else {
            throw RDKafkaClient.error(rd_kafka_last_error(), "reading \(tp) at offset \(offset)", kind: .broker)
        }
        defer { rd_kafka_consume_stop(rkt, tp.partition) }
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutMilliseconds))
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                throw KafkaError(.timedOut, "reading \(tp) at offset \(offset): no answer within \(timeoutMilliseconds) ms")
            }
            let wait = left.wholeMilliseconds &+ 1
            guard let message = rd_kafka_consume(rkt, tp.partition, wait) else { continue }
            defer { rd_kafka_message_destroy(message) }
            let m = message.pointee
            if m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
            if m.err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET || m.err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE {
                throw RDKafkaClient.error(m.err, "reading \(tp) at offset \(offset): outside the log", kind: .broker)
            }
            if m.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                // Transient (a broker reconnecting): librdkafka retries; wait for the message.
                continue
            }
            var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
            return (m.offset, rd_kafka_message_timestamp(message, &type))
        }
    }

    /// Leaves the group (revoking partitions through the rebalance handler).
    func close() {
        guard !closed else { return }
        closed = true
        waitForWakes()
        stopDirect()
        rd_kafka_consumer_close(client.handle)
    }
}

/// The librdkafka messages of one poll, kept alive for their keys and payloads and destroyed
/// together once the last `ConsumedMessage` of the poll is gone (from whichever thread
/// releases it): one object a poll, not one a message (an allocation and its free were ~350
/// instructions a message).
///
/// It holds its client: `rd_kafka_destroy` waits until every message of the handle is
/// destroyed, so a message that outlived its client would hang the destroy forever.
final class PolledMessages {
    var messages: [UnsafeMutablePointer<rd_kafka_message_t>] = []
    private let client: RDKafkaClient

    init(client: RDKafkaClient) { self.client = client }

    deinit {
        for message in messages { rd_kafka_message_destroy(message) }
    }

    /// The headers of one of the poll's messages (`raw`, its `rd_kafka_message_t`).
    static func headers(of raw: OpaquePointer) -> [(String, [UInt8])] {
        let message = UnsafeMutablePointer<rd_kafka_message_t>(raw)
        var list: OpaquePointer? = nil
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        var out: [(String, [UInt8])] = []
        var index = 0
        while true {
            var name: UnsafePointer<CChar>? = nil
            var value: UnsafeRawPointer? = nil
            var size = 0
            guard rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR, let name else { break }
            out.append((String(cString: name), value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []))
            index += 1
        }
        return out
    }
}

/// A message made in process (tests, the fuzzer): copies of its key and value in one
/// allocation, and its headers.
final class OwnedMessageBytes {
    let bytes: UnsafeMutableRawBufferPointer
    let headers: [(String, [UInt8])]

    init(key: [UInt8], value: [UInt8], headers: [(String, [UInt8])]) {
        self.headers = headers
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, key.count + value.count), alignment: 1)
        bytes.copyBytes(from: key)
        UnsafeMutableRawBufferPointer(rebasing: bytes[key.count...]).copyBytes(from: value)
    }

    deinit { bytes.deallocate() }
}
