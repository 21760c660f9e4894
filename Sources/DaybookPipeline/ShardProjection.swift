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
    public func apply(_ events: [Ledger.Staged], deadLetters: [Shard.DeadLetter] = [],
                      rereadBelow: Int64 = .min, nextPosition: Int64) throws -> BatchOutcome {
        try apply(events, deadLetters: deadLetters, rereadBelow: rereadBelow, nextPosition: nextPosition, recordingSync: true)
    }

    /// Recomputes every row of a shard written before sample versions
    /// (`Shard.holdsRowsBeforeVersions`) from its stored samples, page by page through the
    /// cache (memory stays bounded), then clears the mark; nothing to do on any other
    /// shard. Each stored sample is re-read at its own position (`Ledger.reapply`), which
    /// changes no sample and recomputes every day it can touch, so the rows become what a
    /// rebuild from the log gives. Interrupted, it starts over on the next open.
    /// - Returns: the rows recomputed (0 when there was nothing to do).
    @discardableResult
    public func recomputeRowsBeforeVersions(pageSize: Int = 5_000) throws -> Int {
        guard try shard.holdsRowsBeforeVersions() else { return 0 }
        var cursor: Shard.SampleCursor?
        var rows = 0
        while true {
            let (page, next) = try shard.storedSamples(after: cursor, limit: pageSize)
            guard let next else { break }
            cursor = next
            let events = page.map { Ledger.Staged(event: .sampleAdded($0.sample), position: $0.seq) }
            rows += try apply(events, deadLetters: [], rereadBelow: .max, nextPosition: shard.nextOffset, recordingSync: false).rows.count
        }
        try shard.markRowsRecomputed()
        return rows
    }

    private func apply(_ events: [Ledger.Staged], deadLetters: [Shard.DeadLetter],
                       rereadBelow: Int64, nextPosition: Int64, recordingSync: Bool) throws -> BatchOutcome {
        precondition(!broken, "a broken projection must be reopened")
        var batch = Shard.Batch(nextOffset: nextPosition)
        batch.deadLetters = deadLetters
        batch.upserts.reserveCapacity(events.count)
        batch.storeLacks.reserveCapacity(events.count)
        let cacheBefore = (hits: ledger.cacheHits, misses: ledger.cacheMisses, evictions: ledger.cacheEvictions)
        // Each event's uuid hash, computed once by the load (empty for an in-memory ledger).
        var uuidHashes: [UInt64] = []
        do {
            uuidHashes = try ledger.load(forStaged: events)
        } catch {
            fail()
            throw error
        }
        var outcome = BatchOutcome()
        var dirty = DirtyDays()
        let staleBefore = ledger.staleResendCount
        // A run of one (user, source) pair's samples, merged into `batch.sync` once the pair
        // changes: a sync delivers many samples of one source, and merging is order-free
        // (`SourceSync.merge`), so the batch's table is probed once per run, not per event.
        // Not an optional: binding the run out of one copied it at every event (the copy left
        // the profile; the count moved less than between two runs).
        var run = SourceSync(user: "", source: "")
        var running = false
        // Each staged event's fields are read where the batch holds them (`Ledger.Staged` is
        // flat for this): only a changed sample is copied, into the store's batch.
        events.withUnsafeBufferPointer { events in
            for i in events.indices {
                let position = events[i].position
                // What the cache knew of the uuid before the event changed it.
                var storeLacks = false
                switch events[i].kind {
                case .added:
                    // Copied out once: an argument read through the buffer is copied at each call.
                    let sample = events[i].sample
                    let changed: Bool
                    if position < rereadBelow {
                        storeLacks = ledger.storeLacks(user: sample.user, uuid: sample.compactUUID)
                        changed = ledger.reapply(added: sample, at: position, dirty: &dirty)
                    } else {
                        changed = ledger.apply(added: sample, at: position, dirty: &dirty, storeLacks: &storeLacks,
                                               uuidHash: i < uuidHashes.count ? uuidHashes[i] : nil)
                    }
                    if recordingSync {
                        if !running || !NameHash.sameBytes(run.user, sample.user) || !NameHash.sameBytes(run.source, sample.source) {
                            if running { Self.merge(run, into: &batch) }
                            run = SourceSync(user: sample.user, source: sample.source)
                            running = true
                        }
                        run.note(sample, deliveredAt: events[i].deliveredAt)
                    }
                    if changed {
                        batch.upserts.append(Shard.Upsert(sample: sample, seq: position)) // its last use: moved, not copied
                        batch.storeLacks.append(storeLacks)
                    }
                case .deleted:
                    let event = Event.sampleDeleted(user: events[i].sample.user, uuid: events[i].sample.uuid)
                    if position < rereadBelow {
                        ledger.reapply(event, at: position, dirty: &dirty)
                    } else {
                        ledger.apply(event, at: position, dirty: &dirty, storeLacks: &storeLacks)
                    }
                    batch.deletes.append((events[i].sample.user, events[i].sample.compactUUID))
                case .checkedIn:
                    // No sample state: the ledger has nothing to apply (`Ledger.apply`).
                    if recordingSync, let life = SourceSync.signOfLife(events[i].event, deliveredAt: events[i].deliveredAt) {
                        batch.sync[SyncKey(user: life.user, source: life.source), default: life].merge(life)
                    }
                }
            }
        }
        if running { Self.merge(run, into: &batch) }
        outcome.applied += events.count
        outcome.staleResends = ledger.staleResendCount - staleBefore
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

    /// Merges a run of one (user, source) pair's samples into the batch's sync state.
    private static func merge(_ run: SourceSync, into batch: inout Shard.Batch) {
        batch.sync[SyncKey(user: run.user, source: run.source), default: SourceSync(user: run.user, source: run.source)].merge(run)
    }

    private func fail() {
        broken = true
        ledger.dropCache()
    }
}
