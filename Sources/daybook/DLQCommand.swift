import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPublish
import DaybookStore
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
        OptionSpec(name: "--data", value: "DIR", help: "Directory of the shards (as given to project)."),
        OptionSpec(name: "--topic", value: "T", help: "The topic whose dead letters to read and replay to (default health-samples)."),
        OptionSpec(name: "--format", value: "F", help: "list: table (default, for people) or json (one object per line)."),
        OptionSpec(name: "--show-payload", value: nil, help: "list: show the payloads too (health data: off by default)."),
        OptionSpec(name: "--partition", value: "P", help: "list: only these partitions (repeat it, or P,P).", repeatable: true),
        OptionSpec(name: "--all", value: nil, help: "list: the replayed dead letters too (default: only pending ones)."),
        OptionSpec(name: "--brokers", value: "B", help: "replay: bootstrap servers, host:port[,host:port] (default: kafka.bootstrap.servers of --config)."),
        OptionSpec(name: "--config", value: "FILE", help: "replay: configuration, as for publish (kafka.properties, kafka.secrets, kafka.producer)."),
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
    recorded_at, status ("pending" or "replayed"), replayed_at, replayed_as, and payload
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
    --dry-run checks all of it and prints what would be published, without connecting to
    Kafka or marking anything.

    Replaying while a projector runs is safe: a mark is one short SQLite transaction on
    the shard file (it does not need the projector's lock), waiting up to 10 s for the
    projector's batch in progress.

    If replay stops between a delivery and its mark (killed, a storage failure), the dead
    letter stays pending and the next replay publishes its event again. That is harmless:
    the same sample-added again is a redelivery of the version in force and changes nothing,
    and a sample-deleted again leaves the same tombstone (Guides/Dedupe.md). Only if that
    sample was changed again in between would the repeat put the replayed version back.

    EXIT CODES: 0 done (also when nothing is pending); 64 usage; 65 a line of --fix or an
    --id refused (nothing was published), or payloads that still fail validation (the
    others were published), or a file in DIR is not a shard; 66 DIR or FILE missing;
    69 the cluster did not answer within --connect-timeout, or some deliveries failed (they
    stay pending: replay again); 74 storage failure, 75 a shard stayed busy (both: the
    events named were published but not marked; replay again); 78 bad configuration.

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
        guard let data = arguments.value("--data") else { throw CLIError.usage("dlq \(mode) needs --data DIR") }
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
        let format = arguments.value("--format") ?? "table"
        guard ["table", "json"].contains(format) else { throw CLIError.usage("--format '\(TerminalText.escaped(format))' is not one of table, json") }
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
        out.flush()
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
        return "replayed \(time(replay.at)) as \(replay.landedAt?.description ?? "published")"
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
            "\"status\":\(l.replay == nil ? "\"pending\"" : "\"replayed\"")",
            "\"replayed_at\":\(l.replay.map { JSONWriter.quoted(time($0.at)) } ?? "null")",
            "\"replayed_as\":\(l.replay?.landedAt.map { JSONWriter.quoted($0.description) } ?? "null")",
        ]
        if payload { fields.append(bytes("payload", l.payload)) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    // MARK: replay

    /// A dead letter about to be published: its event's bytes and user, and every shard file
    /// that holds it (one, unless a shard was copied).
    struct Candidate {
        var id: DeadLetterID
        var user: String
        var bytes: [UInt8]
        var event: Event
    }

    /// What a replay will do, decided before anything is published.
    struct Plan {
        var candidates: [Candidate] = []
        /// Named dead letters that were replayed before.
        var skipped: [StoredDeadLetter] = []
        /// Stored payloads that still fail validation (`ID: field: reason`); the others go.
        var invalid: [String] = []
        /// Fix lines and ids refused: any of them stops the replay before publishing.
        var refused: [String] = []
    }

    static func replay(_ arguments: ParsedArguments, data: String, topic: String) throws -> Int32 {
        var only: Set<DeadLetterID>?
        if let values = listValues(arguments, "--id") {
            only = []
            for text in values {
                guard let id = DeadLetterID(text) else {
                    throw CLIError.usage("--id '\(TerminalText.escaped(text))' is not a dead-letter id; write PARTITION:OFFSET as 'daybook dlq list' shows it (e.g. 3:1234, no leading zeros)")
                }
                only?.insert(id)
            }
        }
        let dryRun = arguments.has("--dry-run")
        // A dry run does not connect, so it needs no cluster; given one, it is checked anyway.
        let kafka = dryRun && arguments.value("--brokers") == nil && arguments.value("--config") == nil
            ? nil : try KafkaOptions.load(arguments, command: "dlq replay")
        let fix = try arguments.value("--fix").map { (path: $0, input: try Files.input($0)) }

        let stored = try read(data, .init(topic: topic, includeReplayed: true, withPayloads: fix == nil))
        let byID = Dictionary(grouping: stored, by: \.id)
        var plan = Plan()
        for id in (only ?? []).sorted() where byID[id] == nil {
            plan.refused.append("--id \(id): no dead letter of \(topic) in \(data) has this id ('daybook dlq list --all' shows them)")
        }
        if let fix {
            try planFixes(fix.input, path: fix.path, byID, only: only, topic: topic, data: data, into: &plan)
        } else {
            planAsStored(byID, only: only, into: &plan)
        }

        for s in plan.skipped { print("\(s.id) skipped: already \(status(s))") }
        guard plan.refused.isEmpty else {
            for r in plan.refused { printError(r) }
            printError("dlq replay: nothing published: \(plan.refused.count) problem\(plan.refused.count == 1 ? "" : "s") above; correct \(plan.refused.count == 1 ? "it" : "them") and run replay again")
            return ExitCode.dataError
        }
        for i in plan.invalid { printError(i) }
        guard !dryRun, !plan.candidates.isEmpty, let kafka else {
            for c in plan.candidates { print("\(c.id) would be published: \(describe(c.event))") }
            printError("dlq replay: \(dryRun ? "would publish" : "published") \(plan.candidates.count), skipped \(plan.skipped.count) (already replayed), still invalid \(plan.invalid.count)\(dryRun ? " (dry run: nothing published or marked)" : "")")
            return plan.invalid.isEmpty ? ExitCode.ok : ExitCode.dataError
        }

        let delivery = try publish(plan.candidates, topic: topic, config: kafka.config, connectTimeout: kafka.connectTimeout)
        let (unmarked, markFailure) = mark(plan.candidates, delivery.landed, topic: topic, data: data)
        for (n, c) in plan.candidates.enumerated() {
            if let reason = delivery.failed[n] {
                printError("\(c.id): not delivered: \(TerminalText.escaped(reason)) (still pending: replay again)")
            } else if let position = delivery.landed[n] {
                print("\(c.id) replayed as \(position?.description ?? "published")\(unmarked.contains(c.id) ? " (not marked: see above)" : "")")
            }
        }
        printError("dlq replay: published \(delivery.landed.count), skipped \(plan.skipped.count) (already replayed), still invalid \(plan.invalid.count), failed \(delivery.failed.count) to \(topic)")
        if !delivery.failed.isEmpty {
            printError("dlq replay: \(delivery.failed.count) events were not delivered. Is the cluster at \(kafka.config.connection.bootstrapServers) up? Their dead letters stay pending: replay again.")
            return ExitCode.unavailable
        }
        if let markFailure {
            printError("dlq replay: \(unmarked.sorted().map(\.description).joined(separator: ", ")) were published but not marked; replay again once the shard is writable (publishing them again is harmless)")
            return markFailure.code
        }
        return plan.invalid.isEmpty ? ExitCode.ok : ExitCode.dataError
    }

    /// With --fix: one candidate per line (of --id, when given); every problem refused.
    static func planFixes(_ input: Files.Input, path: String, _ byID: [DeadLetterID: [StoredDeadLetter]], only: Set<DeadLetterID>?,
                          topic: String, data: String, into plan: inout Plan) throws {
        var (fixes, problems) = try DLQFixFile.read(input)
        var lineOf: [DeadLetterID: Int] = [:]
        for fix in fixes {
            guard let letters = byID[fix.id] else {
                problems.append(.init(line: fix.line, text: "id: \(fix.id) is no dead letter of \(topic) in \(data) ('daybook dlq list --all' shows them)"))
                continue
            }
            if let earlier = lineOf[fix.id] {
                problems.append(.init(line: fix.line, text: "id: \(fix.id) is repaired on line \(earlier) already; give each dead letter one line"))
                continue
            }
            lineOf[fix.id] = fix.line
            guard only?.contains(fix.id) ?? true else { continue }
            if let done = letters.first(where: { $0.replay != nil }) {
                plan.skipped.append(done)
                continue
            }
            plan.candidates.append(Candidate(id: fix.id, user: fix.event.user, bytes: fix.bytes, event: fix.event))
        }
        plan.refused += problems.sorted { $0.line < $1.line }.map { "\(path): line \($0.line): \($0.text)" }
        for id in (only ?? []).sorted() where byID[id] != nil && lineOf[id] == nil {
            plan.refused.append("--id \(id): \(path) has no line that repairs it")
        }
    }

    /// Without --fix: every pending dead letter (of --id, when given) whose stored payload
    /// passes today's validation.
    static func planAsStored(_ byID: [DeadLetterID: [StoredDeadLetter]], only: Set<DeadLetterID>?, into plan: inout Plan) {
        let decoder = EventDecoder()
        for (id, letters) in byID.sorted(by: { $0.key < $1.key }) where only?.contains(id) ?? true {
            if let done = letters.first(where: { $0.replay != nil }) {
                // Named only when asked for: without --id, replayed ones are simply not pending.
                if only != nil { plan.skipped.append(done) }
                continue
            }
            let payload = letters[0].payload
            let decoded: Result<Event, EventError> = payload.count > EventDecoder.maximumEventBytes
                ? .failure(EventError.lineTooLong(limit: EventDecoder.maximumEventBytes))
                : payload.withUnsafeBufferPointer { b in Result { () throws(EventError) in try decoder.decode(b) } }
            switch decoded {
            case .success(let event):
                plan.candidates.append(Candidate(id: id, user: event.user, bytes: payload, event: event))
            case .failure(let error):
                plan.invalid.append("\(id): \(TerminalText.escaped(error.description)) (not published; repair it with --fix)")
            }
        }
    }

    /// Where each candidate (by index) landed — nil inside when the report did not say —
    /// and why the others were not delivered.
    struct Delivery {
        var landed: [Int: DeadLetterID?] = [:]
        var failed: [Int: String] = [:]
    }

    /// Publishes every candidate keyed by its user and waits for every delivery report.
    static func publish(_ candidates: [Candidate], topic: String, config: DaybookConfiguration, connectTimeout: Duration) throws -> Delivery {
        var delivery = Delivery()
        let publisher: EventPublisher
        do {
            publisher = try EventPublisher(connection: config.connection, configuration: config.producer, topic: topic, connectTimeout: connectTimeout,
                                           logger: Logger(label: "dlq", level: .warning)) { n, outcome in
                switch outcome {
                case .delivered(let partition, let offset):
                    // (A nil value, "delivered, position unknown", must stay in the dictionary.)
                    delivery.landed.updateValue(offset.map { DeadLetterID(partition: partition, offset: $0) }, forKey: n)
                case .rejected(let error), .undelivered(let error):
                    delivery.failed[n] = error.kafkaError.map { "\($0)" } ?? error.message
                }
            }
            try publisher.connect()
        } catch {
            throw CLIError(publishing: error, hint: error.kind == .unreachable ? "; nothing was published" : "")
        }
        do {
            for (n, c) in candidates.enumerated() {
                do {
                    try publisher.send(validatedJSON: c.bytes, user: c.user, id: n)
                } catch {
                    guard error.kind == .oversized else { throw error }
                    delivery.failed[n] = "the event is larger than the cluster accepts (message.max.bytes)"
                }
            }
            try publisher.close()
        } catch let error as PublishError {
            throw CLIError(publishing: error, hint: "; the dead letters whose events were delivered are not marked: replay again (publishing them again is harmless)")
        }
        return delivery
    }

    /// Marks every delivered candidate replayed in each shard that holds it; returns the ids
    /// left unmarked and the first failure (its exit code says why).
    ///
    /// Under the data directory's swap lock, in the shards the manifest names now: a rebuild
    /// copies the marks into its new shards under the same lock just before it swaps, so a
    /// mark lands either before that copy or in the new shards — never only in the old ones.
    static func mark(_ candidates: [Candidate], _ landed: [Int: DeadLetterID?], topic: String, data: String) -> (unmarked: Set<DeadLetterID>, failure: CLIError?) {
        let swapLock: Int32
        let layout: DataLayout
        do {
            swapLock = try DataLayout.lockSwaps(data)
            layout = try DataLayout.read(data)
        } catch {
            let e = CLIError(error)
            printError("dlq replay: \(e.message)")
            return (Set(candidates.map(\.id)), e)
        }
        defer { close(swapLock) }
        var byPath: [String: [DeadLetterMarks.Mark]] = [:]
        for (n, c) in candidates.enumerated() {
            guard let position = landed[n] else { continue }
            byPath[layout.path(topic: topic, partition: c.id.partition), default: []].append(.init(id: c.id, landedAt: position))
        }
        var unmarked: Set<DeadLetterID> = []
        var failure: CLIError?
        for (path, marks) in byPath.sorted(by: { $0.key < $1.key }) {
            do {
                _ = try DeadLetterMarks.markReplayed(marks, topic: topic, inShardAt: path)
            } catch {
                let e = CLIError(error)
                printError("dlq replay: \(e.message)")
                if failure == nil { failure = e }
                unmarked.formUnion(marks.map(\.id))
            }
        }
        return (unmarked, failure)
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
