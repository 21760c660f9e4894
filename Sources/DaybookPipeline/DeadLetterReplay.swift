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

    /// Publishes every candidate of `plan`, waits for every outcome and marks the delivered
    /// ones replayed. Does nothing with a plan that has refusals.
    /// - Throws: `PublishError`: `.configuration`; `.unreachable` (nothing was published);
    ///   `.notDelivered` when the producer failed (the dead letters whose events were
    ///   delivered are not marked: replay again).
    public static func run(_ plan: Plan, _ request: Request, connection: KafkaConnection, producer configuration: ProducerConfiguration,
                           connectTimeout: Duration = .seconds(30), logger: Logger = .silent) throws(PublishError) -> Outcome {
        var outcome = Outcome()
        guard plan.refusals.isEmpty, !plan.candidates.isEmpty else { return outcome }
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
                try publisher.send(validatedJSON: c.bytes, user: c.user, id: n)
            } catch {
                guard error.kind == .oversized else { throw error }
                outcome.failed[n] = .tooLarge
            }
        }
        try publisher.close()
        mark(plan.candidates, request, into: &outcome)
        return outcome
    }

    /// Marks every delivered candidate replayed in the shard that holds it.
    ///
    /// Under the data directory's swap lock, in the shards the manifest names now: a rebuild
    /// copies the marks into its new shards under the same lock just before it swaps, so a
    /// mark lands either before that copy or in the new shards — never only in the old ones.
    static func mark(_ candidates: [Candidate], _ request: Request, into outcome: inout Outcome) {
        let swapLock: Int32
        let layout: DataLayout
        do {
            swapLock = try DataLayout.lockSwaps(request.dataDirectory)
            layout = try DataLayout.read(request.dataDirectory)
        } catch {
            outcome.markFailures.append(error)
            outcome.unmarked = Set(candidates.map(\.id))
            return
        }
        defer { close(swapLock) }
        var byPath: [String: [DeadLetterMarks.Mark]] = [:]
        for (n, c) in candidates.enumerated() {
            guard let position = outcome.landed[n] else { continue }
            byPath[layout.path(topic: request.topic, partition: c.id.partition), default: []].append(.init(id: c.id, landedAt: position))
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
