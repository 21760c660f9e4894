import DaybookCore
import DaybookStore

/// Which dead letters a replay may republish without letting an older write replace a
/// newer one: a decision over versions and produce times, with no I/O.
///
/// A dead letter is a write from the moment it was first produced (its message's Kafka
/// timestamp), not from the moment it is replayed. In the order writes were first produced,
/// the sample in force for a uuid is an add of the highest version, among those the one
/// produced last; a deletion is permanent. A dead letter's add is republished only if it
/// would be that sample: its version is higher than that of the write in force at home (in
/// the user's own partition), or the same and it was produced strictly later. Otherwise it
/// is superseded, and republishing it would rewind an edit (`dlq replay` marks it so
/// instead). Deletions and check-ins always go: a deletion is permanent and a check-in only
/// moves forward, so where they land cannot matter. See Guides/Dedupe.md.
///
/// Example: `u3` value 200 at 10:00 is misrouted; `u3` value 300 at 10:05, both version 0,
/// goes home. The dead letter's add loses to 10:05 (same version, produced earlier), so it
/// is superseded and the total keeps 300 — as `rollup` of the events in produce order.
///
/// Complexity: O(n log n) in the candidates, one dictionary look-up each for the home.
public enum ReplayOrder {
    /// A (user, uuid): the unit a write replaces.
    public struct Key: Hashable, Sendable {
        public var user: String
        public var uuid: String

        public init(user: String, uuid: String) {
            self.user = user
            self.uuid = uuid
        }
    }

    /// One add: its version, when its message was first produced, and where it is.
    public struct Write: Sendable, Equatable {
        public var version: Int64
        /// The Kafka timestamp (ms since 1970) of the message that first carried it; nil
        /// when unknown (the message has none, or is no longer in the log).
        public var producedAt: Int64?
        /// Its position in the log: a home message, or the dead letter's own id.
        public var position: DeadLetterID

        public init(version: Int64, producedAt: Int64?, position: DeadLetterID) {
            self.version = version
            self.producedAt = producedAt
            self.position = position
        }
    }

    /// What the home partition holds of a uuid, after every message read there.
    public enum Home: Sendable, Equatable {
        /// The add in force (the projector's rule: an add replaces one of a version at most its own).
        case live(Write)
        /// Deleted by the message at this position: permanent.
        case deleted(at: DeadLetterID)

        /// The home after one more message of the uuid, in log order.
        public func applying(_ event: Event, producedAt: Int64?, at position: DeadLetterID) -> Home {
            switch (self, event) {
            case (.deleted, _): return self
            case (_, .sampleDeleted): return .deleted(at: position)
            case (.live(let current), .sampleAdded(let s)) where s.version < current.version: return self
            case (_, .sampleAdded(let s)): return .live(Write(version: s.version, producedAt: producedAt, position: position))
            case (_, .sourceCheckedIn): return self
            }
        }

        /// The home of a uuid with no write so far, after `event` (nil for a check-in).
        public static func first(_ event: Event, producedAt: Int64?, at position: DeadLetterID) -> Home? {
            switch event {
            case .sampleDeleted: return .deleted(at: position)
            case .sampleAdded(let s): return .live(Write(version: s.version, producedAt: producedAt, position: position))
            case .sourceCheckedIn: return nil
            }
        }
    }

    /// A dead letter about to be replayed: the event it would publish and its original write.
    public struct Candidate: Sendable, Equatable {
        public var id: DeadLetterID
        public var event: Event
        /// When the dead letter's message was first produced (nil: unknown).
        public var producedAt: Int64?

        public init(id: DeadLetterID, event: Event, producedAt: Int64?) {
            self.id = id
            self.event = event
            self.producedAt = producedAt
        }

        /// The (user, uuid) it writes; nil for a check-in.
        public var key: Key? { event.uuid.map { Key(user: event.user, uuid: $0) } }

        var write: Write? {
            guard case .sampleAdded(let s) = event else { return nil }
            return Write(version: s.version, producedAt: producedAt, position: id)
        }
    }

    /// Why an add is not republished, and the write that wins over it.
    public struct Superseded: Sendable, Equatable {
        public enum Reason: Sendable, Equatable {
            /// The uuid is deleted (at home, or by another dead letter of this replay).
            case deleted
            /// The winner has a higher version.
            case higherVersion(Int64)
            /// The same version, produced later (or at the same millisecond: a tie stays).
            case producedLater
            /// The same version, and when one of the two was produced is unknown: the write
            /// in force stays (give the repair a higher version with `--fix` to make it win).
            case unknownOrder
        }

        public var reason: Reason
        /// The winning write or deletion: a home message, or another dead letter's id.
        public var by: DeadLetterID
        /// Whether `by` is another dead letter of this replay rather than a home message.
        public var byDeadLetter: Bool

        public init(reason: Reason, by: DeadLetterID, byDeadLetter: Bool) {
            self.reason = reason
            self.by = by
            self.byDeadLetter = byDeadLetter
        }
    }

    /// The candidates that must not be republished, by id; every other one goes.
    /// - Parameter homes: for each (user, uuid) of the candidates, what its home partition
    ///   holds (absent: nothing, so an add goes).
    public static func superseded(_ candidates: [Candidate], homes: [Key: Home]) -> [DeadLetterID: Superseded] {
        var out: [DeadLetterID: Superseded] = [:]
        var byKey: [Key: [Candidate]] = [:]
        for c in candidates {
            if let key = c.key { byKey[key, default: []].append(c) }
        }
        for (key, group) in byKey {
            let adds = group.compactMap(\.write)
            guard !adds.isEmpty else { continue }
            // A deletion among the dead letters is permanent: the adds beside it change nothing.
            if let deletion = group.filter({ $0.write == nil }).map(\.id).min() {
                for a in adds { out[a.position] = Superseded(reason: .deleted, by: deletion, byDeadLetter: true) }
                continue
            }
            // Of several adds of one uuid, only the latest produced of the highest version can win.
            let ordered = adds.sorted(by: isOlder)
            guard let best = ordered.last else { continue }
            for a in ordered.dropLast() {
                out[a.position] = Superseded(reason: reason(a, losesTo: best), by: best.position, byDeadLetter: true)
            }
            switch homes[key] {
            case nil:
                break
            case .deleted(let at)?:
                out[best.position] = Superseded(reason: .deleted, by: at, byDeadLetter: false)
            case .live(let home)?:
                if !wins(best, over: home) {
                    out[best.position] = Superseded(reason: reason(best, losesTo: home), by: home.position, byDeadLetter: false)
                }
            }
        }
        return out
    }

    /// Whether dead letter `a` replaces `home` in produce order: a higher version, or the
    /// same version produced strictly later. An unknown time never wins a tie.
    static func wins(_ a: Write, over home: Write) -> Bool {
        if a.version != home.version { return a.version > home.version }
        guard let mine = a.producedAt, let theirs = home.producedAt else { return false }
        return mine > theirs
    }

    /// Ascending by version, produce time (unknown first), then position: the last is the winner.
    static func isOlder(_ a: Write, _ b: Write) -> Bool {
        (a.version, a.producedAt ?? Int64.min, a.position) < (b.version, b.producedAt ?? Int64.min, b.position)
    }

    static func reason(_ loser: Write, losesTo winner: Write) -> Superseded.Reason {
        if winner.version > loser.version { return .higherVersion(winner.version) }
        return loser.producedAt == nil || winner.producedAt == nil ? .unknownOrder : .producedLater
    }
}
