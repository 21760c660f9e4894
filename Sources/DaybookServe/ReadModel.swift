import DaybookCore
import DaybookKafka
import DaybookStore
import Foundation

/// One shard's rows of a user, with where they were read.
public struct ShardRead<Rows: Sendable>: Sendable {
    public var rows: Rows
    /// The offset of the next message the shard would apply (0 for a partition without a shard yet).
    public var nextOffset: Int64
}

/// Why the read model could not answer.
public struct ReadModelError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// This model cannot answer that read (an embedding service's model without hours): 501.
        case notAvailable
        /// The data directory cannot be read now (missing, a file that is no shard, storage): 503.
        case unreadable
    }
    public var kind: Kind
    public var message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}

/// What the read service reads through: the rows of one user in one partition's shard.
/// `ShardReadModel` reads a data directory; tests and an embedding service may give another.
/// Called on several threads at once.
public protocol ReadModel: Sendable {
    /// The (user, metric) block of `from...to` with the user's sync state (for `unknown`).
    func days(partition: Int32, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws(ReadModelError) -> ShardRead<DayBlock>
    /// The civil-hour rows of the days `from...to`, in time order (`HourTotal`: the hours of
    /// a day add up to its row as printed).
    func hours(partition: Int32, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws(ReadModelError) -> ShardRead<[HourTotal]>
    /// Which sample won which stretch of the day of `key`.
    func explain(partition: Int32, _ key: DayKey) throws(ReadModelError) -> ShardRead<Explanation>
    /// Each shard's next offset, by partition: whether the shards can be read at all, and
    /// how far each is behind the log.
    func nextOffsets() throws(ReadModelError) -> [Int32: Int64]
}

/// The read model of a data directory, as `daybook totals` reads it, through read-only
/// connections kept open per shard (`ShardConnections`; SQLite's WAL lets them read while a
/// projector writes). Each answer is one read transaction of the user's shard, so it never
/// sees half a batch, and a rebuild's swapped generation is seen at the next read.
public struct ShardReadModel: ReadModel {
    public let directory: String
    public let topic: String
    private let shards: ShardConnections

    /// - Parameter threads: the threads that read at once (connections kept per shard).
    public init(directory: String, topic: String = "health-samples", threads: Int = 2) {
        self.directory = directory
        self.topic = topic
        shards = ShardConnections(directory: directory, topic: topic, keepPerShard: threads)
    }

    public func days(partition: Int32, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws(ReadModelError) -> ShardRead<DayBlock> {
        try wrapped {
            try shards.withSnapshot(partition: partition) { snapshot in
                let rows = try snapshot.totals(ShardReader.Query(user: user, metric: metric, from: from, to: to))
                // A user lives in one partition: their pairs are this shard's.
                let pairs = try snapshot.syncPairs(user: user)
                let block = DayBlock.blocks(rows, user: user, metric: metric, from: from, to: to, pairs: [user: pairs]).first
                return ShardRead(rows: block ?? DayBlock(user: user, metric: metric, rows: [], first: from, last: to, pairs: pairs),
                                 nextOffset: snapshot.nextOffset)
            }
        }
    }

    public func hours(partition: Int32, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws(ReadModelError) -> ShardRead<[HourTotal]> {
        try wrapped {
            try shards.withSnapshot(partition: partition) { snapshot in
                ShardRead(rows: try snapshot.hours(user: user, metric: metric, from: from, to: to), nextOffset: snapshot.nextOffset)
            }
        }
    }

    public func explain(partition: Int32, _ key: DayKey) throws(ReadModelError) -> ShardRead<Explanation> {
        try wrapped {
            try shards.withSnapshot(partition: partition) { snapshot in
                ShardRead(rows: try snapshot.explain(key), nextOffset: snapshot.nextOffset)
            }
        }
    }

    public func nextOffsets() throws(ReadModelError) -> [Int32: Int64] {
        try wrapped { try shards.nextOffsets() }
    }

    private func wrapped<T>(_ body: () throws -> T) throws(ReadModelError) -> T {
        do {
            return try body()
        } catch {
            throw ReadModelError(.unreadable, "\(error)")
        }
    }
}
