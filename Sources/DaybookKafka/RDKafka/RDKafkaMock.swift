import CRdKafka
import DaybookLog
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// librdkafka's mock cluster: real Kafka protocol listeners on 127.0.0.1, in this process.
final class RDKafkaMockCluster {
    private let client: RDKafkaClient
    private let cluster: OpaquePointer
    let bootstrapServers: String

    init(brokers: Int, logger: Logger) throws(KafkaError) {
        // The cluster needs a handle for its bookkeeping; it never connects anywhere.
        client = try RDKafkaClient(type: RD_KAFKA_PRODUCER, properties: ["log_level": "3"], callbacks: ClientCallbacks(logger: logger))
        // The cluster's thread (rdk:mock) inherits this thread's signal mask, and unlike
        // librdkafka's client threads it does not block signals itself: a SIGINT/SIGTERM the
        // kernel delivers to it interrupts its poll(), and the thread ends ("Mock cluster failed
        // to poll N fds: Interrupted system call") — the cluster stops answering, and
        // rd_kafka_mock_cluster_destroy waits for it forever. The kernel picks that thread when
        // the main thread cannot take the signal, e.g. one sent while the process is stopped
        // (SIGSTOP, then SIGTERM, then SIGCONT hung `daybook broker` in 2 runs of 5). So it is
        // created with every signal blocked; this thread's mask is restored at once.
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        let created = rd_kafka_mock_cluster_new(client.handle, Int32(brokers))
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        guard let cluster = created else {
            throw KafkaError(.broker, "could not start a mock cluster of \(brokers) brokers (ports in use?)")
        }
        self.cluster = cluster
        bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        Self.disableNagle(listeningOn: Self.ports(of: bootstrapServers))
    }

    /// The ports of a bootstrap list of `host:port` entries.
    static func ports(of bootstrapServers: String) -> Set<UInt16> {
        Set(bootstrapServers.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { UInt16($0) } })
    }

    /// Sets `TCP_NODELAY` on this process's TCP sockets listening on `ports` (the cluster's
    /// listeners), so that every connection they accept has it, as a real broker's do.
    /// librdkafka's mock cluster never sets it: an answer written in two pieces then waited
    /// for the client's delayed ACK, ~40 ms, at random (a start's watermarks took 0.2–0.7 ms
    /// in some runs and 41–45 ms in others: BENCHMARKS.md, "Issue 26, eleventh steps"). On
    /// Linux an accepted socket inherits the option from its listener; the mock cluster
    /// offers no hook to set it, so its listeners are found among the descriptors.
    /// Returns how many listeners it set.
    @discardableResult
    static func disableNagle(listeningOn ports: Set<UInt16>) -> Int {
        guard !ports.isEmpty else { return 0 }
        var set = 0
        // The open descriptors (Linux lists them); else the first 1,024.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) }
        for fd in open ?? Array(0..<1_024) {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0, length == socklen_t(MemoryLayout<sockaddr_in>.size), address.sin_family == sa_family_t(AF_INET),
                  ports.contains(UInt16(bigEndian: address.sin_port)) else { continue }
            var listening: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0, listening == 1 else { continue }
            var on: Int32 = 1
            if setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 { set += 1 }
        }
        return set
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
    }

    func createTopic(_ name: String, partitions: Int, replicationFactor: Int) throws(KafkaError) {
        let code = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicationFactor))
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "creating topic \(name)", kind: .topic) }
    }

    func setBroker(_ id: Int32, up: Bool) throws(KafkaError) {
        let code = up ? rd_kafka_mock_broker_set_up(cluster, id) : rd_kafka_mock_broker_set_down(cluster, id)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "setting broker \(id) \(up ? "up" : "down")", kind: .broker) }
    }

    /// Delays every response of broker `id` by `milliseconds` (0: none): a broker that
    /// answers late, or not at all for a while (frozen), while its connections stay open.
    func setBrokerRoundTrip(_ id: Int32, milliseconds: Int32) throws(KafkaError) {
        let code = rd_kafka_mock_broker_set_rtt(cluster, id, milliseconds)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "delaying broker \(id)", kind: .broker) }
    }

    func setPartitionLeader(_ topic: String, _ partition: Int32, broker: Int32) throws(KafkaError) {
        let code = rd_kafka_mock_partition_set_leader(cluster, topic, partition, broker)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "moving leader of \(topic)[\(partition)]", kind: .broker) }
    }

    /// Makes the next `codes.count` requests of `apiKey` fail with these codes, in order.
    func pushRequestErrors(apiKey: Int16, codes: [Int32]) {
        var errors = codes.map { rd_kafka_resp_err_t($0) }
        rd_kafka_mock_push_request_errors_array(cluster, apiKey, errors.count, &errors)
    }

    func clearRequestErrors(apiKey: Int16) {
        rd_kafka_mock_clear_request_errors(cluster, apiKey)
    }

    static func code(of error: EmbeddedBroker.InjectedError) -> Int32 {
        switch error {
        case .notLeaderForPartition: return RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION.rawValue
        case .requestTimedOut: return RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT.rawValue
        case .notEnoughReplicas: return RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS.rawValue
        case .leaderNotAvailable: return RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE.rawValue
        }
    }

    static let produceApiKey: Int16 = 0 // RD_KAFKAP_Produce
    static let fetchApiKey: Int16 = 1 // RD_KAFKAP_Fetch
}

/// Topic creation through the Admin API, for real clusters.
enum RDKafkaAdmin {
    static func createTopics(client: RDKafkaClient, _ topics: [TopicDefinition], timeoutMilliseconds: Int32) throws(KafkaError) -> [String: KafkaError?] {
        guard !topics.isEmpty else { return [:] }
        var errorText = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { for t in newTopics { rd_kafka_NewTopic_destroy(t) } }
        for t in topics {
            guard let nt = rd_kafka_NewTopic_new(t.name, Int32(t.partitions), Int32(t.replicationFactor), &errorText, errorText.count) else {
                throw KafkaError(.topic, "\(t.name): \(text(of: errorText))")
            }
            for (k, v) in t.configs.sorted(by: { $0.key < $1.key }) { rd_kafka_NewTopic_set_config(nt, k, v) }
            newTopics.append(nt)
        }
        let queue = rd_kafka_queue_new(client.handle)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(client.handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        rd_kafka_AdminOptions_set_request_timeout(options, timeoutMilliseconds, &errorText, errorText.count)
        rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMilliseconds, &errorText, errorText.count)
        rd_kafka_CreateTopics(client.handle, &newTopics, newTopics.count, options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMilliseconds + 1_000) else {
            throw KafkaError(.timedOut, "CreateTopics got no answer within \(timeoutMilliseconds) ms", isRetriable: true)
        }
        defer { rd_kafka_event_destroy(event) }
        let code = rd_kafka_event_error(event)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw RDKafkaClient.error(code, "CreateTopics", kind: .topic)
        }
        var out: [String: KafkaError?] = [:]
        var count = 0
        if let result = rd_kafka_event_CreateTopics_result(event), let items = rd_kafka_CreateTopics_result_topics(result, &count) {
            for i in 0..<count {
                guard let item = items[i] else { continue }
                let name = String(cString: rd_kafka_topic_result_name(item))
                let code = rd_kafka_topic_result_error(item)
                out[name] = (code == RD_KAFKA_RESP_ERR_NO_ERROR || code == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                    ? nil : RDKafkaClient.error(code, "creating \(name)", kind: .topic)
            }
        }
        return out
    }
}
