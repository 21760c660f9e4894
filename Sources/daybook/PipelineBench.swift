import DaybookCore
import DaybookKafka
import DaybookLog
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
    ]

    /// A timed child: wall seconds and peak RSS.
    struct Timed {
        var seconds: Double
        var peakRSSMegabytes: Double
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
        let log = work + "/events.jsonl", keyed = work + "/events.keyed"
        do {
            let events = generate(events: settings.events, users: settings.users, seed: settings.seed)
            f.events = events.count
            f.users = Set(events.lazy.map(\.user)).count
            f.logBytes = try writeLogs(events, log: log, keyed: keyed)
            try checkInterrupt()
            note("core: apply + resolve in process…")
            f.core = coreRate(events)
        }
        try checkInterrupt()

        // 2. The embedded broker the pipeline reads.
        note("starting the embedded broker (\(settings.partitions) partitions)…")
        let broker = try startBroker(daybook, partitions: settings.partitions, work: work, name: "broker")
        defer { stopBroker(broker.process) }

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

        // 4. Raw consumption through librdkafka: all partitions directly, then a group.
        // The fastest of a few runs each: the embedded broker now and then holds a new
        // consumer's first fetch for 0.5 s, and the raw figure is the reference.
        let format = ["-f", "%k %s\\n"]
        var direct: (seconds: Double, firstMessage: Double)?
        for run in 1...rawDirectRuns {
            note("kcat -C (all partitions, direct), run \(run) of \(rawDirectRuns)…")
            let r = try consume("kcat -C", kcat, ["-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e"] + kcatConsumer + format,
                                expected: f.events, work: work, timeout: timeout)
            note(String(format: "  %.3f s", r.seconds))
            if r.seconds < direct?.seconds ?? .infinity { direct = r }
        }
        f.rawDirect = direct!.seconds
        var group: (seconds: Double, firstMessage: Double)?
        for run in 1...rawGroupRuns {
            note("kcat -G (a fresh consumer group), run \(run) of \(rawGroupRuns)…")
            let rawGroupID = "daybook-bench-kcat-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let r = try consume("kcat -G", kcat, ["-G", rawGroupID, "-b", broker.bootstrap, "-X", "auto.offset.reset=earliest", "-e"] + kcatConsumer + format + [topic],
                                expected: f.events, work: work, timeout: timeout)
            note(String(format: "  %.3f s (first message at %.3f s)", r.seconds, r.firstMessage))
            if r.seconds < group?.seconds ?? .infinity { group = r }
        }
        f.rawGroup = group!.seconds
        f.rawGroupFirstMessage = group!.firstMessage

        // 5. The projector, solo and in a fresh group, each into a fresh data directory.
        let soloData = work + "/data-solo", groupData = work + "/data-group"
        let groupID = "daybook-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let config = settings.config.map { ["--config", $0] } ?? []
        let solo = ["project", "--brokers", broker.bootstrap, "--topic", topic, "--data", soloData, "--until-caught-up", "--solo"] + config
        let grouped = ["project", "--brokers", broker.bootstrap, "--topic", topic, "--data", groupData, "--until-caught-up", "--group", groupID] + config
        note("daybook project --solo…")
        f.projectSolo = try project("daybook project --solo", daybook, solo, expected: f.events, work: work, timeout: timeout)
        f.dataBytes = diskUsage(soloData)
        note("daybook project (group \(groupID))…")
        f.projectGroup = try project("daybook project (group)", daybook, grouped, expected: f.events, work: work, timeout: timeout)

        // 6. Restarts on the finished data directories, with nothing new to read.
        note("restart: daybook project --solo, nothing new…")
        f.restartSolo = try project("restart of daybook project --solo", daybook, solo, expected: 0, work: work, timeout: timeout)
        note("restart: daybook project (group), nothing new…")
        f.restartGroup = try project("restart of daybook project (group)", daybook, grouped, expected: 0, work: work, timeout: timeout)

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
            try buffer.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw CLIError(code: ExitCode.ioError, message: "\(path): cannot be written: \(SystemError.strerror(errno))") }
                    offset += n
                }
            }
            buffer.removeAll(keepingCapacity: true)
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

    /// A `daybook project --until-caught-up` run: its wall time and peak RSS; it must report
    /// `expected` events applied (dead letters included).
    static func project(_ step: String, _ daybook: String, _ arguments: [String], expected: Int, work: String, timeout: Double) throws -> Timed {
        let child = try ChildProcess(name: step, executable: daybook, arguments: arguments, stderrPath: stderrFile(work, step))
        child.limit(seconds: timeout)
        let outcome = child.wait()
        try checkInterrupt()
        guard outcome.exitCode == 0 else { throw failure(step, child, outcome) }
        let text = (try? String(contentsOfFile: child.stderrPath ?? "", encoding: .utf8)) ?? ""
        let applied = number(after: "project: applied ", in: text)
        let deadLetters = number(after: ", dead letters ", in: text)
        guard let applied, let deadLetters, applied + deadLetters == expected else {
            throw CLIError(code: ExitCode.software, message: "\(step) applied \(applied.map(String.init) ?? "?") events and \(deadLetters.map(String.init) ?? "?") dead letters, expected \(expected) in all; the tail of its standard error:\n\(child.stderrTail())")
        }
        return Timed(seconds: outcome.seconds, peakRSSMegabytes: outcome.peakRSSMegabytes)
    }

    /// The integer right after `marker` in `text` (its last occurrence), or nil.
    static func number(after marker: String, in text: String) -> Int? {
        guard let range = text.range(of: marker, options: .backwards) else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isASCII && $0.isNumber })
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
            row("restart --solo, nothing new", f.restartSolo.seconds, "-", f.restartSolo.peakRSSMegabytes),
            row("restart (group), nothing new, join included", f.restartGroup.seconds, "-", f.restartGroup.peakRSSMegabytes),
            row("core apply + resolve (in process, samples/s)", nil, NumberText.grouped(f.core), nil),
            "solo data directory: \(String(format: "%.1f", Double(f.dataBytes) / 1e6)) MB on disk, \(String(format: "%.0f", Double(f.dataBytes) / max(n, 1))) bytes/event",
        ]
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
