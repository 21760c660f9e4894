/// A token bucket: one caller's allowance of requests, `burst` at once and `perSecond`
/// on average. Pure: the time is given to each call (seconds on any monotonic clock), so
/// every rule has a test without waiting.
///
///     var bucket = TokenBucket(perSecond: 2, burst: 3, now: 0)
///     bucket.take(now: 0)     // .allowed, three times
///     bucket.take(now: 0)     // .refused(retryAfterSeconds: 1): the next token comes at 0.5 s
///
/// O(1) per call.
public struct TokenBucket: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        case allowed
        /// Empty: the whole seconds to wait (at least 1, as `Retry-After` says them) until a
        /// token is back.
        case refused(retryAfterSeconds: Int)
    }

    public let perSecond: Double
    public let burst: Double
    private(set) var tokens: Double
    private(set) var updated: Double

    /// A full bucket at `now`. `perSecond` > 0 and `burst` ≥ 1 (a caller can always send one).
    public init(perSecond: Double, burst: Int, now: Double) {
        self.perSecond = max(perSecond, 1e-9)
        self.burst = Double(max(burst, 1))
        tokens = self.burst
        updated = now
    }

    /// Takes one token if there is one.
    public mutating func take(now: Double) -> Decision {
        // A clock that steps back refills nothing (and takes nothing away).
        if now > updated {
            tokens = min(burst, tokens + (now - updated) * perSecond)
            updated = now
        }
        guard tokens >= 1 else {
            let wait = (1 - tokens) / perSecond
            return .refused(retryAfterSeconds: max(1, Int(wait.rounded(.up))))
        }
        tokens -= 1
        return .allowed
    }

    /// Whether the bucket is full at `now`: one that is can be forgotten (a new one is the same).
    public func isFull(now: Double) -> Bool {
        tokens + max(0, now - updated) * perSecond >= burst
    }
}
