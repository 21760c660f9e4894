import DaybookCore
import DaybookStore
import DaybookSupport

/// Applies decoded events to one shard through a ledger that caches it: load what the
/// events need, apply them, recompute the days they touched, commit samples, rows, dead
/// letters and the next position in one transaction, then let the cache shrink back to
/// its budget. The projector (one per partition) and `daybook rollup` (one temporary
/// shard) both go through it, so memory is bounded by the cache, not by the history.
///
/// If a load or a commit fails the projection is `broken`: its cache may be ahead of its
/// shard, so it must be dropped and reopened (the shard still holds the last good state).
public final class ShardProjection {
    public let shard: Shard
    public let ledger: Ledger
    public private(set) var broken = false

    /// Opening reads nothing from the shard: the cache fills as batches need it.
    public init(shard: Shard, priority: SourcePriority, cacheBudgetBytes: Int) {
        self.shard = shard
        ledger = Ledger(priority: priority, store: shard, cacheBudgetBytes: cacheBudgetBytes)
    }

    /// Applies `events` (in log order, positions increasing) and commits them with
    /// `deadLetters` and `nextPosition` as one transaction. Events at positions below
    /// `rereadBelow` were applied before and are re-read (`Ledger.reapply`: nothing steps
    /// back, their days are recomputed).
    ///
    /// Each event's `deliveredAt` (its Kafka timestamp; nil from a file) is when a
    /// `sample-added` showed its source alive, for the sync state (`SourceSync`).
    public func apply(_ events: StagedBatch, deadLetters: [Shard.DeadLetter] = [],
                      rereadBelow: Int64 = .min, nextPosition: Int64) throws -> BatchOutcome {
        try apply(events, deadLetters: deadLetters, rereadBelow: rereadBelow, nextPosition: nextPosition, recordingSync: true)
    }

    /// Recomputes every row of a shard an older Daybook wrote (`Shard.rowsToRecompute`: before
    /// sample versions, or before discrete rows' latest) from its stored samples, page by page through the
    /// cache (memory stays bounded), then clears the mark; nothing to do on any other
    /// shard. Each stored sample is re-read at its own position (`Ledger.reapply`), which
    /// changes no sample and recomputes every day it can touch, so the rows become what a
    /// rebuild from the log gives. Interrupted, it starts over on the next open.
    /// - Returns: how many rows were recomputed and why; nil when there was nothing to do.
    @discardableResult
    public func recomputeOlderRows(pageSize: Int = 5_000) throws -> (rows: Int, reason: String)? {
        guard let reason = try shard.rowsToRecompute() else { return nil }
        var cursor: Shard.SampleCursor?
        var rows = 0
        while true {
            let (page, next) = try shard.storedSamples(after: cursor, limit: pageSize)
            guard let next else { break }
            cursor = next
            var events = StagedBatch()
            for (sample, seq) in page { events.append(.sampleAdded(sample), position: seq) }
            rows += try apply(events, deadLetters: [], rereadBelow: .max, nextPosition: shard.nextOffset, recordingSync: false).rows.count
        }
        try shard.markRowsRecomputed()
        return (rows, reason)
    }

    private func apply(_ events: StagedBatch, deadLetters: [Shard.DeadLetter],
                       rereadBelow: Int64, nextPosition: Int64, recordingSync: Bool) throws -> BatchOutcome {
        precondition(!broken, "a broken projection must be reopened")
        var batch = Shard.Batch(nextOffset: nextPosition)
        batch.deadLetters = deadLetters
        batch.stagedUpserts.reserveCapacity(events.count)
        batch.storeLacks.reserveCapacity(events.count)
        let cacheBefore = (hits: ledger.cacheHits, misses: ledger.cacheMisses, evictions: ledger.cacheEvictions)
        // The batch's names resolved once, and each event's uuid hash computed once, by the load.
        var context: Ledger.BatchContext
        do {
            context = try ledger.load(events)
        } catch {
            fail()
            throw error
        }
        var outcome = BatchOutcome()
        var dirty = DirtyDays()
        let staleBefore = ledger.staleResendCount
        // What each (user, source) pair's samples say, gathered by the pair's names (two
        // numbers, no String hashed) and merged into `batch.sync` once, at the end: noting
        // is order-free (`SourceSync.merge`). The pair of the last sample is kept at hand: a
        // sync delivers many samples of one source.
        var runs: [SyncRun.Key: SyncRun] = [:]
        var run = SyncRun()
        // Each staged event is plain data (`Ledger.Staged`): reading one copies no reference.
        for i in events.events.indices {
            let e = events.events[i]
            let position = e.position
            // What the cache knew of the uuid before the event changed it.
            var storeLacks = false
            switch e.kind {
            case .added:
                let changed: Bool
                if position < rereadBelow {
                    let sample = events.sample(at: i)
                    storeLacks = ledger.storeLacks(user: sample.user, uuid: sample.compactUUID)
                    changed = ledger.reapply(added: sample, at: position, dirty: &dirty)
                } else {
                    changed = ledger.apply(events, at: i, context: &context, dirty: &dirty, storeLacks: &storeLacks)
                }
                if recordingSync {
                    if !run.isOf(e) {
                        if run.user >= 0 { runs[run.key] = run }
                        run = runs[SyncRun(e).key] ?? SyncRun(e)
                    }
                    run.note(e, names: events)
                }
                if changed {
                    batch.stagedUpserts.append(Int32(i))
                    batch.storeLacks.append(storeLacks)
                }
            case .deleted:
                let event = events.event(at: i)
                if position < rereadBelow {
                    ledger.reapply(event, at: position, dirty: &dirty)
                } else {
                    ledger.apply(event, at: position, dirty: &dirty, storeLacks: &storeLacks)
                }
                batch.deletes.append((events.name(e.user), events.uuid(at: i)))
            case .checkedIn:
                // No sample state: the ledger has nothing to apply (`Ledger.apply`).
                if recordingSync, let life = SourceSync.signOfLife(events.event(at: i), deliveredAt: e.deliveredAt) {
                    batch.sync[SyncKey(user: life.user, source: life.source), default: life].merge(life)
                }
            }
        }
        if run.user >= 0 { runs[run.key] = run }
        for run in runs.values { run.merge(into: &batch, names: events) }
        outcome.applied += events.count
        outcome.staleResends = ledger.staleResendCount - staleBefore
        batch.staged = events
        batch.rows = ledger.recompute(dirty.keys)
        do {
            try shard.commit(batch)
        } catch {
            fail()
            throw error
        }
        ledger.evictIfOverBudget()
        outcome.cacheHits = ledger.cacheHits - cacheBefore.hits
        outcome.cacheMisses = ledger.cacheMisses - cacheBefore.misses
        outcome.cacheEvictions = ledger.cacheEvictions - cacheBefore.evictions
        outcome.rows = batch.rows
        return outcome
    }

    /// What a run of one (user, source) pair's `sample-added` events says of the pair
    /// (`SourceSync.note` of each), kept in the batch's names until the run ends.
    private struct SyncRun {
        var user: Int32 = -1
        var source: Int32 = -1
        var delivered: Instant?
        var newestEnd: Instant?
        var zone: Int32 = -1
        var metrics: UInt64 = 0 // a bit per metric: up to 38 (`MetricCatalogue.maximumEntries`)

        init() {}
        init(_ e: Ledger.Staged) {
            user = e.user
            source = e.source
        }

        func isOf(_ e: Ledger.Staged) -> Bool { user == e.user && source == e.source }
        var key: Key { Key(bits: UInt64(UInt32(bitPattern: user)) << 32 | UInt64(UInt32(bitPattern: source))) }

        /// The pair's two names in one word, hashed by a multiply (no SipHash).
        struct Key: Hashable {
            var bits: UInt64
            func hash(into hasher: inout Hasher) { hasher.combine(bits) }
            func _rawHashValue(seed: Int) -> Int { NameHash.table(bits &* 0x9E37_79B9_7F4A_7C15, seed: seed) }
        }

        /// `SourceSync.note`: the latest delivery, the newest end (a tie goes to the greater
        /// zone name, as `SourceSync` breaks it), the metric.
        mutating func note(_ e: Ledger.Staged, names: StagedBatch) {
            if let at = e.deliveredAt, delivered.map({ at > $0 }) ?? true { delivered = at }
            if let newest = newestEnd {
                if e.end > newest || (e.end == newest && e.zone != zone && names.name(e.zone) > names.name(zone)) {
                    newestEnd = e.end
                    zone = e.zone
                }
            } else {
                newestEnd = e.end
                zone = e.zone
            }
            metrics |= 1 << UInt64(e.metric.storageCode)
        }

        /// Merges the run into the batch's sync state (nothing for an empty run).
        func merge(into batch: inout Shard.Batch, names: StagedBatch) {
            guard user >= 0 else { return }
            let sync = SourceSync(user: names.name(user), source: names.name(source), lastSampleDelivered: delivered,
                                  newestSampleEnd: newestEnd, zone: zone < 0 ? nil : names.name(zone),
                                  metrics: Set(Metric.allCases.filter { metrics & (1 << UInt64($0.storageCode)) != 0 }))
            batch.sync[SyncKey(user: sync.user, source: sync.source), default: SourceSync(user: sync.user, source: sync.source)].merge(sync)
        }
    }

    private func fail() {
        broken = true
        ledger.dropCache()
    }
}
