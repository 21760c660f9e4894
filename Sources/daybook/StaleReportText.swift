import DaybookCore
import DaybookSupport
import Foundation

/// A freshness report for people (a table) and for programs (one JSON object): what
/// `daybook stale` and the demo print.
enum StaleReportText {
    /// `user/source, …`, for people.
    static func names(_ pairs: [SyncKey]) -> String {
        pairs.map { "\(TerminalText.escaped($0.user))/\(TerminalText.escaped($0.source))" }.joined(separator: ", ")
    }

    static func table(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey], all: [SourceSync]?,
                      into out: inout [String]) {
        let canaries = report.stale.filter(\.isCanary).count
        let stale = report.sources.map(\.stale).reduce(0, +) // counted also when --summary keeps no pair
        out.append("stale as of \(report.now): \(stale) pair\(stale == 1 ? "" : "s") silent past their threshold (and \(canaries) canar\(canaries == 1 ? "y" : "ies"))")
        if !report.stale.isEmpty {
            var rows = [["SOURCE", "USER", "SILENT FOR", "LAST SEEN", "THRESHOLD", ""]]
            for p in report.stale {
                rows.append([TerminalText.cell(p.source), TerminalText.cell(p.user),
                             p.silence.map { describe($0) } ?? "never seen", p.lastSeen.map { "\($0)" } ?? "-",
                             describe(p.threshold), p.isCanary ? "canary" : ""])
            }
            columns(rows, into: &out)
        }
        out.append("")
        out.append("by source (canaries not counted):")
        var rows = [["SOURCE", "USERS", "STALE", "SHARE", "PAGE AT", ""]]
        for s in report.sources {
            rows.append([TerminalText.cell(s.source), "\(s.users)", "\(s.stale)", percent(s.fraction), percent(s.pageFraction),
                         s.pages ? "PAGE" : "ok"])
        }
        columns(rows, into: &out)
        if let all {
            out.append("")
            out.append("every pair:")
            var rows = [["SOURCE", "USER", "LAST SEEN", "LAST CHECK-IN", "LAST SAMPLE DELIVERED", "NEWEST SAMPLE END", "STALE"]]
            let stale = Set(report.stale.map { SyncKey(user: $0.user, source: $0.source) })
            for p in all.sorted(by: { ($0.source, $0.user) < ($1.source, $1.user) }) {
                rows.append([TerminalText.cell(p.source), TerminalText.cell(p.user), p.lastSeen.map { "\($0)" } ?? "-",
                             p.lastCheckIn.map { "\($0)" } ?? "-", p.lastSampleDelivered.map { "\($0)" } ?? "-",
                             p.newestSampleEnd.map { "\($0)" } ?? "-",
                             stale.contains(SyncKey(user: p.user, source: p.source)) ? "yes" : "no"])
            }
            columns(rows, into: &out)
        }
        out.append("")
        if policy.canaries.isEmpty {
            out.append("canaries: none configured")
        } else if unreported.isEmpty {
            out.append("canaries: all \(policy.canaries.count) reported stale: the detector fires")
        } else {
            out.append("canaries: \(unreported.count) of \(policy.canaries.count) NOT reported stale: the detector is broken")
        }
    }

    static func json(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey], all: [SourceSync]?) -> String {
        func time(_ i: Instant?) -> String { i.map { "\"\($0)\"" } ?? "null" }
        func seconds(_ d: Duration?) -> String { d.map { JSONWriter.number($0.inSeconds) } ?? "null" }
        let stale = report.stale.map { p in
            "{\"user\":\(JSONWriter.quoted(p.user)),\"source\":\(JSONWriter.quoted(p.source)),\"last_seen\":\(time(p.lastSeen)),\"silent_seconds\":\(seconds(p.silence)),\"threshold_seconds\":\(seconds(p.threshold)),\"canary\":\(p.isCanary)}"
        }
        let sources = report.sources.map { s in
            "{\"source\":\(JSONWriter.quoted(s.source)),\"users\":\(s.users),\"stale\":\(s.stale),\"fraction\":\(JSONWriter.number(s.fraction)),\"page_fraction\":\(JSONWriter.number(s.pageFraction)),\"pages\":\(s.pages)}"
        }
        let reported = Set(unreported)
        let canaries = policy.canaries.map { c in
            "{\"user\":\(JSONWriter.quoted(c.user)),\"source\":\(JSONWriter.quoted(c.source)),\"reported\":\(!reported.contains(c))}"
        }
        var s = "{\"now\":\"\(report.now)\",\"pages\":\(report.pages),\"detector_ok\":\(unreported.isEmpty),\"stale\":[\(stale.joined(separator: ","))],\"sources\":[\(sources.joined(separator: ","))],\"canaries\":[\(canaries.joined(separator: ","))]"
        if let all {
            let pairs = all.sorted(by: { ($0.source, $0.user) < ($1.source, $1.user) }).map { p in
                let metrics = p.metrics.sorted().map { "\"\($0.rawValue)\"" }.joined(separator: ",")
                return "{\"user\":\(JSONWriter.quoted(p.user)),\"source\":\(JSONWriter.quoted(p.source)),\"last_seen\":\(time(p.lastSeen)),\"last_check_in\":\(time(p.lastCheckIn)),\"last_sample_delivered\":\(time(p.lastSampleDelivered)),\"newest_sample_end\":\(time(p.newestSampleEnd)),\"zone\":\(p.zone.map(JSONWriter.quoted) ?? "null"),\"metrics\":[\(metrics)]}"
            }
            s += ",\"pairs\":[\(pairs.joined(separator: ","))]"
        }
        return s + "}"
    }

    static func describe(_ d: Duration) -> String {
        let s = d.components.seconds
        return s < 0 ? "-" + DurationText.describe(seconds: -s) : DurationText.describe(seconds: s)
    }

    static func percent(_ f: Double) -> String { String(format: "%.1f%%", f * 100) }

    /// Left-aligned columns, two spaces apart.
    static func columns(_ rows: [[String]], into out: inout [String]) {
        guard let first = rows.first else { return }
        var widths = Array(repeating: 0, count: first.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        for row in rows {
            let cells = row.enumerated().map { i, cell in cell + String(repeating: " ", count: widths[i] - cell.count) }
            var line = "  " + cells.joined(separator: "  ")
            while line.hasSuffix(" ") { line.removeLast() }
            out.append(line)
        }
    }
}
