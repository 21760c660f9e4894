import DaybookConfiguration
import DaybookCore
import DaybookPipeline
import DaybookStore
import DaybookSupport
import Foundation

/// `daybook totals`: read the shards.
enum TotalsCommand: Subcommand {
    static let name = "totals"
    static let abstract = "Print daily totals from the projector's shards."
    static let usage = "totals --data DIR [--user U] [--metric M] [--from DAY] [--to DAY] [--bucket day|hour] [--format table|json|csv] [--config FILE]"
    static let options = [
        SharedOptions.data(),
        OptionSpec(name: "--user", value: "U", help: "Only this user."),
        OptionSpec(name: "--metric", value: "M", help: "Only this metric (steps, active_energy, distance, heart_rate, distance_cycling, basal_energy, flights_climbed, exercise_time, stand_time, water, dietary_energy, resting_heart_rate, heart_rate_variability, body_mass, oxygen_saturation, respiratory_rate, sleep)."),
        OptionSpec(name: "--from", value: "DAY", help: "First day, YYYY-MM-DD (inclusive)."),
        OptionSpec(name: "--to", value: "DAY", help: "Last day, YYYY-MM-DD (inclusive)."),
        OptionSpec(name: "--bucket", value: "B", help: "day (default): one row per civil day; hour: one row per civil hour."),
        SharedOptions.format("table (default, for people), json (the lines of 'daybook rollup'), or csv."),
        SharedOptions.config("The metrics it adds to the catalogue (its metrics section): rows of an added metric read only with it."),
    ]
    static let discussion = """
    json prints exactly the lines 'daybook rollup' prints for the same log. table shows one
    row per day with what each source contributed, and days without data as 'no data' —
    never 0. Safe to run while a projector writes. A shard kept as a warm standby
    ('project --standby') may lag the log: totals says so on stderr, naming the partition.

    UNKNOWN, not zero: a day not over when a source that speaks for the metric was last
    seen (its check-in, or a delivered sample) — that day and every later one — is
    'unknown': its data may still come. table prints the word (after the total if there
    is one, naming the silent source and since when); json adds "unknown":["phone"] to the
    day's line, and prints such a day without a row as {"user","metric","day","unknown"};
    csv fills the last column. 'no data' means every such source was heard from after the
    day ended and nothing was recorded. Days are listed from --from to --to (else from the
    first to the last row): give --to (e.g. today) to see the days after the last row, and
    --user with --from and --to to see every metric the user's sources sync, rows or not.
    A source's day is counted in the zone of its newest sample (UTC if it never sent one).
    --from after --to is refused (64). Tables cut ids longer than 48 characters; json and
    csv keep them whole.

    HOURS (--bucket hour): each winning stretch is split across the civil hours of the
    winner's own zone, pro rata, as days are split across civil days, and an hour is named
    by its local start with the offset then in force (a fall-back night has two 01:00 rows,
    01:00-04:00 and 01:00-05:00; a spring night has no 02:00 row). The hours of a day add
    up to the day's total exactly, each hour's shares to its value; a discrete metric's
    hours (heart rate, body mass, ...) summarize the samples starting in them. An hour
    without data is no row; unknown days are not shown. json prints
    {"user","metric","day","start","end","value"} (or min, max, avg, count, latest) per
    hour; csv has the columns user,metric,day,start,end,value,min,max,avg,count,sources,latest.

    CSV follows RFC 4180 and keeps the bytes: a field with a comma, quote, CR or LF is
    quoted, its quotes doubled. The text cells — user, sources, unknown — are data from the
    log: one that would start with =, +, -, @, tab or CR gets a ' in front (OWASP's advice
    against CSV injection: a spreadsheet must not run a user id as a formula), and so does
    one starting with ', so to read a cell back drop one leading ' if there is one. The
    numeric cells (value, min, max, avg, count, latest) are never altered. sources is the day's
    shares in ranking order, watch=3000;phone=4050, and unknown the silent sources,
    watch;phone; in a name, \\, ; and = are written \\\\, \\; and \\=, so both parse back
    (split at each ; not after a \\, then at the first = not after a \\).

    EXIT CODES: 0 ok (also when nothing matches: 'no data'); 64 usage; 66 DIR missing or
    not a directory; 65 a file in DIR is not a shard (damaged or foreign: move it away, the
    projector rebuilds it), or a (user, metric, day) has rows in two shards (its events were
    published to two partitions: neither row is the total, none is printed; the message
    names both files); 74 storage failure; 78 a bad --config, or a shard whose data were
    made under other metric catalogue entries (a metric --config's metrics section adds,
    left out; or one changed since: rebuild).

    EXAMPLE:
      daybook totals --data /var/lib/daybook --user ana --metric steps --from 2024-03-25 --to 2024-03-31
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("totals takes no positional arguments") }
        let data = try arguments.data(for: "totals")
        // Before any metric is named: the configuration may add metrics to the catalogue.
        _ = try DaybookConfiguration.load(arguments.value("--config"), resolvingSecrets: false)
        var query = ShardReader.Query(user: arguments.value("--user"))
        if let m = arguments.value("--metric") {
            guard let metric = Metric(rawValue: m) else {
                throw CLIError.usage("--metric '\(TerminalText.escaped(m))' is not a metric; use one of \(Metric.acceptedNames)")
            }
            query.metric = metric
        }
        for (flag, path) in [("--from", \ShardReader.Query.from), ("--to", \ShardReader.Query.to)] {
            if let text = arguments.value(flag) {
                guard let day = CivilDay(text) else { throw CLIError.usage("\(flag) '\(TerminalText.escaped(text))' is not a date (YYYY-MM-DD)") }
                query[keyPath: path] = day
            }
        }
        if let from = query.from, let to = query.to, from > to {
            throw CLIError.usage("--from \(from) is after --to \(to): the range would hold no day; give --from on or before --to")
        }
        let format = try arguments.format(["table", "json", "csv"])
        let bucket = arguments.value("--bucket") ?? "day"
        guard ["day", "hour"].contains(bucket) else {
            throw CLIError.usage("--bucket '\(TerminalText.escaped(bucket))' is not one of day, hour")
        }
        guard FileManager.default.fileExists(atPath: data) else { throw CLIError(code: ExitCode.noInput, message: "\(data): no such data directory") }

        let reader = ShardReader(directory: data)
        var groups: [DayBlock] = []
        var hours: [HourTotal] = []
        do {
            if bucket == "hour" { hours = try reader.hours(query) } else { groups = try reader.dayBlocks(query) }
        } catch {
            throw CLIError(error) // 65 a file that is not a shard, 66 not a directory, 74 storage
        }
        // A warm standby shard (project --standby) follows the log but may lag it: say so.
        if let standby = try? ProjectionStatus.standbyShards(in: data, user: query.user), !standby.isEmpty {
            let which = standby.count == 1 ? "partition \(standby[0])'s shard is a warm standby" : "the shards of partitions \(standby.map(String.init).joined(separator: ", ")) are warm standbys"
            printError("totals: note: \(which) here (this member does not own \(standby.count == 1 ? "it" : "them")): it may lag the log; for current totals read the owner's (daybook locate --user U --brokers B --group G)")
        }
        var out = OutputBuffer()
        if bucket == "hour" {
            Self.hours(hours, format: format, into: &out)
            try out.flush()
            return ExitCode.ok
        }
        switch format {
        case "json":
            for group in groups {
                group.forEachDay(everyDay: false) { day, row, unknown in
                    if let row {
                        out.line(unknown.isEmpty ? row.jsonLine : String(row.jsonLine.dropLast()) + ",\"unknown\":\(Self.jsonList(unknown.map(\.source)))}")
                    } else if !unknown.isEmpty {
                        out.line("{\"user\":\(JSONWriter.quoted(group.user)),\"metric\":\"\(group.metric.rawValue)\",\"day\":\"\(day)\",\"unknown\":\(Self.jsonList(unknown.map(\.source)))}")
                    }
                }
            }
        case "csv":
            // latest last: the columns before it are where they were before it came.
            out.line("user,metric,day,value,min,max,avg,count,sources,unknown,latest")
            for group in groups {
                group.forEachDay(everyDay: false) { day, row, unknown in
                    guard row != nil || !unknown.isEmpty else { return }
                    let silent = TerminalText.csvField(TerminalText.csvList(unknown.map { ($0.source, nil) }))
                    let lead = "\(TerminalText.csvField(group.user)),\(group.metric.rawValue),\(day)"
                    switch row?.summary {
                    case .cumulative(let v, let shares)?:
                        let s = TerminalText.csvList(shares.map { ($0.source, DayTotal.format($0.value)) })
                        out.line("\(lead),\(DayTotal.format(v)),,,,,\(TerminalText.csvField(s)),\(silent),")
                    case .discrete(let lo, let hi, let avg, let n, let latest)?:
                        out.line("\(lead),,\(DayTotal.format(lo)),\(DayTotal.format(hi)),\(DayTotal.format(avg)),\(n),,\(silent),\(latest.map { DayTotal.format($0) } ?? "")")
                    case nil:
                        out.line("\(lead),,,,,,,\(silent),")
                    }
                }
            }
        default:
            table(groups, into: &out)
        }
        try out.flush()
        return ExitCode.ok
    }

    /// Hour rows: a JSON line each, a CSV record each, or a block per (user, metric) with a
    /// line per hour (start → end, the value and each source's share).
    static func hours(_ rows: [HourTotal], format: String, into out: inout OutputBuffer) {
        switch format {
        case "json":
            for row in rows { out.line(row.jsonLine) }
        case "csv":
            out.line("user,metric,day,start,end,value,min,max,avg,count,sources,latest")
            for row in rows {
                let lead = "\(TerminalText.csvField(row.key.user)),\(row.key.metric.rawValue),\(row.key.day),\(row.startText),\(row.endText)"
                switch row.summary {
                case .cumulative(let v, let shares):
                    let s = TerminalText.csvList(shares.map { ($0.source, DayTotal.format($0.value)) })
                    out.line("\(lead),\(DayTotal.format(v)),,,,,\(TerminalText.csvField(s)),")
                case .discrete(let lo, let hi, let avg, let n, let latest):
                    out.line("\(lead),,\(DayTotal.format(lo)),\(DayTotal.format(hi)),\(DayTotal.format(avg)),\(n),,\(latest.map { DayTotal.format($0) } ?? "")")
                }
            }
        default:
            guard !rows.isEmpty else {
                out.line("no data")
                return
            }
            var block: (user: String, metric: Metric)?
            for row in rows {
                if block?.user != row.key.user || block?.metric != row.key.metric {
                    block = (row.key.user, row.key.metric)
                    out.line("\(TerminalText.cell(row.key.user)) · \(row.key.metric.rawValue) (\(row.key.metric.canonicalUnit)) by hour")
                }
                let span = "\(row.startText) → \(row.endText)"
                switch row.summary {
                case .cumulative(let v, let shares):
                    let parts = shares.map { "\(TerminalText.cell($0.source)) \(DayTotal.format($0.value))" }.joined(separator: ", ")
                    out.line("  \(span)  \(NumberText.rightAligned(DayTotal.format(v), 12))  \(parts)")
                case .discrete(let lo, let hi, let avg, let n, let latest):
                    out.line("  \(span)  " + readings(lo, hi, avg, n, latest))
                }
            }
        }
    }

    /// A discrete row as the table, the hour blocks and the rebuild diff print it:
    /// `min 60, max 90, avg 75, 2 samples, latest 90`.
    static func readings(_ lo: Double, _ hi: Double, _ avg: Double, _ n: Int, _ latest: Double?) -> String {
        "min \(DayTotal.format(lo)), max \(DayTotal.format(hi)), avg \(DayTotal.format(avg)), \(n) samples" + DaySummary.latestText(latest)
    }

    static func jsonList(_ names: [String]) -> String {
        "[" + names.map(JSONWriter.quoted).joined(separator: ",") + "]"
    }

    /// One block per (user, metric); one line per day of the range: the total, "no data"
    /// (every source has checked in since, nothing recorded) or "unknown" (a source that
    /// speaks for the metric has been silent since before that day).
    static func table(_ groups: [DayBlock], into out: inout OutputBuffer) {
        guard !groups.isEmpty else {
            out.line("no data")
            return
        }
        for group in groups {
            out.line("\(TerminalText.cell(group.user)) · \(group.metric.rawValue) (\(group.metric.canonicalUnit))")
            group.forEachDay(everyDay: true) { day, row, unknown in
                let silent = unknown.map { "\(TerminalText.cell($0.source)) silent since \($0.lastSeen)" }.joined(separator: ", ")
                switch row?.summary {
                case .cumulative(let v, let shares)?:
                    let parts = shares.map { "\(TerminalText.cell($0.source)) \(DayTotal.format($0.value))" }.joined(separator: ", ")
                    out.line("  \(day)  \(NumberText.rightAligned(DayTotal.format(v), 12))  \(parts)" + (silent.isEmpty ? "" : "  (unknown: \(silent))"))
                case .discrete(let lo, let hi, let avg, let n, let latest)?:
                    out.line("  \(day)  " + readings(lo, hi, avg, n, latest) + (silent.isEmpty ? "" : "  (unknown: \(silent))"))
                case nil:
                    out.line("  \(day)  \(NumberText.rightAligned(unknown.isEmpty ? "no data" : "unknown", 12))" + (silent.isEmpty ? "" : "  \(silent)"))
                }
            }
        }
    }
}
