import DaybookCore

/// What `Projector.run` returns: its statistics as they ended, and how the run ended.
public struct ProjectorSummary: Sendable {
    public var statistics = ProjectorStatistics()
    public var seconds: Double = 0
    public var caughtUp = false
    /// (user, metric, day) rows recomputed, when `recordChangedKeys` was set.
    public var changedKeys: Set<DayKey> = []

    public var applied: Int { statistics.applied }
    public var skipped: Int { statistics.skipped }
    /// Events re-read below a shard's offset (`ProjectionRun.replay`).
    public var reread: Int { statistics.reread }
    public var deadLetters: Int { statistics.deadLetters }
    public var rowsChanged: Int { statistics.rowsChanged }
    public var staleResends: Int { statistics.staleResends }
    /// Polls whose messages were applied (each partition's share one transaction).
    public var batches: Int { statistics.batches }
}
