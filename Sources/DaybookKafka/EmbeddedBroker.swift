import DaybookLog

/// A Kafka cluster inside this process: librdkafka's mock cluster, speaking the real wire
/// protocol on 127.0.0.1 with consumer groups, idempotent producers and fault injection.
///
/// Its limits are the mock's: each partition keeps only its newest ~5 MiB / 100,000
/// message sets (use more partitions and compression for big logs), topic configs such
/// as retention are ignored, and the Admin API's CreateTopics is not served (topics are
/// created here, from `topics/`). Data lives in memory and ends with the object.
public final class EmbeddedBroker {
    private let cluster: RDKafkaMockCluster
    public let topics: [TopicDefinition]
    public let brokerCount: Int

    /// Starts `brokers` brokers and creates `topics` (replication clamped to the broker count).
    public init(brokers: Int = 1, topics: [TopicDefinition], logger: Logger = .silent) throws(KafkaError) {
        guard brokers >= 1 else { throw KafkaError(.configuration, "an embedded cluster needs at least 1 broker") }
        cluster = try RDKafkaMockCluster(brokers: brokers, logger: logger)
        brokerCount = brokers
        var created: [TopicDefinition] = []
        for var t in topics {
            t.replicationFactor = min(t.replicationFactor, brokers)
            try cluster.createTopic(t.name, partitions: t.partitions, replicationFactor: t.replicationFactor)
            created.append(t)
        }
        self.topics = created
    }

    /// `host:port,host:port` of the brokers.
    public var bootstrapServers: String { cluster.bootstrapServers }

    /// Takes broker `id` (1-based) down: its connections close and it refuses new ones.
    public func setBrokerDown(_ id: Int32) throws(KafkaError) { try cluster.setBroker(id, up: false) }
    public func setBrokerUp(_ id: Int32) throws(KafkaError) { try cluster.setBroker(id, up: true) }

    /// Makes broker `id` answer every request `milliseconds` late (0 undoes it): a frozen
    /// broker whose connections stay open, as a SIGSTOPped process's do, with requests
    /// sent meanwhile still answered in the end.
    public func setBrokerDelay(_ id: Int32, milliseconds: Int32) throws(KafkaError) {
        try cluster.setBrokerRoundTrip(id, milliseconds: milliseconds)
    }

    /// Moves the leadership of a partition to broker `id`.
    public func setLeader(topic: String, partition: Int32, broker id: Int32) throws(KafkaError) {
        try cluster.setPartitionLeader(topic, partition, broker: id)
    }

    /// Errors the mock can answer requests with.
    public enum InjectedError: Sendable { case notLeaderForPartition, requestTimedOut, notEnoughReplicas, leaderNotAvailable }

    /// Makes the next Produce requests fail with these errors, one per request, in order.
    public func failNextProduceRequests(_ errors: [InjectedError]) {
        cluster.pushRequestErrors(apiKey: RDKafkaMockCluster.produceApiKey, codes: errors.map(RDKafkaMockCluster.code(of:)))
    }

    /// The partition-0.. topic definition for a name.
    public func topic(_ name: String) -> TopicDefinition? { topics.first { $0.name == name } }
}
