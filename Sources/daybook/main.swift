import DaybookCore
#if canImport(Glibc)
import Glibc
#endif

enum Commands {
    static let all: [any Subcommand.Type] = [DemoCommand.self, RollupCommand.self, ExplainCommand.self, PublishCommand.self, ProjectCommand.self, TotalsCommand.self, BrokerCommand.self, TopicsCommand.self, BenchCommand.self]
}

func mainHelp() -> String {
    var s = """
    OVERVIEW: Daybook turns raw wearable health samples into daily totals that are right:
    overlapping sources are deduplicated by priority, and days are civil days in each
    sample's own time zone.

    USAGE: daybook <command> [options]

    COMMANDS:

    """
    let width = Commands.all.map { $0.name.count }.max() ?? 0
    for c in Commands.all { s += "  \(c.name)\(String(repeating: " ", count: width - c.name.count + 2))\(c.abstract)\n" }
    s += "\nSee 'daybook help <command>' or 'daybook <command> --help' for its options.\n"
    return s
}

func runMain() -> Int32 {
    var words = Array(CommandLine.arguments.dropFirst())
    guard let first = words.first else {
        printError(mainHelp())
        return ExitCode.usage
    }
    if first == "--help" || first == "-h" || first == "help" {
        if words.count > 1, let c = Commands.all.first(where: { $0.name == words[1] }) {
            print(c.helpText, terminator: "")
        } else {
            print(mainHelp(), terminator: "")
        }
        return ExitCode.ok
    }
    words.removeFirst()
    guard let command = Commands.all.first(where: { $0.name == first }) else {
        printError("daybook: '\(first)' is not a command.\n\n" + mainHelp())
        return ExitCode.usage
    }
    do {
        let arguments = try command.parse(words)
        if arguments.has("--help") {
            print(command.helpText, terminator: "")
            return ExitCode.ok
        }
        return try command.run(arguments)
    } catch let error as CLIError {
        printError("daybook \(command.name): \(error.message)")
        if error.code == ExitCode.usage { printError("See 'daybook \(command.name) --help'.") }
        return error.code
    } catch {
        printError("daybook \(command.name): \(error)")
        return ExitCode.software
    }
}

exit(runMain())
