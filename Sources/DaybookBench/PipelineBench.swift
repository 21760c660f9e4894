import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import DaybookFiles
import DaybookSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The pipeline benchmark (`daybook bench`): one run that generates a realistic log, starts
/// embedded brokers as child processes of the `daybook` binary, and times `daybook publish`
/// beside `kcat -P`, raw librdkafka consumption (kcat, direct and in a group) beside
/// `daybook project` (solo and in a group), restarts with nothing new to read, and the core
/// in process. The children's counts come from the metrics files they write, never from
/// their standard error.
public enum PipelineBench {
    public struct Settings: Sendable {
        public var events = 1_000_000
        public var partitions = 64
        public var users = 200
        public var seed = 1
        /// A configuration file passed to every `daybook project` run.
        public var config: String?
        /// Events of the log the instruction counts are taken on (0: none); it has
        /// `instructionPartitions` partitions, so shard creation weighs as little as it can.
        public var callgrindEvents = 20_000
        /// How the log's uuids are spelled (UUIDs by default, as phones write them).
        public var uuids: SyntheticLog.UUIDs = .canonical
        /// The naive projector Daybook is compared with (`scripts/naive-projector.py`,
        /// `naiveProjectorScript`); nil skips it.
        public var naiveProjector: String?

        public init() {}
    }

    static let topic = "health-samples"

    /// kcat's consumers get the projector's prefetch (ConsumerConfiguration's
    /// queued.min.messages / queued.max.messages.kbytes) and fetch.wait.max.ms=10 (with the
    /// default 500 the embedded broker holds fetches at the ends of partitions), so that the
    /// bench compares consumers, not settings (BENCHMARKS.md, "Figures behind choices in
    /// the code").
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

    /// Partitions of the log the instruction counts are taken on.
    public static let instructionPartitions = 8

    /// Instructions per event under callgrind, which load cannot blur: `daybook project
    /// --solo` and `kcat -C` reading the same small arrival-order log.
    public struct InstructionFigures: Sendable {
        public var events = 0
        public var projectSolo = 0.0, kcat = 0.0
        public var ratio: Double { projectSolo / max(kcat, 1) }
    }

    /// A timed child: wall seconds and peak RSS; for a projector, its state cache's figures
    /// (from its metrics file).
    public struct Timed: Sendable {
        public var seconds: Double
        public var peakRSSMegabytes: Double
        public var cacheHits = 0, cacheMisses = 0, cacheEvictions = 0
        /// CPU time (user and system) over wall time: how many of the cores the run kept busy.
        public var cpus = 0.0
    }

    /// The raw consumers and the projectors on one order of the log.
    public struct OrderFigures: Sendable {
        public var rawDirect = 0.0, rawGroup = 0.0, rawGroupFirstMessage = 0.0
        public var projectSolo = Timed(seconds: 0, peakRSSMegabytes: 0), projectGroup = Timed(seconds: 0, peakRSSMegabytes: 0)
        public var ratioSolo: Double { rawDirect / projectSolo.seconds }
        public var ratioGroup: Double { rawGroup / projectGroup.seconds }
    }

    /// Everything measured.
    public struct Figures: Sendable {
        public var events = 0, users = 0, logBytes = 0
        /// The 1-minute load average when the bench started: other work on the machine skews every figure.
        public var loadAverage: Double?
        /// Core apply + resolve, in process: live samples per second.
        public var core = 0.0
        public var publish = Timed(seconds: 0, peakRSSMegabytes: 0)
        public var kcatProduce = 0.0
        public var rawDirect = 0.0, rawGroup = 0.0, rawGroupFirstMessage = 0.0
        public var projectSolo = Timed(seconds: 0, peakRSSMegabytes: 0), projectGroup = Timed(seconds: 0, peakRSSMegabytes: 0)
        public var restartSolo = Timed(seconds: 0, peakRSSMegabytes: 0), restartGroup = Timed(seconds: 0, peakRSSMegabytes: 0)
        /// Bytes on disk of the solo data directory.
        public var dataBytes = 0
        /// The same events in arrival order (by sync hour, users interleaved).
        public var arrival = OrderFigures()
        /// Nil when not asked for (`callgrindEvents` 0) or valgrind is missing.
        public var instructions: InstructionFigures?
        /// The naive Python projector's wall seconds on the user-order log; nil when it was
        /// not run, and then `naivePythonSkipped` says why.
        public var naivePython: Double?
        public var naivePythonSkipped = "no scripts/naive-projector.py found"

        /// Raw over projected (and kcat over publish): rates over the same event count, so
        /// a ratio of rates is the inverse ratio of times.
        public var ratios: (solo: Double, group: Double, publish: Double) {
            (rawDirect / projectSolo.seconds, rawGroup / projectGroup.seconds, kcatProduce / publish.seconds)
        }
    }

    /// Runs the bench with the `daybook` binary at `daybook` for its children; `note` gets
    /// each step as it starts (progress for people).
    ///
    /// - Throws: `BenchError`; `BenchInterrupts.Interrupted` after SIGINT, SIGTERM or SIGHUP
    ///   (the children stopped, the temporary files removed); `ScratchDirectoryError` or
    ///   `FileWriteError` when the work directory cannot be written.
    public static func run(_ settings: Settings, daybook: String, note: (String) -> Void) throws -> Figures {
        guard let kcat = findExecutable("kcat") else {
            throw BenchError(.toolMissing("kcat"), "kcat is not on PATH; the bench measures librdkafka's raw producer and consumers with it. Install it with scripts/setup (or apt-get install kcat).")
        }
        if let config = settings.config, access(config, R_OK) != 0 {
            let reason = errno == ENOENT ? "no such file" : "cannot be read: \(String(cString: strerror(errno)))"
            throw BenchError(.unreadableConfiguration(path: config, reason: reason), "the configuration for the projector runs, \(config): \(reason)")
        }
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
            let events = generate(events: settings.events, users: settings.users, seed: settings.seed, uuids: settings.uuids)
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
        let userOrder = try measureOrder("", note: note, kcat: kcat, daybook: daybook, bootstrap: broker.bootstrap, solo: solo, grouped: grouped,
                                         soloData: soloData, events: f.events, work: work, timeout: timeout)
        (f.rawDirect, f.rawGroup, f.rawGroupFirstMessage) = (userOrder.rawDirect, userOrder.rawGroup, userOrder.rawGroupFirstMessage)
        (f.projectSolo, f.projectGroup) = (userOrder.projectSolo, userOrder.projectGroup)
        f.dataBytes = diskUsage(soloData)

        // 6. Restarts on the finished data directories, with nothing new to read.
        note("restart: daybook project --solo, nothing new…")
        f.restartSolo = try project("restart of daybook project --solo", daybook, solo, expected: 0, work: work, timeout: timeout)
        note("restart: daybook project (group), nothing new…")
        f.restartGroup = try project("restart of daybook project (group)", daybook, grouped, expected: 0, work: work, timeout: timeout)
        // 6b. The naive Python projector on the same log, beside `project --solo`.
        if let script = settings.naiveProjector {
            (f.naivePython, f.naivePythonSkipped) = try measureNaive(script, bootstrap: broker.bootstrap, events: f.events, note: note,
                                                                     work: work, timeout: timeout)
        }
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
            f.arrival = try measureOrder("arrival order: ", note: note, kcat: kcat, daybook: daybook, bootstrap: arrival.bootstrap, solo: solo, grouped: grouped,
                                         soloData: soloData, events: f.events, work: work, timeout: timeout)
        }

        // 8. Instructions per event, on a small arrival-order log of its own.
        if settings.callgrindEvents > 0 {
            if let valgrind = findExecutable("valgrind") {
                f.instructions = try measureInstructions(settings, valgrind: valgrind, kcat: kcat, daybook: daybook, note: note, work: work)
            } else {
                note("valgrind is not on PATH: no instruction counts (apt-get install valgrind)")
            }
        }
        return f
    }

    /// The naive projector's wall seconds on the log at `bootstrap` (nil, and why, when
    /// python3 or its confluent_kafka is missing, or the run failed: the bench goes on).
    static func measureNaive(_ script: String, bootstrap: String, events: Int, note: (String) -> Void,
                             work: String, timeout: Double) throws -> (Double?, String) {
        guard let python = findExecutable("python3") else { return (nil, "python3 is not on PATH") }
        do {
            _ = try runStep("python3 -c 'import confluent_kafka'", python, ["-c", "import confluent_kafka"], work: work, timeout: 60)
        } catch let error as BenchError {
            guard case .stepFailed = error.kind else { throw error }
            return (nil, "python3 cannot import confluent_kafka (pip install confluent-kafka)")
        }
        note("naive Python projector (\(script))…")
        let errors = work + "/naive-projector.stderr"
        let child = try ChildProcess(name: "naive Python projector", executable: python,
                                     arguments: [script, bootstrap, topic, work + "/naive.sqlite"], stderrPath: errors)
        child.limit(seconds: timeout)
        let outcome = child.wait()
        try checkInterrupt()
        guard outcome.exitCode == 0 else { return (nil, "the naive projector \(outcome.description): \(child.stderrTail())") }
        // Its last line says what it applied: every event, or no figure.
        let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        guard said.contains("naive: applied \(events)\n") else {
            return (nil, "the naive projector did not apply all \(events) events: \(said.suffix(200))")
        }
        return (outcome.seconds, "")
    }

    /// `scripts/naive-projector.py` of the checkout this binary was built in (a parent of
    /// `.build/…/daybook`), else of the working directory; `DAYBOOK_NAIVE_PROJECTOR` names
    /// another. Nil when there is none.
    public static func naiveProjectorScript(executable: String) -> String? {
        if let named = ProcessInfo.processInfo.environment["DAYBOOK_NAIVE_PROJECTOR"], !named.isEmpty { return named }
        // The binary's directory and three above it (.build/<triple>/release/daybook), then here.
        var directories: [String] = []
        var directory = (executable as NSString).deletingLastPathComponent
        for _ in 0..<4 {
            directories.append(directory)
            directory = (directory as NSString).deletingLastPathComponent
        }
        directories.append(FileManager.default.currentDirectoryPath)
        return directories.map { $0 + "/scripts/naive-projector.py" }.first { access($0, R_OK) == 0 }
    }

    /// `daybook project --solo` and `kcat -C` under callgrind on `settings.callgrindEvents`
    /// events in arrival order, in `instructionPartitions` partitions of a broker of their
    /// own: the instructions of each process, threads included, per event.
    static func measureInstructions(_ settings: Settings, valgrind: String, kcat: String, daybook: String,
                                    note: (String) -> Void, work: String) throws -> InstructionFigures {
        var figures = InstructionFigures()
        let log = work + "/events-callgrind.jsonl"
        let events = SyntheticLog.arrivalOrder(generate(events: settings.callgrindEvents, users: settings.users, seed: settings.seed, uuids: settings.uuids))
        figures.events = events.count
        try writeLog(events, to: log)
        note("instructions: \(NumberText.grouped(Double(events.count))) events in arrival order, \(instructionPartitions) partitions, under callgrind…")
        let broker = try startBroker(daybook, partitions: instructionPartitions, work: work, name: "broker-callgrind")
        defer { stopBroker(broker.process) }
        let timeout = 600 + Double(events.count) / 20
        _ = try runStep("daybook publish (callgrind log)", daybook, ["publish", "--brokers", broker.bootstrap, "--topic", topic, log],
                        work: work, timeout: timeout)
        try checkLog(broker.bootstrap, partitions: instructionPartitions, events: events.count, after: "daybook publish (callgrind log)")
        let projectOut = work + "/callgrind-project.out", kcatOut = work + "/callgrind-kcat.out"
        // Under callgrind the projector runs ~50 times slower, so the 5-s batch delay, never
        // reached natively, would cut batches by the clock and make the count depend on the
        // machine's load: a run of its own waits 10 minutes instead (batches then close at
        // 4,096 events or the partition's end, as natively). A --config given is used as it is.
        let config: String
        if let given = settings.config {
            config = given
        } else {
            config = work + "/callgrind-config.json"
            let out = try Writer(config)
            try out.line(#"{"state": {"batch_delay_ms": 600000}}"#)
            try out.close()
        }
        let solo = ["project", "--brokers", broker.bootstrap, "--topic", topic, "--data", work + "/data-callgrind", "--until-caught-up", "--solo",
                    "--config", config]
        _ = try project("daybook project --solo under callgrind", valgrind, ["--tool=callgrind", "--callgrind-out-file=" + projectOut, daybook] + solo,
                        expected: events.count, work: work, timeout: timeout)
        _ = try runStep("kcat -C under callgrind", valgrind, ["--tool=callgrind", "--callgrind-out-file=" + kcatOut, kcat,
                                                                "-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q"] + kcatConsumer,
                        work: work, timeout: timeout)
        let n = Double(max(events.count, 1))
        figures.projectSolo = Double(try callgrindTotal(projectOut)) / n
        figures.kcat = Double(try callgrindTotal(kcatOut)) / n
        note(String(format: "  project --solo %.0f, kcat -C %.0f instructions per event", figures.projectSolo, figures.kcat))
        return figures
    }

    /// The instructions a callgrind output file counts (its `summary:` line).
    static func callgrindTotal(_ path: String) throws -> UInt64 {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("summary:") {
            if let total = UInt64(line.dropFirst("summary:".count).trimmingCharacters(in: .whitespaces)) { return total }
        }
        throw BenchError(.failed, "\(path): no 'summary:' line (callgrind's output file was not written)")
    }

    /// Raw consumption of one broker's topic (kcat -C, the fastest of `rawDirectRuns`; kcat
    /// -G, the fastest of `rawGroupRuns`), then `project --solo` and `project` in a group.
    static func measureOrder(_ label: String, note: (String) -> Void, kcat: String, daybook: String, bootstrap: String, solo: [String], grouped: [String],
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
    static func generate(events target: Int, users: Int, seed: Int, uuids: SyntheticLog.UUIDs = .canonical) -> [Event] {
        var days = max(1, Int((Double(target) / (350.0 * Double(users))).rounded(.up)))
        while true {
            var generator = SyntheticLog(seed: UInt64(seed), uuids: uuids)
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

    /// A new file written through the one checked writer (`CheckedWriter`): a failed write,
    /// or a failed close, is a `FileWriteError`.
    final class Writer {
        private let fd: Int32
        private var out: CheckedWriter

        init(_ path: String) throws(FileWriteError) {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw FileWriteError(path: path, step: .create, errno: errno) }
            out = CheckedWriter(fd: fd, name: path)
        }

        func line(_ s: String) throws(FileWriteError) { try out.line(s) }

        func close() throws(FileWriteError) {
            try out.flush()
            guard Glibc.close(fd) == 0 else { throw FileWriteError(path: out.name, step: .write, errno: errno) }
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
    /// `BenchError` naming `step`, with the tail of its standard error.
    static func runStep(_ step: String, _ executable: String, _ arguments: [String], work: String, timeout: Double) throws -> ChildProcess.Outcome {
        let child = try ChildProcess(name: step, executable: executable, arguments: arguments, stderrPath: stderrFile(work, step))
        child.limit(seconds: timeout)
        let outcome = child.wait()
        try checkInterrupt()
        guard outcome.exitCode == 0 else { throw failure(step, child, outcome) }
        return outcome
    }

    /// A failed step, with its child's exit code (nil: ended by a signal or the timeout).
    static func failure(_ step: String, _ child: ChildProcess, _ outcome: ChildProcess.Outcome, _ detail: String = "") -> BenchError {
        BenchError(.stepFailed(exitCode: outcome.exitCode),
                   "\(step) \(outcome.description)\(detail); the tail of its standard error:\n\(child.stderrTail())")
    }

    /// A kcat consumer whose output (one line per message: key, space, payload) is read and
    /// counted here. Its time runs from the spawn to the last expected line; kcat then exits by
    /// itself (-e), or is stopped after 10 s.
    static func consume(_ step: String, _ kcat: String, _ arguments: [String], expected: Int, work: String, timeout: Double) throws -> (seconds: Double, firstMessage: Double) {
        guard let fds = ChildProcess.pipe() else { throw BenchError(.failed, "pipe: \(String(cString: strerror(errno)))") }
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
            throw BenchError(.failed, "\(step) read \(lines) messages, expected \(expected); the tail of its standard error:\n\(child.stderrTail())")
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
            throw BenchError(.failed, "\(step) applied \(applied.map(String.init) ?? "?") events and \(deadLetters.map(String.init) ?? "?") dead letters by its metrics file (\(metrics.isEmpty ? "missing or empty" : "read")), expected \(expected) in all; the tail of its standard error:\n\(child.stderrTail())")
        }
        return Timed(seconds: outcome.seconds, peakRSSMegabytes: outcome.peakRSSMegabytes,
                     cacheHits: metrics["daybook_state_cache_hits_total"] ?? 0,
                     cacheMisses: metrics["daybook_state_cache_misses_total"] ?? 0,
                     cacheEvictions: metrics["daybook_state_cache_evictions_total"] ?? 0,
                     cpus: outcome.seconds > 0 ? outcome.cpuSeconds / outcome.seconds : 0)
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
                throw BenchError(.brokerUnavailable, "the embedded broker did not start (it \(outcome.description)); the tail of its standard error:\n\(child.stderrTail())")
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
            throw BenchError(.brokerUnavailable, "cannot read the watermarks after \(step): \(error)")
        }
        defer { consumer.close() }
        var high: Int64 = 0, low: Int64 = 0
        for p in 0..<Int32(partitions) {
            do {
                let w = try consumer.watermarks(TopicPartition(topic, p))
                high += w.high
                low += w.low
            } catch {
                throw BenchError(.brokerUnavailable, "cannot read the watermarks of \(topic) [\(p)] after \(step): \(error)")
            }
        }
        if low > 0 {
            // Room grows with partitions: a quarter more than the share that fitted.
            let kept = max(1, Double(high - low))
            let suggested = max(partitions * 2, Int((Double(partitions) * Double(events) / kept * 1.25).rounded(.up)))
            throw BenchError(.retention(step: step, kept: Int(high - low), dropped: Int(low), events: events, suggestedPartitions: suggested),
                             "after \(step) the embedded broker holds only \(high - low) of \(events) events: its retention (each partition keeps its newest ~5 MiB / 100,000 message sets) dropped \(low). Bench with more partitions (e.g. \(suggested)) or fewer events.")
        }
        guard high == Int64(events) else {
            throw BenchError(.failed, "after \(step) \(topic) holds \(high) messages, expected \(events)")
        }
    }

    // MARK: Helpers

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

    /// The running binary (/proc/self/exe): for `daybook bench`, the `daybook` its children run.
    public static func currentExecutable() throws(BenchError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw BenchError(.failed, "cannot find the running binary (/proc/self/exe): \(String(cString: strerror(errno)))") }
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
