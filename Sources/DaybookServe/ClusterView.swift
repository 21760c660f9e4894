import DaybookKafka
import DaybookLog
import DaybookPipeline
import Synchronization

/// What the read service asks of the cluster: the topic's partition count and the
/// producers' partitioner (where a user lives), the group's assignment (who holds it, at
/// which URL) and each partition's log end (lag). Called on several threads at once.
public protocol ClusterView: Sendable {
    var partitionCount: Int { get }
    var partitioner: Partitioner { get }
    /// The group's assignment now (answers may be reused for a few seconds).
    func assignment() throws -> GroupAssignment
    /// The end of `partition`'s log (its next offset to be written); nil when not known.
    func logEnd(_ partition: Int32) -> Int64?
}

/// The cluster and consumer group a `LogAccess` reaches: the assignment through
/// `UserLocator` (reused for 5 s), the log ends asked of the partitions' leaders and
/// reused for a second, so a request costs no broker round trip.
public final class KafkaClusterView: ClusterView {
    public let partitionCount: Int
    public let partitioner: Partitioner
    private let topic: String
    private struct State: ~Copyable {
        var locator: UserLocator
        var consumer: KafkaConsumer
        var ends: [Int32: (at: ContinuousClock.Instant, end: Int64)] = [:]
    }
    // The locator and the consumer are not thread-safe: one request at a time uses them.
    private let state: Mutex<State>
    /// How long a log end is reused.
    static let logEndMaxAge: Duration = .seconds(1)

    /// Asks the cluster for `topic`'s partition count (within `timeout`); the group is
    /// `access.consumer.groupID`. Throws `ProjectorError` `.kafka` when it does not answer.
    public init(access: LogAccess, topic: String = "health-samples", timeout: Duration = .seconds(30), logger: Logger = .silent) throws {
        let locator = try UserLocator(access: access, topic: topic, group: true, timeout: timeout, logger: logger)
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(connection: access.connection, configuration: access.consumer, logger: logger)
        } catch {
            throw ProjectorError(kind: .kafka, message: "\(error)")
        }
        self.topic = topic
        partitionCount = locator.partitionCount
        partitioner = locator.partitioner
        state = Mutex(State(locator: locator, consumer: consumer))
    }

    deinit { state.withLock { $0.consumer.close() } }

    public func assignment() throws -> GroupAssignment {
        try state.withLock { state throws -> GroupAssignment in try state.locator.groupAssignment() }
    }

    public func logEnd(_ partition: Int32) -> Int64? {
        let topic = self.topic
        return state.withLock { state -> Int64? in
            if let known = state.ends[partition], ContinuousClock.now - known.at < Self.logEndMaxAge { return known.end }
            guard let marks = try? state.consumer.watermarks(TopicPartition(topic, partition), timeoutMilliseconds: 2_000) else { return nil }
            state.ends[partition] = (.now, marks.high)
            return marks.high
        }
    }
}
