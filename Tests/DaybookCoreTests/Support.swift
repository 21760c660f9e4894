@testable import DaybookCore
import Testing

/// Builds a sample-added event from RFC 3339 strings (fixtures only: traps on a typo).
func added(_ uuid: String, _ source: String, _ start: String, _ end: String, _ value: Double,
           metric: Metric = .steps, zone: String = "Europe/Berlin", user: String = "ana", version: Int64 = 0) -> Event {
    .sampleAdded(Sample(user: user, uuid: uuid, metric: metric, source: source,
                        start: try! Instant(rfc3339: start), end: try! Instant(rfc3339: end),
                        value: value, zone: zone, version: version))
}

func deleted(_ uuid: String, user: String = "ana") -> Event { .sampleDeleted(user: user, uuid: uuid) }

/// Rolls `events` up in batch and incrementally (one event at a time, recomputing the dirty
/// days), requires both to agree exactly, and returns the rows keyed "user metric day".
func rollup(_ events: [Event], priority: SourcePriority = .builtIn,
            sourceLocation: SourceLocation = #_sourceLocation) -> [String: DayTotal] {
    let batch = Ledger(priority: priority)
    for (i, e) in events.enumerated() { batch.apply(e, at: Int64(i)) }
    var rows: [String: DayTotal] = [:]
    for t in batch.allTotals() { rows["\(t.key.user) \(t.key.metric.rawValue) \(t.key.day)"] = t }

    let incremental = Ledger(priority: priority)
    var live: [DayKey: DayTotal] = [:]
    for (i, e) in events.enumerated() {
        for (key, total) in incremental.recompute(incremental.apply(e, at: Int64(i))) { live[key] = total }
    }
    #expect(live.values.sorted { $0.key < $1.key } == batch.allTotals(), "incremental differs from batch", sourceLocation: sourceLocation)
    return rows
}

/// The cumulative value of one row, or nil when the day has no row.
func value(_ rows: [String: DayTotal], _ day: String, metric: Metric = .steps, user: String = "ana") -> Double? {
    guard let row = rows["\(user) \(metric.rawValue) \(day)"] else { return nil }
    if case .cumulative(let v, _) = row.summary { return (v * 1e6).rounded() / 1e6 }
    return nil
}

/// The naive sum and the max of the sample values in a fixture: what a wrong rollup would print.
func naiveAndMax(_ events: [Event]) -> (sum: Double, max: Double) {
    var live: [String: Double] = [:]
    for e in events {
        switch e {
        case .sampleAdded(let s): live[s.uuid] = s.value
        case .sampleDeleted(_, let uuid): live[uuid] = nil
        case .sourceCheckedIn: break
        }
    }
    return (live.values.reduce(0, +), live.values.max() ?? 0)
}

/// Requires a fixture's correct total to differ from both its naive sum and its max.
func expectDiscriminating(_ events: [Event], total: Double, sourceLocation: SourceLocation = #_sourceLocation) {
    let (sum, max) = naiveAndMax(events)
    #expect(sum != total && max != total && sum != max, "fixture does not tell right from naive: sum \(sum), max \(max), total \(total)", sourceLocation: sourceLocation)
}
