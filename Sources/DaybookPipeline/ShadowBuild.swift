import DaybookCore
import DaybookFiles
import DaybookKafka
import DaybookLog
import DaybookStore
import Foundation

/// `daybook verify` and `daybook diff`: builds a temporary projection from offset 0 up to
/// exactly the live shards' offsets, in a hidden directory inside the data directory
/// (`.tmp-<pid>`, removed at the end; readers never list it), and hands each partition's
/// live and temporary shards to a comparison as two snapshots at the same offset.
///
/// The live shards are read in read transactions opened *before* the build: each one's
/// offset and rows stay those of that moment while a running projector writes on (SQLite
/// keeps a reader's snapshot; the projector's WAL grows meanwhile instead of being
/// checkpointed past it). So one build compares exactly, however busy the log. Partitions
/// are taken `groupSize` at a time, to bound open files.
public final class ShadowBuild {
    private let request: RebuildRequest
    private let access: LogAccess
    private let logger: Logger
    public static let groupSize = 128

    public init(request: RebuildRequest, access: LogAccess, logger: Logger) {
        self.request = request
        self.access = access
        self.logger = logger
    }

    /// The process that owns a temporary projection directory named `name`, if it is one.
    static func owner(ofTemporary name: String) -> pid_t? { TemporaryName.owner(of: name) }

    public struct Outcome: Sendable {
        /// Partitions compared, with the offset they were compared at.
        public var offsets: [Int32: Int64] = [:]
        public var rows = 0
    }

    /// Builds and compares; `compare` gets each partition's live and temporary snapshots
    /// (at the same offset) and returns how many rows it looked at.
    public func run(shouldStop: @escaping () -> Bool, progress: (ProjectorProgress) -> Void,
                    compare: (Int32, ShardReader.Snapshot, ShardReader.Snapshot) throws -> Int) throws -> Outcome {
        let dir = request.dataDirectory
        let layout = try DataLayout.read(dir)
        let reader = ShardReader(directory: dir)
        let live = try reader.offsets(topic: request.topic)
        // Every partition of the topic is compared: one without a shard compares as empty,
        // so a missing shard shows as the rows it should hold.
        let count = try access.checkedPartitionCount(request.topic, liveShardsIn: dir, timeout: request.connectTimeout, logger: logger)
        let partitions = try PartitionChoice.resolve(request.partitions, topic: request.topic, count: count)
        // Temporary directories of verify or diff runs that were killed.
        TemporaryName.removeOrphans(in: dir)
        let temporary = dir + "/" + TemporaryName.mine()
        try? FileManager.default.removeItem(atPath: temporary)
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let shadow = ShardReader(directory: temporary)

        var outcome = Outcome()
        for first in stride(from: 0, to: partitions.count, by: Self.groupSize) {
            let group = partitions[first..<min(partitions.count, first + Self.groupSize)]
            // The live side first: its snapshots fix the offsets to build to.
            var snapshots: [Int32: ShardReader.Snapshot] = [:]
            defer { snapshots.values.forEach { $0.end() } }
            for partition in group {
                snapshots[partition] = try live[partition].map { try reader.snapshot(ofShardAt: $0.path) } ?? ShardReader.Snapshot.empty
            }
            var options = ProjectorOptions(dataDirectory: temporary)
            options.topic = request.topic
            options.partitions = Array(group)
            options.cacheBytes = request.cacheBytes
            options.connectTimeout = request.connectTimeout
            // Partitions without a shard are built to the end of the log.
            let run = ProjectionRun.shadow(stoppingAt: snapshots.filter { live[$0.key] != nil }.mapValues(\.nextOffset))
            let built: ProjectorSummary
            do {
                built = try build(options, run, shouldStop: shouldStop, progress: progress)
            } catch let error as ProjectorError where error.kind == .storage {
                throw error.storageFault(in: """
                    nothing live was changed, and the temporary projection \(temporary) is removed as this ends (it needs about \
                    as much space as the live shards of the partitions compared): make room, then run it again.
                    """)
            }
            guard built.caughtUp else {
                throw ProjectorError(kind: .interrupted, message: "stopped before the temporary projection reached the live offsets; the comparison is incomplete")
            }
            for partition in group {
                guard let liveSnapshot = snapshots[partition] else { continue }
                let shadowSnapshot = try shadow.snapshot(ofShardAt: temporary + "/" + Shard.fileName(topic: request.topic, partition: partition))
                defer { shadowSnapshot.end() }
                guard shadowSnapshot.nextOffset == liveSnapshot.nextOffset || live[partition] == nil else {
                    throw ProjectorError(kind: .logMismatch, message: "partition \(partition): the log ended at offset \(shadowSnapshot.nextOffset), before the live shard's \(liveSnapshot.nextOffset); this is not the log the shard was built from")
                }
                outcome.rows += try compare(partition, liveSnapshot, shadowSnapshot)
                outcome.offsets[partition] = liveSnapshot.nextOffset
                liveSnapshot.end()
            }
        }
        // A rebuild that swapped generations meanwhile made this a comparison of the old one.
        guard DataLayout.currentStamp(dir) == layout.stamp else {
            throw ProjectorError(kind: .interrupted, message: "a rebuild swapped in a new generation of shards in \(dir) during the comparison, which compared the previous one; run it again")
        }
        return outcome
    }

    private func build(_ options: ProjectorOptions, _ run: ProjectionRun, shouldStop: @escaping () -> Bool,
                       progress: (ProjectorProgress) -> Void) throws -> ProjectorSummary {
        let projector = try Projector(connection: access.connection, consumer: access.consumer, producer: access.producer,
                                      priority: request.priority, options: options, run: run, logger: logger)
        return try projector.run(shouldStop: shouldStop, progress: progress)
    }
}

/// One (user, metric, day) whose rows differ between two projections; nil is "no row".
public struct RowDifference: Sendable {
    public var key: DayKey
    public var live: DayTotal?
    public var rebuilt: DayTotal?
}

/// Merges two shards' rows (both in (user, metric, day) order) and reports every key
/// where `differ` says they differ, a missing row counting as different from any row.
/// Returns the number of keys looked at.
public func compareRows(_ live: TotalsCursor, _ rebuilt: TotalsCursor, differ: (DayTotal, DayTotal) -> Bool,
                        _ report: (RowDifference) throws -> Void) throws -> Int {
    try compareSorted(live.next, rebuilt.next, key: \.key, differ: differ) { key, a, b in
        try report(RowDifference(key: key, live: a, rebuilt: b))
    }
}

/// A pair whose sync state differs between the live shard and a rebuild (nil: no row).
public struct SyncDifference: Sendable {
    public var key: SyncKey
    public var live: SourceSync?
    public var rebuilt: SourceSync?
}

/// Merges two shards' sync state (both in (user, source) order by bytes) and reports every
/// pair that differs. Returns the number of pairs looked at.
public func compareSyncState(_ live: SyncStateCursor, _ rebuilt: SyncStateCursor,
                             _ report: (SyncDifference) throws -> Void) throws -> Int {
    try compareSorted(live.next, rebuilt.next, key: { SyncKey(user: $0.user, source: $0.source) }, differ: { $0 != $1 }) { key, a, b in
        try report(SyncDifference(key: key, live: a, rebuilt: b))
    }
}

/// The merge of two streams sorted by `key`: each key present in either is looked at once;
/// `report` gets the keys where only one has an item or `differ` says the two differ.
func compareSorted<Item, Key: Comparable>(_ live: () throws -> Item?, _ rebuilt: () throws -> Item?, key: (Item) -> Key,
                                          differ: (Item, Item) -> Bool, _ report: (Key, Item?, Item?) throws -> Void) throws -> Int {
    var a = try live()
    var b = try rebuilt()
    var count = 0
    while a != nil || b != nil {
        count += 1
        let liveFirst: Bool
        if let x = a, let y = b {
            let kx = key(x), ky = key(y)
            if kx == ky {
                if differ(x, y) { try report(kx, x, y) }
                a = try live()
                b = try rebuilt()
                continue
            }
            liveFirst = kx < ky
        } else {
            liveFirst = a != nil
        }
        if liveFirst, let x = a {
            try report(key(x), x, nil)
            a = try live()
        } else if let y = b {
            try report(key(y), nil, y)
            b = try rebuilt()
        }
    }
    return count
}
