@testable import DaybookCore
import DaybookSupport
import Foundation
import Testing

@Suite struct ConfigurationStrictnessTests {
    @Test(arguments: ["[]", "5", "null", #""priority""#])
    func aConfigurationThatIsNotAnObjectIsRefused(text: String) throws {
        let json = try JSONParser.parse(text)
        #expect(throws: ConfigurationError.self) { try SourcePriority(configuration: json) }
    }

    @Test func anObjectWithoutPriorityKeepsTheBuiltInOrder() throws {
        #expect(try SourcePriority(configuration: JSONParser.parse("{}")) == .builtIn)
    }
}

@Suite struct JSONWriterEscapingTests {
    @Test func everyControlCharacterIsEscapedAndRoundTrips() throws {
        let all = String(String.UnicodeScalarView((0..<0xA0).compactMap(Unicode.Scalar.init)))
        let quoted = JSONWriter.quoted(all)
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(quoted.contains("\\u001b") && quoted.contains("\\u007f") && quoted.contains("\\u009b"))
        #expect(try JSONParser.parse(quoted) == .string(all))
    }

    @Test func syntaxErrorsNameBytesNotRawCharacters() {
        for (text, reason) in [("\u{1B}[2J", "unexpected byte 0x1B"), ("\"\\\u{9B}\"", "invalid escape: backslash then byte 0xC2"), ("x", "unexpected character 'x'")] {
            do {
                _ = try JSONParser.parse(text)
                Issue.record("parsed \(text)")
            } catch {
                #expect(error.reason == reason)
            }
        }
    }
}

/// Invalid UTF-8 and repeated members are refused by both readers, naming the member.
@Suite struct InputStrictnessTests {
    static let valid = #"{"type":"sample-added","user":"ana","sample":{"uuid":"a1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00+01:00","value":3000,"unit":"count","zone":"Europe/Berlin"}}"#

    /// `valid` as bytes with the first `target` replaced by `replacement`.
    static func bytes(replacing target: String, with replacement: [UInt8]) -> [UInt8] {
        let text = Array(valid.utf8), t = Array(target.utf8)
        guard let i = (0...(text.count - t.count)).first(where: { Array(text[$0..<$0 + t.count]) == t }) else { return text }
        return Array(text[..<i]) + replacement + Array(text[(i + t.count)...])
    }

    func decode(_ bytes: [UInt8]) -> Result<Event, EventError> {
        bytes.withUnsafeBufferPointer { b in Result { () throws(EventError) in try EventDecoder().decode(b) } }
    }

    /// What the tree reader alone says about `bytes`.
    func general(_ bytes: [UInt8]) -> Result<Event, EventError> {
        bytes.withUnsafeBufferPointer { b in
            do throws(JSONSyntaxError) {
                var integers: [String: Int64]? = [:]
                let tree = try JSONParser.parse(b, exactIntegers: &integers)
                return Result { () throws(EventError) in try EventDecoder().decode(tree, exactIntegers: integers ?? [:]) }
            } catch {
                return .failure(EventError(syntax: error))
            }
        }
    }

    func fastReaderGivesUp(_ bytes: [UInt8]) -> Bool {
        var zones = ZoneMemo()
        return bytes.withUnsafeBufferPointer { FastEventReader.event($0, zones: &zones) == nil }
    }

    @Test(arguments: [
        ("\"ana\"", [0x22, 0x61, 0x6E, 0xFF, 0x61, 0x22], "user"),              // a byte that is never UTF-8
        ("\"ana\"", [0x22, 0x61, 0xC3, 0x22], "user"),                           // a truncated sequence
        ("\"watch\"", [0x22, 0xC0, 0xAF, 0x22], "sample.source"),                // an overlong '/'
        ("\"a1\"", [0x22, 0xED, 0xA0, 0x80, 0x22], "sample.uuid"),               // a surrogate
        ("\"count\"", [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "sample.unit"),      // above U+10FFFF
        ("\"Europe/Berlin\"", [0x22, 0x5C, 0x6E, 0xE2, 0x82, 0x22], "sample.zone"), // after an escape
    ] as [(String, [UInt8], String)])
    func invalidUTF8IsRefusedNamingTheField(target: String, replacement: [UInt8], field: String) throws {
        let line = Self.bytes(replacing: target, with: replacement)
        #expect(fastReaderGivesUp(line))
        guard case .failure(let error) = decode(line) else { Issue.record("accepted"); return }
        #expect(error.code == .invalidUTF8)
        #expect(error.field == field)
        #expect(error.message.contains("not valid UTF-8: byte 0x"), "\(error)")
        #expect(decode(line) == general(line))
    }

    /// The fast reader scans strings eight bytes at a time and a word holding a quote, a
    /// backslash or a control character byte by byte: at every place in a uuid of 1 to 24
    /// bytes (so at every place in a word, in the last partial word and across words), an
    /// escape or a control character makes it give up and the general reader decide, and DEL
    /// or a two-byte letter is read into the same event as the general reader's.
    @Test func theWordScanDecidesAtEveryPlaceInAString() {
        let specials: [(bytes: [UInt8], fastReads: Bool)] = [
            ([0x5C, 0x22], false), ([0x5C, 0x6E], false), ([0x5C, 0x75, 0x30, 0x30, 0x34, 0x31], false), // \" \n \u0041
            ([0x01], false), ([0x1F], false), ([0x09], false),                                            // control characters
            ([0x7F], true), ([0xC3, 0xA9], true), ([0x20], true),                                          // DEL, é, a space
        ]
        var checked = 0
        for length in 1...24 {
            for place in 0..<length {
                for special in specials {
                    var uuid = Array(repeating: UInt8(ascii: "u"), count: length - 1)
                    uuid.insert(contentsOf: special.bytes, at: place)
                    let line = Self.bytes(replacing: "\"a1\"", with: [0x22] + uuid + [0x22])
                    let fast: Event? = line.withUnsafeBufferPointer { b in
                        var zones = ZoneMemo()
                        return FastEventReader.event(b, zones: &zones)
                    }
                    let tree = general(line)
                    if special.fastReads {
                        #expect(fast != nil && tree == .success(fast!), "\(uuid)")
                    } else {
                        #expect(fast == nil, "\(uuid)")
                    }
                    #expect(decode(line) == tree, "\(uuid)")
                    checked += 1
                }
            }
        }
        #expect(checked == 300 * 9)
    }

    @Test func twoUsersThatDifferOnlyInInvalidBytesAreNeverMerged() {
        for bad: UInt8 in [0xFE, 0xFF] {
            let line = Self.bytes(replacing: "\"ana\"", with: [0x22, 0x61, bad, 0x22])
            #expect(throws: EventError.self) { try decode(line).get() }
        }
    }

    @Test func invalidUTF8InAnUnknownMemberOrAKeyIsRefusedToo() {
        let inNote = Array(Self.valid.dropLast().utf8) + Array(#","note":"x"#.utf8) + [0xFF, 0x22, 0x7D]
        guard case .failure(let note) = decode(inNote) else { Issue.record("accepted"); return }
        #expect(note.code == .invalidUTF8 && note.field == "note")
        let inKey = Self.bytes(replacing: "\"user\"", with: [0x22, 0x75, 0xFF, 0x22])
        guard case .failure(let key) = decode(inKey) else { Issue.record("accepted"); return }
        #expect(key.code == .invalidUTF8 && key.field == nil && key.message.contains("a member name is not valid UTF-8"))
    }

    @Test func validMultiByteTextIsKept() throws {
        let line = Self.valid.replacingOccurrences(of: "\"ana\"", with: "\"Zoë €😀\"").replacingOccurrences(of: "\"watch\"", with: "\"w\\u00e9\"")
        guard case .sampleAdded(let s) = try EventDecoder().decode(line) else { Issue.record("not an add"); return }
        #expect(s.user == "Zoë €😀" && s.source == "wé")
    }

    @Test(arguments: [
        (#"{"type":"sample-deleted","user":"ana","uuid":"x","user":"bob"}"#, "user"),
        (#"{"type":"sample-deleted","type":"sample-deleted","user":"ana","uuid":"x"}"#, "type"),
        (#"{"type":"sample-deleted","user":"ana","uuid":"x","note":1,"note":2}"#, "note"),
        (#"{"type":"sample-deleted","user":"ana","uuid":"x","extra":{"a":1,"a":2}}"#, "extra.a"),
        (valid.replacingOccurrences(of: #""value":3000"#, with: #""value":3000,"value":9000"#), "sample.value"),
        (valid.replacingOccurrences(of: #""uuid":"a1""#, with: #""uuid":"a1","uuid":"a2""#), "sample.uuid"),
        (valid.replacingOccurrences(of: #""schema":"#, with: "").replacingOccurrences(of: #"{"type""#, with: #"{"schema":1,"schema":1,"type""#), "schema"),
    ])
    func repeatedMembersAreRefusedNamingTheKey(line: String, field: String) {
        let bytes = Array(line.utf8)
        #expect(fastReaderGivesUp(bytes))
        guard case .failure(let error) = decode(bytes) else { Issue.record("accepted \(line)"); return }
        #expect(error.code == .duplicateKey, "\(error)")
        #expect(error.field == field, "\(error)")
        #expect(error.message.contains("appears twice in one object"))
        #expect(decode(bytes) == general(bytes))
    }

    @Test func aByteOrderMarkInsideALineIsNamed() {
        let line = [0xEF, 0xBB, 0xBF] + Array(Self.valid.utf8)
        guard case .failure(let error) = decode(line) else { Issue.record("accepted"); return }
        #expect(error.code == .malformedJSON)
        #expect(error.message.contains("byte order mark (EF BB BF): it is accepted only at the start of a file"), "\(error)")
    }

    @Test(arguments: ["EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT", "Etc/GMT+5", "Etc/GMT-14", "CET", "EST", "Asia/Calcutta"])
    func tzDatabaseNamesFoundationKnowsAreAccepted(zone: String) throws {
        let rules = try #require(ZoneRules.named(zone))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: zone))
        var t: Int64 = 1_704_067_200 // 2024-01-01Z, hourly through the year (both DST changes)
        while t < 1_735_689_600 {
            let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: TimeInterval(t)))
            let expected = CivilDay(year: try #require(parts.year), month: try #require(parts.month), day: try #require(parts.day))
            guard rules.day(of: Instant(seconds: t)) == expected else {
                Issue.record("\(zone) at \(Instant(seconds: t)): \(rules.day(of: Instant(seconds: t))) vs \(expected)")
                return
            }
            t += 3_600
        }
        let line = Self.valid.replacingOccurrences(of: "Europe/Berlin", with: zone)
        #expect(throws: Never.self) { try EventDecoder().decode(line) }
    }

    @Test(arguments: ["GMT+5", "UTC-0330", "GMT+0500", "UTC+1", "Europe/Berln", "est5edt", "Nowhere", ""])
    func offsetsAndUnknownNamesAreStillRefused(zone: String) {
        #expect(ZoneRules.named(zone) == nil)
    }
}
