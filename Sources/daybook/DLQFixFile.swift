import DaybookCore
import DaybookPipeline
import DaybookStore
import DaybookSupport

/// The `--fix` file of `daybook dlq replay`, read from the command line's input and its
/// problems worded for it; the parsing is `DeadLetterReplay.FixFile`'s:
///
///     {"id":"3:1234","event":{"type":"sample-added","user":"ana","sample":{…}}}
enum DLQFixFile {
    /// Every line of `input`. Blank lines are skipped; a byte order mark at the very start is too.
    static func read(_ input: Files.Input) throws -> DeadLetterReplay.FixFile {
        var file = DeadLetterReplay.FixFile()
        try Files.forEachBatch(input) { lines in
            for (number, bytes) in lines { file.add(line: number, bytes: bytes, limit: Files.maximumLineBytes) }
        }
        return file
    }

    /// Why a line was refused, worded for the command line.
    struct LineProblem: Error { var text: String }

    /// The id, the event and where the event's bytes are in `line`.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<(DeadLetterID, Event, Range<Int>), LineProblem> {
        DeadLetterReplay.FixFile.parse(line).mapError { LineProblem(text: describe($0)) }
    }

    /// `field: reason`, naming what to change.
    static func describe(_ problem: DeadLetterReplay.FixProblem) -> String {
        switch problem {
        case .tooLong(let limit):
            return "longer than \(limit >> 20) MiB and was not read; a fix line is one event and its id"
        case .malformed(let error):
            let at = error.path.map { "\($0): " } ?? ""
            switch error.kind {
            case .syntax: return "\(at)malformed JSON: \(error); a line is {\"id\":\"P:OFFSET\",\"event\":{…}}"
            case .invalidUTF8: return "\(at)not valid UTF-8: \(error); encode text as UTF-8"
            case .duplicateKey: return "\(at)\(error); give each member once"
            }
        case .notAnObject(let summary):
            return "must be a JSON object {\"id\":\"P:OFFSET\",\"event\":{…}}, got \(summary)"
        case .unknownMember(let name):
            return "\(TerminalText.escaped(JSONWriter.quoted(name))): not a member of a fix line; a line has only \"id\" and \"event\""
        case .missingID:
            return "id: missing; name the dead letter this line repairs, as 'daybook dlq list' shows it (e.g. \"3:1234\")"
        case .idNotAString(let summary):
            return "id: must be a string such as \"3:1234\", got \(TerminalText.escaped(summary))"
        case .malformedID(let text):
            return "id: \(TerminalText.escaped(JSONWriter.quoted(text))) is not a dead-letter id; write PARTITION:OFFSET as 'daybook dlq list' shows it (e.g. \"3:1234\", no leading zeros)"
        case .missingEvent:
            return "event: missing; give the corrected event as a JSON object (topics/README.md)"
        case .eventNotAnObject(let summary):
            return "event: must be the corrected event as a JSON object (topics/README.md), got \(TerminalText.escaped(summary))"
        case .invalidEvent(let error):
            let field = error.field.map { "event.\($0)" } ?? "event"
            return "\(field): \(TerminalText.escaped(error.message))"
        }
    }
}
