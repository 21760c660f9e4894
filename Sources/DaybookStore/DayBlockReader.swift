import DaybookCore

extension ShardReader {
    /// The rows `query` asks for, in (user, metric) blocks with their users' sync state, so
    /// that each day of a block reads as a total, "no data" or "unknown" (`DayBlock`).
    ///
    /// Sync state is read for one user with `query.user`, or in one pass over every shard's
    /// pairs keeping those of users with rows.
    /// - Throws: `Shard.ShardError` or `DatabaseError`, as every reader of the shards.
    public func dayBlocks(_ query: Query) throws -> [DayBlock] {
        let rows = try totals(query)
        var pairs: [String: [SourceSync]] = [:]
        if let user = query.user {
            pairs[user] = try syncPairs(user: user)
        } else {
            let users = Set(rows.map(\.key.user))
            if !users.isEmpty {
                try forEachSyncPair { pair in
                    if users.contains(pair.user) { pairs[pair.user, default: []].append(pair) }
                }
            }
        }
        return DayBlock.blocks(rows, user: query.user, metric: query.metric, from: query.from, to: query.to, pairs: pairs)
    }
}
