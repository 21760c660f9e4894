import DaybookCore
import DaybookKafka
import DaybookStore

/// Applies one partition's messages to its shard: decode, skip what the shard already has,
/// turn poison into dead letters, and hand the rest to the shard's `ShardProjection`
/// (cache, apply, recompute, one transaction with the next offset).
///
/// If a batch fails the worker is `broken` and must be reopened from its shard.
final class PartitionWorker {
    let projection: ShardProjection
    var shard: Shard { projection.shard }
    var ledger: Ledger { projection.ledger }
    let partition: TopicPartition
    /// The end of the partition as last reported by the consumer.
    var endOffset: Int64?
    var broken: Bool { projection.broken }
    /// Dead letters recorded and not yet handed to the DLQ producer (true on opening: a
    /// previous run may have left some unforwarded).
    var deadLettersPending = true
    /// Messages from here on are applied only below this offset (see `ProjectorOptions.stopOffsets`).
    var stopOffset: Int64?
    /// Messages from this offset up to the shard's are re-read, not skipped (`daybook replay`).
    var rereadFrom: Int64?
    /// The producers' partitioner and the topic's partition count: an event whose user
    /// belongs in another partition is a dead letter (`wrong_partition`), since its user's
    /// rows would sit in two shards. nil: not checked.
    var placement: (partitioner: Partitioner, count: Int)?

    /// Opening reads nothing from the shard: the cache fills as batches need it.
    init(shard: Shard, priority: SourcePriority, cacheBudgetBytes: Int) {
        projection = ShardProjection(shard: shard, priority: priority, cacheBudgetBytes: cacheBudgetBytes)
        partition = TopicPartition(shard.topic, shard.partition)
    }

    /// The next offset to apply; while re-reading, the next one to re-read (below the
    /// shard's): what progress and lag count from.
    var position: Int64 { min(rereadFrom ?? shard.nextOffset, shard.nextOffset) }

    var isCaughtUp: Bool {
        if let stopOffset, shard.nextOffset >= stopOffset { return true }
        return endOffset.map { shard.nextOffset >= $0 } ?? false
    }

    struct Outcome {
        var applied = 0
        var skipped = 0
        var reread = 0
        var deadLetters = 0
        var rowsChanged = 0
        var staleResends = 0
        var cacheHits = 0, cacheMisses = 0, cacheEvictions = 0
        /// The (user, metric, day) rows this batch recomputed.
        var changedKeys: [DayKey] = []
    }

    /// Why an event of `user` does not belong in `partition`, or nil when it does: a user's
    /// events all go to the partition the producers' partitioner gives the user's key.
    static func misplacement(of user: String, in partition: TopicPartition, _ placement: (partitioner: Partitioner, count: Int)) -> String? {
        let home = placement.partitioner.partition(ofKey: user.utf8, count: placement.count)
        guard home != partition.partition else { return nil }
        return "user \(JSONWriter.quoted(user)) belongs in partition \(home) of \(partition.topic) under \(placement.partitioner.rawValue) " +
            "(\(placement.count) partitions), but this event sits in partition \(partition.partition): its rows would be split over two shards. " +
            "Publish with the producers' partitioner (kafka.partitioner); dead-letter replay republishes it to partition \(home)"
    }

    /// Applies `messages` (in offset order) and commits them as one batch.
    func apply(_ messages: ArraySlice<ConsumedMessage>) throws -> Outcome {
        var outcome = Outcome()
        let next = shard.nextOffset
        let from = min(rereadFrom ?? next, next)
        let messages = stopOffset.map { stop in messages.prefix { $0.offset < stop } } ?? messages
        guard let last = messages.last, last.offset >= from else {
            outcome.skipped = messages.count
            return outcome
        }
        let decoder = EventDecoder()
        var deadLetters: [Shard.DeadLetter] = []
        var events: [(event: Event, position: Int64, deliveredAt: Instant?)] = []
        events.reserveCapacity(messages.count)
        for message in messages {
            guard message.offset >= from else {
                outcome.skipped += 1 // already in the shard (redelivered after a seek or rebalance)
                continue
            }
            if message.offset < next { outcome.reread += 1 }
            // Decoded where librdkafka holds it: no copy of the payload.
            let decoded = message.valueCount > EventDecoder.maximumEventBytes
                ? .failure(EventError.lineTooLong(limit: EventDecoder.maximumEventBytes))
                : message.withValue { bytes in Result { () throws(EventError) in try decoder.decode(bytes) } }
            switch decoded {
            case .failure(let error):
                deadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                    reason: error.description, code: error.code.rawValue))
            case .success(let event):
                // Byte for byte: String's == would take a differently normalized key for the user.
                if message.withKey({ key in !key.isEmpty && !key.elementsEqual(event.user.utf8) }) {
                    let keyUser = String(decoding: message.key, as: UTF8.self)
                    // A producer keyed it by someone else: per-user order is not guaranteed for it.
                    deadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                        reason: "key: \(JSONWriter.quoted(keyUser)) is not the event's user \(JSONWriter.quoted(event.user)); publish events keyed by user",
                                                        code: "key_mismatch"))
                    continue
                }
                if let placement, let reason = Self.misplacement(of: event.user, in: partition, placement) {
                    deadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                        reason: reason, code: "wrong_partition"))
                    continue
                }
                events.append((event, message.offset, message.timestamp.map { Instant(nanoseconds: $0 &* 1_000_000) }))
            }
        }
        let result = try projection.apply(events, deadLetters: deadLetters, rereadBelow: next, nextPosition: max(next, last.offset + 1))
        if let rereading = rereadFrom { rereadFrom = max(rereading, last.offset + 1) } // re-read once, even if redelivered
        outcome.applied = result.applied
        outcome.deadLetters = deadLetters.count
        outcome.rowsChanged = result.rows.count
        outcome.staleResends = result.staleResends
        outcome.cacheHits = result.cacheHits
        outcome.cacheMisses = result.cacheMisses
        outcome.cacheEvictions = result.cacheEvictions
        outcome.changedKeys = Array(result.rows.keys)
        if !deadLetters.isEmpty { deadLettersPending = true }
        return outcome
    }
}
