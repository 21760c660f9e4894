import DaybookConfiguration
import DaybookCore
import DaybookMetrics
import DaybookPipeline
import DaybookStore
import Foundation

/// `daybook stale`: which (user, source) pairs have gone silent, and does it page.
enum StaleCommand: Subcommand {
    static let name = "stale"
    static let abstract = "List (user, source) pairs silent past their source's threshold; page on a share of a source's users."
    static let usage = "stale --data DIR [--config FILE] [--now T] [--page-fraction F | SOURCE=F,…] [--format table|json] [--all | --summary] [--metrics-file PATH]"
    static let options = [
        SharedOptions.data(),
        SharedOptions.config("Thresholds, page fractions and canaries: the freshness section (config/daybook.json)."),
        OptionSpec(name: "--now", value: "T", help: "Judge silence as of this RFC 3339 time (default: the clock)."),
        OptionSpec(name: "--page-fraction", value: "F", help: "Page when this share of a source's users is stale: one number for every source, or SOURCE=F,… (overrides the config)."),
        SharedOptions.format("table (default, for people) or json (one object)."),
        OptionSpec(name: "--all", value: nil, help: "Also list every pair, stale or not, with its freshness (when it was last seen, and why)."),
        OptionSpec(name: "--summary", value: nil, help: "Only the per-source summary and the canaries (for cron and --metrics-file: memory and output stay small however many pairs are stale)."),
        OptionSpec(name: "--metrics-file", value: "PATH", help: "Also write the figures in the Prometheus text format to PATH (atomically; for node_exporter's textfile collector)."),
    ]
    static let discussion = """
    Silence is judged on check-ins, not on samples: a pair was last seen at its latest
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
    proves it fires, and names canaries that never checked in at all (they prove only the
    never-seen path). A canary catches a threshold in the wrong unit only while its age
    lies between the right and the wrong threshold (36h vs 36d: from 1.5 to 36 days after
    its check-in): re-provision it (a new user id, one check-in) when it is older than
    the largest wrong threshold you fear.

    Shards without freshness (made before Daybook kept it) or with freshness only from
    an upgrade on are named on stderr: 'daybook rebuild' fills them from the log. A pair a
    producer put in two partitions is read as one.

    --now must not be before the data: a pair that checked in (or delivered a sample) after
    --now would look fresh, canaries too, so that is refused (64), naming the pair. A
    --page-fraction for a source that freshness.sources does not list and no pair has is a
    typo: refused (78) before anything is printed. Tables cut ids longer than 48 characters
    (…); json keeps them whole.

    EXIT CODES: 0 nothing pages (stale pairs may still be listed); 1 some source pages; 3
    the detector is broken: a canary was not reported stale; 64 usage (also --now before a
    check-in in the shards); 65 a file in DIR is not a shard, or a damaged manifest; 66 DIR
    missing or without shards (nothing to judge), or the directory of --metrics-file
    missing; 74 storage failure (also writing --metrics-file); 78 bad configuration (also
    --page-fraction for a source nobody configured).

    --metrics-file PATH writes, per source listed in freshness.sources (all others
    together as source="other", so producers cannot multiply the series), daybook_stale_pairs, daybook_source_users,
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
        let data = try arguments.data(for: "stale")
        let format = try arguments.format(["table", "json"])
        var now = Instant(nanoseconds: Int64((Date().timeIntervalSince1970 * 1e9).rounded(.down)))
        if let text = arguments.value("--now") {
            do {
                now = try Instant(rfc3339: text)
            } catch {
                throw CLIError.usage("--now '\(TerminalText.escaped(text))' \(error.reason)")
            }
        }
        let config = try DaybookConfiguration.load(arguments.value("--config"), resolvingSecrets: false)
        var policy = config.freshness
        var named: [String] = []
        if let text = arguments.value("--page-fraction") { named = try applyPageFractions(text, to: &policy) }
        guard FileManager.default.fileExists(atPath: data) else { throw CLIError(code: ExitCode.noInput, message: "\(data): no such data directory") }
        if let path = arguments.value("--metrics-file") {
            do { try MetricsFile.checkDestination(path) } catch { throw CLIError.metricsFile(error) }
        }

        guard !(arguments.has("--all") && arguments.has("--summary")) else { throw CLIError.usage("--all and --summary ask for opposite things; give one") }

        var all: [SourceSync] = []
        // The latest time a pair was seen after `now`: silence cannot be judged before it.
        var after: SourceSync?
        let judged: FreshnessReading
        do {
            judged = try ShardReader(directory: data).judgeFreshness(policy: policy, now: now, keepPairs: !arguments.has("--summary")) { pair in
                if arguments.has("--all") { all.append(pair) }
                if let seen = pair.lastSeen, seen > now, after.flatMap(\.lastSeen).map({ seen > $0 }) ?? true { after = pair }
            }
        } catch {
            throw CLIError(error) // 65 not a shard / damaged manifest, 66 not a directory, 74 storage
        }
        guard judged.coverage.shards > 0 else {
            throw CLIError(code: ExitCode.noInput, message: "\(data) holds no shards: nothing to judge. Run daybook project --data \(data) first.")
        }
        let (report, unreported, coverage) = (judged.report, judged.unreported, judged.coverage)
        if let pair = after, let seen = pair.lastSeen {
            let what = pair.lastCheckIn == seen ? "checked in" : "delivered a sample"
            let which = "\(TerminalText.cell(pair.user))/\(TerminalText.cell(pair.source)) \(what) at \(seen)"
            if let text = arguments.value("--now") {
                throw CLIError.usage("--now \(TerminalText.escaped(text)) is before the data: \(which), after it, so silence as of --now cannot be judged (every pair seen later would look fresh, canaries too); give a --now after \(seen), or leave it out to use the clock")
            }
            printError("stale: \(which), after this machine's clock (\(now)): is the clock behind? Pairs seen later than now count as fresh.")
        }
        for source in named where report.sources.first(where: { $0.source == source })?.users ?? 0 == 0 && config.freshness.sources[source] == nil {
            let known = Set(config.freshness.sources.keys).union(report.sources.filter { $0.users > 0 }.map(\.source)).sorted().map { TerminalText.escaped($0) }
            throw CLIError(code: ExitCode.config, message: "--page-fraction names source '\(TerminalText.escaped(source))', which freshness.sources does not list and no pair has (a typo?); name one of \(known.isEmpty ? "the sources of freshness.sources" : known.joined(separator: ", "))")
        }

        var out = OutputBuffer()
        if format == "json" {
            out.line(StaleReportText.json(report, policy: policy, unreported: unreported, all: arguments.has("--all") ? all : nil))
        } else {
            var lines: [String] = []
            StaleReportText.table(report, policy: policy, unreported: unreported, all: arguments.has("--all") ? all : nil, into: &lines)
            for line in lines { out.line(line) }
        }
        try out.flush()
        if let path = arguments.value("--metrics-file") {
            try StaleMetrics.write(report, policy: policy, unreported: unreported, to: path)
        }
        warn(coverage, data: data)
        if policy.canaries.isEmpty {
            printError("stale: no canaries configured (freshness.canaries): nothing proves this detector fires. Add a (user, source) pair that never checks in.")
        }
        let neverSeen = judged.canariesNeverSeen.filter { !unreported.contains($0) }
        if !neverSeen.isEmpty {
            printError("stale: canar\(neverSeen.count == 1 ? "y" : "ies") \(StaleReportText.names(neverSeen)) never checked in: that proves only that never-seen pairs are reported. Publish one source-checked-in for each when you set it up, so every run also tests the thresholds.")
        }
        if !unreported.isEmpty {
            printError("""
            stale: DETECTOR BROKEN: \(unreported.count) of \(policy.canaries.count) canaries not reported stale: \(StaleReportText.names(unreported)).
            stale: A canary never checks in, so it must always be stale. Check the thresholds of these sources in freshness (a unit mistake such as "36d" for "36h"?) and that nobody publishes check-ins for the canary. Until then, silence of real users may go unreported too.
            """)
            return detectorBroken
        }
        return report.pages ? 1 : ExitCode.ok
    }


    /// Says which shards cannot show their users' silence (yet), and what fills them in.
    static func warn(_ gaps: SyncStateCoverage, data: String) {
        if !gaps.missing.isEmpty {
            printError("stale: \(gaps.missing.count) shard\(gaps.missing.count == 1 ? " has" : "s have") no freshness (made by a Daybook that did not keep it, e.g. \(gaps.missing[0])): their users' silence is not judged. Run daybook rebuild --data \(data) to fill it from the log.")
        }
        if let first = gaps.partial.first {
            printError("stale: \(gaps.partial.count) shard\(gaps.partial.count == 1 ? "'s" : "s'") freshness starts after the history they hold (\(first.path) from offset \(first.from)): pairs silent since before the upgrade are not seen. Run daybook rebuild --data \(data) to fill it from the log.")
        }
    }

    /// `--page-fraction`: `FreshnessPolicy.applyPageFractions`, its refusals naming the option.
    @discardableResult
    static func applyPageFractions(_ text: String, to policy: inout FreshnessPolicy) throws -> [String] {
        do {
            return try policy.applyPageFractions(text)
        } catch {
            switch error.kind {
            case .notAFraction, .notSourceAndFraction:
                throw CLIError.usage(TerminalText.escaped("--page-fraction: \(error)"))
            case .namedTwice(let source):
                throw CLIError.usage("--page-fraction names '\(TerminalText.escaped(source))' twice; give each source once")
            }
        }
    }
}

/// `stale --metrics-file`: DaybookPipeline's `StaleMetrics`, written atomically.
extension StaleMetrics {
    static func write(_ report: StaleReport, policy: FreshnessPolicy, unreported: [SyncKey], to path: String) throws {
        do {
            try text(report, policy: policy, unreported: unreported).write(to: path)
        } catch {
            throw CLIError.metricsFile(error)
        }
    }
}
