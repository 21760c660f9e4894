import DaybookCore

/// A data directory's freshness: every (user, source) pair of its shards read once and
/// judged, and what the shards could not show.
public struct FreshnessReading: Sendable {
    public var judgement: FreshnessJudgement
    /// Shards without sync state, or with sync state that starts after their history.
    public var coverage: SyncStateCoverage

    public var report: StaleReport { judgement.report }
    public var unreported: [SyncKey] { judgement.unreported }
    public var canariesNeverSeen: [SyncKey] { judgement.canariesNeverSeen }
}

extension ShardReader {
    /// Reads every sync pair of the shards once, judges each at `now` under `policy` and
    /// checks the canaries (`daybook stale`, the demo). `each` sees every pair as it is
    /// read (`stale --all`); with `keepPairs` false only the counts and canaries are kept.
    ///
    /// Memory: the stale pairs kept and one counter per source, not every pair.
    /// - Throws: `Shard.ShardError` or `DatabaseError`, as every reader of the shards.
    public func judgeFreshness(policy: FreshnessPolicy, now: Instant, keepPairs: Bool = true,
                               each: (SourceSync) -> Void = { _ in }) throws -> FreshnessReading {
        var evaluation = StaleDetector.Evaluation(detector: StaleDetector(policy: policy), now: now, keepPairs: keepPairs)
        let coverage = try forEachSyncPair { pair in
            evaluation.add(pair)
            each(pair)
        }
        return FreshnessReading(judgement: evaluation.judge(), coverage: coverage)
    }
}
