import DaybookCore
import DaybookMetrics
import DaybookStore
import Foundation

/// `daybook stale`: which (user, source) pairs have gone silent, and does it page.
enum StaleCommand: Subcommand {
    static let name = "stale"
    static let abstract = "List (user, source) pairs silent past their source's threshold; page on a share of a source's users."
    static let usage = "stale --data DIR [--config FILE] [--now T] [--page-fraction F | SOURCE=F,…] [--format table|json] [--all] [--metrics-file PATH]"
    static let options = [
        OptionSpec(name: "--data", value: "DIR", help: "Directory of the shards (as given to project)."),
        OptionSpec(name: "--config", value: "FILE", help: "Thresholds, page fractions and canaries: the freshness section (config/daybook.json)."),
        OptionSpec(name: "--now", value: "T", help: "Judge silence as of this RFC 3339 time (default: the clock)."),
        OptionSpec(name: "--page-fraction", value: "F", help: "Page when this share of a source's users is stale: one number for every source, or SOURCE=F,… (overrides the config)."),
        OptionSpec(name: "--format", value: "F", help: "table (default, for people) or json (one object)."),
        OptionSpec(name: "--all", value: nil, help: "Also list every pair, stale or not, with its sync state."),
        OptionSpec(name: "--metrics-file", value: "PATH", help: "Also write the figures in the Prometheus text format to PATH (atomically; for node_exporter's textfile collector)."),
    ]
    static let discussion = """
    Silence is judged on check-ins, not on samples: a pair's last sign of life is its latest
    source-checked-in ('at') or the Kafka timestamp of its latest sample-added, whichever
    is later. "No new samples" (a user who rested, but whose phone checked in) is not
    silence; "no check-in" (a phone in a drawer) is. A pair is stale when it has been silent
    longer than its source's threshold (freshness.sources.S.threshold, else
    freshness.default.threshold; "never" for sources that sync by hand).

    Paging is on a share, not on individuals: a source pages when at least its page
    fraction of its users are stale (and at least one is). Canaries are never counted.

    CANARIES (freshness.canaries) are (user, source) pairs that never check in — give each
    one check-in when you set it up, so that each run also tests the threshold arithmetic.
    Every canary must come out stale; one that does not means the detector is broken (a
    threshold in the wrong unit, a missing check-in taken for a fresh one) and stale exits 3
    with a loud message, whatever else it found. Without canaries it warns that nothing
    proves it fires.

    EXIT CODES: 0 nothing pages (stale pairs may still be listed); 1 some source pages; 3
    the detector is broken: a canary was not reported stale; 64 usage; 65 a file in DIR is
    not a shard, or a damaged manifest; 66 DIR, or the directory of --metrics-file,
    missing; 74 storage failure (also writing --metrics-file); 78 bad configuration.

    --metrics-file PATH writes, per source, daybook_stale_pairs, daybook_source_users,
    daybook_stale_fraction, daybook_stale_page_fraction, daybook_stale_pages and
    daybook_stale_threshold_seconds, and daybook_canaries, daybook_canaries_unreported,
    daybook_canary_check_ok and daybook_stale_evaluation_timestamp_seconds — also when the
    exit is 1 or 3, so an alert can fire on daybook_canary_check_ok == 0. Run stale from
    cron and point PATH into node_exporter's textfile directory (a *.prom name).

    EXAMPLES:
      daybook stale --data /var/lib/daybook --config /etc/daybook/daybook.json
      daybook stale --data /var/lib/daybook --now 2026-11-30T09:00:00Z --page-fraction watch=0.1,phone=0.25 --format json
    """

    /// Exit code when a canary was not reported: the detector itself is broken.
    static let detectorBroken: Int32 = 3

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("stale takes no positional arguments") }
        guard let data = arguments.value("--data") else { throw CLIError.usage("stale needs --data DIR") }
        let format = arguments.value("--format") ?? "table"
        guard ["table", "json"].contains(format) else { throw CLIError.usage("--format '\(TerminalText.escaped(format))' is not one of table, json") }
        var now = Instant(nanoseconds: Int64((Date().timeIntervalSince1970 * 1e9).rounded(.down)))
        if let text = arguments.value("--now") {
            guard let t = try? Instant(rfc3339: text) else {
                throw CLIError.usage("--now '\(TerminalText.escaped(text))' is not an RFC 3339 time (e.g. 2026-11-30T09:00:00Z)")
            }
            now = t
        }
        let config = try DaybookConfiguration.load(arguments.value("--config"), resolvingSecrets: false)
        var policy = config.freshness
        if let text = arguments.value("--page-fraction") { try applyPageFractions(text, to: &policy) }
        guard FileManager.default.fileExists(atPath: data) else { throw CLIError(code: ExitCode.noInput, message: "\(data): no such data directory") }
        if let path = arguments.value("--metrics-file") {
            do { try MetricsFile.checkDestination(path) } catch { throw CLIError.metricsFile(error) }
        }

        let detector = StaleDetector(policy: policy)
        var evaluation = StaleDetector.Evaluation(detector: detector, now: now)
        var all: [SourceSync] = []
        do {
            try ShardReader(directory: data).forEachSyncPair { pair in
                evaluation.add(pair)
                if arguments.has("--all") { all.append(pair) }
            }
        } catch {
            throw CLIError(error) // 65 not a shard / damaged manifest, 66 not a directory, 74 storage
        }
        let report = evaluation.finish()
        let unreported = CanaryCheck.unreported(policy.canaries, in: report)

        var out = OutputBuffer()
        if format == "json" {
            out.line(json(report, policy: policy, unreported: unreported, all: arguments.has("--all") ? all : nil))
        } else {
            var lines: [String] = []
            table(report, policy: policy, unreported: unreported, all: arguments.has("--all") ? all : nil, into: &lines)
            for line in lines { out.line(line) }
        }
        out.flush()
        if let path = arguments.value("--metrics-file") {
            try StaleMetrics.write(report, policy: policy, unreported: unreported, to: path)
        }
        if policy.canaries.isEmpty {
            printError("stale: no canaries configured (freshness.canaries): nothing proves this detector fires. Add a (user, source) pair that never checks in.")
        }
        if !unreported.isEmpty {
            let names = unreported.map { "\(TerminalText.escaped($0.user))/\(TerminalText.escaped($0.source))" }.joined(separator: ", ")
            printError("""
            stale: DETECTOR BROKEN: \(unreported.count) of \(policy.canaries.count) canaries not reported stale: \(names).
            stale: A canary never checks in, so it must always be stale. Check the thresholds of these sources in freshness (a unit mistake such as "36d" for "36h"?) and that nobody publishes check-ins for the canary. Until then, silence of real users may go unreported too.
            """)
            return detectorBroken
        }
        return report.pages ? 1 : ExitCode.ok
    }

    /// `0.2` for every source, or `watch=0.1,phone=0.25`.
    static func applyPageFractions(_ text: String, to policy: inout FreshnessPolicy) throws {
        func fraction(_ s: Substring) throws -> Double {
            guard let f = Double(s), f >= 0, f <= 1 else {
                throw CLIError.usage("--page-fraction: '\(TerminalText.escaped(String(s)))' is not a number from 0 to 1 (the share of a source's users that must be stale to page)")
            }
            return f
        }
        if !text.contains("=") {
            let f = try fraction(Substring(text))
            policy.defaultRule.pageFraction = f
            for name in policy.sources.keys { policy.sources[name]?.pageFraction = f }
            return
        }
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pieces.count == 2, !pieces[0].isEmpty else {
                throw CLIError.usage("--page-fraction: '\(TerminalText.escaped(String(part)))' is not SOURCE=F (e.g. watch=0.1)")
            }
            let source = String(pieces[0])
            var rule = policy.rule(for: source)
            rule.pageFraction = try fraction(pieces[1])
            policy.sources[source] = rule
        }
    }

    static func table(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey], all: [SourceSync]?,
                      into out: inout [String]) {
        let canaries = report.stale.filter(\.isCanary).count
        out.append("stale as of \(report.now): \(report.stale.count - canaries) pair\(report.stale.count - canaries == 1 ? "" : "s") silent past their threshold (and \(canaries) canar\(canaries == 1 ? "y" : "ies"))")
        if !report.stale.isEmpty {
            var rows = [["SOURCE", "USER", "SILENT FOR", "LAST SEEN", "THRESHOLD", ""]]
            for p in report.stale {
                rows.append([TerminalText.escaped(p.source), TerminalText.escaped(p.user),
                             p.silence.map { describe($0) } ?? "never seen", p.lastSeen.map { "\($0)" } ?? "-",
                             describe(p.threshold), p.isCanary ? "canary" : ""])
            }
            columns(rows, into: &out)
        }
        out.append("")
        out.append("by source (canaries not counted):")
        var rows = [["SOURCE", "USERS", "STALE", "SHARE", "PAGE AT", ""]]
        for s in report.sources {
            rows.append([TerminalText.escaped(s.source), "\(s.users)", "\(s.stale)", percent(s.fraction), percent(s.pageFraction),
                         s.pages ? "PAGE" : "ok"])
        }
        columns(rows, into: &out)
        if let all {
            out.append("")
            out.append("every pair:")
            var rows = [["SOURCE", "USER", "LAST SEEN", "LAST CHECK-IN", "LAST SAMPLE DELIVERED", "NEWEST SAMPLE END", "STALE"]]
            let stale = Set(report.stale.map { SyncKey(user: $0.user, source: $0.source) })
            for p in all.sorted(by: { ($0.source, $0.user) < ($1.source, $1.user) }) {
                rows.append([TerminalText.escaped(p.source), TerminalText.escaped(p.user), p.lastSeen.map { "\($0)" } ?? "-",
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
        func seconds(_ d: Duration?) -> String { d.map { "\($0.components.seconds)" } ?? "null" }
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

/// `stale --metrics-file`: the report in the Prometheus text format, one series per source.
enum StaleMetrics {
    static func text(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey]) -> MetricsText {
        var m = MetricsText()
        for s in report.sources {
            let labels: MetricLabels = ["source": s.source]
            m.gauge("daybook_stale_pairs", help: "(user, source) pairs silent past the source's threshold (canaries excluded).", value: s.stale, labels: labels)
            m.gauge("daybook_source_users", help: "Users with a check-in or a delivered sample from the source (canaries excluded).", value: s.users, labels: labels)
            m.gauge("daybook_stale_fraction", help: "Stale users of the source over all its users (canaries excluded).", value: s.fraction, labels: labels)
            m.gauge("daybook_stale_page_fraction", help: "The share of the source's users that must be stale to page.", value: s.pageFraction, labels: labels)
            m.gauge("daybook_stale_pages", help: "1 if the source pages (its stale share reached its page fraction), else 0.", value: s.pages ? 1 : 0, labels: labels)
            if let threshold = policy.rule(for: s.source).threshold {
                m.gauge("daybook_stale_threshold_seconds", help: "How long a pair of the source may stay silent.", value: threshold.components.seconds, labels: labels)
            }
        }
        m.gauge("daybook_canaries", help: "Canaries configured (pairs that never check in).", value: policy.canaries.count)
        m.gauge("daybook_canaries_unreported", help: "Canaries the detector failed to report as stale.", value: unreported.count)
        m.gauge("daybook_canary_check_ok", help: "1 if every canary was reported stale (the detector fires), else 0.", value: unreported.isEmpty ? 1 : 0)
        m.gauge("daybook_stale_evaluation_timestamp_seconds", help: "The time silence was judged at (--now, else the clock).",
                value: Double(report.now.nanoseconds) / 1e9)
        return m
    }

    static func write(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey], to path: String) throws {
        do {
            try text(report, policy: policy, unreported: unreported).write(to: path)
        } catch {
            throw CLIError.metricsFile(error)
        }
    }
}
