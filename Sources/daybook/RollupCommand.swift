import DaybookConfiguration
import DaybookCore
import DaybookFiles
import DaybookPipeline
import DaybookStore
import Foundation

/// `daybook rollup`: the whole log in, one JSON line per (user, metric, day) out.
enum RollupCommand: Subcommand {
    static let name = "rollup"
    static let abstract = "Compute deduplicated daily totals from a file of events."
    static let usage = "rollup EVENTS [--config FILE]"
    static let options = [
        SharedOptions.config("Configuration with the source priority (default: built-in watch > phone > manual) and the metrics it adds to the catalogue."),
    ]
    static let discussion = """
    EVENTS is a file of JSON lines (sample-added / sample-deleted, see topics/README.md),
    or - for standard input, read in log order. Prints one JSON line per (user, metric,
    day) that has data, sorted by user, metric and day:
      {"user":"u1","metric":"steps","day":"2024-03-02","value":7050}
      {"user":"u1","metric":"heart_rate","day":"2024-03-02","min":52,"max":141,"avg":78.5,"count":96,"latest":64}
    Days without data print nothing (never a zero). Rejected lines are reported on stderr
    as 'line N: field: reason' as they are read; the other lines are still rolled up.
    Standard input and pipes are streamed, so memory does not grow with the input; a line
    longer than 1 MiB is rejected without being read.

    Memory does not grow with the log either: the events go, in batches, through the same
    state store the projector uses (an SQLite shard in
    $TMPDIR/daybook-UID/daybook-rollup.tmp-PID, removed at the end; one left by a rollup
    that was killed is removed by the next), with a cache of state.cache_mb (default 32).
    Disk use is about 150 bytes per event while it runs.

    EXIT CODES: 0 every line accepted, 65 some lines rejected, 64 usage error,
    66 EVENTS missing, 74 the temporary store failed (no space: set TMPDIR), 78 bad
    configuration.

    EXAMPLE:
      daybook rollup examples/week.jsonl --config config/daybook.json
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw CLIError.usage("rollup takes exactly one EVENTS path (or - for stdin)")
        }
        guard !(path == "-" && arguments.value("--config") == "-") else {
            throw CLIError.usage("EVENTS and --config cannot both be standard input; give one of them as a file")
        }
        let config = try DaybookConfiguration.load(arguments.value("--config"), resolvingSecrets: false)
        // Streamed, not mapped: memory stays flat however large the file.
        let input = try Files.input(path, mapping: false)
        let scratch = try ScratchDirectory(prefix: "daybook-rollup")
        defer { scratch.remove() }
        let rejected: Int
        var out = OutputBuffer()
        do {
            let shard = try Shard(directory: scratch.path, topic: "rollup", partition: 0, fingerprint: config.priority.fingerprint)
            let projection = ShardProjection(shard: shard, priority: config.priority, cacheBudgetBytes: config.cacheMegabytes << 20)
            rejected = try load(input, into: projection)
            if projection.ledger.staleResendCount > 0 {
                printError("\(projection.ledger.staleResendCount) stale re-sends ignored (a sample-added whose uuid's sample in force has a higher version)")
            }
            // Rows are streamed out of the shard in order: memory does not grow with them either.
            try ShardReader(directory: scratch.path).forEachTotal(inShardAt: shard.path) { out.line($0.jsonLine) }
        } catch let error as DatabaseError {
            throw CLIError(code: ExitCode.ioError, message: "the temporary state store in \(scratch.path): \(error) (set TMPDIR to a directory with space)")
        }
        try out.flush()
        return rejected == 0 ? ExitCode.ok : ExitCode.dataError
    }

    /// Events applied per transaction of the temporary store.
    static let batchSize = 20_000

    /// Applies every valid line of `input` (position = line number) through `projection`,
    /// in batches, and returns how many lines were rejected.
    static func load(_ input: Files.Input, into projection: ShardProjection) throws -> Int {
        var batch = StagedBatch() // a file has no delivery times
        var lastLine = 0
        let rejected = try forEachAccepted(input) { event, number in
            lastLine = number
            batch.append(event, position: Int64(number))
            if batch.count == batchSize {
                _ = try projection.apply(batch, nextPosition: Int64(number) + 1)
                batch.removeAll()
            }
        }
        _ = try projection.apply(batch, nextPosition: Int64(lastLine) + 1)
        return rejected
    }

    /// Applies every valid line of `path` to an in-memory `ledger` (for `explain`, which
    /// reads one day and needs no store).
    static func load(_ path: String, into ledger: Ledger) throws -> Int {
        try forEachAccepted(try Files.input(path)) { event, number in ledger.apply(event, at: Int64(number)) }
    }

    /// Calls `body` with each accepted event and its line number, reports rejected lines
    /// on stderr as they come and a count at the end, and returns how many were rejected.
    private static func forEachAccepted(_ input: Files.Input, _ body: (Event, Int) throws -> Void) throws -> Int {
        var accepted = 0
        var rejected = 0
        try Files.forEachEvent(input) { number, _, decoded in
            switch decoded {
            case .success(let event):
                try body(event, number)
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
