import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPublish
import Foundation

/// `daybook publish`: validate a file of events and publish the valid ones, keyed by user.
enum PublishCommand: Subcommand {
    static let name = "publish"
    static let abstract = "Validate events and publish them to Kafka, keyed by user."
    static let usage = "publish --brokers B [--topic T] [--config FILE] [--connect-timeout S] EVENTS"
    static let options = [
        OptionSpec(name: "--brokers", value: "B", help: "Bootstrap servers, host:port[,host:port] (default: kafka.bootstrap.servers of --config)."),
        SharedOptions.topic("Topic to publish to (default health-samples)."),
        SharedOptions.config("Configuration: kafka.properties, kafka.secrets, kafka.producer, and the metrics it adds to the catalogue."),
        KafkaOptions.connectTimeout,
    ]
    static let discussion = """
    EVENTS is a file of JSON lines, or - for standard input. Each line is validated with
    the same rules as 'daybook rollup'; invalid lines are reported as 'line N: reason' and
    not published. Valid lines are published unchanged, keyed by user, through an
    idempotent producer (acks=all, lz4, the partitioner of kafka.partitioner: murmur2_random
    unless --config says consistent_random), and publish waits for every delivery report.
    A line larger than the cluster accepts (message.max.bytes, 1000000 by default) is
    rejected by number like an invalid one; every other line is still delivered.

    EXIT CODES: 0 every line published; 65 some lines rejected (the valid ones were
    published); 69 the cluster did not answer within --connect-timeout, or some deliveries
    failed (their lines are named); 64 usage (including a malformed --brokers); 66 no
    input; 78 bad configuration.

    EXAMPLE:
      daybook publish --brokers localhost:9092 examples/week.jsonl
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw CLIError.usage("publish takes exactly one EVENTS path (or - for stdin)")
        }
        let (config, connectTimeout) = try KafkaOptions.load(arguments, command: "publish")
        let topic = try arguments.topic(default: "health-samples")
        let bytes = try Files.input(path)

        let result = try publish(bytes, connection: config.connection, producer: config.producer, topic: topic,
                                 connectTimeout: connectTimeout) { number, error in
            printError("line \(number): \(error)")
        }
        let seconds = result.progress.elapsed
        printError("publish: read \(result.read), published \(result.published), rejected \(result.rejected), failed \(result.failedLines.count) in \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", Double(result.published) / max(seconds, 0.001))) events/s) to \(topic)")
        if !result.failedLines.isEmpty {
            let lines = result.failedLines.sorted()
            let shown = lines.prefix(50).map(String.init).joined(separator: ", ")
            printError("publish: \(lines.count) lines were not delivered: \(shown)\(lines.count > 50 ? ", …" : "") — \(result.firstFailure.map { "\($0)" } ?? "unknown error"). Is the cluster at \(config.connection.bootstrapServers) up? Publishing them again is safe: rollups ignore re-sent identical samples.")
            return ExitCode.unavailable
        }
        return result.rejected == 0 && result.tooLarge.isEmpty ? ExitCode.ok : ExitCode.dataError
    }

    /// `EventLines.Report`, with the progress line's clock (for the rate printed after).
    struct Result {
        var report: EventLines.Report
        var progress: ProgressReporter
        var read: Int { report.read }
        var published: Int { report.published }
        var rejected: Int { report.rejected }
        var failedLines: [Int] { report.failedLines }
        var firstFailure: KafkaError? { report.firstFailure }
        var tooLarge: [Int] { report.tooLarge }
    }

    /// `EventLines.publish` with a progress line on standard error; `rejected(lineNumber,
    /// reason)` hears each invalid line, and each one the cluster refused for its size.
    static func publish(_ bytes: Files.Input, connection: KafkaConnection, producer configuration: ProducerConfiguration, topic: String,
                        connectTimeout: Duration = .seconds(30),
                        rejected report: (Int, String) -> Void) throws -> Result {
        var progress = ProgressReporter()
        do {
            let result = try EventLines.publish(bytes, connection: connection, configuration: configuration, topic: topic,
                                                connectTimeout: connectTimeout, rejected: { number, reason in
                // The live progress line is cleared first, so the rejection is a line of its own.
                progress.finish()
                report(number, reason)
            }, progress: { read, tally, rejected in
                let rate = Double(tally.delivered) / max(progress.elapsed, 0.001)
                progress.update("publish: \(read) read, \(tally.delivered) delivered, \(rejected) rejected, \(String(format: "%.0f", rate)) events/s")
            }, waiting: { inFlight, tally in
                progress.update("publish: waiting for \(inFlight) delivery reports (\(tally.delivered) delivered)")
            })
            progress.finish()
            return Result(report: result, progress: progress)
        } catch let error as PublishError {
            progress.finish()
            throw CLIError(publishing: error)
        }
    }
}

extension CLIError {
    /// A publisher's failure as the command line reports it: 78 for configuration, 69 for
    /// the rest (the message says what happened; `hint` is appended).
    init(publishing error: PublishError, hint: String = "") {
        switch error.kind {
        case .configuration: self.init(code: ExitCode.config, message: error.message + hint)
        case .unreachable: self.init(code: ExitCode.unavailable, message: error.message + hint)
        default: self.init(code: ExitCode.unavailable, message: (error.kafkaError.map { "\($0)" } ?? error.message) + hint)
        }
    }
}
