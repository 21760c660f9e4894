import DaybookConfiguration
import DaybookCore

/// `daybook explain`: why a day's total is what it is.
enum ExplainCommand: Subcommand {
    static let name = "explain"
    static let abstract = "Show which sample won which part of one day's timeline."
    static let usage = "explain EVENTS --user USER --metric METRIC --day YYYY-MM-DD [--config FILE]"
    static let options = [
        OptionSpec(name: "--user", value: "USER", help: "The user to explain."),
        OptionSpec(name: "--metric", value: "METRIC", help: "steps, active_energy, distance, heart_rate, distance_cycling, basal_energy, flights_climbed, water, dietary_energy, exercise_time, stand_time or sleep."),
        OptionSpec(name: "--day", value: "YYYY-MM-DD", help: "The civil day (in each sample's own zone)."),
        SharedOptions.config("Configuration with the source priority (default: built-in) and the metrics it adds to the catalogue."),
    ]
    static let discussion = """
    Prints each stretch of the day (wall-clock time in the winning sample's zone), the
    sample that won it, the samples it beat, and what the winner contributed
    (value × stretch / sample length); then instantaneous samples and whether they
    counted; then the day's total, which equals the one 'daybook rollup' prints.

    EXIT CODES: 0 every line accepted; 65 some lines rejected (the others are explained);
    64 usage; 66 EVENTS missing or unreadable; 78 bad configuration.

    EXAMPLE:
      daybook explain examples/week.jsonl --user ana --metric steps --day 2024-03-30
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw CLIError.usage("explain takes exactly one EVENTS path (or - for stdin)")
        }
        guard let user = arguments.value("--user") else { throw CLIError.usage("explain needs --user") }
        guard let metricName = arguments.value("--metric") else { throw CLIError.usage("explain needs --metric") }
        guard !(path == "-" && arguments.value("--config") == "-") else {
            throw CLIError.usage("EVENTS and --config cannot both be standard input; give one of them as a file")
        }
        // Before any metric is named: the configuration may add metrics to the catalogue.
        let config = try DaybookConfiguration.load(arguments.value("--config"), resolvingSecrets: false)
        guard let metric = Metric(rawValue: metricName) else {
            throw CLIError.usage("--metric '\(TerminalText.escaped(metricName))' is not a metric; use one of \(Metric.acceptedNames)")
        }
        guard let dayText = arguments.value("--day") else { throw CLIError.usage("explain needs --day") }
        guard let day = CivilDay(dayText) else { throw CLIError.usage("--day '\(TerminalText.escaped(dayText))' is not a date (YYYY-MM-DD)") }

        let ledger = Ledger(priority: config.priority)
        let rejected = try RollupCommand.load(path, into: ledger)
        let e = ledger.explain(DayKey(user: user, metric: metric, day: day))
        var out = OutputBuffer()
        func shown(_ s: String) -> String { TerminalText.escaped(s) }
        out.line("\(shown(user)) · \(metric.rawValue) · \(day)")
        if !metric.isCumulative {
            out.line("\(metric.rawValue) is a discrete metric, not deduplicated: every reading starting on the day counts.")
        }
        for p in e.pieces {
            let from = p.start.format(offsetSeconds: p.offsetSeconds)
            let to = p.end.format(offsetSeconds: p.offsetSeconds)
            let share = DayTotal.format(p.contribution)
            out.line("  \(from) → \(to)  won by \(shown(p.winner.source)) \(shown(p.winner.uuid)) (\(DayTotal.format(p.winner.value)) over \(p.winner.start)–\(p.winner.end)) → +\(share)")
            for b in p.beaten {
                out.line("      beat \(shown(b.source)) \(shown(b.uuid)) (\(DayTotal.format(b.value)) over \(b.start)–\(b.end))")
            }
        }
        for p in e.points {
            let at = p.sample.start.format(offsetSeconds: p.offsetSeconds)
            if let s = p.shadowedBy {
                out.line("  \(at)  instant \(shown(p.sample.source)) \(shown(p.sample.uuid)) \(DayTotal.format(p.sample.value)) → not counted, outranked by \(shown(s.source)) \(shown(s.uuid))")
            } else {
                out.line("  \(at)  instant \(shown(p.sample.source)) \(shown(p.sample.uuid)) → +\(DayTotal.format(p.sample.value))")
            }
        }
        switch e.total?.summary {
        case nil:
            out.line("total: no data")
        case .cumulative(let value, let sources)?:
            let parts = sources.map { "\(shown($0.source)) \(DayTotal.format($0.value))" }.joined(separator: ", ")
            out.line("total: \(DayTotal.format(value))  (\(parts))")
        case .discrete(let lo, let hi, let avg, let count, let latest)?:
            out.line("min \(DayTotal.format(lo)), max \(DayTotal.format(hi)), avg \(DayTotal.format(avg)), count \(count)" + DaySummary.latestText(latest))
        }
        try out.flush()
        return rejected == 0 ? ExitCode.ok : ExitCode.dataError
    }
}
