/// Observations counted into fixed buckets, as a Prometheus histogram exposes them.
///
/// ```swift
/// var latency = Histogram(upperBounds: Histogram.secondsFromMillisecondToHalfMinute)
/// latency.observe(0.042)
/// metrics.histogram("daybook_batch_duration_seconds", help: "…", latency)
/// ```
///
/// Each bucket counts the observations at or below its upper bound and above the one
/// before; `cumulativeCounts` gives Prometheus's `le` counts. A NaN observation counts only
/// in `+Inf` (and makes `sum` NaN), as Prometheus's own clients do. Observing is O(log
/// buckets); memory is one count per bucket.
public struct Histogram: Sendable, Equatable {
    /// Finite upper bounds, strictly increasing; `+Inf` is implied.
    public let upperBounds: [Double]
    /// Per bucket (not cumulative), and a last one for observations above every bound.
    public private(set) var bucketCounts: [UInt64]
    public private(set) var sum: Double = 0
    public private(set) var count: UInt64 = 0

    /// 1 ms to 30 s, about 2.5× apart: the duration of anything from one SQLite commit to a
    /// stalled batch.
    public static let secondsFromMillisecondToHalfMinute: [Double] =
        [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// A histogram with these upper bounds (a trailing `+Inf` may be given or left out).
    public init(upperBounds: [Double]) {
        var bounds = upperBounds
        if bounds.last == .infinity { bounds.removeLast() }
        precondition(bounds.allSatisfy(\.isFinite), "histogram bounds must be finite numbers (+Inf is implied), got \(upperBounds)")
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must increase strictly, got \(upperBounds)")
        self.upperBounds = bounds
        bucketCounts = Array(repeating: 0, count: bounds.count + 1)
    }

    public mutating func observe(_ value: Double) {
        count += 1
        sum += value
        // The first bound at or above the value (binary search); NaN goes past every bound.
        var lo = 0, hi = upperBounds.count
        if !value.isNaN {
            while lo < hi {
                let mid = (lo + hi) / 2
                if upperBounds[mid] >= value { hi = mid } else { lo = mid + 1 }
            }
        } else {
            lo = upperBounds.count
        }
        bucketCounts[lo] += 1
    }

    /// For each upper bound, the observations at or below it.
    public var cumulativeCounts: [UInt64] {
        var running: UInt64 = 0
        return upperBounds.indices.map { i in
            running += bucketCounts[i]
            return running
        }
    }
}
