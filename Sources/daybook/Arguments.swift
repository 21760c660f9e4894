import DaybookCore
import DaybookKafka
import DaybookSupport
import Foundation

/// One option a command accepts, for parsing and for `--help`.
struct OptionSpec {
    var name: String
    /// Placeholder for the value (`FILE`); nil for a flag.
    var value: String?
    var help: String
    /// True for an option that may be given more than once (`--partition 1 --partition 3`);
    /// any other option given twice is refused, naming it, instead of the last one winning.
    var repeatable = false
}

/// The words of a command line, sorted into options, flags and positionals.
struct ParsedArguments {
    var positionals: [String] = []
    var values: [String: [String]] = [:]
    var flags: Set<String> = []

    func value(_ name: String) -> String? { values[name]?.last }
    /// Every value of an option given more than once (`--partition 1 --partition 3`), in order.
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The `--topic` value, checked against Kafka's rule for topic names, or `fallback`.
    func topic(default fallback: String) throws -> String {
        guard let name = value("--topic") else { return fallback }
        if let problem = TopicName.problem(name) {
            throw CLIError.usage("--topic \(JSONWriter.quoted(name)) is not a Kafka topic name: it \(problem)")
        }
        return name
    }

    /// Every `--partition` value (repeated, or comma-separated), sorted; nil when absent.
    func partitions() throws -> [Int32]? {
        guard let texts = values["--partition"] else { return nil }
        var out = Set<Int32>()
        for text in texts {
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let p = Int32(part.trimmingCharacters(in: .whitespaces)), p >= 0 else {
                    throw CLIError.usage("--partition '\(TerminalText.escaped(String(part)))' is not a partition number: give a whole number from 0 (repeat --partition, or separate with commas)")
                }
                out.insert(p)
            }
        }
        return out.sorted()
    }

    /// The option's value as an integer within `range`, or `fallback` when absent.
    func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = value(name) else { return fallback }
        guard let n = Int(text), range.contains(n) else {
            throw CLIError.usage("\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), got '\(TerminalText.escaped(text))'")
        }
        return n
    }
}

/// A failure that ends the command with a meaningful exit code (sysexits.h).
struct CLIError: Error {
    var code: Int32
    var message: String

    static func usage(_ m: String) -> CLIError { CLIError(code: ExitCode.usage, message: m) }
}

enum ExitCode {
    static let ok: Int32 = 0
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    static let unavailable: Int32 = 69
    static let software: Int32 = 70
    static let ioError: Int32 = 74
    static let tempFail: Int32 = 75
    /// EX_PROTOCOL: the Kafka log does not hold what a shard needs next (a gap, or another log).
    static let logMismatch: Int32 = 76
    static let config: Int32 = 78
}

/// A subcommand of `daybook`: its help text, its options, and what it does.
protocol Subcommand: Sendable {
    static var name: String { get }
    static var abstract: String { get }
    static var usage: String { get }
    static var discussion: String { get }
    static var options: [OptionSpec] { get }
    /// Runs the command; returns the exit code.
    static func run(_ arguments: ParsedArguments) throws -> Int32
}

extension Subcommand {
    static var helpText: String {
        var s = "OVERVIEW: \(abstract)\n\nUSAGE: daybook \(usage)\n"
        if !options.isEmpty {
            s += "\nOPTIONS:\n"
            let all = options + [OptionSpec(name: "--help", value: nil, help: "Show this help.")]
            let width = all.map { $0.name.count + ($0.value.map { $0.count + 1 } ?? 0) }.max() ?? 0
            for o in all {
                let left = o.name + (o.value.map { " " + $0 } ?? "")
                s += "  " + left + String(repeating: " ", count: width - left.count + 2) + o.help + "\n"
            }
        }
        if !discussion.isEmpty { s += "\n" + discussion + "\n" }
        return s
    }

    /// Parses `words` against `options`; `--name=value` and `--name value` both work.
    static func parse(_ words: [String]) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        var i = 0
        var onlyPositionals = false
        while i < words.count {
            let word = words[i]
            i += 1
            if onlyPositionals || word == "-" || !word.hasPrefix("-") {
                parsed.positionals.append(word)
                continue
            }
            if word == "--" { onlyPositionals = true; continue }
            var name = word
            var inline: String? = nil
            if let eq = word.firstIndex(of: "=") {
                name = String(word[..<eq])
                inline = String(word[word.index(after: eq)...])
            }
            if name == "--help" || name == "-h" { parsed.flags.insert("--help"); continue }
            guard let spec = options.first(where: { $0.name == name }) else {
                let near = options.map(\.name).filter { $0.hasPrefix(String(name.prefix(4))) }
                let hint = near.isEmpty ? "" : " (did you mean \(near.joined(separator: " or "))?)"
                throw CLIError.usage("unknown option '\(name)' for 'daybook \(self.name)'\(hint)")
            }
            if let valueName = spec.value {
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard i < words.count else { throw CLIError.usage("\(name) needs a value (\(valueName))") }
                    value = words[i]
                    i += 1
                }
                if !spec.repeatable, let earlier = parsed.values[name]?.first {
                    throw CLIError.usage("\(name) is given twice ('\(TerminalText.escaped(earlier))' and '\(TerminalText.escaped(value))'); it takes one value: give it once")
                }
                parsed.values[name, default: []].append(value)
            } else {
                guard inline == nil else { throw CLIError.usage("\(name) is a flag and takes no value") }
                parsed.flags.insert(name)
            }
        }
        return parsed
    }
}
