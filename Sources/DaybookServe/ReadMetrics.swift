import DaybookMetrics
import Synchronization

/// The read service's counters: requests by route and status, their latency by route,
/// and each shard's lag as last seen; rendered as Prometheus text for `/metrics`.
/// Thread-safe (one lock, held for a few additions).
final class ReadMetrics: Sendable {
    private struct State {
        var requests: [Key: UInt64] = [:]
        var latency: [String: Histogram] = [:]
    }
    private struct Key: Hashable {
        var route: String
        var code: Int
    }
    private let state = Mutex(State())
    private let started = ContinuousClock.now

    /// 0.5 ms to 2.5 s: a read of a week's rows takes about a millisecond; seconds mean trouble.
    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    func record(route: String, code: Int, seconds: Double) {
        state.withLock { state in
            state.requests[Key(route: route, code: code), default: 0] += 1
            state.latency[route, default: Histogram(upperBounds: Self.bounds)].observe(seconds)
        }
    }

    /// The exposition text, with `lags` (partition → lag, nil when the log end is not known)
    /// and `offsets` (partition → the shard's next offset) as gauges.
    /// `more` adds series of its own (the sync endpoint's).
    func text(offsets: [Int32: Int64], lags: [Int32: Int64], more: (inout MetricsText) -> Void = { _ in }) -> String {
        let (requests, latency) = state.withLock { ($0.requests, $0.latency) }
        var m = MetricsText()
        m.gauge("daybook_serve_up", help: "1 while the read service answers.", value: 1)
        for (key, count) in requests.sorted(by: { ($0.key.route, $0.key.code) < ($1.key.route, $1.key.code) }) {
            m.counter("daybook_serve_requests_total", help: "Requests answered, by route and HTTP status, since the process started.", value: count,
                      labels: ["route": key.route, "code": String(key.code)])
        }
        for (route, histogram) in latency.sorted(by: { $0.key < $1.key }) {
            m.histogram("daybook_serve_request_duration_seconds", help: "Time to answer a request (routing, access, reading the shard, JSON), by route.", histogram,
                        labels: ["route": route])
        }
        for (partition, offset) in offsets.sorted(by: { $0.key < $1.key }) {
            m.gauge("daybook_serve_shard_next_offset", help: "The next offset of each shard this member reads.", value: offset, labels: ["partition": String(partition)])
        }
        for (partition, lag) in lags.sorted(by: { $0.key < $1.key }) {
            m.gauge("daybook_serve_shard_lag_messages", help: "Messages in the log not yet in the shard, per partition whose log end is known.", value: lag,
                    labels: ["partition": String(partition)])
        }
        more(&m)
        m.gauge("daybook_serve_uptime_seconds", help: "Seconds since the read service started.", value: (ContinuousClock.now - started).seconds)
        return m.text
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
