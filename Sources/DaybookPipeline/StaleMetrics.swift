import DaybookCore
import DaybookMetrics

/// A stale report in the Prometheus text format (`daybook stale --metrics-file`), one series
/// set per configured source and one for the rest.
public enum StaleMetrics {
    /// Sources the configuration does not list share one series set, `source="other"`: a
    /// producer must not decide how many series the scrape has (each source adds six).
    public static let otherSources = "other"

    public static func text(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey]) -> MetricsText {
        var m = MetricsText()
        typealias Row = (source: String, users: Int, stale: Int, fraction: Double, pageFraction: Double, pages: Bool, threshold: Duration?)
        var rows: [Row] = report.sources.filter { policy.sources[$0.source] != nil }.map {
            ($0.source, $0.users, $0.stale, $0.fraction, $0.pageFraction, $0.pages, policy.rule(for: $0.source).threshold)
        }
        if policy.sources[otherSources] == nil {
            // Each unlisted source pages on its own share; "other" pages if any of them does.
            let others = report.sources.filter { policy.sources[$0.source] == nil }
            let users = others.map(\.users).reduce(0, +), stale = others.map(\.stale).reduce(0, +)
            rows.append((otherSources, users, stale, users == 0 ? 0 : Double(stale) / Double(users), policy.defaultRule.pageFraction,
                         others.contains(where: \.pages), nil))
        }
        for s in rows {
            let labels: MetricLabels = ["source": s.source]
            m.gauge("daybook_stale_pairs", help: "(user, source) pairs silent past the source's threshold (canaries excluded).", value: s.stale, labels: labels)
            m.gauge("daybook_source_users", help: "Users with a check-in or a delivered sample from the source (canaries excluded).", value: s.users, labels: labels)
            m.gauge("daybook_stale_fraction", help: "Stale users of the source over all its users (canaries excluded).", value: s.fraction, labels: labels)
            m.gauge("daybook_stale_page_fraction", help: "The share of the source's users that must be stale to page.", value: s.pageFraction, labels: labels)
            m.gauge("daybook_stale_pages", help: "1 if the source pages (its stale share reached its page fraction), else 0.", value: s.pages ? 1 : 0, labels: labels)
            if let threshold = s.threshold {
                m.gauge("daybook_stale_threshold_seconds", help: "How long a pair of the source may stay silent.", value: threshold.components.seconds, labels: labels)
            }
        }
        m.gauge("daybook_canaries", help: "Canaries configured (pairs that never check in).", value: policy.canaries.count)
        m.gauge("daybook_canaries_unreported", help: "Canaries the detector failed to report as stale.", value: unreported.count)
        m.gauge("daybook_canary_check_ok", help: "1 if every canary was reported stale (the detector fires), else 0.", value: unreported.isEmpty ? 1 : 0)
        m.gauge("daybook_stale_evaluation_timestamp_seconds", help: "The time silence was judged at (the clock, or the time the report was asked for).",
                value: Double(report.now.nanoseconds) / 1e9)
        return m
    }
}
