import DaybookCore
#if canImport(Glibc)
import Glibc
#endif

enum Commands {
    static let all: [any Subcommand.Type] = [DemoCommand.self, RollupCommand.self, ExplainCommand.self, PublishCommand.self, ImportCommand.self, ProjectCommand.self, ReplayCommand.self, TotalsCommand.self, StatusCommand.self, LocateCommand.self, ServeCommand.self, BrokerCommand.self, TopicsCommand.self, DLQCommand.self, BenchCommand.self, RebuildCommand.self, VerifyCommand.self, DiffCommand.self, StaleCommand.self]
}

func mainHelp() -> String {
    var s = """
    OVERVIEW: Daybook turns raw wearable health samples into daily totals that are right:
    overlapping sources are deduplicated by priority, and days are civil days in each
    sample's own time zone.

    USAGE: daybook <command> [options]
           daybook --version

    COMMANDS:

    """
    let width = Commands.all.map { $0.name.count }.max() ?? 0
    for c in Commands.all { s += "  \(c.name)\(String(repeating: " ", count: width - c.name.count + 2))\(c.abstract)\n" }
    s += "\nSee 'daybook help <command>' or 'daybook <command> --help' for its options and exit codes;\n"
    s += "'daybook --version' prints the version.\n"
    s += "Every command exits 0 on success, 64 on a usage error and 70 on an internal error (a bug).\n"
    return s
}

/// Writes `text` to standard output: 0, or 74 when it could not be written.
func emit(_ text: String) -> Int32 {
    var out = OutputBuffer()
    out.line(String(text.dropLast(text.hasSuffix("\n") ? 1 : 0)))
    do {
        try out.flush()
        return ExitCode.ok
    } catch {
        printError("daybook: \(error)")
        return ExitCode.ioError
    }
}

func runMain() -> Int32 {
    var words = Array(CommandLine.arguments.dropFirst())
    guard let first = words.first else {
        printError(mainHelp())
        return ExitCode.usage
    }
    if first == "--version" || first == "version" {
        guard words.count == 1 else {
            printError("daybook: \(first) takes no arguments.")
            return ExitCode.usage
        }
        return emit("daybook \(Version.string)\n")
    }
    if first == "--help" || first == "-h" || first == "help" {
        guard words.count <= 2 else {
            printError("daybook: help takes at most one command, got \(TerminalText.escaped(words.dropFirst().joined(separator: " "))).\nSee 'daybook help'.")
            return ExitCode.usage
        }
        guard words.count == 2 else {
            return emit(mainHelp())
        }
        guard let c = Commands.all.first(where: { $0.name == words[1] }) else {
            printError("daybook: '\(TerminalText.escaped(words[1]))' is not a command; the commands are \(Commands.all.map { $0.name }.joined(separator: ", ")).\nSee 'daybook help'.")
            return ExitCode.usage
        }
        return emit(c.helpText)
    }
    words.removeFirst()
    guard let command = Commands.all.first(where: { $0.name == first }) else {
        printError("daybook: '\(TerminalText.escaped(first))' is not a command.\n\n" + mainHelp())
        return ExitCode.usage
    }
    do {
        let arguments = try command.parse(words)
        if arguments.has("--help") {
            return emit(command.helpText)
        }
        return try command.run(arguments)
    } catch {
        let failure = CLIError(error)
        printError("daybook \(command.name): \(TerminalText.escaped(failure.message, keepingNewlines: true))")
        if failure.code == ExitCode.usage { printError("See 'daybook \(command.name) --help'.") }
        return failure.code
    }
}

// A reader that goes away (`daybook totals | head -1`) makes writes fail with EPIPE, which
// the output writer reports (exit 74), instead of a SIGPIPE that would end the process
// before it could say what it did not finish.
signal(SIGPIPE, SIG_IGN)
exit(runMain())
