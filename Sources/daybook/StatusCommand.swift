import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookStore
import DaybookSupport
import Foundation

/// `daybook status`: each partition's shard, offset, lag and dead letters, and the group.
enum StatusCommand: Subcommand {
    static let name = "status"
    static let abstract = "Show each partition's shard, offset, lag behind the log, dead letters, role and owner."
    static let usage = "status --data DIR [--brokers B] [--group G] [--config FILE] [--format table|json]"
    static let options = [
        SharedOptions.data(),
        KafkaOptions.brokers,
        OptionSpec(name: "--group", value: "G", help: "Also show consumer group G's members and who holds each partition (needs --brokers)."),
        SharedOptions.config("Kafka settings (and kafka.bootstrap.servers instead of --brokers)."),
        SharedOptions.topic(),
        SharedOptions.format("table (default, for people) or json (one document; see JSON)."),
        KafkaOptions.connectTimeout,
    ]
    static let discussion = """
    Reads the shards (read-only, safe while a projector writes): per partition the shard
    file, its generation, next_offset (the next message it would apply), its dead letters,
    and when it last committed (UTC). DEAD LETTERS counts those the shard holds, and says
    how many of them are unforwarded: not yet sent to the dead-letter topic from this
    shard (dead_letters and dead_letters_pending in JSON; not the 'pending' of 'daybook
    dlq list', which means not replayed). A standby shard's stay unforwarded here: the
    partition's owner forwards them. ROLE is what this directory's projector last recorded
    (roles.json): owned (the group gave it the partition), standby (a warm standby, kept
    by 'project --standby': it may lag, and its dead letters are forwarded by the owner),
    or - (nothing recorded). The first line names that projector (client id, host, pid)
    and its state: running or stopped as it recorded, or gone when it recorded running
    but no process on this host has its pid (killed with -9 or crashed: with a warning).

    With --brokers: the end of each partition's log (log_end_offset) and lag, their
    difference: events published and not yet in this shard. Partitions without a shard
    here are listed with offset 0. Each shard is checked against the log: another
    cluster's shard, one ahead of the log or one whose next offset the log no longer holds
    is flagged (cluster_matches, and a warning). With --group too: the group's members
    (client id, host) and the partitions each holds, the owner of each partition, and a
    warning for a partition owned by this directory's member whose shard here starts from
    offset 0 (it is being rebuilt from the whole log: keep standbys, 'project --standby'),
    and for one this directory's running projector recorded as owned that the group now
    gives to another member (its shard here may fall behind).
    Where the cluster does not describe groups (the embedded broker) the owners are the
    members that last started each partition, as projectors claim in their commits.

    JSON: {"directory","topic","generation","projector":{"client_id","host","pid","state",
    "updated_at"}|null,"partitions":[…],"group":{…}|null,"warnings":[…]},
    each partition {"partition","shard","generation","next_offset","log_end_offset","lag",
    "dead_letters","dead_letters_pending","last_commit","cluster_matches","priority_matches",
    "role","owner"}; fields not known are null (log_end_offset and lag without --brokers;
    lag of a shard from another cluster or ahead of the log, which has no lag behind it).

    EXIT CODES: 0 shown (warnings included: read them); 64 usage; 65 a file in DIR is not
    a shard; 66 DIR missing or not a directory; 69 --brokers unreachable within
    --connect-timeout, or the topic is missing; 78 bad configuration.

    EXAMPLES:
      daybook status --data /var/lib/daybook
      daybook status --data /var/lib/daybook --brokers localhost:9092 --group daybook-projector
      daybook status --data /var/lib/daybook --brokers localhost:9092 --format json | jq '.partitions[] | {partition, lag}'
    """

    static func groupName(_ group: String) throws -> String {
        guard !group.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw CLIError.usage("--group '\(TerminalText.escaped(group))' is blank; name the consumer group (default daybook-projector)")
        }
        return group
    }

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("status takes no positional arguments") }
        let data = try arguments.data(for: "status")
        guard !data.isEmpty else { throw CLIError.usage("--data is empty: give the data directory a projector writes (as given to project)") }
        let format = try arguments.format(["table", "json"])
        let topic = try arguments.topic(default: "health-samples")
        var access: LogAccess?
        var timeout = try KafkaOptions.connectTimeout(arguments)
        if arguments.value("--brokers") != nil || arguments.value("--config") != nil {
            var (config, connectTimeout) = try KafkaOptions.load(arguments, command: "status")
            if let group = arguments.value("--group") { config.consumer.groupID = try groupName(group) }
            access = LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer)
            timeout = connectTimeout
        }
        guard arguments.value("--group") == nil || access != nil else { throw CLIError.usage("--group needs --brokers (the group is asked of the cluster)") }
        let status = try ProjectionStatus.read(directory: data, topic: topic, access: access, withGroup: arguments.value("--group") != nil, timeout: timeout)
        if format == "json" { return emit(json(status) + "\n") }
        return emit(table(status))
    }

    static func json(_ member: GroupAssignment.Member?) -> String {
        guard let m = member else { return "null" }
        return "{\"member_id\":\(JSONWriter.quoted(m.memberID)),\"client_id\":\(JSONWriter.quoted(m.clientID)),\"host\":\(JSONWriter.quoted(m.host))}"
    }

    /// running, stopped, or gone (recorded running, its process not on this host).
    static func projectorState(_ status: ProjectionStatus) -> String {
        status.projectorGone ? "gone" : status.roles?.running == true ? "running" : "stopped"
    }

    static func json(_ status: ProjectionStatus) -> String {
        let text = { (s: String?) in s.map(JSONWriter.quoted) ?? "null" }
        let number = { (n: Int64?) in n.map(String.init) ?? "null" }
        let bool = { (b: Bool?) in b.map { $0 ? "true" : "false" } ?? "null" }
        let partitions = status.partitions.map { p in
            "{\"partition\":\(p.partition),\"shard\":\(text(p.shard)),\"generation\":\(p.generation),\"next_offset\":\(p.nextOffset)," +
                "\"log_end_offset\":\(number(p.logEndOffset)),\"lag\":\(number(p.lag)),\"dead_letters\":\(p.deadLetters)," +
                "\"dead_letters_pending\":\(p.deadLettersPending),\"last_commit\":\(text(p.lastCommit)),\"cluster_matches\":\(bool(p.clusterMatches))," +
                "\"priority_matches\":\(bool(p.priorityMatches)),\"role\":\(text(p.role)),\"owner\":\(json(p.owner))}"
        }
        let group = status.group.map { g in
            let members = g.members.map { m in
                "{\"member_id\":\(JSONWriter.quoted(m.memberID)),\"client_id\":\(JSONWriter.quoted(m.clientID)),\"host\":\(JSONWriter.quoted(m.host)),\"partitions\":[\(m.partitions.map(String.init).joined(separator: ","))]}"
            }
            return "{\"group\":\(JSONWriter.quoted(g.group)),\"state\":\(text(g.state)),\"source\":\(JSONWriter.quoted(g.source.rawValue)),\"members\":[\(members.joined(separator: ","))]}"
        } ?? "null"
        let projector = status.roles.map { r in
            "{\"client_id\":\(JSONWriter.quoted(r.clientID)),\"host\":\(JSONWriter.quoted(r.host)),\"pid\":\(r.pid),\"state\":\(JSONWriter.quoted(projectorState(status))),\"updated_at\":\(JSONWriter.quoted(r.updatedAt))}"
        } ?? "null"
        return "{\"directory\":\(JSONWriter.quoted(status.directory)),\"topic\":\(JSONWriter.quoted(status.topic)),\"generation\":\(status.generation)," +
            "\"projector\":\(projector),\"partitions\":[\(partitions.joined(separator: ","))],\"group\":\(group),\"warnings\":[\(status.warnings.map(JSONWriter.quoted).joined(separator: ","))]}"
    }

    /// The DEAD LETTERS cell: how many the shard holds, and how many of them it has not
    /// forwarded to the dead-letter topic (`3`, `3, 1 unforwarded`).
    static func deadLetters(_ total: Int, unforwarded: Int) -> String {
        unforwarded == 0 ? "\(total)" : "\(total), \(unforwarded) unforwarded"
    }

    static func table(_ status: ProjectionStatus) -> String {
        var s = "\(TerminalText.cell(status.directory, limit: 200)): topic \(TerminalText.cell(status.topic)), generation \(status.generation)"
        if let roles = status.roles {
            s += "; projector \(TerminalText.cell(roles.clientID)) on \(TerminalText.cell(roles.host)) (pid \(roles.pid)) \(projectorState(status)) as of \(roles.updatedAt)"
        }
        s += "\n"
        let header = ["PARTITION", "SHARD", "GEN", "NEXT", "LOG END", "LAG", "DEAD LETTERS", "LAST COMMIT", "ROLE", "OWNER"]
        var rows = [header]
        for p in status.partitions {
            rows.append([String(p.partition), p.shard.map { ($0 as NSString).lastPathComponent } ?? "(none)", String(p.generation), String(p.nextOffset),
                         p.logEndOffset.map(String.init) ?? "-", p.lag.map(String.init) ?? "-", deadLetters(p.deadLetters, unforwarded: p.deadLettersPending),
                         p.lastCommit ?? "-", p.role ?? "-", p.owner.map { "\(TerminalText.cell($0.clientID))@\(TerminalText.cell($0.host))" } ?? "-"])
        }
        let widths = header.indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        for row in rows {
            s += row.enumerated().map { i, cell in cell + String(repeating: " ", count: widths[i] - cell.count) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces) + "\n"
        }
        if let group = status.group {
            s += "\ngroup \(TerminalText.cell(group.group))" + (group.state.map { " (\($0))" } ?? " (from the owners' claims in the group's commits)") + ":\n"
            if group.members.isEmpty { s += "  no members\n" }
            for m in group.members {
                s += "  \(TerminalText.cell(m.clientID)) on \(TerminalText.cell(m.host)) (member \(TerminalText.cell(m.memberID))): partitions \(m.partitions.isEmpty ? "none" : m.partitions.map(String.init).joined(separator: ", "))\n"
            }
        }
        for w in status.warnings { s += "warning: \(TerminalText.escaped(w))\n" }
        return s
    }
}
