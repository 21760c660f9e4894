import DaybookCore
import DaybookKafka
import DaybookStore

/// Applies one partition's messages to its shard: decode, skip what the shard already has,
/// load what the batch needs from the shard into the ledger's cache, apply, recompute the
/// dirty days, and commit rows, samples, dead letters and the next offset in one
/// transaction; then let the cache shrink back to its budget.
///
/// If a load or a commit fails the worker is `broken`: its cache may be ahead of its shard,
/// so it must be dropped and reopened (the shard still holds the last good state and offset).
final class PartitionWorker {
    let shard: Shard
    let ledger: Ledger
    let partition: TopicPartition
    /// The end of the partition as last reported by the consumer.
    var endOffset: Int64?
    private(set) var broken = false
    /// Dead letters recorded and not yet handed to the DLQ producer (true on opening: a
    /// previous run may have left some unforwarded).
    var deadLettersPending = true

    /// Opening reads nothing from the shard: the cache fills as batches need it.
    init(shard: Shard, priority: SourcePriority, cacheBudgetBytes: Int) {
        self.shard = shard
        partition = TopicPartition(shard.topic, shard.partition)
        ledger = Ledger(priority: priority, store: shard, cacheBudgetBytes: cacheBudgetBytes)
    }

    var isCaughtUp: Bool { endOffset.map { shard.nextOffset >= $0 } ?? false }

    struct Outcome {
        var applied = 0
        var skipped = 0
        var deadLetters = 0
        var rowsChanged = 0
        /// The (user, metric, day) rows this batch recomputed.
        var changedKeys: [DayKey] = []
    }

    /// Applies `messages` (in offset order) and commits them as one batch.
    func apply(_ messages: ArraySlice<ConsumedMessage>) throws -> Outcome {
        precondition(!broken, "a broken worker must be reopened")
        var outcome = Outcome()
        guard let last = messages.last, last.offset >= shard.nextOffset else {
            outcome.skipped = messages.count
            return outcome
        }
        let decoder = EventDecoder()
        var batch = Shard.Batch(nextOffset: last.offset + 1)
        var events: [(event: Event, offset: Int64)] = []
        events.reserveCapacity(messages.count)
        for message in messages {
            guard message.offset >= shard.nextOffset else {
                outcome.skipped += 1 // already in the shard (redelivered after a seek or rebalance)
                continue
            }
            let decoded = message.value.count > EventDecoder.maximumEventBytes
                ? .failure(EventError.lineTooLong(limit: EventDecoder.maximumEventBytes))
                : message.value.withUnsafeBufferPointer { bytes in Result { () throws(EventError) in try decoder.decode(bytes) } }
            switch decoded {
            case .failure(let error):
                batch.deadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                          reason: error.description, code: error.code.rawValue))
                outcome.deadLetters += 1
            case .success(let event):
                // Byte for byte: String's == would take a differently normalized key for the user.
                if !message.key.isEmpty, !message.key.elementsEqual(event.user.utf8) {
                    let keyUser = String(decoding: message.key, as: UTF8.self)
                    // A producer keyed it by someone else: per-user order is not guaranteed for it.
                    batch.deadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                              reason: "key: \(JSONWriter.quoted(keyUser)) is not the event's user \(JSONWriter.quoted(event.user)); publish events keyed by user",
                                                              code: "key_mismatch"))
                    outcome.deadLetters += 1
                    continue
                }
                events.append((event, message.offset))
            }
        }
        do {
            try ledger.load(for: events.map(\.event))
        } catch {
            fail()
            throw error
        }
        var dirty = Set<DayKey>()
        for (event, offset) in events {
            let changed = ledger.apply(event, at: offset)
            switch event {
            case .sampleAdded(let sample):
                if !changed.isEmpty { batch.upserts.append((sample, offset)) }
            case .sampleDeleted(let user, let uuid):
                batch.deletes.append((user, uuid))
            }
            dirty.formUnion(changed)
            outcome.applied += 1
        }
        batch.rows = ledger.recompute(dirty)
        outcome.rowsChanged = batch.rows.count
        outcome.changedKeys = Array(batch.rows.keys)
        do {
            try shard.commit(batch)
        } catch {
            fail()
            throw error
        }
        ledger.evictIfOverBudget()
        if outcome.deadLetters > 0 { deadLettersPending = true }
        return outcome
    }

    /// The cache may now hold what the shard does not: forget it and refuse further batches.
    private func fail() {
        broken = true
        ledger.dropCache()
    }
}
