import DaybookBench
import DaybookCore
import Foundation

/// `daybook bench`: the pipeline benchmark (DaybookBench's `PipelineBench`); `bench core`: how
/// fast the core resolves a realistic mix of samples (`CoreBench`); `bench generate`: that
/// realistic log (`SyntheticLog`).
enum BenchCommand: Subcommand {
    static let name = "bench"
    static let abstract = "Measure throughput: the pipeline beside kcat (default), the core, or generate a log."
    static let usage = """
    bench [pipeline] [--events N] [--partitions N] [--users N] [--seed N] [--uuids canonical|names] [--config FILE] [--json]
           daybook bench core|generate [--samples N] [--users N] [--seed N] [--order user|arrival] [--uuids canonical|names]
    """
    static let options = [
        OptionSpec(name: "--events", value: "N", help: "pipeline: events in the log (default 1000000)."),
        OptionSpec(name: "--partitions", value: "N", help: "pipeline: partitions of health-samples (default 64)."),
        SharedOptions.config("pipeline: passed to every 'daybook project' run (e.g. a small state cache)."),
        OptionSpec(name: "--callgrind-events", value: "N", help: "pipeline: events of the log instructions are counted on under callgrind (default 20000; 0 skips it)."),
        OptionSpec(name: "--json", value: nil, help: "pipeline: print only the JSON line (no table)."),
        OptionSpec(name: "--samples", value: "N", help: "core, generate: about how many samples to generate (default 1000000)."),
        OptionSpec(name: "--users", value: "N", help: "Users to spread them over (default 200)."),
        OptionSpec(name: "--seed", value: "N", help: "Random seed, for repeatable data (default 1)."),
        OptionSpec(name: "--order", value: "ORDER", help: "generate: user (user by user, the default) or arrival (the same events by sync hour, users interleaved)."),
        OptionSpec(name: "--uuids", value: "FORM", help: "pipeline, generate: canonical (upper-case UUIDs, as HealthKit and Health Connect write them; the default) or names (user-3-0-259-watch, the logs measured before 2026-12-05)."),
    ]
    static let discussion = """
    PIPELINE (the default; 'bench pipeline' is the same) measures, in one run, on this
    machine, with child processes of this binary and kcat:
      1. generates a realistic log of exactly --events events (as 'bench generate' does:
         ~350 events per user-day; the last users' last day is cut to the count) into a
         temporary directory, removed at exit and on error; Ctrl-C (SIGINT, SIGTERM,
         SIGHUP) stops the children, removes it, then ends the bench by that signal;
      2. starts 'daybook broker --partitions N' (an embedded broker, a child process);
      3. times 'daybook publish' of the log, and beside it 'kcat -P' of the same events,
         keyed by user (-K), with publish's producer settings (lz4, linger.ms 5, idempotence,
         acks=all, murmur2 partitioner) into a second broker;
      4. times raw librdkafka consumption of the published topic, key and payload read
         and counted here: 'kcat -C -e' over all partitions (raw direct) and 'kcat -G' in a
         fresh consumer group (raw group, group join included), both with the projector's
         prefetch settings and fetch.wait.max.ms=10 (kcat's fastest); each until its last
         message; the fastest of 3 direct and 2 group runs counts (the embedded broker now
         and then holds a new consumer's first fetch for 0.5 s);
      5. times 'daybook project --solo --until-caught-up' and 'daybook project
         --until-caught-up' in a fresh group, each into a fresh data directory, with the
         peak RSS of each (VmHWM from /proc, sampled every 20 ms); each writes a
         --metrics-file, from which the bench reads its counts (applied + dead letters
         must be every event) and its state cache's hits, misses and evictions;
      6. times a restart of each on its finished data directory with nothing new to read
         (the group restart includes joining the group again, which waits until the
         previous run's membership expires: session.timeout.ms, 10 s by default); then
         scripts/naive-projector.py on the same log (confluent-kafka + sqlite3, each
         sample summed into its UTC day, no dedupe: what Daybook must beat 3×), when
         python3 can import confluent_kafka (pip install confluent-kafka; the script is
         found beside this binary's checkout or in the working directory, or named by
         DAYBOOK_NAIVE_PROJECTOR);
      7. publishes the same events in arrival order ('bench generate --order arrival':
         by sync hour, users interleaved, as a live stream and every rebuild of it
         deliver them) into a third broker and times 4 and 5 again on it;
      8. measures the core in process: apply + resolve of the same events (samples/s).
      9. counts instructions per event, which load cannot blur: 'daybook project --solo'
         and 'kcat -C' under valgrind's callgrind (every thread), reading a log of
         --callgrind-events events (default 20000; 0 skips it) in arrival order in 8
         partitions of a broker of their own, with state.batch_delay_ms 600000 (unless
         --config is given) so that batches close by size, not by the slowed clock. Needs
         valgrind on PATH; it takes about a minute for 20000 events.
    Progress goes to stderr. Stdout gets a table, then as its LAST line one JSON object:
      bench ("pipeline"), version, events, users, partitions, seed, cores, load_average
      (1-minute, at the start: other work skews every figure), log_bytes, config (the
      --config path or null), publish_seconds, publish_events_per_s,
      publish_peak_rss_mb, kcat_produce_seconds, kcat_produce_events_per_s,
      raw_direct_seconds, raw_direct_events_per_s, raw_group_seconds,
      raw_group_events_per_s, raw_group_first_message_seconds, project_solo_seconds,
      project_solo_events_per_s, project_solo_peak_rss_mb, project_group_seconds,
      project_group_events_per_s, project_group_peak_rss_mb, restart_solo_seconds,
      restart_solo_peak_rss_mb, restart_group_seconds, restart_group_peak_rss_mb,
      data_bytes (on disk, solo data directory), data_bytes_per_event,
      core_samples_per_s, ratio_project_solo_to_raw_direct,
      ratio_project_group_to_raw_group, ratio_publish_to_kcat_produce,
      project_solo_cache_hits, project_solo_cache_misses, project_solo_cache_evictions,
      project_group_cache_hits, project_group_cache_misses, project_group_cache_evictions,
      then the same events in arrival order: arrival_raw_direct_seconds,
      arrival_raw_direct_events_per_s, arrival_raw_group_seconds,
      arrival_raw_group_events_per_s, arrival_project_solo_seconds,
      arrival_project_solo_events_per_s, arrival_project_solo_peak_rss_mb,
      arrival_project_solo_cache_hits, arrival_project_solo_cache_misses,
      arrival_project_solo_cache_evictions, arrival_project_group_seconds,
      arrival_project_group_events_per_s, arrival_project_group_peak_rss_mb,
      arrival_project_group_cache_hits, arrival_project_group_cache_misses,
      arrival_project_group_cache_evictions, ratio_arrival_project_solo_to_raw_direct,
      ratio_arrival_project_group_to_raw_group, project_solo_cpus, project_group_cpus,
      arrival_project_solo_cpus, arrival_project_group_cpus (CPU time, user and system,
      over wall time: how many cores each projector kept busy), then instructions_events,
      project_solo_instructions_per_event, kcat_instructions_per_event and
      ratio_project_solo_to_kcat_instructions (null when not measured), naive_python_seconds
      and ratio_naive_python_to_project_solo (its seconds over project --solo's; null
      when the naive projector did not run). Cache hits and misses count (user,
      metric, UTC day) windows a batch's load needed (each once per load), found in the state cache or read from the
      shard; evictions count the windows dropped to fit state.cache_mb.
    Seconds are wall time from spawn to exit (kcat consumers: to their last message);
    events/s is events / seconds; peak RSS in MiB. BENCHMARKS.md explains each figure.
    kcat is required (scripts/setup installs it). The embedded broker keeps only each
    partition's newest ~5 MiB / 100,000 message sets: 64 partitions hold 1M events; the
    bench checks that every event is still there after publishing.

    CORE generates a realistic log in memory (a watch and a phone recording the same
    walks, manual entries, per-minute heart rate, a few travellers and DST weekends) and
    times, on one thread: decoding and validating the JSON lines, applying the events to
    the ledger, and resolving every (user, metric, day) total. Prints figures; asserts nothing.

    GENERATE writes such a log as JSON lines to stdout: user by user (--order user, the
    default), or in arrival order (--order arrival): the same events ordered by the hour
    each sample ends (its sync hour; a deletion keeps the hour of the sample it deletes),
    every user's events of an hour before the next hour's, so users interleave as in a
    live stream and in every rebuild of it (within an hour, events keep their order).
    Uuids are upper-case UUIDs made from a stable hash of each sample's name (--uuids
    canonical, the default; the pipeline bench's logs too), or the names themselves
    (--uuids names).

    EXIT CODES: 0 done; 64 usage; 66 --config FILE missing; 69 kcat is not on PATH, or an
    embedded broker did not start; 74 the temporary directory cannot be written; 76 the
    log did not fit the embedded broker's retention (use more --partitions); a step that
    fails exits with its daybook child's code (65-78, e.g. 74 disk full, 78 bad --config)
    or 70 (kcat failed, a count did not match, a child was killed or timed out), naming
    the step and its stderr tail.

    EXAMPLES:
      daybook bench                                   # 1M events, 64 partitions (~90 s)
      daybook bench --events 250000 --json | tail -n 1
      daybook bench --config small-cache.json         # project runs with that configuration
      daybook bench core --samples 1000000
      daybook bench generate --samples 1000000 > events.jsonl
      daybook bench generate --samples 1000000 --order arrival > arrival.jsonl
    """

    static let pipelineOnly = ["--events", "--partitions", "--config", "--json", "--callgrind-events"]

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        let mode = arguments.positionals.first ?? "pipeline"
        guard arguments.positionals.count <= 1, ["pipeline", "core", "generate"].contains(mode) else {
            throw CLIError.usage("bench takes at most one target: pipeline (the default), core or generate")
        }
        let userCount = try arguments.integer("--users", default: 200, in: 1...1_000_000)
        let seed = try arguments.integer("--seed", default: 1, in: 0...Int(Int32.max))
        let given = Set(arguments.values.keys).union(arguments.flags)
        if mode == "core", given.contains("--uuids") {
            throw CLIError.usage("--uuids is for bench generate and the pipeline bench")
        }
        let spelling = arguments.value("--uuids") ?? SyntheticLog.UUIDs.canonical.rawValue
        guard let uuids = SyntheticLog.UUIDs(rawValue: spelling) else {
            throw CLIError.usage("--uuids takes canonical or names, not \(TerminalText.escaped(spelling))")
        }
        if mode == "pipeline" {
            if given.contains("--samples") {
                throw CLIError.usage("--samples is for bench core and generate; the pipeline bench takes --events N")
            }
            if given.contains("--order") {
                throw CLIError.usage("--order is for bench generate; the pipeline bench measures both orders in one run")
            }
            var settings = PipelineBench.Settings()
            settings.events = try arguments.integer("--events", default: settings.events, in: 1...20_000_000)
            settings.partitions = try arguments.integer("--partitions", default: settings.partitions, in: 1...1_000)
            settings.users = userCount
            settings.seed = seed
            settings.uuids = uuids
            settings.config = arguments.value("--config")
            settings.callgrindEvents = try arguments.integer("--callgrind-events", default: settings.callgrindEvents, in: 0...2_000_000)
            do {
                let daybook = try PipelineBench.currentExecutable()
                settings.naiveProjector = PipelineBench.naiveProjectorScript(executable: daybook)
                let figures = try PipelineBench.run(settings, daybook: daybook) { printError("bench: " + $0) }
                var out = OutputBuffer()
                if !arguments.has("--json") {
                    for line in BenchReport.table(figures, settings) { out.line(line) }
                    out.line("")
                }
                out.line(BenchReport.jsonLine(figures, settings))
                try out.flush()
                return ExitCode.ok
            } catch let error as BenchError {
                throw CLIError(bench: error)
            } catch is BenchInterrupts.Interrupted {
                // The children are stopped and the files removed (PipelineBench's clean-up).
                printError("daybook bench: interrupted; stopped the children and removed the temporary files")
                BenchInterrupts.dieOfTheSignal()
            }
        }
        if mode == "core", given.contains("--order") {
            throw CLIError.usage("--order is for bench generate (the pipeline bench measures both orders)")
        }
        if let option = pipelineOnly.first(where: given.contains) {
            throw CLIError.usage("\(option) is for the pipeline bench (plain 'daybook bench'), not bench \(mode)")
        }
        let target = try arguments.integer("--samples", default: 1_000_000, in: 1...100_000_000)
        if arguments.positionals == ["generate"] {
            let order = arguments.value("--order") ?? "user"
            guard order == "user" || order == "arrival" else {
                throw CLIError.usage("--order takes user or arrival, not \(TerminalText.escaped(order))")
            }
            var generator = SyntheticLog(seed: UInt64(seed), uuids: uuids)
            var out = OutputBuffer()
            let events = generator.events(samples: target, users: userCount)
            for event in order == "arrival" ? SyntheticLog.arrivalOrder(events) : events { out.line(event.jsonLine) }
            try out.flush()
            return ExitCode.ok
        }

        CoreBench.run(samples: target, users: userCount, seed: seed) { print($0) }
        return ExitCode.ok
    }
}

extension CLIError {
    /// A failed bench: a step's failure exits with its daybook child's own code (65-78),
    /// anything else by what would fix it; the retention and configuration refusals name
    /// the options that fix them.
    init(bench error: BenchError) {
        switch error.kind {
        case .toolMissing, .brokerUnavailable:
            self.init(code: ExitCode.unavailable, message: error.message)
        case .unreadableConfiguration(let path, let reason):
            self.init(code: ExitCode.noInput, message: "--config \(path): \(reason)")
        case .retention(let step, let kept, let dropped, let events, let suggested):
            self.init(code: ExitCode.logMismatch, message: """
                after \(step) the embedded broker holds only \(kept) of \(events) events: its retention (each partition keeps \
                its newest ~5 MiB / 100,000 message sets) dropped \(dropped). Run with more --partitions (e.g. --partitions \
                \(suggested)) or fewer --events.
                """)
        case .stepFailed(let exitCode):
            self.init(code: exitCode.flatMap { (65...78).contains($0) ? $0 : nil } ?? ExitCode.software, message: error.message)
        case .failed:
            self.init(code: ExitCode.software, message: error.message)
        }
    }
}
