import DaybookMetrics
import Synchronization

/// The sync endpoint's counters: batches and events by outcome, the time from a batch's
/// arrival to its 202, and (read at scrape time) the producer's queue depth; rendered into
/// the read service's `/metrics`. Thread-safe (one lock, held for a few additions).
final class SyncMetrics: Sendable {
    /// What became of a batch; the `outcome` label.
    enum Outcome: String, CaseIterable, Sendable {
        /// 202: every event delivered.
        case accepted
        /// 400: not a valid batch; nothing published.
        case rejected
        /// 413: larger than the limit (inflated).
        case tooLarge = "too_large"
        /// 415: another content type or coding.
        case unsupported
        /// 429: the caller's token bucket was empty.
        case rateLimited = "rate_limited"
        /// 429: the producer's queue had no room.
        case queueFull = "queue_full"
        /// 503: not delivered in time; nothing acknowledged.
        case undelivered
    }

    private struct State {
        var batches: [Outcome: UInt64] = [:]
        var events: [Outcome: UInt64] = [:]
        var latency = Histogram(upperBounds: SyncMetrics.bounds)
    }
    private let state = Mutex(State())

    /// 1 ms to 30 s: a batch on loopback is acknowledged in milliseconds; the delivery
    /// timeout (10 s by default) bounds the rest.
    static let bounds: [Double] = Histogram.secondsFromMillisecondToHalfMinute

    /// A batch's outcome; `events` when they are known (0 for a body never decoded), and the
    /// seconds it waited for a 202.
    func record(_ outcome: Outcome, events: Int, ackSeconds: Double? = nil) {
        state.withLock { state in
            state.batches[outcome, default: 0] += 1
            state.events[outcome, default: 0] += UInt64(max(0, events))
            if let ackSeconds { state.latency.observe(ackSeconds) }
        }
    }

    func render(into m: inout MetricsText, queueDepth: Int, queueCapacity: Int) {
        let (batches, events, latency) = state.withLock { ($0.batches, $0.events, $0.latency) }
        // Every outcome, 0 included: a rate of a series that appears late is lost to Prometheus.
        for outcome in Outcome.allCases {
            m.counter("daybook_sync_batches_total", help: "Sync batches answered, by outcome, since the process started.", value: batches[outcome] ?? 0,
                      labels: ["outcome": outcome.rawValue])
        }
        for outcome in Outcome.allCases {
            m.counter("daybook_sync_events_total", help: "Events in sync batches answered, by the batch's outcome (0 for bodies never decoded).", value: events[outcome] ?? 0,
                      labels: ["outcome": outcome.rawValue])
        }
        m.histogram("daybook_sync_ack_duration_seconds", help: "Time from a sync batch's arrival to its 202, once every event was delivered.", latency)
        m.gauge("daybook_sync_producer_queue_messages", help: "Events queued to the cluster and not yet reported delivered or failed.", value: queueDepth)
        m.gauge("daybook_sync_producer_queue_capacity_messages", help: "The most events the producer queues; a batch that does not fit is answered 429.", value: queueCapacity)
    }
}
