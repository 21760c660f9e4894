import DaybookCore
import DaybookKafka
import DaybookStore
import DaybookSupport

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
    /// Messages from here on are applied only below this offset (`ProjectionRun.shadow`).
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

    // MARK: Staged messages

    /// Messages decoded and waiting for their batch's transaction: a partition's batch grows
    /// over several polls to thousands of events (one load and one commit for all of them)
    /// while librdkafka's buffers go back after each poll. Nothing staged is in the shard:
    /// dropped (a revoked partition, a failure, a stop), it is read again from the shard's offset.
    private var staged = StagedBatch()
    private var stagedDeadLetters: [Shard.DeadLetter] = []
    /// The offset after the last staged message; nil while nothing is staged.
    private(set) var stagedEnd: Int64?
    /// Kafka timestamp (ms) of the newest staged message, if it had one.
    private var stagedTimestamp: Int64?
    /// Staged events and dead letters.
    var stagedCount: Int { staged.count + stagedDeadLetters.count }
    /// The size of what is staged: each event's slot and the names of the batch, each once
    /// (`StagedBatch.bytes`; dead letters, rare, are not counted).
    var stagedBytes: Int { staged.bytes }
    /// Per name of the staged batch: whether it was found to be a user of this partition
    /// (each user is placed once per batch, not once per event).
    private var placedUsers: [Bool] = []
    /// When the oldest staged message was staged (a live stream commits within a bound).
    private(set) var stagedSince: ContinuousClock.Instant?

    /// The offset the next message must have for the log to be continuous: after what is
    /// staged, else the shard's.
    var expectedNext: Int64 { max(stagedEnd ?? shard.nextOffset, shard.nextOffset) }

    /// Why an event of `user` does not belong in `partition`, or nil when it does: a user's
    /// events all go to the partition the producers' partitioner gives the user's key.
    static func misplacement(of user: String, in partition: TopicPartition, _ placement: (partitioner: Partitioner, count: Int)) -> String? {
        let home = placement.partitioner.partition(ofKey: user.utf8, count: placement.count)
        guard home != partition.partition else { return nil }
        return "user \(JSONWriter.quoted(user)) belongs in partition \(home) of \(partition.topic) under \(placement.partitioner.rawValue) " +
            "(\(placement.count) partitions), but this event sits in partition \(partition.partition): its rows would be split over two shards. " +
            "Publish with the producers' partitioner (kafka.partitioner); dead-letter replay republishes it to partition \(home)"
    }

    /// Decodes `messages` (in offset order) into the staged batch; skips what the shard or
    /// the batch already has. Poison becomes a dead letter of the batch. Returns how many
    /// messages were skipped and how many are re-read (below the shard's offset).
    func stage(_ messages: ArraySlice<ConsumedMessage>) -> (skipped: Int, reread: Int) {
        var skipped = 0, reread = 0
        let next = shard.nextOffset
        let from = stagedEnd ?? min(rereadFrom ?? next, next)
        let messages = stopOffset.map { stop in messages.prefix { $0.offset < stop } } ?? messages
        let decoder = EventDecoder()
        var zones = ZoneMemo()
        // Asked once, not per message: comparing an optional clock instant with nil copies it.
        var timing = stagedSince != nil
        // Room for the whole poll at once: each doubling of a growing array moves every
        // staged event again (~250 instructions an event over a batch). Still at least
        // doubling: an exact reserve per small poll would move the batch on every poll.
        let needed = staged.count + messages.count
        if needed > staged.events.capacity { staged.reserveCapacity(max(needed, 2 * staged.events.capacity)) }
        for message in messages {
            guard message.offset >= from else {
                skipped += 1 // already in the shard or the batch (redelivered after a seek or rebalance)
                continue
            }
            if message.offset < next { reread += 1 }
            if !timing {
                stagedSince = .now
                timing = true
            }
            stagedEnd = message.offset + 1
            stagedTimestamp = message.timestamp ?? stagedTimestamp
            // Decoded where librdkafka holds it, straight into the batch: no copy of the payload.
            let staging = message.valueCount > EventDecoder.maximumEventBytes
                ? .failure(EventError.lineTooLong(limit: EventDecoder.maximumEventBytes))
                : message.withValue { bytes in
                    Result { () throws(EventError) in
                        try decoder.stage(bytes, into: &staged, position: message.offset,
                                          deliveredAt: message.timestamp.map { Instant(nanoseconds: $0 &* 1_000_000) }, zones: &zones)
                    }
                }
            switch staging {
            case .failure(let error):
                stagedDeadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                          reason: error.description, code: error.code.rawValue))
            case .success(let user):
                // Byte for byte: String's == would take a differently normalized key for the user.
                if message.withKey({ key in !key.isEmpty && !staged.name(user, is: key) }) {
                    let keyUser = String(decoding: message.key, as: UTF8.self)
                    // A producer keyed it by someone else: per-user order is not guaranteed for it.
                    stagedDeadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                              reason: "key: \(JSONWriter.quoted(keyUser)) is not the event's user \(JSONWriter.quoted(staged.name(user))); publish events keyed by user",
                                                              code: "key_mismatch"))
                    staged.removeLast()
                    continue
                }
                // A partition's messages name a few users over and over: each is placed once a batch.
                if let placement {
                    if placedUsers.count < staged.names.count { placedUsers += repeatElement(false, count: staged.names.count - placedUsers.count) }
                    if !placedUsers[Int(user)] {
                        if let reason = Self.misplacement(of: staged.name(user), in: partition, placement) {
                            stagedDeadLetters.append(Shard.DeadLetter(offset: message.offset, key: message.key, payload: message.value,
                                                                      reason: reason, code: "wrong_partition"))
                            staged.removeLast()
                            continue
                        }
                        placedUsers[Int(user)] = true
                    }
                }
            }
        }
        return (skipped, reread)
    }

    /// Applies what is staged and commits it as one batch with the next offset; nothing
    /// to do when nothing is staged. Staged or not, the batch is gone afterwards: if the
    /// commit failed, the worker is broken and its messages are read again from the shard.
    func commitStaged() throws -> BatchOutcome {
        guard let end = stagedEnd else { return BatchOutcome() }
        let events = staged, deadLetters = stagedDeadLetters, timestamp = stagedTimestamp
        dropStaged()
        let next = shard.nextOffset
        var outcome = try projection.apply(events, deadLetters: deadLetters, rereadBelow: next, nextPosition: max(next, end))
        if let rereading = rereadFrom { rereadFrom = max(rereading, end) } // re-read once, even if redelivered
        outcome.deadLetters = deadLetters.count
        outcome.newestTimestamp = timestamp
        if !deadLetters.isEmpty { deadLettersPending = true }
        return outcome
    }

    /// Forgets what is staged (its messages are read again from the shard's offset).
    func dropStaged() {
        staged.removeAll()
        placedUsers = []
        stagedDeadLetters.removeAll(keepingCapacity: false)
        stagedEnd = nil
        stagedTimestamp = nil
        stagedSince = nil
    }

    /// Stages `messages` and commits them at once: one poll, one batch (a standby, which
    /// keeps up with a live log rather than racing through a long one).
    func apply(_ messages: ArraySlice<ConsumedMessage>) throws -> BatchOutcome {
        let (skipped, reread) = stage(messages)
        var outcome = try commitStaged()
        outcome.skipped = skipped
        outcome.reread = reread
        return outcome
    }
}
