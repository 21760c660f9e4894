import DaybookCore

/// `daybook rollup`: the whole log in, one JSON line per (user, metric, day) out.
enum RollupCommand: Subcommand {
    static let name = "rollup"
    static let abstract = "Compute deduplicated daily totals from a file of events."
    static let usage = "rollup EVENTS [--config FILE]"
    static let options = [
        OptionSpec(name: "--config", value: "FILE", help: "Configuration with the source priority (default: built-in watch > phone > manual)."),
    ]
    static let discussion = """
    EVENTS is a file of JSON lines (sample-added / sample-deleted, see topics/README.md),
    or - for standard input, read in log order. Prints one JSON line per (user, metric,
    day) that has data, sorted by user, metric and day:
      {"user":"u1","metric":"steps","day":"2024-03-02","value":7050}
      {"user":"u1","metric":"heart_rate","day":"2024-03-02","min":52,"max":141,"avg":78.5,"count":96}
    Days without data print nothing (never a zero). Rejected lines are reported on stderr
    as 'line N: field: reason' as they are read; the other lines are still rolled up.
    Standard input and pipes are streamed, so memory does not grow with the input; a line
    longer than 1 MiB is rejected without being read.

    EXIT CODES: 0 every line accepted, 65 some lines rejected, 64 usage error,
    66 EVENTS missing, 78 bad configuration.

    EXAMPLE:
      daybook rollup examples/week.jsonl --config config/daybook.json
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw CLIError.usage("rollup takes exactly one EVENTS path (or - for stdin)")
        }
        let ledger = Ledger(priority: try DaybookConfiguration.load(arguments.value("--config"), resolvingSecrets: false).priority)
        let rejected = try load(path, into: ledger)
        var out = OutputBuffer()
        for total in ledger.allTotals() { out.line(total.jsonLine) }
        out.flush()
        return rejected == 0 ? ExitCode.ok : ExitCode.dataError
    }

    /// Applies every valid line of `path` to `ledger` (position = line number), reports
    /// rejected lines on stderr, and returns how many were rejected.
    static func load(_ path: String, into ledger: Ledger) throws -> Int {
        var accepted = 0
        var rejected = 0
        try Files.forEachEvent(try Files.input(path)) { number, _, decoded in
            switch decoded {
            case .success(let event):
                ledger.apply(event, at: Int64(number))
                accepted += 1
            case .failure(let error):
                rejected += 1
                printError("line \(number): \(error)")
            }
        }
        if rejected > 0 { printError("\(accepted) lines accepted, \(rejected) rejected") }
        return rejected
    }
}
