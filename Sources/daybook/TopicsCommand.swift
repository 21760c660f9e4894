import DaybookKafka
import DaybookLog

/// `daybook topics`: create the topics of `topics/` on a cluster, idempotently.
enum TopicsCommand: Subcommand {
    static let name = "topics"
    static let abstract = "Create the topics described in topics/ on a Kafka cluster (idempotent)."
    static let usage = "topics --brokers B [--topics DIR] [--config FILE]"
    static let options = [
        KafkaOptions.brokers,
        OptionSpec(name: "--topics", value: "DIR", help: "Topic definitions (default: topics/, else built-in)."),
        SharedOptions.config("Configuration: kafka.properties and kafka.secrets for the connection."),
    ]
    static let discussion = """
    Creates missing topics with the partitions, replication factor and configs of their
    definition; leaves existing ones alone and warns when their partition count differs
    (repartitioning would move users between partitions and break per-user order).
    Prints one line per topic: created, or exists with N partitions.

    The embedded broker creates its topics itself (its mock does not serve CreateTopics).

    EXIT CODES: 0 every topic exists; 64 usage; 66 --topics DIR missing; 69 the cluster is
    unavailable; 78 bad configuration or topic definitions.
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("topics takes no positional arguments") }
        let (config, _) = try KafkaOptions.load(arguments, command: "topics")
        let definitions = try KafkaOptions.topicDefinitions(arguments.value("--topics"))
        var out = OutputBuffer()
        do {
            let admin = try KafkaAdmin(connection: config.connection, logger: Logger(label: "topics", level: .warning))
            let outcome = try admin.ensureTopics(definitions)
            for t in definitions {
                switch outcome[t.name] {
                case .created?: out.line("\(t.name): created (\(t.partitions) partitions, replication \(t.replicationFactor))")
                case .exists(let n)?: out.line("\(t.name): exists (\(n) partitions)")
                case nil: out.line("\(t.name): unknown")
                }
            }
        } catch {
            throw CLIError(code: error.kind == .configuration ? ExitCode.config : ExitCode.unavailable, message: "\(error)")
        }
        try out.flush()
        return ExitCode.ok
    }
}
