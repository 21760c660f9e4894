/// What one projector run is for: where each partition starts, when the run ends, what it
/// may forward, and whether it follows a generation a rebuild swaps in. Chosen as a whole
/// by the caller (`live`, `rebuild`, `shadow`, `replay`), never assembled from flags.
public struct ProjectionRun: Sendable {
    public enum Purpose: Sendable, Equatable {
        /// The projection readers read (`daybook project`, the demo).
        case live
        /// A new generation built beside the live one (`daybook rebuild`).
        case rebuild
        /// A temporary projection compared with the live one (`daybook verify`, `diff`).
        case shadow
        /// The live shards re-reading part of the log (`daybook replay`).
        case replay
    }

    public let purpose: Purpose
    /// Ends once every partition has reached the end of the log (and the stop offsets or
    /// the catch-up targets); otherwise only when the caller says so.
    public let untilCaughtUp: Bool
    /// Forwards dead letters to the DLQ topic. A rebuild or a shadow build meets the dead
    /// letters the live projector already forwarded, so it does not.
    public var forwardsDeadLetters: Bool
    /// Moves to the shards of a generation a rebuild swaps in; when false the run stops
    /// instead (a replay's re-reading belongs to the shards it started on).
    public let followsGenerations: Bool
    /// Records what this projector does with each partition in the data directory
    /// (`ProjectorRoles`), for `status` and readers: a live projector's shards are somebody's.
    public let recordsRoles: Bool
    /// Each listed partition is applied only below this offset, and caught up there.
    let stopOffsets: [Int32: Int64]
    /// Offsets each partition must also have reached before the run ends, asked again while
    /// the run is at the end of the log.
    let catchUpTargets: (@Sendable () throws -> [Int32: Int64])?
    /// Partitions started here instead of at their shard's offset: offsets below the shard's
    /// are re-read (`Ledger.reapply`): nothing steps back, and every day a re-read event
    /// covers is recomputed.
    let startOffsets: [Int32: Int64]

    private init(_ purpose: Purpose, untilCaughtUp: Bool = true, forwardsDeadLetters: Bool = false,
                 followsGenerations: Bool = true, recordsRoles: Bool = false, stopOffsets: [Int32: Int64] = [:],
                 catchUpTargets: (@Sendable () throws -> [Int32: Int64])? = nil, startOffsets: [Int32: Int64] = [:]) {
        self.purpose = purpose
        self.untilCaughtUp = untilCaughtUp
        self.forwardsDeadLetters = forwardsDeadLetters
        self.followsGenerations = followsGenerations
        self.recordsRoles = recordsRoles
        self.stopOffsets = stopOffsets
        self.catchUpTargets = catchUpTargets
        self.startOffsets = startOffsets
    }

    /// The live projection: every partition from its shard's offset, dead letters forwarded,
    /// following the generations a rebuild swaps in; until stopped, or `untilCaughtUp`.
    public static func live(untilCaughtUp: Bool = false, recordingRoles: Bool = false,
                            forwardingDeadLetters: Bool = true) -> ProjectionRun {
        ProjectionRun(.live, untilCaughtUp: untilCaughtUp, forwardsDeadLetters: forwardingDeadLetters, recordsRoles: recordingRoles)
    }

    /// A new generation: until the end of the log and the offsets `targets` gives (a live
    /// projector that keeps moving), forwarding nothing.
    public static func rebuild(catchingUpWith targets: @escaping @Sendable () throws -> [Int32: Int64]) -> ProjectionRun {
        ProjectionRun(.rebuild, catchUpTargets: targets)
    }

    /// A temporary projection: each listed partition up to its offset (the live shards'),
    /// the others to the end of the log, forwarding nothing.
    public static func shadow(stoppingAt offsets: [Int32: Int64]) -> ProjectionRun {
        ProjectionRun(.shadow, stopOffsets: offsets)
    }

    /// The live shards re-reading each listed partition from its offset to the end of the
    /// log; a generation swapped in meanwhile stops it.
    public static func replay(from offsets: [Int32: Int64]) -> ProjectionRun {
        ProjectionRun(.replay, forwardsDeadLetters: true, followsGenerations: false, startOffsets: offsets)
    }

    /// Reads its partitions directly rather than as a group member (all but a live run).
    var readsDirectly: Bool { purpose != .live }
}
