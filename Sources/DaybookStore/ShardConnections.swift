import Foundation

/// Read-only connections to the shards of a data directory, kept open and reused by a
/// server that reads on several threads (`daybook serve`): a read opens nothing when a
/// connection to its shard is idle, and each connection keeps its prepared statements.
///
///     let shards = ShardConnections(directory: "/var/lib/daybook")
///     let offset = try shards.withSnapshot(partition: 3) { $0.nextOffset }
///
/// Every read is one read transaction (`ShardReader.Snapshot`), so it never sees half a
/// batch. Before each read the manifest's stamp is looked at (one `stat`): after a
/// rebuild's swap the layout is read again and every connection of the old generation is
/// closed, so the next read sees the new one; a shard file replaced by another (moved away
/// and rebuilt) is seen by its inode. Which connections are reused is `IdleConnections`.
///
/// Safe to use from several threads: the bookkeeping is behind a lock, and a connection is
/// used by one thread at a time (taken out of the pool for one read, then given back).
public final class ShardConnections: @unchecked Sendable {
    public let directory: String
    public let topic: String
    private let reader: ShardReader
    private let lock = NSLock()
    /// Guarded by `lock`: the layout readers see now, and the idle connections.
    private var layout: DataLayout?
    private var idle: IdleConnections<Database>

    /// SQLite's page cache of each kept connection, KiB (its default is 2000): a server keeps
    /// up to `keepPerShard` connections to each shard, and its memory is their sum.
    static let cacheKiB = 512

    /// - Parameter keepPerShard: idle connections kept per shard (the threads that read at
    ///   once; more are opened when needed and closed after their read).
    public init(directory: String, topic: String = "health-samples", keepPerShard: Int = 2) {
        self.directory = directory
        self.topic = topic
        reader = ShardReader(directory: directory)
        idle = IdleConnections(keep: keepPerShard, stamp: DataLayout.Stamp())
    }

    /// The layout readers see now: read again when the manifest's stamp changed since.
    private func currentLayout() throws -> DataLayout {
        let stamp = DataLayout.currentStamp(directory)
        var dropped: [Database] = []
        defer { withExtendedLifetime(dropped) {} } // closed here, outside the lock
        lock.lock()
        if let layout, layout.stamp == stamp {
            lock.unlock()
            return layout
        }
        lock.unlock()
        let fresh = try DataLayout.read(directory)
        lock.lock()
        dropped = idle.observe(stamp: fresh.stamp)
        layout = fresh
        lock.unlock()
        return fresh
    }

    /// Runs `body` on a snapshot of `partition`'s shard: one read transaction, ended (and
    /// the connection given back) when `body` returns. A partition without a shard file yet,
    /// or one a projector is creating, reads as `Snapshot.empty` (offset 0, no rows).
    /// `body` must not keep the snapshot.
    /// - Throws: what `DataLayout.read` and `ShardReader.open` throw (`ShardError`,
    ///   `DatabaseError`), and what `body` throws; a connection that saw an error is closed.
    public func withSnapshot<T>(partition: Int32, _ body: (ShardReader.Snapshot) throws -> T) throws -> T {
        let layout = try currentLayout()
        return try withSnapshot(path: layout.path(topic: topic, partition: partition), stamp: layout.stamp, body)
    }

    /// Each shard's next offset, by partition, for the shards of `topic` the layout lists.
    public func nextOffsets() throws -> [Int32: Int64] {
        let layout = try currentLayout()
        var out: [Int32: Int64] = [:]
        for path in try layout.shardPaths() {
            guard let partition = Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: topic),
                  FileManager.default.fileExists(atPath: path) else { continue }
            out[partition] = try withSnapshot(path: path, stamp: layout.stamp) { $0.nextOffset }
        }
        return out
    }

    private func withSnapshot<T>(path: String, stamp: DataLayout.Stamp, _ body: (ShardReader.Snapshot) throws -> T) throws -> T {
        var info = stat()
        guard stat(path, &info) == 0 else { return try body(.empty) }
        let inode = UInt64(info.st_ino)
        lock.lock()
        let (kept, stale) = idle.take(path: path, inode: inode)
        lock.unlock()
        withExtendedLifetime(stale) {}
        guard let database = try kept ?? open(path) else { return try body(.empty) }
        // A throw leaves the connection out of the pool (closed): whatever went wrong stays with it.
        let snapshot = try ShardReader.Snapshot(path: path, database: database, catalogueChecked: true)
        let result = try body(snapshot)
        snapshot.end()
        database.resetStatements()
        lock.lock()
        let refused = idle.give(database, path: path, inode: inode, stamp: stamp)
        lock.unlock()
        withExtendedLifetime(refused) {}
        return result
    }

    private func open(_ path: String) throws -> Database? {
        guard let database = try reader.openForData(path) else { return nil }
        try database.execute("PRAGMA cache_size=-\(Self.cacheKiB)")
        return database
    }
}
