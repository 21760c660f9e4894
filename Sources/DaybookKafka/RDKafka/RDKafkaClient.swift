import CRdKafka
import DaybookLog

/// Things librdkafka calls back into. One per client; passed to C as the handle's opaque.
///
/// `logger` is read from librdkafka's own threads (log callback), so it is immutable;
/// the other members are only touched from the thread that polls the client.
final class ClientCallbacks {
    let logger: Logger
    var onDelivery: ((_ id: Int, _ error: KafkaError?, _ partition: Int32, _ offset: Int64) -> Void)?
    /// Called with (true, partitions) on assignment, returning start offsets; (false, partitions) on revocation.
    var onRebalance: ((_ assigned: Bool, _ partitions: [TopicPartition]) -> [TopicPartition: Int64])?
    /// The most recent client-level error (all brokers down, authentication, fatal).
    var lastError: KafkaError?

    init(logger: Logger) { self.logger = logger }
}

/// Owns one `rd_kafka_t`. Everything that talks to librdkafka goes through one of these.
final class RDKafkaClient {
    let handle: OpaquePointer
    let callbacks: ClientCallbacks

    /// Creates a client of `type` from a property map, installing the callbacks that
    /// `configure` asks for on the configuration object before the handle exists.
    init(type: rd_kafka_type_t, properties: [String: String], callbacks: ClientCallbacks,
         configure: (OpaquePointer) -> Void = { _ in }) throws(KafkaError) {
        guard let conf = rd_kafka_conf_new() else { throw KafkaError(.configuration, "rd_kafka_conf_new failed") }
        var errorText = [CChar](repeating: 0, count: 512)
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            if rd_kafka_conf_set(conf, key, value, &errorText, errorText.count) != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                throw KafkaError(.configuration, "\(key): \(text(of: errorText))")
            }
        }
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, text in
            guard let rk, let opaque = rd_kafka_opaque(rk) else { return }
            let callbacks = Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue()
            let mapped: Logger.Level = level <= 3 ? .error : level == 4 ? .warning : .debug
            callbacks.logger.log(mapped, "librdkafka \(facility.map { String(cString: $0) } ?? ""): \(text.map { String(cString: $0) } ?? "")")
        }
        rd_kafka_conf_set_error_cb(conf) { _, code, reason, opaque in
            guard let opaque else { return }
            let callbacks = Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue()
            let error = RDKafkaClient.error(rd_kafka_resp_err_t(code), reason.map { String(cString: $0) } ?? "client error", kind: .broker)
            callbacks.lastError = error
            callbacks.logger.warning("kafka: \(error)")
        }
        configure(conf)
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            // rd_kafka_new frees conf only on success.
            rd_kafka_conf_destroy(conf)
            throw KafkaError(.configuration, text(of: errorText))
        }
        self.handle = handle
        self.callbacks = callbacks
    }

    deinit {
        rd_kafka_destroy(handle)
    }

    /// A plain producer-type client for admin and metadata requests.
    static func admin(properties: [String: String], logger: Logger) throws(KafkaError) -> RDKafkaClient {
        var p = properties
        p["enable.idempotence"] = "false"
        return try RDKafkaClient(type: RD_KAFKA_PRODUCER, properties: p, callbacks: ClientCallbacks(logger: logger))
    }

    /// A `KafkaError` for a librdkafka code, classified by whether retrying can help.
    static func error(_ code: rd_kafka_resp_err_t, _ message: String, kind: KafkaError.Kind,
                      file: String = #fileID, line: Int = #line) -> KafkaError {
        let name = String(cString: rd_kafka_err2name(code))
        let retriable: Set<rd_kafka_resp_err_t> = [
            RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
            RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
            RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR__RESOLVE, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
        ]
        return KafkaError(kind, "\(message): \(String(cString: rd_kafka_err2str(code)))", code: code.rawValue, codeName: name,
                          isRetriable: retriable.contains(code), isFatal: code == RD_KAFKA_RESP_ERR__FATAL,
                          file: file, line: line)
    }

    /// Serves queued callbacks (delivery reports, errors) for up to `milliseconds`.
    @discardableResult
    func poll(milliseconds: Int32) -> Int32 { rd_kafka_poll(handle, milliseconds) }

    /// Low and high watermark of a partition, asked of its leader.
    func watermarks(_ tp: TopicPartition, timeoutMilliseconds: Int32) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = 0, high: Int64 = 0
        let code = rd_kafka_query_watermark_offsets(handle, tp.topic, tp.partition, &low, &high, timeoutMilliseconds)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw RDKafkaClient.error(code, "watermarks of \(tp)", kind: .broker)
        }
        return (low, high)
    }

    /// Low and high watermarks of several partitions, in one ListOffsets request per leader
    /// for each end (a ListOffsets "timestamp" of -2 asks for the earliest offset, -1 for
    /// the latest, as `rd_kafka_query_watermark_offsets` asks for one partition).
    func watermarks(of partitions: [TopicPartition], timeoutMilliseconds: Int32) throws(KafkaError) -> [TopicPartition: (low: Int64, high: Int64)] {
        guard !partitions.isEmpty else { return [:] }
        func what(_ subject: String) -> String { "watermarks of \(subject)" }
        let all = "\(partitions.count) partitions"
        let low = try listOffsets(partitions, at: -2, timeoutMilliseconds: timeoutMilliseconds, all: all, what)
        let high = try listOffsets(partitions, at: -1, timeoutMilliseconds: timeoutMilliseconds, all: all, what)
        var out: [TopicPartition: (low: Int64, high: Int64)] = [:]
        for tp in partitions {
            guard let l = low[tp], let h = high[tp] else {
                throw KafkaError(.broker, "watermarks of \(tp): the brokers did not answer for it")
            }
            guard l >= 0, h >= 0 else {
                throw KafkaError(.broker, "watermarks of \(tp): the broker answered offset \(min(l, h))")
            }
            out[tp] = (l, h)
        }
        return out
    }

    /// For each partition, the earliest offset whose message timestamp is at or after
    /// `milliseconds` (since 1970), from the brokers' time index (ListOffsets by timestamp);
    /// nil where the broker says no message is that late.
    func offsetsForTimes(_ partitions: [TopicPartition], milliseconds: Int64,
                         timeoutMilliseconds: Int32) throws(KafkaError) -> [TopicPartition: Int64?] {
        try listOffsets(partitions, at: milliseconds, timeoutMilliseconds: timeoutMilliseconds,
                        all: partitions.map(\.description).joined(separator: ", ")) { "looking up offsets by time in \($0)" }
            .mapValues { $0 >= 0 ? $0 : nil }
    }

    /// `rd_kafka_offsets_for_times` with one ListOffsets "timestamp" for every partition (a
    /// time in ms since 1970, or -2 for the earliest offset, -1 for the latest): each
    /// partition's offset as the broker answered it, negative for none. An error names the
    /// call as `what(all)`, or `what` of the partition it came with.
    private func listOffsets(_ partitions: [TopicPartition], at timestamp: Int64, timeoutMilliseconds: Int32,
                             all: String, _ what: (String) -> String) throws(KafkaError) -> [TopicPartition: Int64] {
        let list = PartitionList.make(partitions, offsets: Dictionary(uniqueKeysWithValues: partitions.map { ($0, timestamp) }))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let code = rd_kafka_offsets_for_times(handle, list, timeoutMilliseconds)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, what(all), kind: .broker) }
        var out: [TopicPartition: Int64] = [:]
        for i in 0..<Int(list.pointee.cnt) {
            let e = list.pointee.elems[i]
            let tp = TopicPartition(String(cString: e.topic), e.partition)
            guard e.err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(e.err, what(tp.description), kind: .broker) }
            out[tp] = e.offset
        }
        return out
    }

    /// The cluster's id as its brokers report it (KRaft and ZooKeeper clusters have one;
    /// nil when the cluster does not say or cannot be reached within the timeout).
    func clusterID(timeoutMilliseconds: Int32) -> String? {
        guard let id = rd_kafka_clusterid(handle, timeoutMilliseconds) else { return nil }
        defer { rd_kafka_mem_free(handle, id) }
        let text = String(cString: id)
        return text.isEmpty ? nil : text
    }

    /// The leader broker of each partition, from the cluster's metadata; a partition
    /// without a leader is left out.
    func partitionLeaders(timeoutMilliseconds: Int32) throws(KafkaError) -> [TopicPartition: Int32] {
        try withTopics(timeoutMilliseconds: timeoutMilliseconds) { topic, t in
            (0..<Int(t.partition_cnt)).compactMap { j in
                t.partitions[j].leader >= 0 ? (TopicPartition(topic, t.partitions[j].id), t.partitions[j].leader) : nil
            }
        }.reduce(into: [:]) { out, pairs in for (tp, leader) in pairs { out[tp] = leader } }
    }

    /// Topic name → partition count, from the cluster's metadata.
    func topicPartitionCounts(timeoutMilliseconds: Int32) throws(KafkaError) -> [String: Int] {
        Dictionary(try withTopics(timeoutMilliseconds: timeoutMilliseconds) { topic, t in (topic, Int(t.partition_cnt)) }) { _, last in last }
    }

    /// `body` of each topic the cluster's metadata describes without an error, with its
    /// name (asks for all topics, which never auto-creates one).
    private func withTopics<T>(timeoutMilliseconds: Int32, _ body: (String, rd_kafka_metadata_topic) -> T) throws(KafkaError) -> [T] {
        var metadata: UnsafePointer<rd_kafka_metadata>? = nil
        let code = rd_kafka_metadata(handle, 1, nil, &metadata, timeoutMilliseconds)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw RDKafkaClient.error(code, "reading cluster metadata", kind: .broker)
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        let m = metadata.pointee
        return (0..<Int(m.topic_cnt)).compactMap { i in
            let t = m.topics[i]
            return t.err == RD_KAFKA_RESP_ERR_NO_ERROR ? body(String(cString: t.topic), t) : nil
        }
    }
}

/// Builds and frees `rd_kafka_topic_partition_list_t`s.
/// The text of a NUL-terminated C buffer.
func text(of buffer: [CChar]) -> String {
    buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

enum PartitionList {
    static func make(_ partitions: [TopicPartition], offsets: [TopicPartition: Int64] = [:]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(max(1, partitions.count)))!
        for tp in partitions {
            let element = rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition)!
            if let offset = offsets[tp] { element.pointee.offset = offset }
        }
        return list
    }

    static func setOffsets(_ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, _ offsets: [TopicPartition: Int64]) {
        for i in 0..<Int(list.pointee.cnt) {
            let tp = TopicPartition(String(cString: list.pointee.elems[i].topic), list.pointee.elems[i].partition)
            if let offset = offsets[tp] { list.pointee.elems[i].offset = offset }
        }
    }

    static func read(_ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> [(TopicPartition, Int64)] {
        (0..<Int(list.pointee.cnt)).map { i in
            let e = list.pointee.elems[i]
            return (TopicPartition(String(cString: e.topic), e.partition), e.offset)
        }
    }
}
