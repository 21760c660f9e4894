/// Why a pipeline bench stopped, by what would fix it. `message` says so in the bench's
/// terms, ending with the tail of the failed child's standard error when there was a child.
public struct BenchError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A tool the bench measures beside Daybook (kcat) is not on PATH.
        case toolMissing(String)
        /// The configuration file for the projector runs cannot be read (`reason`: "no such
        /// file", or "cannot be read: …").
        case unreadableConfiguration(path: String, reason: String)
        /// An embedded broker did not start, or cannot be asked for its watermarks.
        case brokerUnavailable
        /// After `step` the embedded broker's retention had dropped `dropped` events and
        /// kept `kept` of `events`; `suggestedPartitions` would hold them all.
        case retention(step: String, kept: Int, dropped: Int, events: Int, suggestedPartitions: Int)
        /// A child ended badly: `exitCode` when it exited (nil: a signal or the timeout).
        case stepFailed(exitCode: Int32?)
        /// A count did not match, or a child or pipe could not be started: a bug, or a tool
        /// that misbehaved.
        case failed
    }

    public var kind: Kind
    public var message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
