import DaybookKafka
import DaybookStore

/// The projector's dead-letter outbox, as `ProjectorStateMachine` (`DeadLetterOutbox`)
/// decides it: read each pending shard's unforwarded rows, hand them to the DLQ producer,
/// mark the delivered ones forwarded.
extension Projector {
    static let outboxPage = 1_000
    static let dlqPayloadLimit = 512 * 1_024

    /// Hands unforwarded dead letters to the DLQ producer and marks delivered ones.
    func forwardDeadLetters() {
        let pending = workers.filter { $0.value.deadLettersPending }.map(\.key)
        for case .readOutbox(let partition, let after) in machine.forwarding(pending: pending) {
            guard let worker = workers[partition] else { continue }
            worker.deadLettersPending = false
            var unsent: [Int] = []
            do {
                // A page at a time: a full page means more are waiting, so the outbox drains
                // over the next rounds, whatever its size.
                let page = try worker.shard.unforwardedDeadLetters(after: after, limit: Self.outboxPage)
                let letters = Dictionary(page.map { ($0.id, $0.letter) }, uniquingKeysWith: { first, _ in first })
                let actions = machine.unforwarded(partition, rows: page.map(\.id), pageFull: page.count == Self.outboxPage)
                unsent = actions.compactMap { if case .forward(_, _, let id) = $0 { id } else { nil } }
                for action in actions {
                    switch action {
                    case .forward(_, let row, let id):
                        guard let letter = letters[row] else { continue }
                        try send(letter, of: partition, id: id)
                        unsent.removeAll { $0 == id }
                    default:
                        performOutbox([action])
                    }
                }
            } catch {
                logger.warning("dead-letter outbox of partition \(partition): \(error); will retry")
                worker.deadLettersPending = true
            }
            // What was not handed over is sent again in a later round, as a failed delivery is.
            if !unsent.isEmpty { performOutbox(machine.deliveries(delivered: [], failed: unsent)) }
        }
        deadLetterProducer.poll()
        markDelivered()
    }

    /// A dead letter as the DLQ topic gets it: its payload with why, the code and where it
    /// came from in headers. A payload too large for the DLQ topic would fail forever: its
    /// head is forwarded and the size said; the shard keeps it whole.
    static func message(of letter: Shard.DeadLetter, source: String) -> (headers: [(String, [UInt8])], payload: [UInt8]) {
        var headers: [(String, [UInt8])] = [
            ("daybook.reason", Array(letter.reason.utf8)),
            ("daybook.code", Array(letter.code.utf8)),
            ("daybook.source", Array(source.utf8)),
        ]
        var payload = letter.payload
        if payload.count > dlqPayloadLimit {
            headers.append(("daybook.truncated-from", Array(String(payload.count).utf8)))
            payload = Array(payload.prefix(dlqPayloadLimit))
        }
        return (headers, payload)
    }

    private func send(_ letter: Shard.DeadLetter, of partition: Int32, id: Int) throws {
        let (headers, payload) = Self.message(of: letter, source: "\(options.topic)/\(partition)/\(letter.offset)")
        try deadLetterProducer.send(topic: options.deadLetterTopic, key: letter.key, value: payload, headers: headers, id: id)
    }

    /// Hands the delivery reports to the machine: delivered rows are marked forwarded,
    /// failed ones sent again after the next batch.
    func markDelivered() {
        let actions = machine.deliveries(delivered: reports.delivered, failed: reports.failed)
        reports.delivered.removeAll()
        reports.failed.removeAll()
        performOutbox(actions)
    }

    private func performOutbox(_ actions: [ProjectorStateMachine.Action]) {
        for action in actions {
            switch action {
            case .outboxPending(let partition):
                workers[partition]?.deadLettersPending = true
            case .markForwarded(let partition, let rows):
                guard let worker = workers[partition] else { continue }
                do {
                    try worker.shard.markForwarded(rows)
                    machine.markedForwarded(partition)
                } catch {
                    logger.warning("marking dead letters forwarded in partition \(partition): \(error)")
                }
            default:
                break
            }
        }
    }

    func flushDeadLetters(timeoutMilliseconds: Int) {
        // Page after page, as the rounds forward them, until the outbox is read to its end
        // (or the time is up): the last round's commit may have recorded several pages.
        let deadline = ContinuousClock.now + .milliseconds(timeoutMilliseconds)
        repeat { forwardDeadLetters() } while workers.values.contains(where: \.deadLettersPending) && ContinuousClock.now < deadline
        try? deadLetterProducer.flush(timeoutMilliseconds: timeoutMilliseconds)
        markDelivered()
    }
}
