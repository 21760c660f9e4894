import DaybookFiles
import DaybookKafka
import DaybookLog
import Foundation

/// `daybook broker`: an embedded Kafka cluster until SIGINT/SIGTERM.
enum BrokerCommand: Subcommand {
    static let name = "broker"
    static let abstract = "Run an embedded Kafka broker (librdkafka's mock cluster) for demos and tests."
    static let usage = "broker [--brokers N] [--partitions P] [--topics DIR] [--bootstrap-file F]"
    static let options = [
        OptionSpec(name: "--brokers", value: "N", help: "Number of brokers (default 1; 3 to test failover)."),
        OptionSpec(name: "--partitions", value: "P", help: "Partitions of health-samples (default: from topics/)."),
        OptionSpec(name: "--topics", value: "DIR", help: "Topic definitions to create (default: topics/, else built-in)."),
        OptionSpec(name: "--bootstrap-file", value: "F", help: "Write the bootstrap address to F once ready."),
    ]
    static let discussion = """
    Speaks the real Kafka protocol on 127.0.0.1 (random ports) with consumer groups and
    idempotent producers, and keeps everything in memory. Prints the bootstrap address on
    stdout once the topics exist, then runs until interrupted.

    Limits of the mock: each partition keeps only its newest ~5 MiB / 100,000 message
    sets — use more partitions and compression (publish uses lz4) for big logs; topic
    configs such as retention are ignored. For production, use docker-compose.yml.

    EXIT CODES: 0 stopped by SIGINT/SIGTERM; 64 usage; 66 --topics DIR missing; 69 the
    broker could not start; 74 --bootstrap-file cannot be written; 78 bad topic definitions.

    EXAMPLE:
      rm -f /tmp/bootstrap; daybook broker --partitions 16 --bootstrap-file /tmp/bootstrap &
      while [ ! -s /tmp/bootstrap ]; do sleep 0.1; done   # written (renamed into place) once ready
      daybook publish --brokers "$(cat /tmp/bootstrap)" examples/week.jsonl
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("broker takes no positional arguments") }
        let brokers = try arguments.integer("--brokers", default: 1, in: 1...9)
        let partitions = try arguments.value("--partitions").map { _ in try arguments.integer("--partitions", default: 8, in: 1...1_000) }
        var topics = try KafkaOptions.topicDefinitions(arguments.value("--topics"))
        if let partitions, let i = topics.firstIndex(where: { $0.name == "health-samples" }) { topics[i].partitions = partitions }

        Shutdown.install()
        let broker: EmbeddedBroker
        do {
            broker = try EmbeddedBroker(brokers: brokers, topics: topics, logger: Logger(label: "broker", level: .warning))
        } catch {
            throw CLIError(code: ExitCode.unavailable, message: "cannot start the embedded broker: \(error)")
        }
        if let file = arguments.value("--bootstrap-file") {
            do {
                try AtomicFile.write(Array(broker.bootstrapServers.utf8), to: file)
            } catch {
                throw CLIError(code: ExitCode.ioError, message: "\(file): cannot write the bootstrap address: \(error.reason)")
            }
        }
        var out = OutputBuffer()
        out.line(broker.bootstrapServers)
        try out.flush()
        let summary = broker.topics.map { "\($0.name) (\($0.partitions) partitions)" }.joined(separator: ", ")
        printError("broker: \(brokers) broker(s) at \(broker.bootstrapServers); topics \(summary). Ctrl-C to stop.")
        while !Shutdown.isRequested { usleep(100_000) }
        printError("broker: stopping")
        return ExitCode.ok
    }
}
