import Foundation

extension ShardReader {
    /// What `status` shows of one shard, read in one read transaction.
    public struct ShardState: Sendable, Equatable {
        public var path: String
        public var nextOffset: Int64
        /// The source priority the shard records, and the cluster its offsets refer to.
        public var fingerprint: String?
        public var clusterID: String?
        /// When the shard last committed a batch (SQLite's `datetime('now')`, UTC), nil before its first.
        public var lastCommit: String?
        public var deadLetters: Int
        /// Dead letters not yet forwarded to the dead-letter topic.
        public var deadLettersPending: Int
    }

    /// The state of the shard at `path`; a shard a projector is creating right now reads
    /// as offset 0 with nothing in it.
    public func state(ofShardAt path: String) throws -> ShardState {
        guard let db = try open(path) else {
            return ShardState(path: path, nextOffset: 0, fingerprint: nil, clusterID: nil, lastCommit: nil, deadLetters: 0, deadLettersPending: 0)
        }
        try db.execute("BEGIN")
        defer { try? db.execute("COMMIT") }
        let progress = try db.statement("SELECT next_offset, updated_at FROM progress").firstRow { ($0.int64(0), $0.text(1)) }
        let letters = try db.statement("SELECT count(*), count(CASE WHEN forwarded = 0 THEN 1 END) FROM dead_letters").firstRow { (Int($0.int64(0)), Int($0.int64(1))) }
        let meta = { (key: String) throws -> String? in
            let s = try db.statement("SELECT value FROM meta WHERE key = ?")
            try s.bind(1, key)
            return try s.firstRow { $0.text(0) }
        }
        return ShardState(path: path, nextOffset: progress?.0 ?? 0, fingerprint: try meta("priority"), clusterID: try meta("cluster_id"),
                          lastCommit: progress?.1, deadLetters: letters?.0 ?? 0, deadLettersPending: letters?.1 ?? 0)
    }
}
