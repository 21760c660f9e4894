/// What the projector's dead-letter outbox knows, without I/O: per partition, the last row
/// handed to the DLQ producer, the rows handed over and not reported yet, and those
/// delivered and not yet marked forwarded in their shard. Part of `ProjectorStateMachine`.
///
/// Rows are read a page at a time after the cursor, so an outbox of any size drains over
/// rounds; a row is never handed over twice while in flight; a failed delivery moves the
/// cursor back before its row, so it is sent again in a later round.
struct DeadLetterOutbox: Equatable {
    private var cursors: [Int32: Int64] = [:]
    private var inFlight: [Int32: Set<Int64>] = [:]
    private var delivered: [Int32: [Int64]] = [:]
    private var ids: [Int: Row] = [:]
    private var nextID = 0

    struct Row: Equatable {
        var partition: Int32
        var row: Int64
    }

    func cursor(of partition: Int32) -> Int64 { cursors[partition] ?? 0 }

    /// Forgets what it knew of a partition's shard (row ids mean nothing in another shard file).
    mutating func forget(_ partition: Int32) {
        cursors[partition] = 0
        inFlight[partition] = nil
        delivered[partition] = nil
        ids = ids.filter { $0.value.partition != partition }
    }

    /// A page of unforwarded rows after the cursor: each one not in flight is forwarded; a
    /// full page means more are waiting.
    mutating func unforwarded(_ partition: Int32, rows: [Int64], pageFull: Bool) -> [ProjectorStateMachine.Action] {
        var actions: [ProjectorStateMachine.Action] = pageFull ? [.outboxPending(partition)] : []
        for row in rows where !inFlight[partition, default: []].contains(row) {
            inFlight[partition, default: []].insert(row)
            cursors[partition] = max(cursors[partition] ?? 0, row)
            ids[nextID] = Row(partition: partition, row: row)
            actions.append(.forward(partition, row: row, id: nextID))
            nextID += 1
        }
        return actions
    }

    /// Delivered rows are marked forwarded (their partition's all at once); a failed one is
    /// handed over again in a later round.
    mutating func deliveries(delivered ok: [Int], failed: [Int]) -> [ProjectorStateMachine.Action] {
        var actions: [ProjectorStateMachine.Action] = []
        for id in ok {
            guard let r = ids.removeValue(forKey: id) else { continue }
            inFlight[r.partition]?.remove(r.row)
            delivered[r.partition, default: []].append(r.row)
        }
        for id in failed {
            guard let r = ids.removeValue(forKey: id) else { continue }
            inFlight[r.partition]?.remove(r.row)
            cursors[r.partition] = min(cursors[r.partition] ?? 0, r.row - 1)
            actions.append(.outboxPending(r.partition))
        }
        for (partition, rows) in delivered.sorted(by: { $0.key < $1.key }) {
            actions.append(.markForwarded(partition, rows: rows))
        }
        return actions
    }

    /// The partition's delivered rows are marked in its shard.
    mutating func marked(_ partition: Int32) { delivered[partition] = nil }
}
