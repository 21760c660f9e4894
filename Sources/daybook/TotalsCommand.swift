import DaybookCore
import DaybookStore
import Foundation

/// `daybook totals`: read the shards.
enum TotalsCommand: Subcommand {
    static let name = "totals"
    static let abstract = "Print daily totals from the projector's shards."
    static let usage = "totals --data DIR [--user U] [--metric M] [--from DAY] [--to DAY] [--format table|json|csv]"
    static let options = [
        OptionSpec(name: "--data", value: "DIR", help: "Directory of the shards (as given to project)."),
        OptionSpec(name: "--user", value: "U", help: "Only this user."),
        OptionSpec(name: "--metric", value: "M", help: "Only this metric (steps, active_energy, distance, heart_rate)."),
        OptionSpec(name: "--from", value: "DAY", help: "First day, YYYY-MM-DD (inclusive)."),
        OptionSpec(name: "--to", value: "DAY", help: "Last day, YYYY-MM-DD (inclusive)."),
        OptionSpec(name: "--format", value: "F", help: "table (default, for people), json (the lines of 'daybook rollup'), or csv."),
    ]
    static let discussion = """
    json prints exactly the lines 'daybook rollup' prints for the same log. table shows one
    row per day with what each source contributed, and days without data as 'no data' —
    never 0. Safe to run while a projector writes.

    EXIT CODES: 0 ok (also when nothing matches: 'no data'); 64 usage; 66 DIR missing or
    not a directory; 65 a file in DIR is not a shard (damaged or foreign: move it away, the
    projector rebuilds it); 74 storage failure.

    EXAMPLE:
      daybook totals --data /var/lib/daybook --user ana --metric steps --from 2024-03-25 --to 2024-03-31
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("totals takes no positional arguments") }
        guard let data = arguments.value("--data") else { throw CLIError.usage("totals needs --data DIR") }
        var query = ShardReader.Query(user: arguments.value("--user"))
        if let m = arguments.value("--metric") {
            guard let metric = Metric(rawValue: m) else {
                throw CLIError.usage("--metric '\(TerminalText.escaped(m))' is not a metric; use one of \(Metric.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            query.metric = metric
        }
        for (flag, path) in [("--from", \ShardReader.Query.from), ("--to", \ShardReader.Query.to)] {
            if let text = arguments.value(flag) {
                guard let day = CivilDay(text) else { throw CLIError.usage("\(flag) '\(TerminalText.escaped(text))' is not a date (YYYY-MM-DD)") }
                query[keyPath: path] = day
            }
        }
        let format = arguments.value("--format") ?? "table"
        guard ["table", "json", "csv"].contains(format) else { throw CLIError.usage("--format '\(TerminalText.escaped(format))' is not one of table, json, csv") }
        guard FileManager.default.fileExists(atPath: data) else { throw CLIError(code: ExitCode.noInput, message: "\(data): no such data directory") }

        let rows: [DayTotal]
        do {
            rows = try ShardReader(directory: data).totals(query)
        } catch {
            throw CLIError(error) // 65 a file that is not a shard, 66 not a directory, 74 storage
        }
        var out = OutputBuffer()
        switch format {
        case "json":
            for row in rows { out.line(row.jsonLine) }
        case "csv":
            out.line("user,metric,day,value,min,max,avg,count,sources")
            for row in rows {
                let k = row.key
                switch row.summary {
                case .cumulative(let v, let shares):
                    let s = shares.map { "\($0.source)=\(DayTotal.format($0.value))" }.joined(separator: ";")
                    out.line("\(TerminalText.csvField(k.user)),\(k.metric.rawValue),\(k.day),\(DayTotal.format(v)),,,,,\(TerminalText.csvField(s))")
                case .discrete(let lo, let hi, let avg, let n):
                    out.line("\(TerminalText.csvField(k.user)),\(k.metric.rawValue),\(k.day),,\(DayTotal.format(lo)),\(DayTotal.format(hi)),\(DayTotal.format(avg)),\(n),")
                }
            }
        default:
            table(rows, query: query, into: &out)
        }
        out.flush()
        return ExitCode.ok
    }

    /// One block per (user, metric); one line per day of the range, "no data" where empty.
    static func table(_ rows: [DayTotal], query: ShardReader.Query, into out: inout OutputBuffer) {
        guard !rows.isEmpty else {
            out.line("no data")
            return
        }
        var groups: [(String, Metric, [DayTotal])] = []
        for row in rows {
            if let last = groups.last, last.0 == row.key.user, last.1 == row.key.metric {
                groups[groups.count - 1].2.append(row)
            } else {
                groups.append((row.key.user, row.key.metric, [row]))
            }
        }
        for (user, metric, days) in groups {
            out.line("\(TerminalText.escaped(user)) · \(metric.rawValue) (\(metric.canonicalUnit))")
            let first = query.from ?? days.first!.key.day
            let last = query.to ?? days.last!.key.day
            var byDay: [CivilDay: DayTotal] = [:]
            for d in days { byDay[d.key.day] = d }
            var day = first
            while day <= last {
                if let row = byDay[day] {
                    switch row.summary {
                    case .cumulative(let v, let shares):
                        let parts = shares.map { "\(TerminalText.escaped($0.source)) \(DayTotal.format($0.value))" }.joined(separator: ", ")
                        out.line("  \(day)  \(pad(DayTotal.format(v), 12))  \(parts)")
                    case .discrete(let lo, let hi, let avg, let n):
                        out.line("  \(day)  min \(DayTotal.format(lo)), max \(DayTotal.format(hi)), avg \(DayTotal.format(avg)), \(n) samples")
                    }
                } else {
                    out.line("  \(day)  \(pad("no data", 12))")
                }
                day = day.adding(days: 1)
            }
        }
    }

    static func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }
}
