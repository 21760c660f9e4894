import DaybookCore
import DaybookStore

/// The `--fix` file of `daybook dlq replay`: JSON lines, each naming the dead letter it
/// repairs and giving the corrected event, published exactly as written:
///
///     {"id":"3:1234","event":{"type":"sample-added","user":"ana","sample":{…}}}
enum DLQFixFile {
    /// The members a line may have; anything else (a typo such as "evnt") is refused.
    static let members = ["id", "event"]

    /// One valid line: the dead letter it repairs and the event's bytes, as written.
    struct Fix {
        var line: Int
        var id: DeadLetterID
        var event: Event
        var bytes: [UInt8]
    }

    /// What is wrong with one line: `field: reason`, naming what to change.
    struct Problem: Error {
        var line: Int
        var text: String
    }

    /// Every line of `input`: the valid ones, and a problem for each invalid one. Blank
    /// lines are skipped; a byte order mark at the very start is too.
    static func read(_ input: Files.Input) throws -> (fixes: [Fix], problems: [Problem]) {
        var fixes: [Fix] = []
        var problems: [Problem] = []
        try Files.forEachBatch(input) { lines in
            for (number, bytes) in lines {
                guard let bytes else {
                    problems.append(Problem(line: number, text: "longer than \(Files.maximumLineBytes >> 20) MiB and was not read; a fix line is one event and its id"))
                    continue
                }
                switch parse(bytes) {
                case .success(let (id, event, range)):
                    fixes.append(Fix(line: number, id: id, event: event, bytes: Array(bytes[range])))
                case .failure(let problem):
                    problems.append(Problem(line: number, text: problem.text))
                }
            }
        }
        return (fixes, problems)
    }

    /// Why a line was refused, before its number is known.
    struct LineProblem: Error { var text: String }

    /// The id, the event and where the event's bytes are in `line`.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<(DeadLetterID, Event, Range<Int>), LineProblem> {
        let json: JSONValue
        do {
            json = try JSONParser.parse(line)
        } catch {
            let at = error.path.map { "\($0): " } ?? ""
            switch error.kind {
            case .syntax: return .failure(LineProblem(text: "\(at)malformed JSON: \(error); a line is {\"id\":\"P:OFFSET\",\"event\":{…}}"))
            case .invalidUTF8: return .failure(LineProblem(text: "\(at)not valid UTF-8: \(error); encode text as UTF-8"))
            case .duplicateKey: return .failure(LineProblem(text: "\(at)\(error); give each member once"))
            }
        }
        guard case .object(let object) = json else {
            return .failure(LineProblem(text: "must be a JSON object {\"id\":\"P:OFFSET\",\"event\":{…}}, got \(json.summary)"))
        }
        if let unknown = object.keys.sorted().first(where: { !members.contains($0) }) {
            return .failure(LineProblem(text: "\(TerminalText.escaped(JSONWriter.quoted(unknown))): not a member of a fix line; a line has only \"id\" and \"event\""))
        }
        guard let idValue = object["id"] else {
            return .failure(LineProblem(text: "id: missing; name the dead letter this line repairs, as 'daybook dlq list' shows it (e.g. \"3:1234\")"))
        }
        guard case .string(let idText) = idValue else {
            return .failure(LineProblem(text: "id: must be a string such as \"3:1234\", got \(TerminalText.escaped(idValue.summary))"))
        }
        guard let id = DeadLetterID(idText) else {
            return .failure(LineProblem(text: "id: \(TerminalText.escaped(JSONWriter.quoted(idText))) is not a dead-letter id; write PARTITION:OFFSET as 'daybook dlq list' shows it (e.g. \"3:1234\", no leading zeros)"))
        }
        guard let eventValue = object["event"] else {
            return .failure(LineProblem(text: "event: missing; give the corrected event as a JSON object (topics/README.md)"))
        }
        guard case .object = eventValue, let range = memberRanges(line).first(where: { $0.name == "event" })?.range else {
            return .failure(LineProblem(text: "event: must be the corrected event as a JSON object (topics/README.md), got \(TerminalText.escaped(eventValue.summary))"))
        }
        do {
            let event = try EventDecoder().decode(UnsafeBufferPointer(rebasing: line[range]))
            return .success((id, event, range))
        } catch {
            let field = error.field.map { "event.\($0)" } ?? "event"
            return .failure(LineProblem(text: "\(field): \(TerminalText.escaped(error.message))"))
        }
    }

    /// The name and byte range of each top-level member's value in `bytes`, which
    /// `JSONParser` has accepted as an object (so the scan needs no error handling; it stops
    /// at anything unexpected).
    static func memberRanges(_ b: UnsafeBufferPointer<UInt8>) -> [(name: String, range: Range<Int>)] {
        var out: [(String, Range<Int>)] = []
        var i = 0
        func isSpace(_ c: UInt8) -> Bool { c == 32 || c == 10 || c == 13 || c == 9 }
        func skipSpace() { while i < b.count, isSpace(b[i]) { i += 1 } }
        func skipString() {
            i += 1
            while i < b.count, b[i] != 34 { i += b[i] == 92 ? 2 : 1 }
            i += 1
        }
        func skipValue() {
            guard i < b.count else { return }
            switch b[i] {
            case 34:
                skipString()
            case 123, 91:
                var depth = 0
                while i < b.count {
                    switch b[i] {
                    case 34: skipString(); continue
                    case 123, 91: depth += 1
                    case 125, 93:
                        depth -= 1
                        if depth == 0 { i += 1; return }
                    default: break
                    }
                    i += 1
                }
            default:
                while i < b.count, !(b[i] == 44 || b[i] == 125 || b[i] == 93 || isSpace(b[i])) { i += 1 }
            }
        }
        skipSpace()
        guard i < b.count, b[i] == 123 else { return [] }
        i += 1
        while true {
            skipSpace()
            guard i < b.count, b[i] == 34 else { break }
            let keyStart = i
            skipString()
            guard i <= b.count, case .string(let name)? = try? JSONParser.parse(UnsafeBufferPointer(rebasing: b[keyStart..<i])) else { break }
            skipSpace()
            guard i < b.count, b[i] == 58 else { break }
            i += 1
            skipSpace()
            let start = i
            skipValue()
            guard i <= b.count else { break }
            out.append((name, start..<i))
            skipSpace()
            guard i < b.count, b[i] == 44 else { break }
            i += 1
        }
        return out
    }
}
