import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookStore
import Foundation

/// `daybook replay`: re-read a suffix of the log into the live shards.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static let abstract = "Re-read a suffix of the log into the live shards (repairs rows; never rolls a shard back)."
    static let usage = "replay --brokers B --data DIR [--config F] (--from-offset N | --from-time T | --by-duration D) [--partition P]... [--dry-run] [--connect-timeout S]"
    static let options = [
        KafkaOptions.brokers,
        OptionSpec(name: "--data", value: "DIR", help: "Directory of the live shards, as given to project (must exist)."),
        OptionSpec(name: "--config", value: "F", help: "Source priority and Kafka settings (config/daybook.json)."),
        OptionSpec(name: "--from-offset", value: "N", help: "Re-read every chosen partition from offset N."),
        OptionSpec(name: "--from-time", value: "T", help: "Re-read from each partition's first message at or after T (RFC 3339: 2024-03-25T00:00:00Z)."),
        OptionSpec(name: "--by-duration", value: "D", help: "Re-read what arrived in the last D: a whole number and s, m, h or d (90s, 15m, 6h, 7d)."),
        OptionSpec(name: "--partition", value: "P", help: "Only partition P; repeat for several (default: every partition of the topic).", repeatable: true),
        OptionSpec(name: "--topic", value: "TOPIC", help: "Topic to re-read (default health-samples)."),
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
    exits 75 at once and changes nothing. --dry-run only reads, beside a running projector
    too. Start the projector again afterwards: it goes on from the shards' offsets.

    Progress (events/s, lag counted from the re-read position, ETA) as for 'project'.
    SIGINT/SIGTERM stop after the batch in hand; run replay again to finish.

    EXIT CODES: 0 caught up, or --dry-run printed; 64 usage (none or several of
    --from-offset/--from-time/--by-duration, a malformed value, a partition the topic does
    not have, a start before the log's first offset); 66 DIR missing; 65 a file in DIR is
    not a shard; 69 Kafka unreachable within --connect-timeout, or the topic is missing;
    74 storage failure; 75 a shard is held by a running projector: stop it first; 76 the
    log does not hold what a shard needs (gap, recreated topic, other cluster, fewer
    partitions than the shards; --dry-run checks it too); 78 bad
    configuration, or shards built under another source priority.

    EXAMPLES:
      daybook replay --brokers localhost:9092 --data /var/lib/daybook --from-time 2024-03-25T00:00:00Z --dry-run
      daybook replay --brokers localhost:9092 --data /var/lib/daybook --by-duration 6h --partition 3 --partition 5
      daybook replay --brokers localhost:9092 --data /var/lib/daybook --from-offset 0 --partition 2
    """

    /// Where the re-read starts, as asked.
    enum Start: Equatable {
        case offset(Int64)
        /// Milliseconds since 1970 (Kafka timestamps), and the moment as the user gave it.
        case time(milliseconds: Int64, described: String)
    }

    static let modes = ["--from-offset", "--from-time", "--by-duration"]

    /// The start the command line asks for; a usage error naming the value otherwise.
    static func start(_ arguments: ParsedArguments, now: Date = Date()) throws -> Start {
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

    /// One partition's plan.
    struct Plan {
        var partition: Int32
        /// The shard's next offset (0 when there is no shard yet).
        var shardOffset: Int64
        var hasShard: Bool
        /// Where the replay starts: the asked start, or the shard's offset when that is lower.
        var start: Int64
        /// The log's end when planned.
        var end: Int64

        var rereads: Int64 { shardOffset - start }
        var newEvents: Int64 { max(0, end - shardOffset) }

        /// The `--dry-run` line.
        var line: String {
            "partition \(partition): shard offset \(shardOffset)\(hasShard ? "" : " (no shard yet)"), start offset \(start), log end \(end): "
                + "would re-read offsets \(start)..<\(shardOffset) (\(rereads) events below the shard's offset), then apply \(newEvents) new"
        }
    }

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("replay takes no positional arguments") }
        guard let data = arguments.value("--data") else { throw CLIError.usage("replay needs --data DIR (the live shards, as given to project)") }
        let start = try start(arguments)
        let chosen = try arguments.partitions()
        let (config, connectTimeout) = try KafkaOptions.load(arguments, command: "replay")
        let topic = try arguments.topic(default: "health-samples")
        let dryRun = arguments.has("--dry-run")
        let logger = Logger(label: "replay", level: arguments.has("--verbose") ? .info : .warning)

        // The live shards: a missing DIR is 66 (a typo must not start a new projection).
        let layout: DataLayout
        do {
            layout = try DataLayout.read(data)
        } catch {
            throw CLIError(error)
        }
        Shutdown.install()
        let plans = try plan(start, partitions: chosen, topic: topic, data: data, layout: layout, config: config,
                             connectTimeout: connectTimeout, logger: logger)
        if dryRun {
            var out = OutputBuffer()
            for plan in plans { out.line(plan.line) }
            try out.flush()
            return ExitCode.ok
        }
        for plan in plans {
            printError("replay: partition \(plan.partition): re-reading offsets \(plan.start)..<\(plan.shardOffset) (\(plan.rereads) events below the shard's offset), then applying \(plan.newEvents) new")
        }

        var options = ProjectorOptions(dataDirectory: data)
        options.solo = true
        options.untilCaughtUp = true
        options.partitions = plans.map(\.partition)
        options.startOffsets = Dictionary(uniqueKeysWithValues: plans.filter { $0.start < $0.shardOffset }.map { ($0.partition, $0.start) })
        options.connectTimeout = connectTimeout
        options.topic = topic
        options.cacheBytes = config.cacheMegabytes << 20
        options.followGenerations = false
        let summary: ProjectorSummary
        var reporter = ProgressReporter()
        do {
            let projector = try Projector(connection: config.connection, consumer: config.consumer, producer: config.producer,
                                          priority: config.priority, options: options, logger: logger)
            summary = try projector.run(shouldStop: { Shutdown.isRequested }) { progress in
                reporter.update(progress.line("replay"))
            }
        } catch {
            reporter.finish()
            var failure = CLIError(error)
            if let e = error as? ProjectorError, e.shardKind == .locked {
                // Shards are locked when opened, before anything is read.
                failure.message += "\nreplay writes the live shards, and a shard has one writer: stop the projector for these partitions first, then run replay again (nothing was re-read or applied)."
            }
            throw failure
        }
        reporter.finish()
        // `applied` and `deadLetters` count every message read, `reread` those below the shards' offsets.
        let newlyApplied = summary.applied + summary.deadLetters - summary.reread
        let rate = summary.seconds > 0 ? Double(summary.applied + summary.deadLetters) / summary.seconds : 0
        let ending = summary.caughtUp ? "; caught up" : "; stopped before the end of the log: run replay again to finish"
        printError("replay: re-read \(summary.reread) below the shards' offsets, newly applied \(newlyApplied), \(summary.rowsChanged) rows recomputed, dead letters \(summary.deadLetters) (re-read ones are not recorded twice) in \(String(format: "%.2f", summary.seconds)) s (\(String(format: "%.0f", rate)) events/s)\(ending)")
        return ExitCode.ok
    }

    /// Reads the shards' offsets (read-only: safe beside a projector) and the log's offsets,
    /// and decides where each partition starts. Touches nothing.
    static func plan(_ start: Start, partitions chosen: [Int32]?, topic: String, data: String, layout: DataLayout,
                     config: DaybookConfiguration, connectTimeout: Duration, logger: Logger) throws -> [Plan] {
        var connection = config.connection
        // Each message read for a time lookup waits for the fetch before it: keep those short.
        connection.properties["fetch.wait.max.ms"] = "10"
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(connection: connection, configuration: config.consumer, logger: logger)
        } catch {
            throw CLIError(error)
        }
        defer { consumer.close() }
        let timeout = connectTimeout.wholeMilliseconds

        // The topic, asked in rounds of at most a second so that Ctrl-C is heard.
        let count: Int
        do {
            guard let n = try consumer.partitionCount(topic, within: connectTimeout, shouldStop: { Shutdown.isRequested }) else {
                throw CLIError(code: ExitCode.unavailable, message: "interrupted while reaching the Kafka cluster")
            }
            count = n
        } catch let error as KafkaError {
            throw CLIError(error)
        }
        let all = Array(0..<Int32(count))
        let partitions = chosen ?? all
        for p in partitions where !all.contains(p) {
            throw CLIError.usage("--partition \(p): \(topic) has no partition \(p): it has \(count) (0…\(count - 1))")
        }
        // The shards' cluster and partitions, as the run's projector checks them: a dry run
        // must refuse what the run would.
        do {
            try LiveLogCheck.check(directory: data, topic: topic, count: count, consumer: consumer, timeout: connectTimeout)
        } catch {
            throw CLIError(error)
        }

        var shardOffsets: [Int32: Int64] = [:]
        do {
            for shard in try ShardReader(directory: data).progress() where shard.topic == topic {
                shardOffsets[shard.partition] = shard.nextOffset
            }
        } catch {
            throw CLIError(error) // 65 not a shard, 74 storage
        }

        var marks: [Int32: (low: Int64, high: Int64)] = [:]
        do {
            for p in partitions { marks[p] = try consumer.watermarks(TopicPartition(topic, p), timeoutMilliseconds: timeout) }
        } catch {
            throw CLIError(code: ExitCode.unavailable, message: "reading the offsets of \(topic): \(error)")
        }

        var asked: [Int32: Int64] = [:]
        switch start {
        case .offset(let n):
            for p in partitions { asked[p] = n }
        case .time(let ms, let described):
            let tps = partitions.map { TopicPartition(topic, $0) }
            let found: [TopicPartition: KafkaConsumer.TimeOffset]
            do {
                found = try consumer.offsets(atOrAfter: ms, in: tps, timeoutMilliseconds: timeout)
            } catch {
                throw CLIError(code: ExitCode.unavailable, message: "looking up the offsets of \(described) in \(topic): \(error)")
            }
            let read = tps.filter { found[$0]?.byReading == true }
            if !read.isEmpty {
                printError("replay: the cluster's time index found no message at or after \(described) in \(read.map(\.description).joined(separator: ", ")), although the log has some (librdkafka's mock cluster behind 'daybook broker' keeps no time index): found by reading message timestamps")
            }
            for tp in tps {
                // No message that late: start at the end, nothing to re-read.
                asked[tp.partition] = found[tp]?.offset ?? marks[tp.partition]?.high ?? 0
            }
        }

        var plans: [Plan] = []
        for p in partitions {
            let tp = TopicPartition(topic, p)
            let (low, high) = marks[p] ?? (0, 0)
            let hasShard = FileManager.default.fileExists(atPath: layout.path(topic: topic, partition: p))
            let shardOffset = shardOffsets[p] ?? 0
            if shardOffset < low {
                throw CLIError(code: ExitCode.logMismatch, message: """
                    \(tp): the log starts at offset \(low), but the shard needs offset \(shardOffset) next: messages \(shardOffset)..<\(low) \
                    are gone (retention), so this shard cannot be made exact by replaying; nothing was read. See 'daybook project --help'.
                    """)
            }
            if shardOffset > high {
                throw CLIError(code: ExitCode.logMismatch, message: """
                    \(tp): the log ends at offset \(high), but the shard has applied offsets up to \(shardOffset - 1): this is not the \
                    log the shard was built from (a recreated topic, another cluster); nothing was read. See 'daybook project --help'.
                    """)
            }
            let wanted = asked[p] ?? shardOffset
            if wanted < low {
                throw CLIError.usage("\(tp): offset \(wanted) is before the first offset the log still holds (\(low)); re-read from \(low) or later")
            }
            if wanted > shardOffset {
                printError("replay: \(tp): start offset \(wanted) is above the shard's offset \(shardOffset): starting there would skip offsets \(shardOffset)..<\(wanted), which the shard has not applied yet, so it starts at \(shardOffset) (nothing to re-read)")
            }
            plans.append(Plan(partition: p, shardOffset: shardOffset, hasShard: hasShard, start: min(wanted, shardOffset), end: high))
        }
        return plans
    }
}
