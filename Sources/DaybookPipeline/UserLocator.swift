import DaybookKafka
import DaybookLog
import DaybookStore
import Foundation

/// Where a user's totals live: the partition the producers' partitioner gives the user's
/// key, that partition's shard file, and with a group the member that holds it now.
public struct UserLocation: Sendable, Equatable {
    public var user: String
    public var partition: Int32
    /// The shard's file name (`Shard.fileName`), the same in every member's data directory.
    public var shard: String
    /// The member of the group that holds the partition now; nil without a group, or when
    /// no member holds it.
    public var owner: GroupAssignment.Member?

    public init(user: String, partition: Int32, shard: String, owner: GroupAssignment.Member? = nil) {
        self.user = user
        self.partition = partition
        self.shard = shard
        self.owner = owner
    }
}

/// Finds the member of a consumer group whose data directory holds a user's totals: what
/// a read service routes by (Kafka Streams' `queryMetadataForKey`). The partition count is
/// asked once; with a group, the group's assignment is asked again when older than
/// `assignmentMaxAge`.
///
///     let locator = try UserLocator(access: access, group: true)
///     let where = try locator.locate(user: "ana")   // where.owner?.host
public final class UserLocator {
    public let topic: String
    public let partitionCount: Int
    public let partitioner: Partitioner
    /// How long an answer about the group is reused. Default: 5 s.
    public var assignmentMaxAge: Duration = .seconds(5)
    private let consumer: KafkaConsumer?
    private let timeout: Duration
    private var assignment: (at: ContinuousClock.Instant, value: GroupAssignment)?

    /// The partition of `user` in a topic of `count` partitions under `partitioner`, with no cluster.
    public static func locate(user: String, count: Int, partitioner: Partitioner, topic: String = "health-samples") -> UserLocation {
        let partition = partitioner.partition(ofKey: user.utf8, count: count)
        return UserLocation(user: user, partition: partition, shard: Shard.fileName(topic: topic, partition: partition))
    }

    /// Asks the cluster `access` reaches for `topic`'s partition count (within `timeout`);
    /// with `group`, `locate` also names the member of `access.consumer.groupID` holding
    /// the user's partition. Throws `ProjectorError` `.kafka` when the cluster does not
    /// answer or the topic is missing.
    public init(access: LogAccess, topic: String = "health-samples", group: Bool, timeout: Duration = .seconds(30), logger: Logger = .silent) throws {
        self.topic = topic
        self.timeout = timeout
        partitioner = access.producer.partitioner
        let (consumer, count) = try access.consumer(counting: topic, timeout: timeout, logger: logger)
        partitionCount = count
        self.consumer = group ? consumer : nil
        if !group { consumer.close() }
    }

    deinit { consumer?.close() }

    /// The user's partition, shard and (with a group) owner now.
    public func locate(user: String) throws -> UserLocation {
        var location = Self.locate(user: user, count: partitionCount, partitioner: partitioner, topic: topic)
        if consumer != nil { location.owner = try groupAssignment().owner(of: location.partition) }
        return location
    }

    /// The group's assignment (asked again when older than `assignmentMaxAge`).
    public func groupAssignment() throws -> GroupAssignment {
        guard let consumer else { throw ProjectorError(kind: .badRequest, message: "this locator was made without a group: make one with group: true") }
        if let assignment, ContinuousClock.now - assignment.at < assignmentMaxAge { return assignment.value }
        do {
            let value = try consumer.groupAssignment(topic: topic, count: partitionCount, timeoutMilliseconds: timeout.wholeMilliseconds)
            assignment = (.now, value)
            return value
        } catch {
            throw ProjectorError.kafka("describing consumer group \(consumer.groupID): \(error)", error)
        }
    }
}
