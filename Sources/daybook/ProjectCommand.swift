import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookMetrics
import DaybookPipeline
import DaybookServe
import Foundation

/// `daybook project`: the projector, Kafka → core → SQLite shards.
enum ProjectCommand: Subcommand {
    static let name = "project"
    static let abstract = "Project health-samples into SQLite read models (one shard per partition)."
    static let usage = "project --brokers B --data DIR [--config FILE] [--group G] [--until-caught-up] [--solo] [--standby PARTITIONS|all] [--advertise URL] [--connect-timeout S] [--metrics-file PATH]"
    static let options = [
        KafkaOptions.brokers,
        SharedOptions.data("Directory of the shards (created, mode 0700; files 0600)."),
        SharedOptions.config("Source priority, added metrics and Kafka settings (config/daybook.json)."),
        OptionSpec(name: "--group", value: "G", help: "Consumer group (default kafka.consumer.group.id, else daybook-projector)."),
        SharedOptions.topic("Topic to consume (default health-samples)."),
        OptionSpec(name: "--until-caught-up", value: nil, help: "Exit 0 once every assigned partition has reached the end of the log."),
        OptionSpec(name: "--solo", value: nil, help: "Take all partitions directly, without a group (instant restarts when running alone)."),
        OptionSpec(name: "--standby", value: "PARTITIONS", help: "Also keep warm standby shards of these partitions (0,3,5, or all) while this member does not own them (a group member: not with --solo). A partition the topic does not have is refused (64)."),
        OptionSpec(name: "--advertise", value: "URL", help: "The URL of this member's read service (daybook serve), put in its owner claims: readers elsewhere redirect its users there."),
        KafkaOptions.connectTimeout,
        OptionSpec(name: "--metrics-file", value: "PATH", help: "Write Prometheus metrics to PATH every 5 s, atomically (node_exporter textfile; see METRICS)."),
        OptionSpec(name: "--verbose", value: nil, help: "Log assignments and shard openings."),
    ]
    static let discussion = """
    Each partition has its own shard file in DIR holding its live samples, tombstones,
    per-day totals (with a per-source breakdown), dead letters, and the partition's next
    offset, written in the same transaction as the changes it covers. On assignment each
    partition starts at its shard's offset, so crashes, restarts and rebalances never lose
    or double-count an event; a missing shard is rebuilt from offset 0. Invalid events go
    to the shard's dead-letter table and to health-samples.dlq with the reason in a header.

    MEMORY is bounded, whatever the history: the shards are the state store, and opening
    one reads only its offset. A cache of recently used users' samples (state.cache_mb,
    default 32, shared by all partitions: 3/4 samples, 1/4 SQLite pages) is filled as
    batches need it and evicted least-recently-used. A partition's batch commits at its
    share of 524,288 events (4,096 at 128 partitions, 16,384 at 32 or fewer) or at the
    partition's end. Decoded events waiting for their partition's batch are bounded by
    state.batch_mb (default 72, all partitions together; when full, the fullest batches
    commit first). Prefetched messages are bounded in
    total by kafka.consumer.prefetch_mb (default 16 MB of payloads, all partitions
    together; librdkafka's per-message overhead makes that up to ~48 MB at the peak).
    --verbose logs the whole account at start (152 MiB by default, plus ~36 MiB for the
    process). Measured peak RSS: 164-170 MiB at 1M events over 64 partitions, 212 at 2M
    over 64, 222-230 MiB at 4M over 128 (solo; 235 as a group member; a 2-core machine);
    BENCHMARKS.md, "Issue 26", and 'daybook bench'.

    Progress (events/s, lag per partition, ETA) is a live line on a terminal and a log line
    every 5 s otherwise. SIGINT/SIGTERM stop after the batch in hand is committed.

    METRICS: with --metrics-file PATH the projector writes its metrics in the Prometheus
    text format (0.0.4) at start, every 5 s and at exit, for node_exporter's textfile
    collector: put PATH in its --collector.textfile.directory, named *.prom (the collector
    reads only those). Each write goes to PATH.tmp-PID beside it, is fsynced and renamed
    over PATH, so a scrape never reads half a file. In it, labelled by topic: events
    applied, dead letters, messages skipped as already applied and per-day rows
    recomputed (counters, daybook_*_total, counted since this process started, so they
    restart at 0 with it: Prometheus's rate() and increase() take that as a reset); the
    batch time histogram (daybook_batch_duration_seconds, 1 ms to 30 s); the Kafka time
    of the newest message applied (daybook_last_applied_event_timestamp_seconds);
    daybook_projector_up (1, then 0 in the file written at exit) and the start time;
    per assigned partition its lag and next offset. The counts at exit are the summary
    line's. A failed write warns and the projector carries on; a missing directory
    (exit 66) or a file that cannot be written at start (74) is refused before anything
    is read. A projector killed with -9 leaves its last file: alert on node_exporter's
    node_textfile_mtime_seconds too.

    WARM STANDBY: with --standby 0,3 (or all), a member also follows the partitions it does
    not own, read-only, into shards of its own DIR (a consumer of its own that never joins
    the group nor commits; dead letters are recorded, not forwarded: the owner forwards
    them). When the group moves such a partition here (its owner died or left) it starts
    from the standby shard's offset instead of 0: caught up in seconds instead of a
    rebuild of the whole partition. The cost is the reading and writing of every standby
    partition on this machine too. 'daybook status' shows each shard's role (owned,
    standby) and lag; 'daybook totals' says when it read a standby shard (it may lag);
    standbys need a DIR of this member's own (two members on one DIR would hold each
    other's shards); the metrics file has daybook_standby_lag_messages, and the summary
    line at exit what the standby shards applied. Guides/Operations.md, "Running on
    several machines", has the measured takeover times.

    Before reading a partition the projector checks its shard against the log: the shard's
    next offset must lie between the partition's first and last offsets, and the shard must
    come from the same cluster (its id is recorded in the shard). A gap (retention deleted
    messages the shard never saw) or another log (topic recreated, other cluster) stops the
    projector with exit 76 and says what to do; no offset is ever moved past an unapplied
    event, and the consumer never resets a position by itself (auto.offset.reset=error).

    A user lives in one partition: each message's key is checked against its partition
    under the producers' partitioner (kafka.partitioner: murmur2_random, the default, as
    Java clients and daybook publish; consistent_random for librdkafka's default). A
    message in another partition is a dead letter, code wrong_partition, naming both
    partitions; 'daybook dlq replay' republishes it where it belongs.

    READS: with --advertise URL (e.g. http://node-b:8080, where 'daybook serve' runs
    beside this projector on the same DIR) the URL goes into this member's owner claims,
    so a read service of another member redirects requests for this member's users there
    (Guides/Reading.md).

    EXIT CODES: 0 stopped or caught up; 74 storage failure (disk full, read-only; also
    a --metrics-file that cannot be written at start): fix it and restart; 75 a shard is
    held by another projector (exits at once); 76 the log does not hold what a shard
    needs (gap, recreated topic, other cluster, a shard of a partition the topic does
    not have); 78 bad configuration, or a shard built
    under another source priority (rebuild into a new --data); 65 a file in DIR is not a
    shard (damaged or foreign: move it away, it is rebuilt); 66 the directory of
    --metrics-file is missing; 69 Kafka unreachable within --connect-timeout, or the
    topic is missing; 64 usage (including a malformed --brokers, a --metrics-file
    that is a directory, or a --standby partition the topic does not have).

    EXAMPLES:
      daybook project --brokers localhost:9092 --data /var/lib/daybook
      daybook project --brokers localhost:9092 --data /tmp/rebuild --group rebuild-1 --until-caught-up
      daybook project --brokers localhost:9092 --data /var/lib/daybook --metrics-file /var/lib/node_exporter/textfile/daybook.prom
    """

    /// `all`, or partition numbers separated by commas.
    static func standbyChoice(_ text: String) throws -> StandbyChoice {
        if text == "all" { return .all }
        var out = Set<Int32>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let p = Int32(part.trimmingCharacters(in: .whitespaces)), p >= 0 else {
                throw CLIError.usage("--standby '\(TerminalText.escaped(String(part)))' is not a partition number: give all, or whole numbers from 0 separated by commas (0,3,5)")
            }
            out.insert(p)
        }
        return .partitions(out.sorted())
    }

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("project takes no positional arguments") }
        let data = try arguments.data(for: "project")
        var (config, connectTimeout) = try KafkaOptions.load(arguments, command: "project")
        if let group = arguments.value("--group") {
            guard !group.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw CLIError.usage("--group '\(TerminalText.escaped(group))' is blank; name the consumer group (default daybook-projector)")
            }
            config.consumer.groupID = group
        }
        var options = ProjectorOptions(dataDirectory: data)
        options.solo = arguments.has("--solo")
        options.connectTimeout = connectTimeout
        options.topic = try arguments.topic(default: options.topic)
        options.cacheBytes = config.cacheMegabytes << 20
        options.stagingBytes = config.batchMegabytes << 20
        options.maximumBatchDelay = .milliseconds(config.batchDelayMilliseconds)
        if let standby = arguments.value("--standby") {
            guard !options.solo else {
                throw CLIError.usage("--standby keeps shards of partitions this member does not own, but --solo owns every partition it reads: give one of them")
            }
            options.standby = try standbyChoice(standby)
        }
        if let url = arguments.value("--advertise") {
            guard !options.solo else { throw CLIError.usage("--advertise puts a URL in this member's owner claims, but --solo is no member of a group: give one of them") }
            if let problem = ListenAddress.advertiseProblem(url) { throw CLIError.usage("--advertise '\(TerminalText.escaped(url))' \(problem)") }
            options.advertisedURL = ListenAddress.normalized(url)
        }
        let logger = Logger(label: "project", level: arguments.has("--verbose") ? .info : .warning)
        if let standby = options.standby {
            // Before anything is written: a running projector would only warn and follow the others.
            let log = LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer)
            do {
                try standby.check(topic: options.topic, in: log, timeout: connectTimeout, logger: logger)
            } catch let error as ProjectorError where error.kind == .badRequest && error.partition != nil {
                throw CLIError.usage("--standby \(error.partition ?? 0): \(error.message); give all, or partitions the topic has")
            }
        }
        // Checked and first written before the projector starts: a wrong path is told at once.
        var metrics = try arguments.value("--metrics-file").map { path throws(CLIError) in
            guard !path.isEmpty else { throw CLIError.usage("--metrics-file is empty; name a file such as /var/lib/node_exporter/textfile/daybook.prom") }
            do throws(MetricsFileError) {
                return try ProjectorMetrics(path: path, topic: options.topic, logger: logger, name: "--metrics-file \(path)")
            } catch {
                throw CLIError.metricsFile(error)
            }
        }

        logger.info(MemoryBudget(options, prefetchBytes: config.consumer.prefetchBytes).description)
        Shutdown.install()
        let summary: ProjectorSummary
        var reporter = ProgressReporter()
        var projector: Projector?
        do {
            let running = try Projector(connection: config.connection, consumer: config.consumer, producer: config.producer,
                                        priority: config.priority, options: options,
                                        run: .live(untilCaughtUp: arguments.has("--until-caught-up"), recordingRoles: true), logger: logger)
            projector = running
            summary = try running.run(shouldStop: { Shutdown.isRequested }) { progress in
                reporter.update(progress.line)
                metrics?.update(progress)
            }
        } catch {
            // Exit codes by cause (Failures.swift): a held shard 75, another priority 78, not a shard 65, storage 74.
            reporter.finish()
            metrics?.finish(projector?.statistics ?? ProjectorStatistics())
            throw CLIError(error)
        }
        reporter.finish()
        // The same counts as the summary line below: both are the projector's own.
        metrics?.finish(projector?.statistics ?? ProjectorStatistics())
        printError(summaryLine(summary, standby: projector?.standbyStatistics))
        return ExitCode.ok
    }

    /// The line `project` ends with: what the run applied, and what its warm standby shards
    /// applied when it kept any (`standby`, nil without --standby).
    static func summaryLine(_ summary: ProjectorSummary, standby: StandbyStatistics?) -> String {
        let rate = summary.seconds > 0 ? Double(summary.applied + summary.deadLetters) / summary.seconds : 0
        let stale = summary.staleResends > 0 ? ", \(summary.staleResends) stale re-sends ignored" : ""
        let standbyText = standby.map { "; standby shards: applied \($0.applied), dead letters \($0.deadLetters) (recorded there; the owners forward them)" } ?? ""
        return "project: applied \(summary.applied), dead letters \(summary.deadLetters), skipped \(summary.skipped) already applied, \(summary.rowsChanged) row updates, \(summary.batches) batches in \(String(format: "%.2f", summary.seconds)) s (\(String(format: "%.0f", rate)) events/s)\(stale)\(standbyText)\(summary.caughtUp ? "; caught up" : "")"
    }
}
