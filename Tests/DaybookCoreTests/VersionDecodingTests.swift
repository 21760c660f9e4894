@testable import DaybookCore
import Testing

/// `sample.version`: an integer 0 … 2⁶³−1, absent meaning 0, read exactly by both readers.
@Suite struct VersionDecodingTests {
    let decoder = EventDecoder()

    func line(version: String?, escapeUser: Bool = false) -> String {
        // An escape in the user sends the line down the general path (the fast reader
        // refuses escapes), so each case runs through both readers.
        let user = escapeUser ? #""an\u0061""# : #""ana""#
        let v = version.map { #","version":\#($0)"# } ?? ""
        return #"{"type":"sample-added","user":\#(user),"sample":{"uuid":"a1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":3000,"unit":"count","zone":"UTC"\#(v)}}"#
    }

    func version(_ text: String?, general: Bool) throws -> Int64 {
        guard case .sampleAdded(let s) = try decoder.decode(line(version: text, escapeUser: general)) else {
            Issue.record("not an add")
            return -1
        }
        #expect(s.user == "ana")
        return s.version
    }

    @Test(arguments: [false, true])
    func readsExactIntegersUpToInt64Max(general: Bool) throws {
        #expect(try version(nil, general: general) == 0)
        #expect(try version("0", general: general) == 0)
        #expect(try version("7", general: general) == 7)
        // 2⁵³ + 1 is not a Double: a reader through Double would give 2⁵³.
        #expect(try version("9007199254740993", general: general) == 9_007_199_254_740_993)
        #expect(try version("9223372036854775807", general: general) == Int64.max)
        #expect(try version("null", general: general) == 0)
    }

    @Test(arguments: [false, true])
    func refusesEverythingElseNamingTheField(general: Bool) {
        let cases: [(String, EventError.Code, String)] = [
            ("-1", .badVersion, "-1 is not a version"),
            ("1.5", .badVersion, "1.5 is not a version"),
            // Echoed as written, not as the Double the literal became ("1000", "9.223372036854776e+18", "0").
            ("1e3", .badVersion, ": 1e3 is not a version"),
            ("2.0", .badVersion, ": 2.0 is not a version"),
            ("-0", .badVersion, ": -0 is not a version"),
            ("9223372036854775808", .badVersion, ": 9223372036854775808 is not a version"),
            ("99999999999999999999999", .badVersion, ": 99999999999999999999999 is not a version"),
            (#""3""#, .wrongType, #"must be an integer from 0 to 9223372036854775807, got "3""#),
            ("true", .wrongType, "got true"),
        ]
        for (text, code, message) in cases {
            do {
                _ = try decoder.decode(line(version: text, escapeUser: general))
                Issue.record("\(text) accepted")
            } catch {
                #expect(error.code == code, "\(text)")
                #expect(error.field == "sample.version", "\(text)")
                #expect(("sample.version: " + error.message).contains(message), "\(text): \(error.message)")
            }
        }
    }

    @Test func bothReadersWordABadVersionByteForByteAlike() {
        for text in ["-0", "1e3", "9223372036854775808", "1.50", "-1"] {
            let words = [false, true].map { general -> String in
                do {
                    _ = try decoder.decode(line(version: text, escapeUser: general))
                    return "accepted"
                } catch {
                    return "\(error)"
                }
            }
            #expect(words[0] == words[1], "\(text)")
            #expect(words[0].contains("\(text) is not a version"), "\(words[0])")
        }
    }

    @Test func theEncoderWritesTheVersionAndReadsItBack() throws {
        var s = Sample(user: "ana", uuid: "a1", metric: .steps, source: "watch", start: Instant(seconds: 0),
                       end: Instant(seconds: 60), value: 10, zone: "UTC", version: Int64.max)
        #expect(try decoder.decode(Event.sampleAdded(s).jsonLine) == .sampleAdded(s))
        #expect(Event.sampleAdded(s).jsonLine.contains(#""version":9223372036854775807"#))
        s.version = 0
        #expect(!Event.sampleAdded(s).jsonLine.contains("version")) // absent = 0: lines as before
        #expect(try decoder.decode(Event.sampleAdded(s).jsonLine) == .sampleAdded(s))
    }
}
