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

/// The read model of a data directory, as `daybook totals` reads it: each request opens the
/// user's shard read-only (SQLite's WAL lets it read while a projector writes), so a read
/// never sees half a batch, and a rebuild's swapped generation is seen at the next read.
public struct ShardReadModel: ReadModel {
    public let directory: String
    public let topic: String

    public init(directory: String, topic: String = "health-samples") {
        self.directory = directory
        self.topic = topic
    }

    /// The path of `partition`'s shard in the generation readers see now; nil when it has none yet.
    func path(_ partition: Int32) throws(ReadModelError) -> String? {
        let path = try wrapped { try DataLayout.read(directory).path(topic: topic, partition: partition) }
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    public func days(partition: Int32, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws(ReadModelError) -> ShardRead<DayBlock> {
        let reader = ShardReader(directory: directory)
        let empty = DayBlock(user: user, metric: metric, rows: [], first: from, last: to, pairs: [])
        guard let path = try path(partition) else { return ShardRead(rows: empty, nextOffset: 0) }
        return try wrapped {
            let snapshot = try reader.snapshot(ofShardAt: path)
            let offset = snapshot.nextOffset
            snapshot.end()
            var rows: [DayTotal] = []
            try reader.forEachTotal(inShardAt: path, ShardReader.Query(user: user, metric: metric, from: from, to: to)) { rows.append($0) }
            // A user lives in one partition, so their pairs are this shard's (the reader merges every shard's).
            let pairs = try reader.syncPairs(user: user)
            let blocks = DayBlock.blocks(rows, user: user, metric: metric, from: from, to: to, pairs: [user: pairs])
            return ShardRead(rows: blocks.first ?? empty, nextOffset: offset)
        }
    }

    public func hours(partition: Int32, user: String, metric: Metric, from: CivilDay, to: CivilDay) throws(ReadModelError) -> ShardRead<[HourTotal]> {
        guard let path = try path(partition) else { return ShardRead(rows: [], nextOffset: 0) }
        return try wrapped {
            // One snapshot: the rows and the offset they are as of come from one read transaction.
            let snapshot = try ShardReader(directory: directory).snapshot(ofShardAt: path)
            defer { snapshot.end() }
            return ShardRead(rows: try snapshot.hours(user: user, metric: metric, from: from, to: to), nextOffset: snapshot.nextOffset)
        }
    }

    public func explain(partition: Int32, _ key: DayKey) throws(ReadModelError) -> ShardRead<Explanation> {
        guard let path = try path(partition) else {
            return ShardRead(rows: Explanation(key: key, pieces: [], points: [], total: nil), nextOffset: 0)
        }
        return try wrapped {
            let snapshot = try ShardReader(directory: directory).snapshot(ofShardAt: path)
            defer { snapshot.end() }
            return ShardRead(rows: try snapshot.explain(key), nextOffset: snapshot.nextOffset)
        }
    }

    public func nextOffsets() throws(ReadModelError) -> [Int32: Int64] {
        try wrapped {
            var out: [Int32: Int64] = [:]
            let reader = ShardReader(directory: directory)
            for path in try reader.shardPaths() {
                guard let partition = Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: topic),
                      FileManager.default.fileExists(atPath: path) else { continue }
                let snapshot = try reader.snapshot(ofShardAt: path)
                out[partition] = snapshot.nextOffset
                snapshot.end()
            }
            return out
        }
    }

    private func wrapped<T>(_ body: () throws -> T) throws(ReadModelError) -> T {
        do {
            return try body()
        } catch {
            throw ReadModelError(.unreadable, "\(error)")
        }
    }
}
