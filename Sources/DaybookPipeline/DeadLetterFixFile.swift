import DaybookCore
import DaybookStore
import DaybookSupport

extension DeadLetterReplay {
    /// One valid line of a fix file: the dead letter it repairs and the corrected event's
    /// bytes, exactly as written (they are published unchanged).
    public struct Fix: Sendable {
        public var line: Int
        public var id: DeadLetterID
        public var event: Event
        public var bytes: [UInt8]
    }

    /// What is wrong with one line of a fix file.
    public enum FixProblem: Error, Sendable, Equatable {
        /// Longer than the reader accepts; the line was not read.
        case tooLong(limitBytes: Int)
        /// Not JSON (`kind` says how: syntax, UTF-8, a member given twice).
        case malformed(JSONSyntaxError)
        /// JSON, but not an object (the value's summary).
        case notAnObject(String)
        /// A member other than "id" and "event".
        case unknownMember(String)
        case missingID
        /// "id" is not a string (the value's summary).
        case idNotAString(String)
        /// "id" is not `PARTITION:OFFSET` in canonical form (the text given).
        case malformedID(String)
        case missingEvent
        /// "event" is not an object (the value's summary).
        case eventNotAnObject(String)
        /// The corrected event fails validation.
        case invalidEvent(EventError)
    }

    /// The lines of a fix file, each a `Fix` or a problem:
    ///
    ///     {"id":"3:1234","event":{"type":"sample-added","user":"ana","sample":{…}}}
    ///
    /// Build it line by line with `add(line:bytes:)`; reading the file is the caller's.
    public struct FixFile: Sendable {
        /// The members a line may have; anything else (a typo such as "evnt") is refused.
        public static let members = ["id", "event"]

        public var fixes: [Fix] = []
        public var problems: [(line: Int, problem: FixProblem)] = []

        public init() {}

        /// Adds line `number`; nil `bytes` for a line too long to read (over `limit` bytes).
        public mutating func add(line number: Int, bytes: UnsafeBufferPointer<UInt8>?, limit: Int) {
            guard let bytes else {
                problems.append((number, .tooLong(limitBytes: limit)))
                return
            }
            switch FixFile.parse(bytes) {
            case .success(let (id, event, range)): fixes.append(Fix(line: number, id: id, event: event, bytes: Array(bytes[range])))
            case .failure(let problem): problems.append((number, problem))
            }
        }

        /// The id, the event and where the event's bytes are in `line`.
        public static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<(DeadLetterID, Event, Range<Int>), FixProblem> {
            let json: JSONValue
            do {
                json = try JSONParser.parse(line)
            } catch {
                return .failure(.malformed(error))
            }
            guard case .object(let object) = json else { return .failure(.notAnObject(json.summary)) }
            if let unknown = object.keys.sorted().first(where: { !members.contains($0) }) { return .failure(.unknownMember(unknown)) }
            guard let idValue = object["id"] else { return .failure(.missingID) }
            guard case .string(let idText) = idValue else { return .failure(.idNotAString(idValue.summary)) }
            guard let id = DeadLetterID(idText) else { return .failure(.malformedID(idText)) }
            guard let eventValue = object["event"] else { return .failure(.missingEvent) }
            guard case .object = eventValue, let range = memberRanges(line).first(where: { $0.name == "event" })?.range else {
                return .failure(.eventNotAnObject(eventValue.summary))
            }
            do {
                let event = try EventDecoder().decode(UnsafeBufferPointer(rebasing: line[range]))
                return .success((id, event, range))
            } catch {
                return .failure(.invalidEvent(error))
            }
        }

        /// The name and byte range of each top-level member's value in `bytes`, which
        /// `JSONParser` has accepted as an object (so the scan needs no error handling; it
        /// stops at anything unexpected).
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
}
