import DaybookConfiguration
import DaybookKafka
import Foundation

/// What every command that talks to Kafka reads from its command line the same way.
enum KafkaOptions {
    static let brokers = OptionSpec(name: "--brokers", value: "B", help: "Bootstrap servers (default: kafka.bootstrap.servers of --config).")
    static let connectTimeout = OptionSpec(name: "--connect-timeout", value: "SECONDS",
                                           help: "Give up (exit 69) if the cluster does not answer within this many seconds (1-3600, default 30).")

    /// The configuration of a command that needs a cluster: `--brokers` (or a `--config` with
    /// kafka.bootstrap.servers), checked for shape before any connection is tried — a
    /// malformed `--brokers` is a usage error (64), a malformed file entry a configuration
    /// error (78) — and the `--connect-timeout`.
    static func load(_ arguments: ParsedArguments, command: String) throws -> (config: DaybookConfiguration, connectTimeout: Duration) {
        guard arguments.value("--brokers") != nil || arguments.value("--config") != nil else {
            throw CLIError.usage("\(command) needs --brokers (or a --config with kafka.bootstrap.servers)")
        }
        let config = try DaybookConfiguration.load(arguments.value("--config"), brokers: arguments.value("--brokers"))
        if let problem = KafkaConnection.problem(bootstrapServers: config.connection.bootstrapServers) {
            // A problem that quotes the bad entry already says which; others quote the list.
            let named = { (list: String) in problem.hasPrefix("'") ? problem : "'\(TerminalText.escaped(list))' \(problem)" }
            if let brokers = arguments.value("--brokers") {
                throw CLIError.usage("--brokers \(named(brokers))")
            }
            throw CLIError(code: ExitCode.config, message: "kafka.bootstrap.servers in \(arguments.value("--config") ?? "the configuration"): \(named(config.connection.bootstrapServers))")
        }
        return (config, try connectTimeout(arguments))
    }

    /// `--connect-timeout` (default 30 s), checked even by a command that may not ask a
    /// cluster this time (status without --brokers, locate --partitions): a bad value is a
    /// usage error whether or not it would have been used.
    static func connectTimeout(_ arguments: ParsedArguments) throws -> Duration {
        .seconds(try arguments.integer("--connect-timeout", default: 30, in: 1...3_600))
    }

    /// `dir`, else ./topics if it exists, else the built-in definitions.
    static func topicDefinitions(_ dir: String?) throws -> [TopicDefinition] {
        let path = dir ?? "topics"
        guard dir != nil || FileManager.default.fileExists(atPath: path) else { return TopicDefinition.builtIn }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIError(code: ExitCode.noInput, message: "\(path): no such topics directory")
        }
        guard isDirectory.boolValue else { throw CLIError(code: ExitCode.noInput, message: "\(path): not a directory of topic definitions") }
        do {
            return try TopicDefinition.load(directory: path)
        } catch {
            throw CLIError(code: ExitCode.config, message: "\(error)")
        }
    }
}
