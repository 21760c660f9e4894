import DaybookCore

/// What one batch did to a shard, counted where it happened and carried up as it is:
/// `ShardProjection` applies and commits, `PartitionWorker` adds what it staged and
/// skipped, `Projector` adds it to its statistics (`ProjectorStatistics.add(_:)`).
public struct BatchOutcome {
    /// The counts of `ProjectorStatistics`, for this batch alone: events applied, dead
    /// letters recorded, messages skipped (already in the shard or the batch) and re-read
    /// (below the shard's offset), stale re-sends, and the cache's hits, misses and evictions.
    public var applied = 0, deadLetters = 0, skipped = 0, reread = 0, staleResends = 0
    public var cacheHits = 0, cacheMisses = 0, cacheEvictions = 0
    /// Kafka timestamp (ms) of the newest message the batch moved the shard past.
    public var newestTimestamp: Int64?
    /// The recomputed rows (nil: the day has no data any more).
    public var rows: [DayKey: DayTotal?] = [:]

    public init() {}
}
