import DaybookLog

/// Makes the cluster's topics match `topics/`: creates what is missing, leaves what exists.
public final class KafkaAdmin {
    private let client: RDKafkaClient
    private let logger: Logger

    public init(connection: KafkaConnection, logger: Logger) throws(KafkaError) {
        self.logger = logger
        do {
            client = try RDKafkaClient.admin(properties: try ProducerConfiguration().properties(for: connection), logger: logger)
        } catch {
            throw connection.redacting(error)
        }
    }

    /// What happened to each topic.
    public enum Outcome: Equatable, Sendable {
        case created
        case exists(partitions: Int)
    }

    /// Creates missing topics; idempotent. An existing topic with a different partition count
    /// is reported (and logged), not changed: repartitioning would move users between
    /// partitions and break per-user order.
    public func ensureTopics(_ topics: [TopicDefinition], timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> [String: Outcome] {
        let existing = try client.topicPartitionCounts(timeoutMilliseconds: timeoutMilliseconds)
        var outcome: [String: Outcome] = [:]
        var missing: [TopicDefinition] = []
        for t in topics {
            if let partitions = existing[t.name] {
                outcome[t.name] = .exists(partitions: partitions)
                if partitions != t.partitions {
                    logger.warning("topic \(t.name) has \(partitions) partitions; topics/ says \(t.partitions). Leaving it as it is.")
                }
            } else {
                missing.append(t)
            }
        }
        let results = try RDKafkaAdmin.createTopics(client: client, missing, timeoutMilliseconds: timeoutMilliseconds)
        for t in missing {
            if let failure = results[t.name], let failure { throw failure }
            outcome[t.name] = .created
            logger.info("created topic \(t.name) with \(t.partitions) partitions")
        }
        return outcome
    }
}
