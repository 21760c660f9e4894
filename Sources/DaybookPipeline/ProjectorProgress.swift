import Foundation

/// A moment of a projector's progress, for live lines and logs.
public struct ProjectorProgress: Sendable {
    public var applied: Int
    public var deadLetters: Int
    public var eventsPerSecond: Double
    /// Per assigned partition: (partition, next offset to apply — below the shard's while
    /// re-reading — end of the log if known).
    public var partitions: [(partition: Int32, next: Int64, end: Int64?)]
    /// Set while a group member has no partitions yet: what it is waiting for.
    public var waiting: String?
    /// Per warm standby partition (`ProjectorOptions.standby`): (partition, next offset, end of the log if known).
    public var standbys: [(partition: Int32, next: Int64, end: Int64?)] = []
    /// Everything counted since the projector started (for a metrics file).
    public var statistics = ProjectorStatistics()

    public var lag: Int64 { partitions.reduce(0) { $0 + max(0, ($1.end ?? $1.next) - $1.next) } }

    /// Seconds until caught up at the current rate, when it can be told.
    public var eta: Double? { eventsPerSecond > 0 ? Double(lag) / eventsPerSecond : nil }

    public var line: String { line("project") }

    /// The progress line of `command` (project, rebuild, verify…).
    public func line(_ command: String) -> String {
        if let waiting { return "\(command): \(applied) applied; \(waiting)" }
        let lags = partitions.map { "p\($0.partition):\(max(0, ($0.end ?? $0.next) - $0.next))" }.joined(separator: " ")
        let etaText = eta.map { String(format: "%.0fs", $0) } ?? "?"
        let standbyText = standbys.isEmpty ? "" : "; standby lag " + standbys.map { "p\($0.partition):\(max(0, ($0.end ?? $0.next) - $0.next))" }.joined(separator: " ")
        return "\(command): \(applied) applied, \(String(format: "%.0f", eventsPerSecond)) events/s, lag \(lag) [\(lags)], eta \(etaText), dead letters \(deadLetters)" + standbyText
    }
}
