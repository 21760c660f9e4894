import DaybookMetrics

/// What a projector has done since it started (not since the shards began): the counts of
/// its summary as they grow, how long its batches take, and the Kafka time of the newest
/// message it applied. `daybook project --metrics-file` writes them out.
public struct ProjectorStatistics: Sendable {
    /// Events applied (valid ones; dead letters are counted apart).
    public var applied = 0
    public var deadLetters = 0
    /// Messages a shard had already applied (redelivered after a seek or a rebalance).
    public var skipped = 0
    /// Events re-read below a shard's offset (`ProjectionRun.replay`).
    public var reread = 0
    /// (user, metric, day) rows recomputed.
    public var rowsChanged = 0
    /// `sample-added` events ignored as stale re-sends: their uuid's sample in force has a
    /// higher version (counted among `applied`: they were read and judged, not lost).
    public var staleResends = 0
    /// The state cache, summed over the shards (`Ledger.cacheHits`, `cacheMisses`,
    /// `cacheEvictions`): (user, metric, UTC day) windows a batch needed that were cached,
    /// those read from the shard, and those dropped to fit `state.cache_mb` (coldest days first).
    public var cacheHits = 0
    public var cacheMisses = 0
    public var cacheEvictions = 0
    /// Times the projector woke librdkafka's fetchers after a short poll while behind
    /// (`FetchWake`, `KafkaConsumer.wakeFetchers`).
    public var fetcherWakes = 0
    /// One observation per batch: a poll's messages applied to their shards (partitions
    /// in parallel, one transaction each), in seconds.
    public var batchSeconds = Histogram(upperBounds: Histogram.secondsFromMillisecondToHalfMinute)
    /// The newest Kafka timestamp (ms since 1970) among the messages applied (events and
    /// dead letters); nil until one that carries a timestamp is applied.
    public var lastAppliedTimestampMilliseconds: Int64?

    public var batches: Int { Int(batchSeconds.count) }

    public init() {}
}

extension ProjectorStatistics {
    /// Counts what one partition's batch did.
    mutating func add(_ outcome: BatchOutcome) {
        applied += outcome.applied
        deadLetters += outcome.deadLetters
        skipped += outcome.skipped
        reread += outcome.reread
        rowsChanged += outcome.rows.count
        staleResends += outcome.staleResends
        cacheHits += outcome.cacheHits
        cacheMisses += outcome.cacheMisses
        cacheEvictions += outcome.cacheEvictions
        if let time = outcome.newestTimestamp {
            lastAppliedTimestampMilliseconds = max(lastAppliedTimestampMilliseconds ?? time, time)
        }
    }
}
