import DaybookCore

/// What one batch did to a shard, counted where it happened and carried up as it is:
/// `ShardProjection` applies and commits, `PartitionWorker` adds what it staged and
/// skipped, `Projector` adds it to its statistics (`ProjectorStatistics.add(_:)`).
public struct BatchOutcome {
    /// Events applied (valid ones; dead letters are counted apart).
    public var applied = 0
    /// Dead letters recorded with the batch.
    public var deadLetters = 0
    /// Messages the shard or the batch already had (redelivered after a seek or a rebalance).
    public var skipped = 0
    /// Events re-read below the shard's offset (`ProjectionRun.replay`).
    public var reread = 0
    /// `sample-added` events ignored because their uuid's sample in force had a higher
    /// version (`Ledger.staleResendCount`).
    public var staleResends = 0
    /// Cache figures of this batch (`Ledger.cacheHits`, `cacheMisses`, `cacheEvictions`).
    public var cacheHits = 0
    public var cacheMisses = 0
    public var cacheEvictions = 0
    /// Kafka timestamp (ms) of the newest message the batch moved the shard past.
    public var newestTimestamp: Int64?
    /// The recomputed rows (nil: the day has no data any more).
    public var rows: [DayKey: DayTotal?] = [:]

    public init() {}
}
