/// The options many commands share, declared once: `--data`, `--topic`, `--format` and
/// `--config` mean the same everywhere, and only the help says what a command does with them.
/// The Kafka connection's options are `KafkaOptions`.
enum SharedOptions {
    /// `--data DIR`, the projector's data directory.
    static func data(_ help: String = "Directory of the shards (as given to project).") -> OptionSpec {
        OptionSpec(name: "--data", value: "DIR", help: help)
    }

    /// `--topic T`; commands read it with `ParsedArguments.topic(default:)`.
    static func topic(_ help: String = "Topic (default health-samples).") -> OptionSpec {
        OptionSpec(name: "--topic", value: "T", help: help)
    }

    /// `--format F`; commands read it with `ParsedArguments.format(_:)`.
    static func format(_ help: String) -> OptionSpec {
        OptionSpec(name: "--format", value: "F", help: help)
    }

    /// `--config FILE` (config/daybook.json's shape), with what the command reads from it.
    static func config(_ help: String, value: String = "FILE") -> OptionSpec {
        OptionSpec(name: "--config", value: value, help: help)
    }
}

extension ParsedArguments {
    /// `--data`, which `command` cannot run without (64 when absent; `hint` follows the
    /// usage message).
    func data(for command: String, hint: String = "") throws -> String {
        guard let data = value("--data") else { throw CLIError.usage("\(command) needs --data DIR\(hint)") }
        return data
    }

    /// `--format`, one of `accepted` (the first is the default); 64 for anything else.
    func format(_ accepted: [String]) throws -> String {
        let format = value("--format") ?? accepted[0]
        guard accepted.contains(format) else {
            throw CLIError.usage("--format '\(TerminalText.escaped(format))' is not one of \(accepted.joined(separator: ", "))")
        }
        return format
    }
}
