import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookFiles
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `daybook bench` (the pipeline benchmark): one run that generates a realistic log, starts
/// embedded brokers as child processes, and times `daybook publish` beside `kcat -P`, raw
/// librdkafka consumption (kcat, direct and in a group) beside `daybook project` (solo and
/// in a group), restarts with nothing new to read, and the core in process.
enum PipelineBench {
    struct Settings {
        var events = 1_000_000
        var partitions = 64
        var users = 200
        var seed = 1
        /// Passed to every `daybook project` run.
        var config: String?
        var jsonOnly = false
    }

    static let topic = "health-samples"

    /// kcat's consumers get the projector's prefetch (ConsumerConfiguration's
    /// queued.min.messages / queued.max.messages.kbytes) — with librdkafka's defaults kcat
    /// read 1M events ~3.7x slower here — and fetch.wait.max.ms=10: with the default 500 the
    /// embedded broker holds fetches at the ends of partitions, and kcat -C took 0.9 s
    /// instead of 0.52 s (0.54 s instead of 0.09 s for 70k events). Larger fetch sizes
    /// measured no faster.
    static let kcatConsumer = ["-X", "queued.min.messages=1000000", "-X", "queued.max.messages.kbytes=262144", "-X", "fetch.wait.max.ms=10"]

    /// Runs of each raw consumer; the fastest counts.
    static let rawDirectRuns = 3
    static let rawGroupRuns = 2

    /// The producer settings of `daybook publish` (ProducerConfiguration's defaults and its
    /// locked properties), for `kcat -P`.
    static let kcatProducer = [
        "-z", "lz4",
        "-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=5",
        "-X", "message.timeout.ms=300000", "-X", "queue.buffering.max.messages=100000",
        "-X", "batch.size=1000000", "-X", "topic.partitioner=murmur2_random",
    ]

    /// The JSON line's keys, in order (BENCHMARKS.md documents each).
    static let jsonKeys = [
        "bench", "version", "events", "users", "partitions", "seed", "cores", "load_average", "log_bytes", "config",
        "publish_seconds", "publish_events_per_s", "publish_peak_rss_mb",
        "kcat_produce_seconds", "kcat_produce_events_per_s",
        "raw_direct_seconds", "raw_direct_events_per_s",
        "raw_group_seconds", "raw_group_events_per_s", "raw_group_first_message_seconds",
        "project_solo_seconds", "project_solo_events_per_s", "project_solo_peak_rss_mb",
        "project_group_seconds", "project_group_events_per_s", "project_group_peak_rss_mb",
        "restart_solo_seconds", "restart_solo_peak_rss_mb",
        "restart_group_seconds", "restart_group_peak_rss_mb",
        "data_bytes", "data_bytes_per_event", "core_samples_per_s",
        "ratio_project_solo_to_raw_direct", "ratio_project_group_to_raw_group", "ratio_publish_to_kcat_produce",
        "project_solo_cache_hits", "project_solo_cache_misses", "project_solo_cache_evictions",
        "project_group_cache_hits", "project_group_cache_misses", "project_group_cache_evictions",
        "arrival_raw_direct_seconds", "arrival_raw_direct_events_per_s",
        "arrival_raw_group_seconds", "arrival_raw_group_events_per_s",
        "arrival_project_solo_seconds", "arrival_project_solo_events_per_s", "arrival_project_solo_peak_rss_mb",
        "arrival_project_solo_cache_hits", "arrival_project_solo_cache_misses", "arrival_project_solo_cache_evictions",
        "arrival_project_group_seconds", "arrival_project_group_events_per_s", "arrival_project_group_peak_rss_mb",
        "arrival_project_group_cache_hits", "arrival_project_group_cache_misses", "arrival_project_group_cache_evictions",
        "ratio_arrival_project_solo_to_raw_direct", "ratio_arrival_project_group_to_raw_group",
    ]

    /// A timed child: wall seconds and peak RSS; for a projector, its state cache's figures
    /// (from its metrics file).
    struct Timed {
        var seconds: Double
        var peakRSSMegabytes: Double
        var cacheHits = 0, cacheMisses = 0, cacheEvictions = 0
    }

    /// The raw consumers and the projectors on one order of the log.
    struct OrderFigures {
        var rawDirect = 0.0, rawGroup = 0.0, rawGroupFirstMessage = 0.0
        var projectSolo = Timed(seconds: 0, peakRSSMegabytes: 0), projectGroup = Timed(seconds: 0, peakRSSMegabytes: 0)
        var ratioSolo: Double { rawDirect / projectSolo.seconds }
        var ratioGroup: Double { rawGroup / projectGroup.seconds }
    }

    /// Everything measured.
    struct Figures {
        var events = 0, users = 0, logBytes = 0
        /// The 1-minute load average when the bench started: other work on the machine skews every figure.
        var loadAverage: Double?
        var core = 0.0
        var publish = Timed(seconds: 0, peakRSSMegabytes: 0)
        var kcatProduce = 0.0
        var rawDirect = 0.0, rawGroup = 0.0, rawGroupFirstMessage = 0.0
        var projectSolo = Timed(seconds: 0, peakRSSMegabytes: 0), projectGroup = Timed(seconds: 0, peakRSSMegabytes: 0)
        var restartSolo = Timed(seconds: 0, peakRSSMegabytes: 0), restartGroup = Timed(seconds: 0, peakRSSMegabytes: 0)
        var dataBytes = 0
        /// The same events in arrival order (by sync hour, users interleaved).
        var arrival = OrderFigures()
    }

    static func run(_ settings: Settings) throws -> Int32 {
        guard let kcat = findExecutable("kcat") else {
            throw CLIError(code: ExitCode.unavailable, message: "kcat is not on PATH; the bench measures librdkafka's raw producer and consumers with it. Install it with scripts/setup (or apt-get install kcat).")
        }
        if let config = settings.config, access(config, R_OK) != 0 {
            throw CLIError(code: ExitCode.noInput, message: "--config \(TerminalText.escaped(config)): \(errno == ENOENT ? "no such file" : "cannot be read: \(SystemError.strerror(errno))")")
        }
        let daybook = try selfExecutable()
        BenchInterrupts.install()
        let scratch = try ScratchDirectory(prefix: "daybook-bench")
        defer { scratch.remove() }
        let work = scratch.path
        let timeout = 120 + Double(settings.events) / 1_000
        var f = Figures()
        f.loadAverage = loadAverage()
        if let load = f.loadAverage, load >= 0.5 {
            note(String(format: "the load average is %.2f: other work on this machine will skew the figures", load))
        }

        // 1. The log, its keyed copy for kcat -P, and the core figure (in process).
        note("generating about \(NumberText.grouped(Double(settings.events))) events for \(settings.users) users (seed \(settings.seed))…")
        let log = work + "/events.jsonl", keyed = work + "/events.keyed", arrivalLog = work + "/events-arrival.jsonl"
        do {
            let events = generate(events: settings.events, users: settings.users, seed: settings.seed)
            f.events = events.count
            f.users = Set(events.lazy.map(\.user)).count
            f.logBytes = try writeLogs(events, log: log, keyed: keyed)
            try writeLog(SyntheticLog.arrivalOrder(events), to: arrivalLog)
            try checkInterrupt()
            note("core: apply + resolve in process…")
            f.core = coreRate(events)
        }
        try checkInterrupt()

        // 2. The embedded broker the pipeline reads (user order; arrival order gets its own below).
        note("starting the embedded broker (\(settings.partitions) partitions)…")
        let broker = try startBroker(daybook, partitions: settings.partitions, work: work, name: "broker")
        var brokerRunning = true
        defer { if brokerRunning { stopBroker(broker.process) } }

        // 3. daybook publish, then kcat -P (keyed, same settings) into a second broker.
        note("daybook publish…")
        let publish = try runStep("daybook publish", daybook, ["publish", "--brokers", broker.bootstrap, "--topic", topic, log],
                                  work: work, timeout: timeout)
        f.publish = Timed(seconds: publish.seconds, peakRSSMegabytes: publish.peakRSSMegabytes)
        try checkLog(broker.bootstrap, partitions: settings.partitions, events: f.events, after: "daybook publish")

        note("kcat -P into a second broker…")
        do {
            let second = try startBroker(daybook, partitions: settings.partitions, work: work, name: "broker-kcat")
            defer { stopBroker(second.process) }
            let produce = try runStep("kcat -P", kcat, ["-P", "-b", second.bootstrap, "-t", topic] + kcatProducer + ["-K", "\\t", "-l", keyed],
                                      work: work, timeout: timeout)
            f.kcatProduce = produce.seconds
            try checkLog(second.bootstrap, partitions: settings.partitions, events: f.events, after: "kcat -P")
        }
        try? FileManager.default.removeItem(atPath: keyed)

        // 4-5. Raw consumption through librdkafka, then the projector, solo and in a group.
        let config = settings.config.map { ["--config", $0] } ?? []
        let soloData = work + "/data-solo", groupData = work + "/data-group"
        let groupID = "daybook-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let solo = ["project", "--brokers", broker.bootstrap, "--topic", topic, "--data", soloData, "--until-caught-up", "--solo"] + config
        let grouped = ["project", "--brokers", broker.bootstrap, "--topic", topic, "--data", groupData, "--until-caught-up", "--group", groupID] + config
        let userOrder = try measureOrder("", kcat: kcat, daybook: daybook, bootstrap: broker.bootstrap, solo: solo, grouped: grouped,
                                         soloData: soloData, events: f.events, work: work, timeout: timeout)
        (f.rawDirect, f.rawGroup, f.rawGroupFirstMessage) = (userOrder.rawDirect, userOrder.rawGroup, userOrder.rawGroupFirstMessage)
        (f.projectSolo, f.projectGroup) = (userOrder.projectSolo, userOrder.projectGroup)
        f.dataBytes = diskUsage(soloData)

        // 6. Restarts on the finished data directories, with nothing new to read.
        note("restart: daybook project --solo, nothing new…")
        f.restartSolo = try project("restart of daybook project --solo", daybook, solo, expected: 0, work: work, timeout: timeout)
        note("restart: daybook project (group), nothing new…")
        f.restartGroup = try project("restart of daybook project (group)", daybook, grouped, expected: 0, work: work, timeout: timeout)
        stopBroker(broker.process)
        brokerRunning = false
        try? FileManager.default.removeItem(atPath: soloData)
        try? FileManager.default.removeItem(atPath: groupData)

        // 7. The same events in arrival order, in a broker of their own: raw and projected again.
        do {
            note("arrival order: starting an embedded broker, daybook publish…")
            let arrival = try startBroker(daybook, partitions: settings.partitions, work: work, name: "broker-arrival")
            defer { stopBroker(arrival.process) }
            _ = try runStep("daybook publish (arrival order)", daybook, ["publish", "--brokers", arrival.bootstrap, "--topic", topic, arrivalLog],
                            work: work, timeout: timeout)
            try checkLog(arrival.bootstrap, partitions: settings.partitions, events: f.events, after: "daybook publish (arrival order)")
            let soloData = work + "/data-arrival-solo", groupData = work + "/data-arrival-group"
            let groupID = "daybook-bench-arrival-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let solo = ["project", "--brokers", arrival.bootstrap, "--topic", topic, "--data", soloData, "--until-caught-up", "--solo"] + config
            let grouped = ["project", "--brokers", arrival.bootstrap, "--topic", topic, "--data", groupData, "--until-caught-up", "--group", groupID] + config
            f.arrival = try measureOrder("arrival order: ", kcat: kcat, daybook: daybook, bootstrap: arrival.bootstrap, solo: solo, grouped: grouped,
                                         soloData: soloData, events: f.events, work: work, timeout: timeout)
        }

        let json = jsonLine(f, settings)
        var out = OutputBuffer()
        if !settings.jsonOnly {
            for line in table(f, settings) { out.line(line) }
            out.line("")
        }
        out.line(json)
        try out.flush()
        return ExitCode.ok
    }

    /// Raw consumption of one broker's topic (kcat -C, the fastest of `rawDirectRuns`; kcat
    /// -G, the fastest of `rawGroupRuns`), then `project --solo` and `project` in a group.
    static func measureOrder(_ label: String, kcat: String, daybook: String, bootstrap: String, solo: [String], grouped: [String],
                             soloData: String, events: Int, work: String, timeout: Double) throws -> OrderFigures {
        var o = OrderFigures()
        // The fastest of a few runs each: the embedded broker now and then holds a new
        // consumer's first fetch for 0.5 s, and the raw figure is the reference.
        let format = ["-f", "%k %s\\n"]
        var direct: (seconds: Double, firstMessage: Double)?
        for run in 1...rawDirectRuns {
            note("\(label)kcat -C (all partitions, direct), run \(run) of \(rawDirectRuns)…")
            let r = try consume("\(label)kcat -C", kcat, ["-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e"] + kcatConsumer + format,
                                expected: events, work: work, timeout: timeout)
            note(String(format: "  %.3f s", r.seconds))
            if r.seconds < direct?.seconds ?? .infinity { direct = r }
        }
        o.rawDirect = direct?.seconds ?? 0
        var group: (seconds: Double, firstMessage: Double)?
        for run in 1...rawGroupRuns {
            note("\(label)kcat -G (a fresh consumer group), run \(run) of \(rawGroupRuns)…")
            let rawGroupID = "daybook-bench-kcat-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let r = try consume("\(label)kcat -G", kcat, ["-G", rawGroupID, "-b", bootstrap, "-X", "auto.offset.reset=earliest", "-e"] + kcatConsumer + format + [topic],
                                expected: events, work: work, timeout: timeout)
            note(String(format: "  %.3f s (first message at %.3f s)", r.seconds, r.firstMessage))
            if r.seconds < group?.seconds ?? .infinity { group = r }
        }
        o.rawGroup = group?.seconds ?? 0
        o.rawGroupFirstMessage = group?.firstMessage ?? 0
        note("\(label)daybook project --solo…")
        o.projectSolo = try project("\(label)daybook project --solo", daybook, solo, expected: events, work: work, timeout: timeout)
        note("\(label)daybook project (a fresh group)…")
        o.projectGroup = try project("\(label)daybook project (group)", daybook, grouped, expected: events, work: work, timeout: timeout)
        return o
    }

    // MARK: The log

    /// About `events` events from the bench generator, cut to exactly `events`: the
    /// generator makes whole days for every user (~350 events per user-day), so it is asked
    /// for enough days and the tail of the last users' days is dropped.
    static func generate(events target: Int, users: Int, seed: Int) -> [Event] {
        var days = max(1, Int((Double(target) / (350.0 * Double(users))).rounded(.up)))
        while true {
            var generator = SyntheticLog(seed: UInt64(seed))
            // SyntheticLog makes samples / (330 × users) days.
            let events = generator.events(samples: days * 330 * users, users: users)
            if events.count >= target { return Array(events.prefix(target)) }
            days += 1
        }
    }

    /// Writes the log (JSON lines) and its keyed copy (user, a tab, the line) for `kcat -K`;
    /// returns the log's size in bytes.
    static func writeLogs(_ events: [Event], log: String, keyed: String) throws -> Int {
        let plain = try Writer(log), tabbed = try Writer(keyed)
        var bytes = 0
        for e in events {
            let line = e.jsonLine
            bytes += line.utf8.count + 1
            try plain.line(line)
            try tabbed.line(e.user + "\t" + line)
        }
        try plain.close()
        try tabbed.close()
        return bytes
    }

    /// Writes `events` as JSON lines.
    static func writeLog(_ events: [Event], to path: String) throws {
        let out = try Writer(path)
        for e in events { try out.line(e.jsonLine) }
        try out.close()
    }

    /// Buffered writes to a new file.
    final class Writer {
        private let fd: Int32
        private let path: String
        private var buffer: [UInt8] = []

        init(_ path: String) throws {
            self.path = path
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw CLIError(code: ExitCode.ioError, message: "\(path): cannot be written: \(SystemError.strerror(errno))") }
            buffer.reserveCapacity(1 << 20)
        }

        func line(_ s: String) throws {
            buffer.append(contentsOf: s.utf8)
            buffer.append(10)
            if buffer.count >= 1 << 20 { try flush() }
        }

        private func flush() throws {
            defer { buffer.removeAll(keepingCapacity: true) }
            do {
                try CheckedWriter.writeAll(buffer, to: fd, name: path)
            } catch {
                throw CLIError(code: ExitCode.ioError, message: "\(path): cannot be written: \(SystemError.strerror(error.errno))")
            }
        }

        func close() throws {
            try flush()
            guard Glibc.close(fd) == 0 else { throw CLIError(code: ExitCode.ioError, message: "\(path): cannot be written: \(SystemError.strerror(errno))") }
        }
    }

    /// Apply every event to a ledger and resolve every day, on one thread, like `bench core`'s
    /// "apply + resolve": live samples per second.
    static func coreRate(_ events: [Event]) -> Double {
        let ledger = Ledger()
        let t0 = ContinuousClock.now
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        _ = ledger.allTotals()
        return Double(ledger.liveSampleCount) / max(seconds(since: t0), 1e-9)
    }

    // MARK: Children

    /// Runs a child to its end; a failure (non-zero exit, a signal, the timeout) throws a
    /// CLIError naming `step`, with the tail of its standard error.
    static func runStep(_ step: String, _ executable: String, _ arguments: [String], work: String, timeout: Double) throws -> ChildProcess.Outcome {
        let child = try ChildProcess(name: step, executable: executable, arguments: arguments, stderrPath: stderrFile(work, step))
        child.limit(seconds: timeout)
        let outcome = child.wait()
        try checkInterrupt()
        guard outcome.exitCode == 0 else { throw failure(step, child, outcome) }
        return outcome
    }

    /// A CLIError for a failed step: a daybook child's own exit code (65-78), else 70.
    static func failure(_ step: String, _ child: ChildProcess, _ outcome: ChildProcess.Outcome, _ detail: String = "") -> CLIError {
        let code = outcome.exitCode.flatMap { (65...78).contains($0) ? $0 : nil } ?? ExitCode.software
        return CLIError(code: code, message: "\(step) \(outcome.description)\(detail); the tail of its standard error:\n\(child.stderrTail())")
    }

    /// A kcat consumer whose output (one line per message: key, space, payload) is read and
    /// counted here. Its time runs from the spawn to the last expected line; kcat then exits by
    /// itself (-e), or is stopped after 10 s.
    static func consume(_ step: String, _ kcat: String, _ arguments: [String], expected: Int, work: String, timeout: Double) throws -> (seconds: Double, firstMessage: Double) {
        guard let fds = ChildProcess.pipe() else { throw CLIError(code: ExitCode.software, message: "pipe: \(SystemError.strerror(errno))") }
        let t0 = ContinuousClock.now
        let child: ChildProcess
        do {
            child = try ChildProcess(name: step, executable: kcat, arguments: arguments, stdout: .descriptor(fds[1]), stderrPath: stderrFile(work, step))
        } catch {
            close(fds[0]); close(fds[1])
            throw error
        }
        close(fds[1])
        defer { close(fds[0]) }
        child.limit(seconds: timeout)
        var lines = 0, bytes = 0
        var first: Double?, last: Double?
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fds[0], buffer, chunk)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            if first == nil { first = seconds(since: t0) }
            bytes += n
            var p = buffer
            let end = buffer + n
            while p < end, let hit = memchr(p, 10, end - p) {
                lines += 1
                p = UnsafeMutableRawPointer(hit) + 1
            }
            if last == nil, lines >= expected {
                last = seconds(since: t0)
                child.stop(grace: 10)
            }
        }
        let outcome = child.wait()
        try checkInterrupt()
        guard outcome.exitCode == 0 || (last != nil && outcome.stoppedByUs && !outcome.timedOut) else {
            throw failure(step, child, outcome, " after \(lines) of \(expected) messages")
        }
        guard lines == expected, let last else {
            throw CLIError(code: ExitCode.software, message: "\(step) read \(lines) messages, expected \(expected); the tail of its standard error:\n\(child.stderrTail())")
        }
        _ = bytes
        return (last, first ?? last)
    }

    /// A `daybook project --until-caught-up` run: its wall time and peak RSS, and its state
    /// cache's figures. Its counts come from the metrics file it writes at exit
    /// (`--metrics-file`, machine-readable), never from its stderr text: it must have applied
    /// `expected` events (dead letters included).
    static func project(_ step: String, _ daybook: String, _ arguments: [String], expected: Int, work: String, timeout: Double) throws -> Timed {
        let metricsPath = stderrFile(work, step) + ".prom"
        defer { try? FileManager.default.removeItem(atPath: metricsPath) }
        let child = try ChildProcess(name: step, executable: daybook, arguments: arguments + ["--metrics-file", metricsPath], stderrPath: stderrFile(work, step))
        child.limit(seconds: timeout)
        let outcome = child.wait()
        try checkInterrupt()
        guard outcome.exitCode == 0 else { throw failure(step, child, outcome) }
        let metrics = counters(inMetricsFile: metricsPath)
        let applied = metrics["daybook_events_applied_total"], deadLetters = metrics["daybook_dead_letters_total"]
        guard metrics["daybook_projector_up"] == 0, let applied, let deadLetters, applied + deadLetters == expected else {
            throw CLIError(code: ExitCode.software, message: "\(step) applied \(applied.map(String.init) ?? "?") events and \(deadLetters.map(String.init) ?? "?") dead letters by its metrics file (\(metrics.isEmpty ? "missing or empty" : "read")), expected \(expected) in all; the tail of its standard error:\n\(child.stderrTail())")
        }
        return Timed(seconds: outcome.seconds, peakRSSMegabytes: outcome.peakRSSMegabytes,
                     cacheHits: metrics["daybook_state_cache_hits_total"] ?? 0,
                     cacheMisses: metrics["daybook_state_cache_misses_total"] ?? 0,
                     cacheEvictions: metrics["daybook_state_cache_evictions_total"] ?? 0)
    }

    /// The integer samples of a Prometheus text file by family name (labels ignored: the
    /// projector labels its totals by topic only), or an empty dictionary if it cannot be read.
    static func counters(inMetricsFile path: String) -> [String: Int] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var out: [String: Int] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let name = line[..<space].prefix { $0 != "{" && $0 != " " }
            if out[String(name)] == nil, value.rounded() == value, abs(value) < 1e15 { out[String(name)] = Int(value) }
        }
        return out
    }

    /// `daybook broker` as a child; returns once it has written its bootstrap file.
    static func startBroker(_ daybook: String, partitions: Int, work: String, name: String) throws -> (process: ChildProcess, bootstrap: String) {
        let file = work + "/\(name).bootstrap"
        let child = try ChildProcess(name: "daybook broker", executable: daybook,
                                     arguments: ["broker", "--partitions", "\(partitions)", "--bootstrap-file", file],
                                     stderrPath: stderrFile(work, name))
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            if let text = try? String(contentsOfFile: file, encoding: .utf8), !text.isEmpty { return (child, text) }
            if BenchInterrupts.isRequested || child.hasExited || ContinuousClock.now > deadline {
                child.stop(grace: 2)
                let outcome = child.wait()
                try checkInterrupt()
                throw CLIError(code: ExitCode.unavailable, message: "the embedded broker did not start (it \(outcome.description)); the tail of its standard error:\n\(child.stderrTail())")
            }
            usleep(20_000)
        }
    }

    static func stopBroker(_ broker: ChildProcess) {
        broker.stop(grace: 10)
        _ = broker.wait()
    }

    /// The mock cluster keeps only each partition's newest ~5 MiB / 100,000 message sets:
    /// after a publish every event must still be there (low watermarks 0, highs summing to
    /// `events`).
    static func checkLog(_ bootstrap: String, partitions: Int, events: Int, after step: String) throws {
        var configuration = ConsumerConfiguration()
        configuration.groupID = "daybook-bench-watermarks"
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: bootstrap, clientID: "daybook-bench"), configuration: configuration, logger: .silent)
        } catch {
            throw CLIError(code: ExitCode.unavailable, message: "cannot read the watermarks after \(step): \(error)")
        }
        defer { consumer.close() }
        var high: Int64 = 0, low: Int64 = 0
        for p in 0..<Int32(partitions) {
            do {
                let w = try consumer.watermarks(TopicPartition(topic, p))
                high += w.high
                low += w.low
            } catch {
                throw CLIError(code: ExitCode.unavailable, message: "cannot read the watermarks of \(topic) [\(p)] after \(step): \(error)")
            }
        }
        if low > 0 {
            // Room grows with partitions: a quarter more than the share that fitted.
            let kept = max(1, Double(high - low))
            let suggested = max(partitions * 2, Int((Double(partitions) * Double(events) / kept * 1.25).rounded(.up)))
            throw CLIError(code: ExitCode.logMismatch, message: "after \(step) the embedded broker holds only \(high - low) of \(events) events: its retention (each partition keeps its newest ~5 MiB / 100,000 message sets) dropped \(low). Run with more --partitions (e.g. --partitions \(suggested)) or fewer --events.")
        }
        guard high == Int64(events) else {
            throw CLIError(code: ExitCode.software, message: "after \(step) \(topic) holds \(high) messages, expected \(events)")
        }
    }

    // MARK: Output

    static func table(_ f: Figures, _ s: Settings) -> [String] {
        let n = Double(f.events)
        func rate(_ seconds: Double) -> String { NumberText.grouped(n / max(seconds, 1e-9)) }
        func row(_ what: String, _ seconds: Double?, _ rate: String, _ rss: Double?, _ note: String = "") -> String {
            let secs = seconds.map { String(format: "%.2f", $0) } ?? "-"
            let mem = rss.map { String(format: "%.0f MiB", $0) } ?? ""
            return NumberText.leftAligned(what, 46) + NumberText.rightAligned(secs, 8) + NumberText.rightAligned(rate, 13) + NumberText.rightAligned(mem, 11) + (note.isEmpty ? "" : "   " + note)
        }
        let ratios = ratioFigures(f)
        return [
            "daybook bench: \(NumberText.grouped(n)) events (\(String(format: "%.1f", Double(f.logBytes) / 1e6)) MB of JSON lines, \(f.users) users, seed \(s.seed)), \(s.partitions) partitions, \(ProcessInfo.processInfo.activeProcessorCount) cores\(f.loadAverage.map { String(format: " (load %.2f at start)", $0) } ?? ""), daybook \(Version.string)\(s.config.map { ", project --config \(TerminalText.escaped($0))" } ?? "")",
            "",
            NumberText.leftAligned("", 46) + NumberText.rightAligned("seconds", 8) + NumberText.rightAligned("events/s", 13) + NumberText.rightAligned("peak RSS", 11),
            row("daybook publish (validate, keyed, lz4)", f.publish.seconds, rate(f.publish.seconds), f.publish.peakRSSMegabytes),
            row("kcat -P -K (keyed, same producer settings)", f.kcatProduce, rate(f.kcatProduce), nil, String(format: "publish/kcat %.2f", ratios.publish)),
            row("kcat -C, all partitions (raw direct)", f.rawDirect, rate(f.rawDirect), nil),
            row("kcat -G, consumer group (raw group)", f.rawGroup, rate(f.rawGroup), nil, String(format: "first message at %.2f s", f.rawGroupFirstMessage)),
            row("daybook project --solo", f.projectSolo.seconds, rate(f.projectSolo.seconds), f.projectSolo.peakRSSMegabytes, String(format: "%.2f of raw direct", ratios.solo)),
            row("daybook project (group)", f.projectGroup.seconds, rate(f.projectGroup.seconds), f.projectGroup.peakRSSMegabytes, String(format: "%.2f of raw group", ratios.group)),
            row("arrival order: kcat -C (raw direct)", f.arrival.rawDirect, rate(f.arrival.rawDirect), nil),
            row("arrival order: kcat -G (raw group)", f.arrival.rawGroup, rate(f.arrival.rawGroup), nil),
            row("arrival order: daybook project --solo", f.arrival.projectSolo.seconds, rate(f.arrival.projectSolo.seconds), f.arrival.projectSolo.peakRSSMegabytes,
                String(format: "%.2f of raw direct", f.arrival.ratioSolo)),
            row("arrival order: daybook project (group)", f.arrival.projectGroup.seconds, rate(f.arrival.projectGroup.seconds), f.arrival.projectGroup.peakRSSMegabytes,
                String(format: "%.2f of raw group", f.arrival.ratioGroup)),
            row("restart --solo, nothing new", f.restartSolo.seconds, "-", f.restartSolo.peakRSSMegabytes),
            row("restart (group), nothing new, join included", f.restartGroup.seconds, "-", f.restartGroup.peakRSSMegabytes),
            row("core apply + resolve (in process, samples/s)", nil, NumberText.grouped(f.core), nil),
            "solo data directory: \(String(format: "%.1f", Double(f.dataBytes) / 1e6)) MB on disk, \(String(format: "%.0f", Double(f.dataBytes) / max(n, 1))) bytes/event",
            "state cache, project --solo: user order \(cacheText(f.projectSolo)); arrival order \(cacheText(f.arrival.projectSolo))",
            String(format: "project --solo / kcat -C: %.2f in user order, %.2f in arrival order", ratios.solo, f.arrival.ratioSolo),
        ]
    }

    static func cacheText(_ t: Timed) -> String {
        "\(NumberText.grouped(Double(t.cacheHits))) hits, \(NumberText.grouped(Double(t.cacheMisses))) misses, \(NumberText.grouped(Double(t.cacheEvictions))) evictions"
    }

    static func ratioFigures(_ f: Figures) -> (solo: Double, group: Double, publish: Double) {
        // Rates over the same event count: a ratio of rates is the inverse ratio of times.
        (f.rawDirect / f.projectSolo.seconds, f.rawGroup / f.projectGroup.seconds, f.kcatProduce / f.publish.seconds)
    }

    static func jsonLine(_ f: Figures, _ s: Settings) -> String {
        let n = Double(f.events)
        func secs(_ x: Double) -> String { String(format: "%.3f", x) }
        func rate(_ x: Double) -> String { String(format: "%.0f", n / max(x, 1e-9)) }
        func mb(_ x: Double) -> String { String(format: "%.1f", x) }
        func ratio(_ x: Double) -> String { String(format: "%.3f", x) }
        let ratios = ratioFigures(f)
        let values: [String: String] = [
            "bench": "\"pipeline\"", "version": JSONWriter.quoted(Version.string),
            "events": "\(f.events)", "users": "\(f.users)", "partitions": "\(s.partitions)", "seed": "\(s.seed)",
            "cores": "\(ProcessInfo.processInfo.activeProcessorCount)", "log_bytes": "\(f.logBytes)",
            "load_average": f.loadAverage.map { String(format: "%.2f", $0) } ?? "null",
            "config": s.config.map(JSONWriter.quoted) ?? "null",
            "publish_seconds": secs(f.publish.seconds), "publish_events_per_s": rate(f.publish.seconds), "publish_peak_rss_mb": mb(f.publish.peakRSSMegabytes),
            "kcat_produce_seconds": secs(f.kcatProduce), "kcat_produce_events_per_s": rate(f.kcatProduce),
            "raw_direct_seconds": secs(f.rawDirect), "raw_direct_events_per_s": rate(f.rawDirect),
            "raw_group_seconds": secs(f.rawGroup), "raw_group_events_per_s": rate(f.rawGroup),
            "raw_group_first_message_seconds": secs(f.rawGroupFirstMessage),
            "project_solo_seconds": secs(f.projectSolo.seconds), "project_solo_events_per_s": rate(f.projectSolo.seconds),
            "project_solo_peak_rss_mb": mb(f.projectSolo.peakRSSMegabytes),
            "project_group_seconds": secs(f.projectGroup.seconds), "project_group_events_per_s": rate(f.projectGroup.seconds),
            "project_group_peak_rss_mb": mb(f.projectGroup.peakRSSMegabytes),
            "restart_solo_seconds": secs(f.restartSolo.seconds), "restart_solo_peak_rss_mb": mb(f.restartSolo.peakRSSMegabytes),
            "restart_group_seconds": secs(f.restartGroup.seconds), "restart_group_peak_rss_mb": mb(f.restartGroup.peakRSSMegabytes),
            "data_bytes": "\(f.dataBytes)", "data_bytes_per_event": String(format: "%.1f", Double(f.dataBytes) / max(n, 1)),
            "core_samples_per_s": String(format: "%.0f", f.core),
            "ratio_project_solo_to_raw_direct": ratio(ratios.solo), "ratio_project_group_to_raw_group": ratio(ratios.group),
            "ratio_publish_to_kcat_produce": ratio(ratios.publish),
            "project_solo_cache_hits": "\(f.projectSolo.cacheHits)", "project_solo_cache_misses": "\(f.projectSolo.cacheMisses)",
            "project_solo_cache_evictions": "\(f.projectSolo.cacheEvictions)",
            "project_group_cache_hits": "\(f.projectGroup.cacheHits)", "project_group_cache_misses": "\(f.projectGroup.cacheMisses)",
            "project_group_cache_evictions": "\(f.projectGroup.cacheEvictions)",
            "arrival_raw_direct_seconds": secs(f.arrival.rawDirect), "arrival_raw_direct_events_per_s": rate(f.arrival.rawDirect),
            "arrival_raw_group_seconds": secs(f.arrival.rawGroup), "arrival_raw_group_events_per_s": rate(f.arrival.rawGroup),
            "arrival_project_solo_seconds": secs(f.arrival.projectSolo.seconds), "arrival_project_solo_events_per_s": rate(f.arrival.projectSolo.seconds),
            "arrival_project_solo_peak_rss_mb": mb(f.arrival.projectSolo.peakRSSMegabytes),
            "arrival_project_solo_cache_hits": "\(f.arrival.projectSolo.cacheHits)", "arrival_project_solo_cache_misses": "\(f.arrival.projectSolo.cacheMisses)",
            "arrival_project_solo_cache_evictions": "\(f.arrival.projectSolo.cacheEvictions)",
            "arrival_project_group_seconds": secs(f.arrival.projectGroup.seconds), "arrival_project_group_events_per_s": rate(f.arrival.projectGroup.seconds),
            "arrival_project_group_peak_rss_mb": mb(f.arrival.projectGroup.peakRSSMegabytes),
            "arrival_project_group_cache_hits": "\(f.arrival.projectGroup.cacheHits)", "arrival_project_group_cache_misses": "\(f.arrival.projectGroup.cacheMisses)",
            "arrival_project_group_cache_evictions": "\(f.arrival.projectGroup.cacheEvictions)",
            "ratio_arrival_project_solo_to_raw_direct": ratio(f.arrival.ratioSolo), "ratio_arrival_project_group_to_raw_group": ratio(f.arrival.ratioGroup),
        ]
        return "{" + jsonKeys.map { "\"\($0)\":\(values[$0]!)" }.joined(separator: ",") + "}"
    }

    // MARK: Helpers

    static func note(_ s: String) { printError("bench: " + s) }

    static func checkInterrupt() throws {
        if BenchInterrupts.isRequested { throw BenchInterrupts.Interrupted() }
    }

    static func seconds(since t0: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - t0).inSeconds
    }

    static func stderrFile(_ work: String, _ step: String) -> String {
        work + "/" + String(step.map { $0.isLetter || $0.isNumber ? $0 : "-" }) + "-\(UInt32.random(in: 0...UInt32.max)).stderr"
    }

    /// The 1-minute load average (/proc/loadavg), or nil.
    static func loadAverage() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Double($0) }
    }

    /// The first executable `name` on PATH.
    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// This binary, for the broker, publish and project children.
    static func selfExecutable() throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw CLIError(code: ExitCode.software, message: "cannot find the daybook binary (/proc/self/exe): \(SystemError.strerror(errno))") }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Bytes on disk (allocated blocks, as du counts them) of everything under `path`.
    static func diskUsage(_ path: String) -> Int {
        var total = 0
        var info = stat()
        if lstat(path, &info) == 0 { total += Int(info.st_blocks) * 512 }
        guard let names = FileManager.default.enumerator(atPath: path) else { return total }
        for case let name as String in names where lstat(path + "/" + name, &info) == 0 {
            total += Int(info.st_blocks) * 512
        }
        return total
    }
}
