import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPublish
import DaybookStore
import Foundation

/// Republishing dead letters — as stored, or repaired — so that they count, then marking
/// each delivered one replayed in its shard: `daybook dlq replay`, driven in process.
///
/// A replay is planned before anything is published (`plan`): the dead letters it would
/// publish, those replayed before, stored payloads that still fail validation (the others
/// still go), and refusals — any refusal means nothing is published. `run` then publishes
/// the candidates through an `EventPublisher` (keyed by their users, under the configured
/// partitioner), waits for every outcome, and marks the delivered ones under the data
/// directory's swap lock, so that a rebuild swapping shards meanwhile keeps the marks.
/// Publishing a dead letter twice (a replay stopped between delivery and mark) is harmless:
/// the same event twice changes nothing.
public enum DeadLetterReplay {
    /// What to replay.
    public struct Request: Sendable {
        public var dataDirectory: String
        /// Default: `health-samples`.
        public var topic = "health-samples"
        /// Only these dead letters (default: every pending one, or every one the fixes name).
        public var only: Set<DeadLetterID>?
        /// Repaired events: only the dead letters they name are replayed, each with its fix.
        public var fixes: FixFile?

        public init(dataDirectory: String) { self.dataDirectory = dataDirectory }
    }

    /// A dead letter about to be published: its event's bytes (as stored, or as the fix wrote
    /// them) and user.
    public struct Candidate: Sendable {
        public var id: DeadLetterID
        public var user: String
        public var bytes: [UInt8]
        public var event: Event
        /// When the dead letter's message was first produced (its Kafka timestamp, ms since
        /// 1970), once `order` has read it: the republished event keeps it.
        public var producedAt: Int64?
    }

    /// Why the replay will not publish anything.
    public enum Refusal: Sendable, Equatable {
        /// `only` names an id that is no dead letter of the topic.
        case noSuchDeadLetter(DeadLetterID)
        /// A line of the fix file is not a fix.
        case fixLine(line: Int, FixProblem)
        /// A fix line repairs an id that is no dead letter of the topic.
        case fixForNoDeadLetter(line: Int, DeadLetterID)
        /// A second fix line for one dead letter.
        case fixRepeated(line: Int, DeadLetterID, firstLine: Int)
        /// `only` names a dead letter that no fix line repairs.
        case noFixFor(DeadLetterID)
    }

    /// What a replay will do, decided before anything is published.
    public struct Plan: Sendable {
        public var candidates: [Candidate] = []
        /// Named dead letters that were replayed before.
        public var skipped: [StoredDeadLetter] = []
        /// Stored payloads that still fail validation; the other candidates still go.
        public var invalid: [(id: DeadLetterID, error: EventError)] = []
        /// Any of them stops the replay before publishing, in the order to report them.
        public var refusals: [Refusal] = []
        /// Adds a newer write of their uuid supersedes (`order`): not published, since that
        /// would rewind an edit, and marked superseded.
        public var superseded: [(candidate: Candidate, by: ReplayOrder.Superseded)] = []
        /// Whether `order` compared the candidates with their homes; `run` publishes only
        /// an ordered plan.
        public internal(set) var ordered = false
    }

    /// Why a replay could not start.
    public struct ReplayError: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable { case noDataDirectory }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    /// Reads the dead letters of `request.topic` in the data directory and plans the replay.
    /// Read-only.
    /// - Throws: `ReplayError.noDataDirectory`; the store's errors for a file that is not a
    ///   shard or a storage failure.
    public static func plan(_ request: Request) throws -> Plan {
        guard FileManager.default.fileExists(atPath: request.dataDirectory) else {
            throw ReplayError(kind: .noDataDirectory, message: "\(request.dataDirectory): no such data directory")
        }
        let stored = try ShardReader(directory: request.dataDirectory)
            .deadLetters(.init(topic: request.topic, includeReplayed: true, withPayloads: request.fixes == nil))
        return plan(stored: stored, request)
    }

    /// Plans a replay of `stored` (every dead letter of the topic, replayed ones included).
    public static func plan(stored: [StoredDeadLetter], _ request: Request) -> Plan {
        let byID = Dictionary(grouping: stored, by: \.id)
        var plan = Plan()
        for id in (request.only ?? []).sorted() where byID[id] == nil {
            plan.refusals.append(.noSuchDeadLetter(id))
        }
        if let fixes = request.fixes {
            planFixes(fixes, byID, only: request.only, into: &plan)
        } else {
            planAsStored(byID, only: request.only, into: &plan)
        }
        return plan
    }

    static func planFixes(_ file: FixFile, _ byID: [DeadLetterID: [StoredDeadLetter]], only: Set<DeadLetterID>?, into plan: inout Plan) {
        var refused: [(line: Int, refusal: Refusal)] = file.problems.map { ($0.line, .fixLine(line: $0.line, $0.problem)) }
        var lineOf: [DeadLetterID: Int] = [:]
        for fix in file.fixes {
            guard let letters = byID[fix.id] else {
                refused.append((fix.line, .fixForNoDeadLetter(line: fix.line, fix.id)))
                continue
            }
            if let earlier = lineOf[fix.id] {
                refused.append((fix.line, .fixRepeated(line: fix.line, fix.id, firstLine: earlier)))
                continue
            }
            lineOf[fix.id] = fix.line
            guard only?.contains(fix.id) ?? true else { continue }
            if let done = letters.first(where: { $0.replay != nil }) {
                plan.skipped.append(done)
                continue
            }
            plan.candidates.append(Candidate(id: fix.id, user: fix.event.user, bytes: fix.bytes, event: fix.event))
        }
        plan.refusals += refused.sorted { $0.line < $1.line }.map(\.refusal)
        for id in (only ?? []).sorted() where byID[id] != nil && lineOf[id] == nil {
            plan.refusals.append(.noFixFor(id))
        }
    }

    static func planAsStored(_ byID: [DeadLetterID: [StoredDeadLetter]], only: Set<DeadLetterID>?, into plan: inout Plan) {
        let decoder = EventDecoder()
        for (id, letters) in byID.sorted(by: { $0.key < $1.key }) where only?.contains(id) ?? true {
            if let done = letters.first(where: { $0.replay != nil }) {
                // Named only when asked for: without `only`, replayed ones are simply not pending.
                if only != nil { plan.skipped.append(done) }
                continue
            }
            let payload = letters[0].payload
            let decoded: Result<Event, EventError> = payload.count > EventDecoder.maximumEventBytes
                ? .failure(EventError.lineTooLong(limit: EventDecoder.maximumEventBytes))
                : payload.withUnsafeBufferPointer { b in Result { () throws(EventError) in try decoder.decode(b) } }
            switch decoded {
            case .success(let event): plan.candidates.append(Candidate(id: id, user: event.user, bytes: payload, event: event))
            case .failure(let error): plan.invalid.append((id, error))
            }
        }
    }

    /// Compares every candidate with the writes of its uuid in its user's home partition, as
    /// `ReplayOrder` rules, and moves the superseded ones out of `plan.candidates`; the
    /// others get their produce time, which the republished event keeps.
    ///
    /// Reads from the cluster `access` reaches: the topic's partition count, the checks
    /// `LiveLogCheck` makes (this must be the log the shards came from), each candidate's
    /// own message (for its timestamp) and the home partitions of the candidates' users
    /// from their first offset to their end, decoding only the messages keyed by those
    /// users. Nothing is written.
    /// - Throws: `ProjectorError` `.kafka` (the cluster did not answer, the topic is
    ///   missing, a read stalled for `timeout`) or `.logMismatch`.
    public static func order(_ plan: inout Plan, _ request: Request, access: LogAccess, timeout: Duration = .seconds(30),
                             logger: Logger = .silent, progress: (String) -> Void = { _ in }) throws {
        guard plan.refusals.isEmpty, !plan.candidates.isEmpty else { return }
        let (consumer, count) = try access.consumer(counting: request.topic, timeout: timeout, logger: logger)
        defer { consumer.close() }
        try LiveLogCheck.check(directory: request.dataDirectory, topic: request.topic, count: count, consumer: consumer, timeout: timeout)
        let ms = timeout.wholeMilliseconds
        for n in plan.candidates.indices {
            let id = plan.candidates[n].id
            do {
                if let first = try consumer.firstMessage(TopicPartition(request.topic, id.partition), from: id.offset, timeoutMilliseconds: ms),
                   first.offset == id.offset, first.timestamp >= 0 {
                    plan.candidates[n].producedAt = first.timestamp
                }
            } catch where error.kind == .broker {
                // Outside the log (retention): its produce time is unknown, and it never wins a tie.
            } catch {
                throw ProjectorError.kafka("reading dead letter \(id)'s message in \(request.topic): \(error)", error)
            }
        }
        let partitioner = access.producer.partitioner
        var wanted: [Int32: Set<ReplayOrder.Key>] = [:]
        for c in plan.candidates {
            guard let uuid = c.event.uuid else { continue }
            wanted[partitioner.partition(ofKey: c.user.utf8, count: count), default: []].insert(.init(user: c.user, uuid: uuid))
        }
        // The messages the projector did not apply: every dead letter's own (a candidate's
        // message may decode now, under a configuration that adds its metric, but it is the
        // write being repaired, never one in force).
        let notApplied = Set(try ShardReader(directory: request.dataDirectory)
            .deadLetters(.init(topic: request.topic, includeReplayed: true, withPayloads: false)).map(\.id))
        var homes: [ReplayOrder.Key: ReplayOrder.Home] = [:]
        for (partition, keys) in wanted.sorted(by: { $0.key < $1.key }) {
            try readHome(TopicPartition(request.topic, partition), keys: keys, consumer: consumer, timeout: timeout,
                         notApplied: notApplied, progress: progress, into: &homes)
        }
        let superseded = ReplayOrder.superseded(plan.candidates.map { .init(id: $0.id, event: $0.event, producedAt: $0.producedAt) }, homes: homes)
        plan.superseded += plan.candidates.compactMap { c in superseded[c.id].map { (c, $0) } }
        plan.candidates.removeAll { superseded[$0.id] != nil }
        plan.ordered = true
    }

    /// Reads `tp` from its first offset to its end and records, for each of `keys`, what
    /// the projector holds of it there: the messages it applies (valid, keyed by their
    /// user or not keyed, and not at a dead letter's id: `notApplied`), in log order.
    static func readHome(_ tp: TopicPartition, keys: Set<ReplayOrder.Key>, consumer: KafkaConsumer, timeout: Duration,
                         notApplied: Set<DeadLetterID> = [], progress: (String) -> Void,
                         into homes: inout [ReplayOrder.Key: ReplayOrder.Home]) throws {
        let marks: (low: Int64, high: Int64)
        do {
            marks = try consumer.watermarks(tp, timeoutMilliseconds: timeout.wholeMilliseconds)
            guard marks.high > marks.low else { return }
            try consumer.readDirectly([tp], startingAt: [tp: marks.low])
        } catch {
            throw ProjectorError.kafka("reading \(tp): \(error)", error)
        }
        progress("reading \(tp) offsets \(marks.low)..<\(marks.high) for the writes at home of \(keys.count) uuid\(keys.count == 1 ? "" : "s")")
        let users = Set(keys.map(\.user))
        let keyBytes = Set(users.map { Array($0.utf8) })
        let decoder = EventDecoder()
        var next = marks.low
        var lastProgress = ContinuousClock.now
        while next < marks.high {
            let events = consumer.poll(maxMessages: 10_000, timeoutMilliseconds: 100)
            if events.isEmpty, ContinuousClock.now - lastProgress > timeout {
                throw ProjectorError(kind: .kafka, message: "reading \(tp): no message for \(timeout) at offset \(next) of \(marks.high)")
            }
            for event in events {
                switch event {
                case .message(let m):
                    guard m.offset >= next else { continue }
                    next = m.offset + 1
                    lastProgress = .now
                    guard m.offset < marks.high, m.valueCount <= EventDecoder.maximumEventBytes,
                          m.withKey({ $0.isEmpty || keyBytes.contains(Array($0)) }) else { continue }
                    guard let decoded = m.withValue({ bytes in try? decoder.decode(bytes) }),
                          users.contains(decoded.user), let uuid = decoded.uuid else { continue }
                    // A keyed message must be keyed by its user, byte for byte, as the projector checks.
                    guard m.withKey({ $0.isEmpty || $0.elementsEqual(decoded.user.utf8) }) else { continue }
                    let key = ReplayOrder.Key(user: decoded.user, uuid: uuid)
                    guard keys.contains(key) else { continue }
                    let position = DeadLetterID(partition: tp.partition, offset: m.offset)
                    guard !notApplied.contains(position) else { continue }
                    homes[key] = homes[key].map { $0.applying(decoded, producedAt: m.timestamp, at: position) }
                        ?? ReplayOrder.Home.first(decoded, producedAt: m.timestamp, at: position)
                case .endOfPartition(let at, let offset) where at == tp:
                    next = max(next, offset)
                case .offsetOutOfRange(let at, let offset) where at == tp:
                    throw ProjectorError(kind: .kafka, message: "reading \(tp): offset \(offset) is outside the log (retention removed it while it was read)")
                case .error(let e):
                    if ContinuousClock.now - lastProgress > timeout {
                        throw ProjectorError.kafka("reading \(tp): \(e)", e)
                    }
                default:
                    break
                }
            }
        }
    }

    /// Why one candidate was not delivered (it stays pending).
    public enum Failure: Sendable {
        /// Larger than the producer accepts (`message.max.bytes`): refused before sending.
        case tooLarge
        /// Sent, and refused by the cluster or not delivered after the producer's retries.
        case notDelivered(PublishError)
    }

    /// What `run` did, by candidate index.
    public struct Outcome {
        /// Delivered candidates and where they landed (nil inside: the report did not say).
        public var landed: [Int: DeadLetterID?] = [:]
        public var failed: [Int: Failure] = [:]
        /// Delivered but not marked (a shard busy, not writable, or not a shard).
        public var unmarked: Set<DeadLetterID> = []
        /// The mark failures, one per shard, in the order they happened (the store's errors).
        public var markFailures: [any Error] = []
    }

    /// Publishes every candidate of `plan` (each with the time its dead letter was first
    /// produced), waits for every outcome and marks the delivered ones replayed and the
    /// superseded ones superseded. Does nothing with a plan that has refusals.
    /// - Throws: `PublishError`: `.configuration`, also for a plan `order` has not ordered
    ///   (publishing it could rewind an edit); `.unreachable` (nothing was published);
    ///   `.notDelivered` when the producer failed (the dead letters whose events were
    ///   delivered are not marked: replay again).
    public static func run(_ plan: Plan, _ request: Request, connection: KafkaConnection, producer configuration: ProducerConfiguration,
                           connectTimeout: Duration = .seconds(30), logger: Logger = .silent) throws(PublishError) -> Outcome {
        var outcome = Outcome()
        guard plan.refusals.isEmpty, !plan.candidates.isEmpty || !plan.superseded.isEmpty else { return outcome }
        guard plan.ordered else {
            throw PublishError(.configuration, "this replay plan was not compared with the writes at home: call DeadLetterReplay.order first (a dead letter published unordered could replace a newer write of its uuid)")
        }
        guard !plan.candidates.isEmpty else {
            mark(plan.candidates, superseded: plan.superseded, request, into: &outcome)
            return outcome
        }
        let publisher = try EventPublisher(connection: connection, configuration: configuration, topic: request.topic,
                                           connectTimeout: connectTimeout, logger: logger) { n, result in
            switch result {
            case .delivered(let partition, let offset):
                // (A nil value, "delivered, position unknown", must stay in the dictionary.)
                outcome.landed.updateValue(offset.map { DeadLetterID(partition: partition, offset: $0) }, forKey: n)
            case .rejected(let error), .undelivered(let error):
                outcome.failed[n] = .notDelivered(error)
            }
        }
        try publisher.connect()
        for (n, c) in plan.candidates.enumerated() {
            do {
                try publisher.send(validatedJSON: c.bytes, user: c.user, producedAt: c.producedAt, id: n)
            } catch {
                guard error.kind == .oversized else { throw error }
                outcome.failed[n] = .tooLarge
            }
        }
        try publisher.close()
        mark(plan.candidates, superseded: plan.superseded, request, into: &outcome)
        return outcome
    }

    /// Marks every delivered candidate replayed in the shard that holds it.
    ///
    /// Under the data directory's swap lock, in the shards the manifest names now: a rebuild
    /// copies the marks into its new shards under the same lock just before it swaps, so a
    /// mark lands either before that copy or in the new shards — never only in the old ones.
    static func mark(_ candidates: [Candidate], superseded: [(candidate: Candidate, by: ReplayOrder.Superseded)],
                     _ request: Request, into outcome: inout Outcome) {
        let swapLock: Int32
        let layout: DataLayout
        do {
            swapLock = try DataLayout.lockSwaps(request.dataDirectory)
            layout = try DataLayout.read(request.dataDirectory)
        } catch {
            outcome.markFailures.append(error)
            outcome.unmarked = Set(candidates.map(\.id) + superseded.map(\.candidate.id))
            return
        }
        defer { close(swapLock) }
        var byPath: [String: [DeadLetterMarks.Mark]] = [:]
        for (n, c) in candidates.enumerated() {
            guard let position = outcome.landed[n] else { continue }
            byPath[layout.path(topic: request.topic, partition: c.id.partition), default: []].append(.init(id: c.id, landedAt: position))
        }
        for (c, by) in superseded {
            byPath[layout.path(topic: request.topic, partition: c.id.partition), default: []]
                .append(.init(id: c.id, landedAt: by.by, superseded: by.byDeadLetter ? .byDeadLetter : .byHome))
        }
        for (path, marks) in byPath.sorted(by: { $0.key < $1.key }) {
            do {
                _ = try DeadLetterMarks.markReplayed(marks, topic: request.topic, inShardAt: path)
            } catch {
                outcome.markFailures.append(error)
                outcome.unmarked.formUnion(marks.map(\.id))
            }
        }
    }
}
