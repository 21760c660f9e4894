import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookPublish
import DaybookStore
import DaybookSupport
import Foundation

/// `daybook dlq list|replay`: the dead letters the projector kept, and republishing their
/// events — as they are, or repaired — so that they count.
enum DLQCommand: Subcommand {
    static let name = "dlq"
    static let abstract = "List dead letters; replay them to Kafka, as they are or repaired."
    static let usage = """
    dlq list --data DIR [--show-payload] [--format table|json] [--partition P]... [--all] [--topic T]
           daybook dlq replay --brokers B --data DIR [--config FILE] [--fix FILE] [--id ID]... [--dry-run] [--topic T]
    """
    static let options = [
        SharedOptions.data(),
        SharedOptions.topic("The topic whose dead letters to read and replay to (default health-samples)."),
        SharedOptions.format("list: table (default, for people) or json (one object per line)."),
        OptionSpec(name: "--show-payload", value: nil, help: "list: show the payloads too (health data: off by default)."),
        OptionSpec(name: "--partition", value: "P", help: "list: only these partitions (repeat it, or P,P).", repeatable: true),
        OptionSpec(name: "--all", value: nil, help: "list: the replayed dead letters too (default: only pending ones)."),
        OptionSpec(name: "--brokers", value: "B", help: "replay: bootstrap servers, host:port[,host:port] (default: kafka.bootstrap.servers of --config)."),
        SharedOptions.config("replay: configuration, as for publish (kafka.properties, kafka.secrets, kafka.producer, and the metrics it adds to the catalogue)."),
        KafkaOptions.connectTimeout,
        OptionSpec(name: "--fix", value: "FILE", help: "replay: repaired events, one JSON line per dead letter (see below)."),
        OptionSpec(name: "--id", value: "ID", help: "replay: only these dead letters, P:OFFSET as list shows (repeat it, or ID,ID).", repeatable: true),
        OptionSpec(name: "--dry-run", value: nil, help: "replay: check everything and say what would be published; publish and mark nothing."),
    ]
    static let discussion = """
    An invalid event never stops the projector: it lands in its shard's dead-letter table
    (and on health-samples.dlq) with the reason. A dead letter's ID is the PARTITION:OFFSET
    of its message in the topic (3:1234): the same in every process and whichever shard
    file holds it. --id and --fix take it only as list writes it (02:1 is refused).

    LIST prints one line per dead letter: ID, when it was recorded (UTC), the reason's
    code, the message key, its status and the reason. The status is 'pending', or
    'replayed TIME as P:OFFSET' (where the republished event landed; 'as published' when
    the delivery report did not say). Only pending dead letters unless --all. The payload
    is health data: shown only with --show-payload, as the last column. Keys, reasons and
    payloads are escaped for the terminal (\\u{1B}; bytes that are not UTF-8 as \\x{FF}).
    json prints one object per line: id, topic, partition, offset, code, reason, key,
    recorded_at, status ("pending", "replayed" or "superseded"), replayed_at (also when
    it was found superseded), replayed_as, superseded_by, and payload
    with --show-payload (key_base64 / payload_base64 instead for bytes that are not
    UTF-8). Read-only: safe while a projector runs.

    REPLAY publishes the events again to the topic, keyed by user, through the producer of
    'daybook publish' (the same --config settings), waits for every delivery report, and
    then marks each delivered dead letter replayed in its shard: when, and where the event
    landed. A republished event is a new message in the log, at its new position; the
    projector applies it like any other. Dead letters already replayed are skipped (and
    named, when a line of --fix or an --id names them).
      Without --fix, every pending dead letter (or those of --id) is republished with its
      payload as it is: after a validation bug was fixed, for events a producer keyed
      by someone else (they are now keyed by their user), or for wrong_partition ones (a
      producer on another partitioner than kafka.partitioner: the producer here uses that
      one, so they land in the partition their user belongs in). Each payload must pass today's
      validation; one that still fails is reported as 'ID: field: reason' and not
      published — the others are — and replay exits 65.
      With --fix FILE, only the dead letters FILE names are replayed, each with the
      corrected event of its line. FILE holds JSON lines, one per dead letter:
        {"id":"3:1234","event":{"type":"sample-added","user":"ana","sample":{...}}}
      "id" is the dead letter's ID as list shows it; "event" is the corrected event in
      the format of topics/README.md, published exactly as written (keyed by its "user").
      No other member is accepted, and an ID may appear once. Every line is checked before
      anything is published: an invalid event, or an ID that is no dead letter of the
      topic, is reported as 'FILE: line N: field: reason' and nothing is published (exit 65).
      --id restricts either way: lines of FILE for other IDs are left out.
    A REPAIR NEVER REWINDS AN EDIT. A dead letter is a write from the moment its message
    was first produced (its Kafka timestamp), not from the moment it is replayed. Before
    publishing, replay reads the home partition of each dead letter's user (the whole
    partition, decoding only that user's messages) and publishes an added sample only if,
    in the order the writes were first produced, it would be the sample in force: its
    version is higher than the one in force at home, or the same and it was produced
    later. Otherwise it is not published, printed as 'ID superseded: P:OFFSET at home has
    the same version and was produced later', and marked superseded (list: 'superseded
    TIME by P:OFFSET'). Deletions always go. Of several dead letters of one uuid, only the
    newest can go. A republished event keeps its first produce time as its timestamp.
    So after a replay the totals equal the rollup of the events in the order they were
    first produced, and replaying again changes nothing (Guides/Dedupe.md).

    --dry-run checks all of it and prints what would be published, without publishing or
    marking anything; without --brokers or --config it does not connect to Kafka either,
    so it cannot say which dead letters are superseded.

    Replaying while a projector runs is safe: a mark is one short SQLite transaction on
    the shard file (it does not need the projector's lock), waiting up to 10 s for the
    projector's batch in progress.

    If replay stops between a delivery and its mark (killed, a storage failure), the dead
    letter stays pending and the next replay compares it again, which is harmless: its
    republished copy, of the same version and produce time, is in force at home, so it is
    superseded and not published again; a write made at home since wins too. A sample-deleted again leaves
    the same tombstone (Guides/Dedupe.md).

    EXIT CODES: 0 done (also when nothing is pending); 64 usage; 65 a line of --fix or an
    --id refused (nothing was published), or payloads that still fail validation (the
    others were published), or a file in DIR is not a shard; 66 DIR or FILE missing;
    69 the cluster did not answer within --connect-timeout, or some deliveries failed (they
    stay pending: replay again); 74 storage failure, 75 a shard stayed busy (both: the
    events named were published but not marked; replay again); 76 the cluster's log is
    not the one the shards came from (nothing was published); 78 bad configuration.

    EXAMPLES:
      daybook dlq list --data /var/lib/daybook
      daybook dlq list --data /var/lib/daybook --all --partition 3 --format json
      daybook dlq replay --brokers localhost:9092 --data /var/lib/daybook --id 3:1234 --dry-run
      daybook dlq replay --brokers localhost:9092 --data /var/lib/daybook --fix fixes.jsonl
    """

    static let listOnly = ["--format", "--show-payload", "--partition", "--all"]
    static let replayOnly = ["--brokers", "--config", "--connect-timeout", "--fix", "--id", "--dry-run"]

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.count == 1, let mode = arguments.positionals.first, ["list", "replay"].contains(mode) else {
            let given = arguments.positionals.isEmpty ? "" : ", got '\(TerminalText.escaped(arguments.positionals.joined(separator: " ")))'"
            throw CLIError.usage("dlq takes one of list or replay\(given)")
        }
        let given = Set(arguments.values.keys).union(arguments.flags)
        if let option = (mode == "list" ? replayOnly : listOnly).first(where: given.contains) {
            throw CLIError.usage("\(option) is for dlq \(mode == "list" ? "replay" : "list"), not dlq \(mode)")
        }
        let data = try arguments.data(for: "dlq \(mode)")
        let topic = try arguments.topic(default: "health-samples")
        return mode == "list" ? try list(arguments, data: data, topic: topic) : try replay(arguments, data: data, topic: topic)
    }

    /// The dead letters of `topic` in `data`; a directory that is missing is 66, a file that
    /// is not a shard 65, a storage failure 74.
    static func read(_ data: String, _ query: ShardReader.DeadLetterQuery) throws -> [StoredDeadLetter] {
        guard FileManager.default.fileExists(atPath: data) else { throw CLIError(code: ExitCode.noInput, message: "\(data): no such data directory") }
        do {
            return try ShardReader(directory: data).deadLetters(query)
        } catch {
            throw CLIError(error)
        }
    }

    /// Every value of a repeatable option, each also split at commas.
    static func listValues(_ arguments: ParsedArguments, _ name: String) -> [String]? {
        arguments.values[name].map { $0.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } }
    }

    // MARK: list

    static func list(_ arguments: ParsedArguments, data: String, topic: String) throws -> Int32 {
        let format = try arguments.format(["table", "json"])
        let partitions = try arguments.partitions().map(Set.init)
        let showPayload = arguments.has("--show-payload")
        let all = try read(data, .init(topic: topic, partitions: partitions, includeReplayed: true, withPayloads: showPayload))
        let shown = arguments.has("--all") ? all : all.filter { $0.replay == nil }
        var out = OutputBuffer()
        if format == "json" {
            for letter in shown { out.line(jsonLine(letter, payload: showPayload)) }
        } else if shown.isEmpty {
            out.line(all.isEmpty ? "no dead letters" : "no pending dead letters")
        } else {
            var rows = [["ID", "RECORDED", "CODE", "KEY", "STATUS", "REASON"] + (showPayload ? ["PAYLOAD"] : [])]
            for l in shown {
                rows.append([l.id.description, time(l.recordedAt), TerminalText.escaped(l.code), TerminalText.escaped(bytes: l.key),
                             status(l), TerminalText.escaped(l.reason)] + (showPayload ? [TerminalText.escaped(bytes: l.payload)] : []))
            }
            let widths = rows[0].indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
            for row in rows {
                let cells = row.enumerated().map { c, text in c == row.count - 1 ? text : text + String(repeating: " ", count: widths[c] - text.count) }
                out.line(cells.joined(separator: "  "))
            }
        }
        try out.flush()
        let replayed = all.count - all.filter { $0.replay == nil }.count
        if !arguments.has("--all"), replayed > 0 {
            printError("dlq list: \(shown.count) pending; \(replayed) replayed not shown (--all shows them)")
        }
        return ExitCode.ok
    }

    /// `2024-05-01 12:00:00` (SQLite's UTC) as `2024-05-01T12:00:00Z`.
    static func time(_ stored: String) -> String {
        let u = Array(stored.utf8)
        guard u.count == 19, u[10] == 32 else { return TerminalText.escaped(stored) }
        return String(decoding: u[..<10], as: UTF8.self) + "T" + String(decoding: u[11...], as: UTF8.self) + "Z"
    }

    static func status(_ letter: StoredDeadLetter) -> String {
        guard let replay = letter.replay else { return "pending" }
        switch replay.superseded {
        case .byHome?: return "superseded \(time(replay.at)) by \(replay.landedAt?.description ?? "a newer write")"
        case .byDeadLetter?: return "superseded \(time(replay.at)) by dead letter \(replay.landedAt?.description ?? "")"
        case nil: return "replayed \(time(replay.at)) as \(replay.landedAt?.description ?? "published")"
        }
    }

    static func jsonLine(_ l: StoredDeadLetter, payload: Bool) -> String {
        func bytes(_ name: String, _ b: [UInt8]) -> String {
            if let text = String(validating: b, as: UTF8.self) { return "\"\(name)\":\(JSONWriter.quoted(text))" }
            return "\"\(name)_base64\":\(JSONWriter.quoted(Data(b).base64EncodedString()))"
        }
        var fields = [
            "\"id\":\(JSONWriter.quoted(l.id.description))", "\"topic\":\(JSONWriter.quoted(l.topic))",
            "\"partition\":\(l.id.partition)", "\"offset\":\(l.id.offset)", "\"code\":\(JSONWriter.quoted(l.code))",
            "\"reason\":\(JSONWriter.quoted(l.reason))", bytes("key", l.key), "\"recorded_at\":\(JSONWriter.quoted(time(l.recordedAt)))",
            "\"status\":\(l.replay == nil ? "\"pending\"" : l.replay?.superseded == nil ? "\"replayed\"" : "\"superseded\"")",
            "\"replayed_at\":\(l.replay.map { JSONWriter.quoted(time($0.at)) } ?? "null")",
            "\"replayed_as\":\(l.replay.flatMap { $0.superseded == nil ? $0.landedAt : nil }.map { JSONWriter.quoted($0.description) } ?? "null")",
            "\"superseded_by\":\(l.replay.flatMap { $0.superseded == nil ? nil : $0.landedAt }.map { JSONWriter.quoted($0.description) } ?? "null")",
        ]
        if payload { fields.append(bytes("payload", l.payload)) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    // MARK: replay
    static func replay(_ arguments: ParsedArguments, data: String, topic: String) throws -> Int32 {
        var request = DeadLetterReplay.Request(dataDirectory: data)
        request.topic = topic
        if let values = listValues(arguments, "--id") {
            var only: Set<DeadLetterID> = []
            for text in values {
                guard let id = DeadLetterID(text) else {
                    throw CLIError.usage("--id '\(TerminalText.escaped(text))' is not a dead-letter id; write PARTITION:OFFSET as 'daybook dlq list' shows it (e.g. 3:1234, no leading zeros)")
                }
                only.insert(id)
            }
            request.only = only
        }
        let dryRun = arguments.has("--dry-run")
        // A dry run does not connect, so it needs no cluster; given one, it is checked anyway.
        let kafka = dryRun && arguments.value("--brokers") == nil && arguments.value("--config") == nil
            ? nil : try KafkaOptions.load(arguments, command: "dlq replay")
        let fixPath = arguments.value("--fix")
        let fixInput = try fixPath.map { try Files.input($0) }
        if let fixInput { request.fixes = try DLQFixFile.read(fixInput) }

        var plan: DeadLetterReplay.Plan
        do {
            plan = try DeadLetterReplay.plan(request)
        } catch let error as DeadLetterReplay.ReplayError {
            throw CLIError(code: ExitCode.noInput, message: error.message)
        } catch {
            throw CLIError(error)
        }

        for s in plan.skipped { print("\(s.id) skipped: already \(status(s))") }
        guard plan.refusals.isEmpty else {
            for r in plan.refusals { printError(describe(r, fixPath: fixPath ?? "", topic: topic, data: data)) }
            printError("dlq replay: nothing published: \(plan.refusals.count) problem\(plan.refusals.count == 1 ? "" : "s") above; correct \(plan.refusals.count == 1 ? "it" : "them") and run replay again")
            return ExitCode.dataError
        }
        for i in plan.invalid { printError("\(i.id): \(TerminalText.escaped(i.error.description)) (not published; repair it with --fix)") }
        if let kafka, !plan.candidates.isEmpty {
            do {
                let access = LogAccess(connection: kafka.config.connection, consumer: kafka.config.consumer, producer: kafka.config.producer)
                try DeadLetterReplay.order(&plan, request, access: access, timeout: kafka.connectTimeout,
                                           logger: Logger(label: "dlq", level: .warning)) { printError("dlq replay: \($0)") }
            } catch {
                throw CLIError(error)
            }
        }
        for (c, by) in plan.superseded {
            print("\(c.id) superseded: \(describe(by)) (\(dryRun ? "would not be" : "not") published: it would replace a newer write of its uuid)")
        }
        let superseded = plan.superseded.isEmpty ? "" : ", superseded \(plan.superseded.count) (a newer write wins)"
        guard !dryRun, !plan.candidates.isEmpty || !plan.superseded.isEmpty, let kafka else {
            for c in plan.candidates { print("\(c.id) would be published: \(describe(c.event))") }
            let unordered = plan.ordered || plan.candidates.isEmpty ? "" : "; not compared with the writes at home (give --brokers to see which are superseded)"
            printError("dlq replay: \(dryRun ? "would publish" : "published") \(plan.candidates.count), skipped \(plan.skipped.count) (already replayed)\(superseded), still invalid \(plan.invalid.count)\(dryRun ? " (dry run: nothing published or marked\(unordered))" : "")")
            return plan.invalid.isEmpty ? ExitCode.ok : ExitCode.dataError
        }

        let outcome: DeadLetterReplay.Outcome
        do {
            outcome = try DeadLetterReplay.run(plan, request, connection: kafka.config.connection, producer: kafka.config.producer,
                                               connectTimeout: kafka.connectTimeout, logger: Logger(label: "dlq", level: .warning))
        } catch {
            let hint = switch error.kind {
            case .configuration: ""
            case .unreachable: "; nothing was published"
            default: "; the dead letters whose events were delivered are not marked: replay again (publishing them again is harmless)"
            }
            throw CLIError(publishing: error, hint: hint)
        }
        let markFailures = outcome.markFailures.map { CLIError($0) }
        for e in markFailures { printError("dlq replay: \(e.message)") }
        for (n, c) in plan.candidates.enumerated() {
            if let failure = outcome.failed[n] {
                let reason = switch failure {
                case .tooLarge: "the event is larger than the cluster accepts (message.max.bytes)"
                case .notDelivered(let e): e.kafkaError.map { "\($0)" } ?? (e.message.hasPrefix("not delivered: ") ? String(e.message.dropFirst("not delivered: ".count)) : e.message)
                }
                printError("\(c.id): not delivered: \(TerminalText.escaped(reason)) (still pending: replay again)")
            } else if let position = outcome.landed[n] {
                print("\(c.id) replayed as \(position?.description ?? "published")\(outcome.unmarked.contains(c.id) ? " (not marked: see above)" : "")")
            }
        }
        printError("dlq replay: published \(outcome.landed.count), skipped \(plan.skipped.count) (already replayed)\(superseded), still invalid \(plan.invalid.count), failed \(outcome.failed.count) to \(topic)")
        if !outcome.failed.isEmpty {
            printError("dlq replay: \(outcome.failed.count) events were not delivered. Is the cluster at \(kafka.config.connection.bootstrapServers) up? Their dead letters stay pending: replay again.")
            return ExitCode.unavailable
        }
        if let markFailure = markFailures.first {
            printError("dlq replay: \(outcome.unmarked.sorted().map(\.description).joined(separator: ", ")) were published but not marked; replay again once the shard is writable (publishing them again is harmless)")
            return markFailure.code
        }
        return plan.invalid.isEmpty ? ExitCode.ok : ExitCode.dataError
    }

    /// A refusal as the command line names it: by --id, or by the --fix file's line.
    static func describe(_ refusal: DeadLetterReplay.Refusal, fixPath path: String, topic: String, data: String) -> String {
        switch refusal {
        case .noSuchDeadLetter(let id):
            return "--id \(id): no dead letter of \(topic) in \(data) has this id ('daybook dlq list --all' shows them)"
        case .fixLine(let line, let problem):
            return "\(path): line \(line): \(DLQFixFile.describe(problem))"
        case .fixForNoDeadLetter(let line, let id):
            return "\(path): line \(line): id: \(id) is no dead letter of \(topic) in \(data) ('daybook dlq list --all' shows them)"
        case .fixRepeated(let line, let id, let earlier):
            return "\(path): line \(line): id: \(id) is repaired on line \(earlier) already; give each dead letter one line"
        case .noFixFor(let id):
            return "--id \(id): \(path) has no line that repairs it"
        }
    }

    /// Why a dead letter is not republished, naming the write that wins.
    static func describe(_ s: ReplayOrder.Superseded) -> String {
        let by = s.byDeadLetter ? "dead letter \(s.by)" : "\(s.by) at home"
        switch s.reason {
        case .deleted: return "its uuid is deleted by \(by)"
        case .higherVersion(let v): return "\(by) has version \(v), higher than its own"
        case .producedLater: return "\(by) has the same version and was produced later"
        case .unknownOrder:
            return "\(by) has the same version, and when one of them was produced is unknown (the write in force stays; to make this one win, repair it with --fix and a higher version)"
        }
    }

    /// `sample-added of user "ana", uuid "p1"`, for the dry run.
    static func describe(_ event: Event) -> String {
        switch event {
        case .sampleAdded(let s): return "sample-added of user \(TerminalText.escaped(JSONWriter.quoted(s.user))), uuid \(TerminalText.escaped(JSONWriter.quoted(s.uuid)))"
        case .sampleDeleted(let user, let uuid): return "sample-deleted of user \(TerminalText.escaped(JSONWriter.quoted(user))), uuid \(TerminalText.escaped(JSONWriter.quoted(uuid)))"
        case .sourceCheckedIn(let c): return "source-checked-in of user \(TerminalText.escaped(JSONWriter.quoted(c.user))), source \(TerminalText.escaped(JSONWriter.quoted(c.source)))"
        }
    }
}
