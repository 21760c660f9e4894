import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookStore
import DaybookSupport
import Foundation

/// What `rebuild`, `verify` and `diff` read from their command lines the same way.
enum RebuildOptions {
    static let common = [
        KafkaOptions.brokers,
        SharedOptions.data("The projector's data directory."),
        OptionSpec(name: "--partition", value: "P", help: "Only this partition (repeat, or P,Q). Default: all.", repeatable: true),
        SharedOptions.topic(),
        KafkaOptions.connectTimeout,
        OptionSpec(name: "--verbose", value: nil, help: "Log shard openings."),
    ]

    static func request(_ arguments: ParsedArguments, command: String, priority: SourcePriority,
                        config: DaybookConfiguration, connectTimeout: Duration) throws -> RebuildRequest {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("\(command) takes no positional arguments") }
        let data = try arguments.data(for: command)
        var request = RebuildRequest(dataDirectory: data, priority: priority)
        request.topic = try arguments.topic(default: request.topic)
        request.partitions = try arguments.partitions()
        request.cacheBytes = config.cacheMegabytes << 20
        request.connectTimeout = connectTimeout
        return request
    }

    static func access(_ config: DaybookConfiguration) -> LogAccess {
        LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer)
    }

    static func logger(_ command: String, _ arguments: ParsedArguments) -> Logger {
        Logger(label: command, level: arguments.has("--verbose") ? .info : .warning)
    }

    /// Partitions and their offsets, each one when there are few (or with --verbose).
    static func describe(_ offsets: [Int32: Int64], verbose: Bool) -> String {
        guard verbose || offsets.count <= 8 else {
            return "offsets of \(offsets.count) partitions summing to \(offsets.values.reduce(0, +)); --verbose lists each"
        }
        return offsets.sorted { $0.key < $1.key }.map { "p\($0.key):\($0.value)" }.joined(separator: " ")
    }

    /// The data directory must exist for commands that compare with it.
    static func requireData(_ path: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIError(code: ExitCode.noInput, message: "\(path): no such data directory (give the --data the projector writes)")
        }
        guard isDirectory.boolValue else {
            throw CLIError(code: ExitCode.noInput, message: "\(path): not a directory (give the --data the projector writes)")
        }
    }
}

/// `daybook rebuild`: a new generation of shards beside the live one, swapped in atomically.
enum RebuildCommand: Subcommand {
    static let name = "rebuild"
    static let abstract = "Rebuild the shards from offset 0 beside the live ones, then swap them in atomically."
    static let usage = "rebuild --brokers B --data DIR [--config FILE] [--partition P…] [--connect-timeout S]"
    static let options = RebuildOptions.common + [
        SharedOptions.config("The source priority and added metrics to build under, and Kafka settings (config/daybook.json)."),
    ]
    static let discussion = """
    Builds a new generation of shards (DIR/gen-NNNNNN) from offset 0 while readers and a
    running projector keep using the live ones, in bounded memory (state.cache_mb). When
    every new shard has reached the end of the log and the live shards' offsets, it is
    closed and DIR/manifest.json is replaced in one rename: 'totals' reads the old
    projection or the new one, never a mix; a running projector moves to the new shards
    (each at its own offset: nothing lost, nothing applied twice) and projects under the
    new priority from then on. Put the new order in the projector's --config too: a
    projector started with another order than the data directory's exits 78.

    The usual reason is a new source priority in --config. --partition rebuilds only some
    partitions (to repair them) and then must keep the live order.

    Interrupted (kill -9, Ctrl-C, a crash)? The live projection is untouched; rerun the
    same command and it carries on from the new shards' offsets (another --config or
    --partition starts over). The previous generation is kept until the next rebuild
    (readers that resolved the old manifest may still be reading it), which removes it.

    Progress (events/s, lag per partition, ETA) goes to stderr.

    EXIT CODES: 0 swapped in; 64 usage, or a --partition the topic does not have; 66 DIR
    missing; 69 Kafka unreachable or the topic missing; 74 storage failure; 75 another
    rebuild runs on DIR, or stopped before the swap (rerun to carry on); 76 the log does
    not hold what is needed (a gap: retention deleted messages), or is not the live
    shards' (another cluster, fewer partitions, or it ends before a live shard's offset:
    checked before anything is built, nothing swapped in); 78 bad configuration, or
    --partition with another priority than the live one.

    EXAMPLE (re-rank sources, see what changes, rebuild, check):
      daybook diff    --brokers localhost:9092 --data /var/lib/daybook --config new.json
      daybook rebuild --brokers localhost:9092 --data /var/lib/daybook --config new.json
      daybook verify  --brokers localhost:9092 --data /var/lib/daybook --config new.json
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        let (config, connectTimeout) = try KafkaOptions.load(arguments, command: name)
        let request = try RebuildOptions.request(arguments, command: name, priority: config.priority, config: config, connectTimeout: connectTimeout)
        // A typo in --data must not start a projection somewhere new: project creates one.
        try RebuildOptions.requireData(request.dataDirectory)
        Shutdown.install()
        var reporter = ProgressReporter()
        let summary: RebuildSummary
        do {
            summary = try Rebuilder(request: request, access: RebuildOptions.access(config), logger: RebuildOptions.logger(name, arguments))
                .run(shouldStop: { Shutdown.isRequested }) { reporter.update($0.line("rebuild")) }
        } catch {
            reporter.finish()
            throw CLIError(error)
        }
        reporter.finish()
        let offsets = RebuildOptions.describe(summary.offsets, verbose: arguments.has("--verbose"))
        var text = "rebuild: swapped in \(request.dataDirectory)/\(summary.generation) under priority \(request.priority.fingerprint)"
        text += "\(summary.resumed ? " (carried on from an interrupted run)" : ""): \(summary.offsets.count) partition\(summary.offsets.count == 1 ? "" : "s") [\(offsets)], "
        text += "\(summary.applied) events applied, \(summary.deadLetters) dead letters, in \(String(format: "%.2f", summary.seconds)) s"
        if !summary.removed.isEmpty { text += "; removed what earlier rebuilds replaced: \(summary.removed.joined(separator: ", "))" }
        text += "; the shards this one replaced are kept until the next rebuild (readers may still be on them)"
        printError(text)
        return ExitCode.ok
    }
}

/// `daybook verify`: the projection is a pure function of the log.
enum VerifyCommand: Subcommand {
    static let name = "verify"
    static let abstract = "Rebuild into a temporary place up to the live offsets and compare row by row."
    static let usage = "verify --brokers B --data DIR [--config FILE] [--partition P…] [--connect-timeout S]"
    static let options = RebuildOptions.common + [
        SharedOptions.config("Kafka settings and the metrics it adds; for shards without a manifest, also the priority they were built under."),
    ]
    static let discussion = """
    Projects the log from offset 0 into a hidden temporary directory inside DIR (removed at
    the end) exactly up to each live shard's offset, under the live projection's priority
    (the manifest's, or the one the shards record, which --config must then match), and
    compares every (user, metric, day) row — value and per-source shares — and every
    (user, source) freshness with the live shard as of that same offset: the
    live shards are read in read transactions opened before the build, so a running
    projector writes on without moving what is compared (its WAL grows meanwhile). Prints
    each differing row with both values; touches nothing live.

    EXIT CODES: 0 identical; 1 some rows or pairs' freshness differ (each printed); 64 usage;
    66 DIR missing; 69 Kafka unreachable; 74 storage failure; 75 interrupted (rerun); 76
    the log does not hold what is needed, or is not the live shards' (another cluster,
    fewer partitions, a log that ends before a shard's offset: checked before the
    build); 78 --config's priority is not the shards'
    (shards without a manifest), or a Kafka property librdkafka refuses.

    EXAMPLE:
      daybook verify --brokers localhost:9092 --data /var/lib/daybook
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        let (config, connectTimeout) = try KafkaOptions.load(arguments, command: name)
        let data = try arguments.data(for: "verify")
        try RebuildOptions.requireData(data)
        let priority = try livePriority(data, configured: config.priority, topic: try arguments.topic(default: "health-samples"),
                                        configFile: arguments.value("--config"))
        let request = try RebuildOptions.request(arguments, command: name, priority: priority, config: config, connectTimeout: connectTimeout)
        var differences = 0
        var damaged = Set<Int32>()
        var out = OutputBuffer()
        var syncDifferences = 0
        let outcome = try CompareRun.run(.everything, request, config: config, arguments: arguments, command: name, report: { partition, d in
            differences += 1
            damaged.insert(partition)
            out.line("DIFFERS \(TerminalText.escaped(d.key.description)): live \(CompareRun.describe(d.live)) · rebuilt \(CompareRun.describe(d.rebuilt))")
        }, syncReport: { partition, d in
            syncDifferences += 1
            damaged.insert(partition)
            out.line("DIFFERS sync state \(TerminalText.escaped(d.key.user))/\(TerminalText.escaped(d.key.source)): live \(describe(d.live)) · rebuilt \(describe(d.rebuilt))")
        })
        try out.flush()
        let offsets = RebuildOptions.describe(outcome.offsets, verbose: arguments.has("--verbose"))
        if differences > 0 || syncDifferences > 0 {
            let partitions = damaged.sorted().map(String.init).joined(separator: ",")
            printError("verify: \(differences) of \(outcome.rows) rows\(syncDifferences > 0 ? " and \(syncDifferences) (user, source) sync states" : "") differ from a rebuild of the log [\(offsets)]. Repair: stop the projector and daybook replay --from-offset 0 --partition \(partitions)\(syncDifferences > 0 ? " (a sync state ahead of the log only goes back with a rebuild)" : ""), or daybook rebuild --partition \(partitions)")
            return 1
        }
        printError("verify: identical — \(outcome.rows) rows in \(outcome.offsets.count) partition\(outcome.offsets.count == 1 ? "" : "s") equal a rebuild of the log up to [\(offsets)] under \(priority.fingerprint)")
        return ExitCode.ok
    }

    /// A pair's sync state in one line.
    static func describe(_ p: SourceSync?) -> String {
        guard let p else { return "no state" }
        func t(_ i: Instant?) -> String { i.map { "\($0)" } ?? "-" }
        let metrics = p.metrics.isEmpty ? "-" : p.metrics.sorted().map(\.rawValue).joined(separator: ",")
        return "check-in \(t(p.lastCheckIn)), sample delivered \(t(p.lastSampleDelivered)), newest end \(t(p.newestSampleEnd)) \(p.zone.map { TerminalText.escaped($0) } ?? "-"), metrics \(metrics)"
    }

    /// The priority the live projection was built under (see `ProjectionComparison.livePriority`).
    static func livePriority(_ data: String, configured: SourcePriority, topic: String, configFile: String?) throws -> SourcePriority {
        do {
            return try ProjectionComparison.livePriority(directory: data, topic: topic, configured: configured)
        } catch let e as LivePriorityMismatch {
            throw CLIError(code: ExitCode.config, message: "the shards in \(e.directory) were built under source priority \(e.recorded), but \(configFile ?? "the built-in configuration") says \(e.configured): pass the --config they were built with")
        }
    }
}

/// `daybook diff`: what a new priority would change, without touching the live projection.
enum DiffCommand: Subcommand {
    static let name = "diff"
    static let abstract = "What-if: rebuild under another priority into a temporary place and print the rows that would change."
    static let usage = "diff --brokers B --data DIR --config NEW [--format table|json|csv] [--partition P…]"
    static let options = RebuildOptions.common + [
        SharedOptions.config("The configuration whose source priority to try (required), with the metrics the live one adds.", value: "NEW"),
        SharedOptions.format("table (default), json (one object per line), or csv."),
    ]
    static let discussion = """
    Projects the log from offset 0 under NEW's source priority into a hidden temporary
    directory inside DIR (removed at the end), up to each live shard's offset, and prints
    every (user, metric, day) whose value would change: the live value, the value under
    NEW, and the change ('no row' where a day has none). Rows whose value stays and only
    the per-source shares move are not listed. Rows are grouped by partition, in (user,
    metric, day) order within one. Nothing live is touched; safe beside a running projector.

    json: {"user":…,"metric":…,"day":…,"live":V,"rebuilt":V,"change":D} where V is a number
    (cumulative metrics), an object {"min","max","avg","count"} (heart rate), or null (no
    row), and D is rebuilt − live for numbers (null otherwise).

    EXIT CODES: 0 done (whether or not rows would change; the count is on stderr); 64 usage
    (--config is required); 66 DIR missing; 69 Kafka unreachable; 74 storage failure; 75
    interrupted (rerun); 76 the log does not hold what is needed, or is not the live
    shards' (checked before the build, as for verify); 78 bad configuration.

    EXAMPLE:
      daybook diff --brokers localhost:9092 --data /var/lib/daybook --config phone-first.json --format csv
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.value("--config") != nil else { throw CLIError.usage("diff needs --config NEW: the configuration whose priority to try") }
        let format = try arguments.format(["table", "json", "csv"])
        let (config, connectTimeout) = try KafkaOptions.load(arguments, command: name)
        let data = try arguments.data(for: "diff")
        try RebuildOptions.requireData(data)
        let request = try RebuildOptions.request(arguments, command: name, priority: config.priority, config: config, connectTimeout: connectTimeout)
        var out = OutputBuffer()
        var changed = 0
        switch format {
        case "csv": out.line("user,metric,day,live,rebuilt,change")
        case "table": out.line("user · metric · day: live → under \(config.priority.fingerprint) (change)")
        default: break
        }
        let outcome = try CompareRun.run(.values, request, config: config, arguments: arguments, command: name) { _, d in
            changed += 1
            let change = d.change
            switch format {
            case "json":
                out.line("{\"user\":\(JSONWriter.quoted(d.key.user)),\"metric\":\"\(d.key.metric.rawValue)\",\"day\":\"\(d.key.day)\",\"live\":\(json(d.live)),\"rebuilt\":\(json(d.rebuilt)),\"change\":\(change.map(DayTotal.format) ?? "null")}")
            case "csv":
                out.line("\(TerminalText.csvField(d.key.user)),\(d.key.metric.rawValue),\(d.key.day),\(TerminalText.csvField(plain(d.live))),\(TerminalText.csvField(plain(d.rebuilt))),\(change.map(DayTotal.format) ?? "")")
            default:
                let delta = change.map { ($0 >= 0 ? " (+" : " (") + DayTotal.format($0) + ")" } ?? ""
                out.line("\(TerminalText.escaped(d.key.user)) · \(d.key.metric.rawValue) · \(d.key.day): \(plain(d.live)) → \(plain(d.rebuilt))\(delta)")
            }
        }
        try out.flush()
        printError("diff: \(changed) of \(outcome.rows) rows would change under \(config.priority.fingerprint) (\(outcome.offsets.count) partition\(outcome.offsets.count == 1 ? "" : "s") compared up to the live offsets); nothing live was touched")
        return ExitCode.ok
    }

    static func plain(_ t: DayTotal?) -> String {
        guard let t else { return "no row" }
        switch t.summary {
        case .cumulative(let v, _): return DayTotal.format(v)
        case .discrete(let lo, let hi, let avg, let n, let latest):
            return "min \(DayTotal.format(lo)) max \(DayTotal.format(hi)) avg \(DayTotal.format(avg)) n \(n) latest \(latest.map { DayTotal.format($0) } ?? "unknown")"
        }
    }

    static func json(_ t: DayTotal?) -> String {
        guard let t else { return "null" }
        switch t.summary {
        case .cumulative(let v, _): return DayTotal.format(v)
        case .discrete:
            return "{" + t.summary.jsonFields + "}"
        }
    }
}

/// The shared run of `verify` and `diff`: a temporary build compared row by row.
enum CompareRun {
    static func run(_ scope: ProjectionComparison.Scope, _ request: RebuildRequest, config: DaybookConfiguration,
                    arguments: ParsedArguments, command: String, report: (Int32, RowDifference) -> Void,
                    syncReport: (Int32, SyncDifference) -> Void = { _, _ in }) throws -> ShadowBuild.Outcome {
        Shutdown.install()
        var reporter = ProgressReporter()
        do {
            let outcome = try ProjectionComparison(request: request, access: RebuildOptions.access(config), logger: RebuildOptions.logger(command, arguments))
                .run(scope, shouldStop: { Shutdown.isRequested }, progress: { reporter.update($0.line(command)) }, row: report, sync: syncReport)
            reporter.finish()
            return outcome
        } catch {
            reporter.finish()
            throw CLIError(error)
        }
    }

    static func describe(_ t: DayTotal?) -> String {
        guard let t else { return "no row" }
        switch t.summary {
        case .cumulative(let v, let shares):
            return DayTotal.format(v) + " (" + shares.map { "\(TerminalText.escaped($0.source)) \(DayTotal.format($0.value))" }.joined(separator: ", ") + ")"
        case .discrete(let lo, let hi, let avg, let n, let latest):
            return TotalsCommand.readings(lo, hi, avg, n, latest)
        }
    }
}
