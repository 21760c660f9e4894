/// Which open read-only connections a reader may reuse: the bookkeeping of
/// `ShardConnections`, without I/O (a connection is any value; tests use numbers).
///
/// A connection is kept per shard file, with the file's inode when it was opened and the
/// stamp of the data directory's manifest it was opened under. One is reused only while
/// both still hold: a rebuild that swaps generations changes the stamp (every idle
/// connection is dropped, and one handed out before the swap is not taken back), and a
/// shard moved away and created again has another inode. At most `keep` idle connections
/// are kept per shard (one per thread that reads at once is enough).
///
///     var idle = IdleConnections<Int>(keep: 2, stamp: a)
///     idle.give(7, path: "p", inode: 1, stamp: a)   // kept
///     idle.take(path: "p", inode: 1)                 // 7
///
/// Complexity: O(1) per call, but `observe` of a new stamp, O(n) in what it drops.
struct IdleConnections<Connection> {
    let keep: Int
    /// The manifest's stamp the idle connections were opened under.
    private(set) var stamp: DataLayout.Stamp
    private var idle: [String: [(connection: Connection, inode: UInt64)]] = [:]

    init(keep: Int, stamp: DataLayout.Stamp) {
        self.keep = max(1, keep)
        self.stamp = stamp
    }

    /// Idle connections in all.
    var count: Int { idle.values.reduce(0) { $0 + $1.count } }

    /// Notes the manifest's stamp now; a new one drops every idle connection (returned, for
    /// the caller to close outside its lock).
    mutating func observe(stamp now: DataLayout.Stamp) -> [Connection] {
        guard now != stamp else { return [] }
        stamp = now
        defer { idle = [:] }
        return idle.values.flatMap { $0.map(\.connection) }
    }

    /// An idle connection to `path` whose file still has `inode`, if one is kept; the ones
    /// to another inode (the file was replaced) are dropped and returned.
    mutating func take(path: String, inode: UInt64) -> (connection: Connection?, dropped: [Connection]) {
        guard var list = idle[path], !list.isEmpty else { return (nil, []) }
        let stale = list.filter { $0.inode != inode }.map(\.connection)
        list.removeAll { $0.inode != inode }
        let found = list.popLast()?.connection
        idle[path] = list
        return (found, stale)
    }

    /// Takes back a connection opened to `path` (with `inode`) under `stamp`; returns it
    /// when it is not kept (opened under another stamp, or `keep` are idle already).
    mutating func give(_ connection: Connection, path: String, inode: UInt64, stamp opened: DataLayout.Stamp) -> Connection? {
        guard opened == stamp, idle[path, default: []].count < keep else { return connection }
        idle[path, default: []].append((connection, inode))
        return nil
    }
}
