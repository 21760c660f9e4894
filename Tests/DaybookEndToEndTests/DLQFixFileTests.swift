@testable import daybook
import DaybookCore
import DaybookStore
import Testing

/// The `--fix` line reader of `daybook dlq replay`, in process.
@Suite struct DLQFixFileTests {
    /// The id, user and event text of an accepted line, or the problem of a refused one.
    static func parse(_ line: String) -> (fix: (id: String, user: String, bytes: String)?, problem: String?) {
        var line = line
        return line.withUTF8 { bytes in
            switch DLQFixFile.parse(bytes) {
            case .success(let (id, event, range)): return ((id.description, event.user, String(decoding: bytes[range], as: UTF8.self)), nil)
            case .failure(let problem): return (nil, problem.text)
            }
        }
    }

    static let event = #"{"type":"sample-deleted","user":"ana","uuid":"u1"}"#

    @Test func theEventIsTakenExactlyAsWrittenWhateverItHolds() throws {
        // Braces, brackets, quotes and escapes inside strings; space everywhere; id last.
        let tricky = #"{ "note" : "a } in \"quotes\" [{\\" , "type":"sample-deleted","user":"ana","uuid":"u1", "x":[1,{"y":"}"}] }"#
        for line in [#"{"id":"3:1234","event":\#(Self.event)}"#, " {\t\"event\" :  \(tricky)  ,  \"id\" : \"0:0\" } ",
                     #"{"\u0069d":"7:1","ev\u0065nt":\#(Self.event)}"#] {
            guard let fix = Self.parse(line).fix else {
                Issue.record("refused \(line): \(Self.parse(line).problem ?? "")")
                continue
            }
            #expect(fix.user == "ana")
            #expect(line.contains(fix.bytes) && (fix.bytes == Self.event || fix.bytes == tricky), "\(fix.bytes)")
        }
    }

    @Test func aBadLineNamesTheFieldAndWhatToDo() {
        let cases: [(String, String)] = [
            (#"{"id":"3:1","event":{"type":"sample-deleted","user":"","uuid":"u"}}"#, "event.user: must not be empty"),
            (#"{"id":"3:1","event":{"type":"sample-added","user":"a","sample":{"uuid":"u","metric":"steps","source":"w","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":-1,"unit":"count","zone":"UTC"}}}"#,
             "event.sample.value: -1 is negative"),
            (#"{"id":"3:1","event":{"type":"sample-deleted","user":"a","uuid":"u"},"note":1}"#, #""note": not a member of a fix line"#),
            (#"{"id":"3:1","id":"3:2","event":{}}"#, "id: appears twice"),
            (#"{"event":{}}"#, "id: missing"),
            (#"{"id":"3/1","event":{}}"#, #"id: "3/1" is not a dead-letter id"#),
            (#"{"id":3,"event":{}}"#, "id: must be a string"),
            (#"{"id":"3:1"}"#, "event: missing"),
            (#"{"id":"3:1","event":[1]}"#, "event: must be the corrected event as a JSON object"),
            (#"[1]"#, "must be a JSON object"),
            (#"{"id":"3:1","event":{"#, "malformed JSON"),
        ]
        for (line, expected) in cases {
            guard let text = Self.parse(line).problem else {
                Issue.record("accepted \(line)")
                continue
            }
            #expect(text.contains(expected), "\(line): \(text)")
        }
    }
}
