import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookStore
import DaybookSupport
import Foundation

/// `daybook demo`: the whole pipeline on an embedded broker, in one command.
enum DemoCommand: Subcommand {
    static let name = "demo"
    static let abstract = "Run the pipeline end to end on an embedded broker: publish, project, late data, verify, re-rank and rebuild, silence."
    static let usage = "demo [--events FILE] [--data DIR] [--config FILE]"
    static let options = [
        OptionSpec(name: "--events", value: "FILE", help: "Events to publish (default examples/week.jsonl)."),
        SharedOptions.data("Where to put the shards (default: a new temporary directory)."),
        SharedOptions.config("Source priority and added metrics (default config/daybook.json if present)."),
    ]
    static let discussion = """
    Starts an in-process Kafka broker (librdkafka's mock cluster, 4 partitions), publishes
    the bundled week (three users; iPhone + Watch + a manual entry overlapping; the
    2024-03-31 DST weekend; a traveller Berlin → New York), projects it into SQLite shards
    and prints each user-day's steps as the naive sum beside Daybook's total. Then a late
    sample and a deletion arrive and only the affected days are recomputed. Then the
    projection is rebuilt from the log into a temporary place and compared row by row with
    the live one and with 'daybook rollup' of the same log (what 'daybook verify' does).
    Then the phone is ranked first: 'diff' counts the rows that would change, and
    'rebuild' builds a new generation beside the live shards and swaps it in. Finally
    dana's phone, last checked in 6 hours past the phone's threshold, is reported by
    'stale' (her watch, just synced, and every source that just delivered samples are not),
    and so is every canary.

    EXIT CODES: 0 the rebuilt projection equals the live one and the rollup, and the
    re-ranked one the rollup under the new order, and stale reports exactly dana's phone
    and every canary; 70 they differ (a bug); 64 usage (or --data already used); 66 --events missing; 69 the
    embedded broker failed or events were not delivered; 74 storage failure; 78 bad
    configuration.
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("demo takes no positional arguments") }
        let eventsPath = arguments.value("--events") ?? "examples/week.jsonl"
        guard FileManager.default.fileExists(atPath: eventsPath) else {
            throw CLIError(code: ExitCode.noInput, message: "\(eventsPath): no such file (run the demo from the repository root, or pass --events FILE)")
        }
        let configPath = arguments.value("--config") ?? (FileManager.default.fileExists(atPath: "config/daybook.json") ? "config/daybook.json" : nil)
        // The demo talks only to its embedded broker, so the file's secrets are not needed.
        var config = try DaybookConfiguration.load(configPath, resolvingSecrets: false)
        let root = arguments.value("--data") ?? FileManager.default.temporaryDirectory.appendingPathComponent("daybook-demo-\(getpid())").path
        let live = root + "/live"
        for dir in [live] where FileManager.default.fileExists(atPath: dir) {
            throw CLIError(code: ExitCode.usage, message: "\(dir) already exists; pass a new --data directory")
        }
        Shutdown.install()
        let clock = ProgressReporter()
        var out = OutputBuffer()
        // Each step shows as it happens; a write that fails is kept by `out` and ends the
        // demo with 74 at the last flush below.
        func say(_ s: String) { out.line(s); try? out.flush() }

        let broker: EmbeddedBroker
        do {
            var topics = try KafkaOptions.topicDefinitions(nil)
            if let i = topics.firstIndex(where: { $0.name == "health-samples" }) { topics[i].partitions = 4 }
            broker = try EmbeddedBroker(brokers: 1, topics: topics)
        } catch {
            throw CLIError(code: ExitCode.unavailable, message: "cannot start the embedded broker: \(error)")
        }
        config.connection = KafkaConnection(bootstrapServers: broker.bootstrapServers, clientID: "daybook-demo")
        say("Daybook demo: embedded Kafka broker at \(broker.bootstrapServers), health-samples with 4 partitions")

        // 1. Publish.
        let bytes = try Files.read(eventsPath)
        let first = try PublishCommand.publish(.bytes(bytes), connection: config.connection, producer: config.producer, topic: "health-samples") { n, e in
            printError("line \(n): \(e)")
        }
        guard first.failedLines.isEmpty else { throw CLIError(code: ExitCode.unavailable, message: "\(first.failedLines.count) events were not delivered") }
        say("\n1. Published \(first.published) events from \(eventsPath) keyed by user (\(first.rejected) rejected).")

        // 2. Project.
        let projected = try project(config, into: live, recordChanges: false)
        say("2. Projected them into \(live): \(projected.applied) events in \(String(format: "%.2f", projected.seconds)) s, one SQLite shard per partition.")
        var events: [Event] = []
        try Files.forEachEvent(.bytes(bytes)) { _, _, decoded in if case .success(let e) = decoded { events.append(e) } }
        let before = try ShardReader(directory: live).totals(ShardReader.Query(metric: .steps))
        say("\n   Steps per user-day     naive sum    Daybook   (the naive sum counts the phone and the watch both)")
        let naive = naiveSums(events)
        for row in before {
            guard case .cumulative(let value, let shares) = row.summary else { continue }
            let n = naive[row.key] ?? 0
            let breakdown = shares.map { "\(TerminalText.escaped($0.source)) \(NumberText.grouped($0.value))" }.joined(separator: ", ")
            say("   \(NumberText.leftAligned(TerminalText.escaped(row.key.user), 5)) \(row.key.day)  \(NumberText.rightAligned(NumberText.grouped(n), 10)) \(NumberText.rightAligned(NumberText.grouped(value), 10))   \(breakdown)")
        }

        // 3. A late sample and a deletion.
        let late = [
            #"{"type":"sample-added","user":"ana","sample":{"uuid":"ana-late-walk","metric":"steps","source":"watch","start":"2024-03-27T18:00:00+01:00","end":"2024-03-27T18:40:00+01:00","value":4200,"unit":"count","zone":"Europe/Berlin"}}"#,
            #"{"type":"sample-deleted","user":"ben","uuid":"ben-flight-walk"}"#,
        ]
        _ = try PublishCommand.publish(.bytes(Data((late.joined(separator: "\n") + "\n").utf8)), connection: config.connection, producer: config.producer, topic: "health-samples") { _, _ in }
        for line in late { if let e = try? EventDecoder().decode(line) { events.append(e) } }
        let update = try project(config, into: live, recordChanges: true)
        let after = try ShardReader(directory: live).totals()
        say("\n3. A late watch walk for ana (2024-03-27, 4,200 steps) and the deletion of ben's evening walk in New York arrive.")
        say("   The projector applied \(update.applied) events and recomputed only these rows:")
        let beforeSteps = Dictionary(uniqueKeysWithValues: before.map { ($0.key, $0) })
        let afterAll = Dictionary(uniqueKeysWithValues: after.map { ($0.key, $0) })
        for key in update.changedKeys.sorted() {
            say("   \(TerminalText.escaped(key.user)) \(key.metric.rawValue) \(key.day): \(describe(beforeSteps[key])) → \(describe(afterAll[key] ?? nil))")
        }

        // 4. Verify: rebuild from the log beside the live shards and compare row by row.
        let access = LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer)
        let quiet = Logger(label: "demo", level: .warning)
        var differences = 0
        let verified = try shadowCompare(RebuildRequest(dataDirectory: live, priority: config.priority), access: access, logger: quiet) { _ in differences += 1 }
        let ledger = Ledger(priority: config.priority)
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        let identical = differences == 0
        let matchesRollup = after == ledger.allTotals()
        say("\n4. Rebuilt the projection from the log into a temporary place up to the live offsets (daybook verify): \(verified.rows) rows compared.")
        say("   Rebuilt == live projection: \(identical ? "identical" : "DIFFERENT"); == daybook rollup of the same log: \(matchesRollup ? "identical" : "DIFFERENT").")

        // 5. Re-rank the sources: what would change, then a rebuild swapped in atomically.
        var reranked = config.priority
        reranked.defaultOrder = ["phone"] + reranked.defaultOrder.filter { $0 != "phone" }
        reranked.perMetric = reranked.perMetric.mapValues { ["phone"] + $0.filter { $0 != "phone" } }
        var changed = 0
        _ = try shadowCompare(RebuildRequest(dataDirectory: live, priority: reranked), access: access, logger: quiet,
                              differ: { !$0.hasSameValue(as: $1) }) { _ in changed += 1 }
        let swapped: RebuildSummary
        do {
            swapped = try Rebuilder(request: RebuildRequest(dataDirectory: live, priority: reranked), access: access, logger: quiet)
                .run(shouldStop: { Shutdown.isRequested }) { _ in }
        } catch {
            throw CLIError(error)
        }
        let reranking = Ledger(priority: reranked)
        for (i, e) in events.enumerated() { reranking.apply(e, at: Int64(i)) }
        let rerankedRows = try ShardReader(directory: live).totals()
        let followsNewOrder = rerankedRows == reranking.allTotals()
        say("\n5. Re-ranked the sources (\(reranked.fingerprint)): daybook diff said \(changed) of \(after.count) rows would change;")
        say("   daybook rebuild built \(live)/\(swapped.generation) beside the live shards and swapped it in: totals now follow the new order (\(followsNewOrder ? "== rollup under it" : "DIFFERENT from rollup under it")).")
        let ana = rerankedRows.first { $0.key.user == "ana" && $0.key.metric == .steps }
        if let ana, let old = after.first(where: { $0.key == ana.key }) {
            say("   ana's steps on \(ana.key.day): \(describe(old)) with the watch first, \(describe(ana)) with the phone first.")
        }
        // 6. Freshness: a phone in a drawer. dana's phone last checked in 6 h past the phone's
        // threshold, her watch just now; everyone else's sources delivered samples a moment ago.
        var current = config
        current.priority = reranked
        let fresh = try freshness(current, live: live)
        say("\n6. dana's phone last checked in \(fresh.phoneHours) hours ago, her watch just now; every other source delivered")
        say("   samples a moment ago (their Kafka timestamps are when they were last seen). daybook stale says:")
        var table: [String] = []
        StaleReportText.table(fresh.report, policy: config.freshness, unreported: fresh.unreported, all: nil, into: &table)
        for line in table { say(line.isEmpty ? "" : "   " + line) }
        let silentOnes = fresh.report.stale.filter { !$0.isCanary }.map { "\($0.user)/\($0.source)" }
        let staleFound = silentOnes == (fresh.phoneHours > 0 ? ["dana/phone"] : []) && fresh.unreported.isEmpty

        say("\nDone in \(String(format: "%.1f", clock.elapsed)) s. Inspect with: daybook totals --data \(live) --user ana --metric steps")
        try out.flush()
        return identical && matchesRollup && followsNewOrder && staleFound ? ExitCode.ok : ExitCode.software
    }

    /// Publishes dana's two check-ins (the phone 6 h past its threshold, the watch now),
    /// projects them, and judges silence now under the configuration's thresholds and canaries.
    private static func freshness(_ config: DaybookConfiguration, live: String)
        throws -> (report: StaleReport, unreported: [SyncKey], phoneHours: Int64) {
        let now = Int64(Date().timeIntervalSince1970)
        // A phone threshold of "never": nothing can be stale, and the demo says so (0 hours).
        let phoneHours = config.freshness.rule(for: "phone").threshold.map { $0.components.seconds / 3_600 + 6 } ?? 0
        let lines = [("phone", phoneHours), ("watch", 0)].map { source, hours in
            Event.sourceCheckedIn(CheckIn(user: "dana", source: source, at: Instant(seconds: now - hours * 3_600))).jsonLine
        }
        _ = try PublishCommand.publish(.bytes(Data((lines.joined(separator: "\n") + "\n").utf8)), connection: config.connection,
                                       producer: config.producer, topic: "health-samples") { _, _ in }
        _ = try project(config, into: live, recordChanges: false)
        let judged = try ShardReader(directory: live).judgeFreshness(policy: config.freshness, now: Instant(seconds: now + 60))
        return (judged.report, judged.unreported, phoneHours)
    }

    /// A temporary rebuild up to the live offsets, compared row by row (`verify`, `diff`).
    private static func shadowCompare(_ request: RebuildRequest, access: LogAccess, logger: Logger,
                                      differ: @escaping (DayTotal, DayTotal) -> Bool = { $0 != $1 },
                                      _ report: @escaping (RowDifference) -> Void) throws -> ShadowBuild.Outcome {
        do {
            return try ShadowBuild(request: request, access: access, logger: logger)
                .run(shouldStop: { Shutdown.isRequested }, progress: { _ in }) { _, live, rebuilt in
                    try compareRows(try live.rows(), try rebuilt.rows(), differ: differ, report)
                }
        } catch {
            throw CLIError(error)
        }
    }

    private static func project(_ config: DaybookConfiguration, into dir: String, recordChanges: Bool) throws -> ProjectorSummary {
        var options = ProjectorOptions(dataDirectory: dir)
        options.solo = true
        do {
            let projector = try Projector(connection: config.connection, consumer: config.consumer, producer: config.producer,
                                          priority: config.priority, options: options, run: .live(untilCaughtUp: true),
                                          logger: Logger(label: "demo", level: .warning))
            projector.recordChangedKeys = recordChanges
            return try projector.run(shouldStop: { Shutdown.isRequested }) { _ in }
        } catch {
            let failure = CLIError(error)
            throw CLIError(code: failure.code, message: "projector: \(failure.message)")
        }
    }

    /// The classic wrong answer: every live sample's value added to the day it starts on.
    private static func naiveSums(_ events: [Event]) -> [DayKey: Double] {
        var live: [String: Sample] = [:]
        var gone = Set<String>()
        for e in events {
            switch e {
            case .sampleAdded(let s) where !gone.contains(s.user + "/" + s.uuid): live[s.user + "/" + s.uuid] = s
            case .sampleDeleted(let u, let id): gone.insert(u + "/" + id); live[u + "/" + id] = nil
            default: break
            }
        }
        var sums: [DayKey: Double] = [:]
        for s in live.values where s.metric == .steps {
            guard let rules = ZoneRules.named(s.zone) else { continue }
            sums[DayKey(user: s.user, metric: .steps, day: rules.day(of: s.start)), default: 0] += s.value
        }
        return sums
    }

    private static func describe(_ total: DayTotal?) -> String {
        switch total?.summary {
        case nil: return "no data"
        case .cumulative(let v, _)?: return NumberText.grouped(v)
        case .discrete(let lo, let hi, let avg, let n, let latest)?:
            return "min \(DayTotal.format(lo)) max \(DayTotal.format(hi)) avg \(DayTotal.format(avg)) (\(n))" + DaySummary.latestText(latest)
        }
    }

    /// `s` padded with spaces to `width` (never cut: a long user id stays whole).
}
