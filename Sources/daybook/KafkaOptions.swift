import DaybookKafka

/// What every command that talks to Kafka reads from its command line the same way.
enum KafkaOptions {
    static let connectTimeout = OptionSpec(name: "--connect-timeout", value: "SECONDS",
                                           help: "Give up (exit 69) if the cluster does not answer within this time (default 30).")

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
            if let brokers = arguments.value("--brokers") {
                throw CLIError.usage("--brokers '\(brokers)' \(problem)")
            }
            throw CLIError(code: ExitCode.config, message: "kafka.bootstrap.servers in \(arguments.value("--config") ?? "the configuration") \(problem)")
        }
        let seconds = try arguments.integer("--connect-timeout", default: 30, in: 1...3_600)
        return (config, .seconds(seconds))
    }
}
