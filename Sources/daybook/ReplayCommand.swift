import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookStore
import DaybookSupport
import Foundation

/// `daybook replay`: re-read a suffix of the log into the live shards.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static let abstract = "Re-read a suffix of the log into the live shards (repairs rows; never rolls a shard back)."
    static let usage = "replay --brokers B --data DIR [--config FILE] (--from-offset N | --from-time T | --by-duration D) [--partition P]... [--dry-run] [--connect-timeout S]"
    static let options = [
        KafkaOptions.brokers,
        SharedOptions.data("Directory of the live shards, as given to project (must exist)."),
        SharedOptions.config("Source priority, added metrics and Kafka settings (config/daybook.json)."),
        OptionSpec(name: "--from-offset", value: "N", help: "Re-read every chosen partition from offset N."),
        OptionSpec(name: "--from-time", value: "T", help: "Re-read from each partition's first message at or after T (RFC 3339: 2024-03-25T00:00:00Z)."),
        OptionSpec(name: "--by-duration", value: "D", help: "Re-read what arrived in the last D: a whole number and s, m, h or d (90s, 15m, 6h, 7d)."),
        OptionSpec(name: "--partition", value: "P", help: "Only partition P; repeat for several (default: every partition of the topic).", repeatable: true),
        SharedOptions.topic("Topic to re-read (default health-samples)."),
        OptionSpec(name: "--dry-run", value: nil, help: "Print per partition what would be re-read and applied; touch nothing."),
        KafkaOptions.connectTimeout,
        OptionSpec(name: "--verbose", value: nil, help: "Log shard openings."),
    ]
    static let discussion = """
    Re-reads each chosen partition from a start offset to the end of the log into the live
    shards, like 'project --solo --until-caught-up', then exits 0 with a summary: events
    re-read below the shards' offsets, events newly applied past them, rows recomputed.
    Use it when rows are wrong (edited by hand, written by a bug fixed since) and the
    events that made them are in the log.

    NOTHING IS ROLLED BACK. A shard keeps only the version in force of each sample, no
    history, so going back to offset N would mean rebuilding it from 0 to N: that is
    'daybook rebuild --partition P'. Instead each re-read event is checked against the
    version in force of its sample:
      - older than the version in force: not applied again;
      - the version in force but different from the stored copy, or missing from the
        shard: applied (the log wins over a hand edit);
      - a deleted sample stays deleted;
    and every day a re-read event covers is recomputed from the samples (a deletion
    covers days only when it removes something). So a consistent shard is left unchanged
    (it never passes through a state that is not the projection of a log prefix), and
    hand-edited rows on the days the re-read events cover come back. NOT REPAIRED: a row
    on a day no re-read event covers; a stored sample edited or removed by hand whose
    version in force is older than the start (days recomputed around it use the edited
    copy); a hand-removed tombstone whose deletion is older than the start (a re-read
    re-send of that sample brings it back); a sample inserted by hand with a uuid the log
    never had (it stays, and counts in every recomputed day it overlaps). Rebuild for those.

    WHERE EACH PARTITION STARTS. --from-offset N: offset N in every chosen partition.
    --from-time T, and --by-duration D (T = now - D): the first offset whose message
    timestamp is at or after T, from Kafka's time index; a partition with no message that
    late starts at its end (nothing to re-read). T is an RFC 3339 instant with a UTC offset,
    e.g. 2024-03-25T00:00:00Z or 2024-03-25T02:00:00+02:00. A start above a shard's offset
    cannot be honoured (the events in between would be skipped): that partition starts at
    its shard's offset instead, and replay says so. A start before the first offset the log
    still holds is refused.

    ONE WRITER PER SHARD. replay writes the live shards: stop the projector for those
    partitions first. A shard's samples, rows and offset are written together, in one
    transaction, by the one process holding its lock; while a projector holds it replay
    exits 75 at once, before printing a plan, and changes nothing; --dry-run too (it only
    reads, but its plan could not be carried out). Start the projector again afterwards:
    it goes on from the shards' offsets.

    Progress (events/s, lag counted from the re-read position, ETA) as for 'project'.
    SIGINT/SIGTERM stop after the batch in hand; run replay again to finish.

    EXIT CODES: 0 caught up, or --dry-run printed; 64 usage (none or several of
    --from-offset/--from-time/--by-duration, a malformed value, a partition the topic does
    not have, a start before the log's first offset); 66 DIR missing; 65 a file in DIR is
    not a shard; 69 Kafka unreachable within --connect-timeout, or the topic is missing;
    74 storage failure; 75 a shard is held by a running projector (--dry-run too): stop it first; 76 the
    log does not hold what a shard needs (gap, recreated topic, other cluster, fewer
    partitions than the shards; --dry-run checks it too); 78 bad
    configuration, or shards built under another source priority.

    EXAMPLES:
      daybook replay --brokers localhost:9092 --data /var/lib/daybook --from-time 2024-03-25T00:00:00Z --dry-run
      daybook replay --brokers localhost:9092 --data /var/lib/daybook --by-duration 6h --partition 3 --partition 5
      daybook replay --brokers localhost:9092 --data /var/lib/daybook --from-offset 0 --partition 2
    """

    static let modes = ["--from-offset", "--from-time", "--by-duration"]

    /// The start the command line asks for; a usage error naming the value otherwise.
    static func start(_ arguments: ParsedArguments, now: Date = Date()) throws -> ReplayStart {
        let given = modes.filter { arguments.value($0) != nil }
        guard given.count == 1 else {
            if given.isEmpty {
                throw CLIError.usage("replay needs where to start: --from-offset N, --from-time T (RFC 3339, e.g. 2024-03-25T00:00:00Z) or --by-duration D (e.g. 6h)")
            }
            throw CLIError.usage("give one of --from-offset, --from-time and --by-duration, not \(given.joined(separator: " and "))")
        }
        if let text = arguments.value("--from-offset") {
            guard let n = Int64(text), n >= 0 else {
                throw CLIError.usage("--from-offset '\(TerminalText.escaped(text))' is not an offset: give a whole number from 0 (where each partition is re-read from)")
            }
            return .offset(n)
        }
        if let text = arguments.value("--from-time") {
            let accepted = "give an RFC 3339 instant with a UTC offset, e.g. 2024-03-25T00:00:00Z or 2024-03-25T02:00:00+02:00"
            let instant: Instant
            do {
                instant = try Instant(rfc3339: text)
            } catch {
                let reason = error.reason.hasPrefix("is not an RFC 3339") ? "is not an RFC 3339 instant" : error.reason
                throw CLIError.usage("--from-time '\(TerminalText.escaped(text))' \(reason): \(accepted)")
            }
            guard instant.nanoseconds >= 0 else {
                throw CLIError.usage("--from-time '\(TerminalText.escaped(text))' is before 1970-01-01T00:00:00Z, where Kafka timestamps start: give that or a later instant")
            }
            // The first whole millisecond at or after the instant: Kafka timestamps are milliseconds.
            let ms = instant.nanoseconds / 1_000_000 + (instant.nanoseconds % 1_000_000 == 0 ? 0 : 1)
            return .time(milliseconds: ms, described: "\(instant)")
        }
        let text = arguments.value("--by-duration") ?? ""
        guard let seconds = DurationText.seconds(text) else {
            throw CLIError.usage("--by-duration '\(TerminalText.escaped(text))' is not a duration: give \(DurationText.rule)")
        }
        let nowMilliseconds = Int64((now.timeIntervalSince1970 * 1_000).rounded(.down))
        let ms = max(0, nowMilliseconds - seconds * 1_000)
        return .time(milliseconds: ms, described: "\(Instant(nanoseconds: ms * 1_000_000)) (now - \(text))")
    }

    /// The `--dry-run` line of a partition's plan.
    static func line(_ plan: ReplayPlan) -> String {
        "partition \(plan.partition): shard offset \(plan.shardOffset)\(plan.hasShard ? "" : " (no shard yet)"), start offset \(plan.start), log end \(plan.end): "
            + "would re-read offsets \(plan.start)..<\(plan.shardOffset) (\(plan.rereads) events below the shard's offset), then apply \(plan.newEvents) new"
    }

    /// What planning tells on stderr.
    static func describe(_ note: ReplayNote) -> String {
        switch note {
        case .foundByReading(let tps, let described):
            return "replay: the cluster's time index found no message at or after \(described) in \(tps.map(\.description).joined(separator: ", ")), although the log has some (librdkafka's mock cluster behind 'daybook broker' keeps no time index): found by reading message timestamps"
        case .startAboveShard(let tp, let asked, let shardOffset):
            return "replay: \(tp): start offset \(asked) is above the shard's offset \(shardOffset): starting there would skip offsets \(shardOffset)..<\(asked), which the shard has not applied yet, so it starts at \(shardOffset) (nothing to re-read)"
        }
    }

    /// What follows a shard held by another process.
    static let stopTheProjector = "replay writes the live shards, and a shard has one writer: stop the projector for these partitions first, then run replay again (nothing was re-read or applied)."

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("replay takes no positional arguments") }
        let data = try arguments.data(for: "replay", hint: " (the live shards, as given to project)")
        let start = try start(arguments)
        let chosen = try arguments.partitions()
        let (config, connectTimeout) = try KafkaOptions.load(arguments, command: "replay")
        let topic = try arguments.topic(default: "health-samples")
        let dryRun = arguments.has("--dry-run")
        let logger = Logger(label: "replay", level: arguments.has("--verbose") ? .info : .warning)

        var replayer = Replayer(directory: data, access: LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer),
                                priority: config.priority, logger: logger)
        replayer.topic = topic
        replayer.connectTimeout = connectTimeout
        replayer.cacheBytes = config.cacheMegabytes << 20
        Shutdown.install()
        let plans: [ReplayPlan]
        do {
            // The live shards must exist: a missing DIR is 66 (a typo must not start a new projection).
            plans = try replayer.plan(start, partitions: chosen, shouldStop: { Shutdown.isRequested }) { printError(describe($0)) }
        } catch let error as ProjectorError where error.kind == .badRequest && error.partition != nil {
            throw CLIError.usage("--partition \(error.partition ?? 0): \(error.message)")
        } catch let error as ProjectorError where error.shardKind == .locked {
            var failure = CLIError(error)
            failure.message += "\n" + stopTheProjector
            throw failure
        }
        if dryRun {
            var out = OutputBuffer()
            for plan in plans { out.line(line(plan)) }
            try out.flush()
            return ExitCode.ok
        }
        for plan in plans {
            printError("replay: partition \(plan.partition): re-reading offsets \(plan.start)..<\(plan.shardOffset) (\(plan.rereads) events below the shard's offset), then applying \(plan.newEvents) new")
        }

        let summary: ProjectorSummary
        var reporter = ProgressReporter()
        do {
            summary = try replayer.run(plans, shouldStop: { Shutdown.isRequested }) { progress in
                reporter.update(progress.line("replay"))
            }
        } catch {
            reporter.finish()
            var failure = CLIError(error)
            if let e = error as? ProjectorError, e.shardKind == .locked {
                // Shards are locked when opened, before anything is read.
                failure.message += "\n" + stopTheProjector
            }
            throw failure
        }
        reporter.finish()
        // `applied` and `deadLetters` count every message read, `reread` those below the shards' offsets.
        let newlyApplied = summary.newlyApplied
        let rate = summary.seconds > 0 ? Double(summary.applied + summary.deadLetters) / summary.seconds : 0
        let ending = summary.caughtUp ? "; caught up" : "; stopped before the end of the log: run replay again to finish"
        printError("replay: re-read \(summary.reread) below the shards' offsets, newly applied \(newlyApplied), \(summary.rowsChanged) rows recomputed, dead letters \(summary.deadLetters) (re-read ones are not recorded twice) in \(String(format: "%.2f", summary.seconds)) s (\(String(format: "%.0f", rate)) events/s)\(ending)")
        return ExitCode.ok
    }
}
