import DaybookCore
import DaybookLog
import DaybookStore
import Foundation

/// `verify` and `diff`: a temporary projection of the log built up to the live shards'
/// offsets (`ShadowBuild`), compared with the live shards row by row.
public struct ProjectionComparison {
    /// What counts as a difference.
    public enum Scope: Sendable {
        /// A row's value or its per-source shares, and every (user, source) sync state
        /// (`verify`: the projection is a pure function of the log).
        case everything
        /// A row's value only; shares that move under the same value are no difference
        /// (`diff`: what another priority would change).
        case values
    }

    private let build: ShadowBuild

    public init(request: RebuildRequest, access: LogAccess, logger: Logger) {
        build = ShadowBuild(request: request, access: access, logger: logger)
    }

    /// Builds and compares; `row` hears each differing (user, metric, day) and `sync`
    /// (with `.everything`) each differing sync state, with its partition, as they are
    /// found (nothing is collected: memory stays bounded whatever the number).
    /// - Throws: as `ShadowBuild.run`, and whatever `row` or `sync` throw.
    public func run(_ scope: Scope, shouldStop: @escaping () -> Bool, progress: (ProjectorProgress) -> Void = { _ in },
                    row: (Int32, RowDifference) throws -> Void,
                    sync: (Int32, SyncDifference) throws -> Void = { _, _ in }) throws -> ShadowBuild.Outcome {
        let differ: (DayTotal, DayTotal) -> Bool = scope == .everything ? { $0 != $1 } : { !$0.hasSameValue(as: $1) }
        return try build.run(shouldStop: shouldStop, progress: progress) { partition, live, rebuilt in
            let rows = try compareRows(try live.rows(), try rebuilt.rows(), differ: differ) { try row(partition, $0) }
            if scope == .everything {
                _ = try compareSyncState(try live.syncState(), try rebuilt.syncState()) { try sync(partition, $0) }
            }
            return rows
        }
    }

    /// The source priority the live projection in `directory` was built under: the
    /// manifest's (a rebuild's), else the one its shards record, which must then rank like
    /// `configured`.
    /// - Throws: `LivePriorityMismatch` when the shards record another ranking; a
    ///   `ShardError` or `DatabaseError` from reading them.
    public static func livePriority(directory: String, topic: String, configured: SourcePriority) throws -> SourcePriority {
        let layout = try DataLayout.read(directory)
        let recorded = Set(try ShardReader(directory: directory).offsets(topic: topic).values.compactMap(\.fingerprint)).sorted()
        if let p = layout.priority { return p }
        if let other = recorded.first(where: { !SourcePriority.sameRanking($0, configured.fingerprint) }) {
            throw LivePriorityMismatch(directory: directory, recorded: other, configured: configured.fingerprint)
        }
        return configured
    }
}

/// Shards without a manifest were built under another source priority than the one given.
public struct LivePriorityMismatch: Error, CustomStringConvertible {
    public var directory: String
    /// The fingerprint the shards record, and the one given.
    public var recorded: String
    public var configured: String
    public var description: String {
        "the shards in \(directory) were built under source priority \(recorded), not \(configured): compare under the priority they were built with"
    }
}

extension DayTotal {
    /// Whether two rows hold the same value, whatever their per-source shares.
    public func hasSameValue(as other: DayTotal) -> Bool { Self.value(summary) == Self.value(other.summary) }

    private static func value(_ s: DaySummary) -> DaySummary {
        if case .cumulative(let v, _) = s { return .cumulative(value: v, sources: []) }
        return s
    }
}

extension RowDifference {
    /// rebuilt − live, for two cumulative rows (a missing row counts as no value, not 0).
    public var change: Double? {
        guard case .cumulative(let a, _)? = live?.summary, case .cumulative(let b, _)? = rebuilt?.summary else { return nil }
        return b - a
    }
}
