@testable import DaybookCore
import DaybookSupport
import Foundation
import Testing

/// The pointer-based fast paths (timestamps, sample values, metric and unit names) answer
/// exactly as the general code they stand beside: compared over generated inputs, each
/// one mutated at every place, not over a handful of examples.
@Suite struct FastReaderEquivalenceTests {
    // MARK: timestamps

    /// `Instant.parse` as it stood before the pointer-based one (6000f3f), kept here as the
    /// reference: the shape, then the offset's range, then the end, then the field ranges,
    /// then the accepted range.
    static func referenceParse(_ b: [UInt8]) -> Instant.Parsed {
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(45), let month = digits(2), expect(45), let day = digits(2) else { return .malformed }
        guard i < b.count, b[i] == 84 || b[i] == 116 || b[i] == 32 else { return .malformed }
        i += 1
        guard let hour = digits(2), expect(58), let minute = digits(2), expect(58), let second = digits(2) else { return .malformed }
        var frac: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var n = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if n < 9 { frac = frac * 10 + Int64(b[i] - 48) }
                n += 1
                i += 1
            }
            guard n > 0 else { return .malformed }
            for _ in n..<max(n, 9) { frac *= 10 }
        }
        guard i < b.count else { return .malformed }
        var offset = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            let negative = b[i] == 45
            i += 1
            guard let oh = digits(2), expect(58), let om = digits(2) else { return .malformed }
            guard oh <= 23, om <= 59 else { return .fieldOutOfRange }
            offset = (oh * 60 + om) * 60 * (negative ? -1 : 1)
        } else {
            return .malformed
        }
        guard i == b.count else { return .malformed }
        guard (1...12).contains(month), day >= 1, day <= CivilDay.daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 59 else { return .fieldOutOfRange }
        let days = Int64(CivilDay(year: year, month: month, day: day).number)
        let secs = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        let earliest = Instant.earliestAccepted.nanoseconds / Instant.nanosPerSecond
        let end = Instant.endOfAccepted.nanoseconds / Instant.nanosPerSecond
        guard secs >= earliest, secs < end else { return .outsideAcceptedRange }
        return .instant(Instant(nanoseconds: secs * Instant.nanosPerSecond + frac))
    }

    static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    /// A timestamp with fields drawn partly out of range (month 13, day 31 of February, hour
    /// 24, offset +24:00), 0–12 fraction digits and every zone designator.
    static func timestamp(_ g: inout SplitMix64) -> String {
        let years = [1899, 1900, 1970, 2000, 2023, 2024, 2100, 2199, 2200, 9999]
        var text = String(years[g.below(years.count)]) + "-" + two(1 + g.below(13)) + "-" + two(g.below(32))
        text += ["T", "t", " "][g.below(3)] + two(g.below(25)) + ":" + two(g.below(61)) + ":" + two(g.below(61))
        let fraction = g.below(13)
        if fraction > 0 { text += "." + String((0..<fraction).map { _ in Character(String(g.below(10))) }) }
        switch g.below(4) {
        case 0: text += "Z"
        case 1: text += "z"
        default: text += (g.below(2) == 0 ? "+" : "-") + two(g.below(25)) + ":" + two(g.below(61))
        }
        return text
    }

    @Test func timestampsParseAsTheReferenceParsesAtEveryMutation() {
        var g = SplitMix64(seed: 0x7157)
        let replacements = Array("09-:Tt Zz+.x\u{7F}".utf8) + [0x80, 0]
        var compared = 0, instants = 0, kinds = Set<String>()
        // One date memo over every text, as a stream's lines share one (`ZoneMemo`): the date
        // it remembers never changes an answer, whatever text comes next.
        var memo = Instant.DateMemo()
        func check(_ bytes: [UInt8]) {
            let got = bytes.withUnsafeBufferPointer { Instant.parse($0) }
            let want = Self.referenceParse(bytes)
            #expect(got == want, "\(String(decoding: bytes, as: UTF8.self)): \(got) against \(want)")
            let remembered = bytes.withUnsafeBufferPointer { Instant.parse($0, memo: &memo) }
            #expect(remembered == want, "with the date memo, \(String(decoding: bytes, as: UTF8.self)): \(remembered) against \(want)")
            compared += 1
            if case .instant = got { instants += 1 }
            kinds.insert("\(want)".prefix(while: { $0 != "(" }).description)
        }
        for _ in 0..<1_500 {
            let text = Array(Self.timestamp(&g).utf8)
            check(text)
            for cut in 0..<text.count { check(Array(text[..<cut])) }
            for at in 0..<text.count {
                var changed = text
                changed[at] = replacements[g.below(replacements.count)]
                check(changed)
            }
            check(text + [UInt8(ascii: "Z")])
        }
        // The generator reaches every answer, and plenty of real instants.
        #expect(kinds == ["instant", "malformed", "fieldOutOfRange", "outsideAcceptedRange"])
        #expect(compared > 40_000 && instants > 200, "compared \(compared), instants \(instants)")
    }

    // MARK: sample values

    /// A valid line of distance (metres, bound 5,000,000) whose value is `value` as written.
    static func line(value: String) -> [UInt8] {
        Array(#"{"type":"sample-added","user":"ana","sample":{"uuid":"a1","metric":"distance","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":\#(value),"unit":"m","zone":"UTC"}}"#.utf8)
    }

    /// Number texts of 1–20 integer digits (leading zeros too), 0–20 fraction digits, a
    /// minus now and then, an exponent now and then.
    static func number(_ g: inout SplitMix64) -> String {
        func digits(_ n: Int) -> String { String((0..<n).map { _ in Character(String(g.below(10))) }) }
        var text = g.below(10) == 0 ? "-" : ""
        text += g.below(3) == 0 ? "0" : String(1 + g.below(9)) + digits(g.below(8))
        if g.below(4) != 0 { text += "." + digits(g.below(4) == 0 ? 1 + g.below(20) : 1 + g.below(6)) }
        if g.below(12) == 0 { text += ["e", "E"][g.below(2)] + ["", "+", "-"][g.below(3)] + digits(1 + g.below(2)) }
        if g.below(40) == 0 { text = ["01", "1.", "-", "-0", "0.0", ".5", "1e", "-Infinity", "00.5"][g.below(9)] }
        return text
    }

    /// The event the general path (a JSON tree, then `EventDecoder`) reads from `bytes`, or nil.
    static func treeEvent(_ bytes: [UInt8]) -> Event? {
        bytes.withUnsafeBufferPointer { b in
            var integers: [String: Int64]? = [:]
            guard let json = try? JSONParser.parse(b, exactIntegers: &integers) else { return nil }
            return try? EventDecoder().decode(json, exactIntegers: integers ?? [:])
        }
    }

    @Test func sampleValuesReadAsTheTreeReadsThem() throws {
        var g = SplitMix64(seed: 0xFA57)
        var fast = 0, fractions = 0
        for _ in 0..<20_000 {
            let text = Self.number(&g)
            let bytes = Self.line(value: text)
            var zones = ZoneMemo()
            let direct = bytes.withUnsafeBufferPointer { FastEventReader.event($0, zones: &zones) }
            let tree = Self.treeEvent(bytes)
            guard let direct else { continue }
            fast += 1
            if text.contains(".") { fractions += 1 }
            // The same event, and the same bits (== alone would let -0 stand for 0).
            #expect(direct == tree, "\(text)")
            if case .sampleAdded(let a)? = tree, case .sampleAdded(let b) = direct {
                #expect(a.value.bitPattern == b.value.bitPattern, "\(text): \(a.value) against \(b.value)")
                #expect(b.value.bitPattern == strtod(text, nil).bitPattern, "\(text)")
            }
        }
        #expect(fast > 12_000 && fractions > 8_000, "\(fast) read directly, \(fractions) with a fraction")
    }

    // MARK: metric and unit names

    @Test func everyMetricAndUnitIsFoundByItsBytesAndNoOtherIs() {
        var found = 0
        for metric in Metric.allCases {
            for other in Metric.allCases {
                for (unit, factor) in other.units {
                    let got = Array(unit.utf8).withUnsafeBufferPointer { FastEventReader.factor($0, of: metric) }
                    let want = metric.units.first(where: { $0.unit == unit })?.factor
                    #expect(got == want, "\(metric) \(unit)")
                    if other == metric { #expect(got == factor); found += 1 }
                }
            }
            for near in ["", "coun", "counts", "KCAL", "k", "mm", "count/mi"] {
                #expect(Array(near.utf8).withUnsafeBufferPointer { FastEventReader.factor($0, of: metric) } == nil, "\(metric) \(near)")
            }
            // Each metric's name takes the direct path to that metric.
            let unit = metric.units[0].unit, value = metric == .heartRate ? "70" : "1"
            let line = Array(#"{"type":"sample-added","user":"ana","sample":{"uuid":"a1","metric":"\#(metric.rawValue)","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":\#(value),"unit":"\#(unit)","zone":"UTC"}}"#.utf8)
            var zones = ZoneMemo()
            guard case .sampleAdded(let s)? = line.withUnsafeBufferPointer({ FastEventReader.event($0, zones: &zones) }) else {
                Issue.record("\(metric) did not take the direct path")
                continue
            }
            #expect(s.metric == metric)
        }
        #expect(found == Metric.allCases.reduce(0) { $0 + $1.units.count })
    }

    // MARK: member names read as one word

    @Test func eachKnownMemberNameHasTheWordOfItsBytes() {
        let known: [(String, UInt64)] = [
            ("type", FastEventReader.Key.type), ("user", FastEventReader.Key.user), ("uuid", FastEventReader.Key.uuid),
            ("schema", FastEventReader.Key.schema), ("sample", FastEventReader.Key.sample), ("metric", FastEventReader.Key.metric),
            ("source", FastEventReader.Key.source), ("start", FastEventReader.Key.start), ("end", FastEventReader.Key.end),
            ("unit", FastEventReader.Key.unit), ("zone", FastEventReader.Key.zone), ("value", FastEventReader.Key.value),
            ("version", FastEventReader.Key.version),
        ]
        for (name, word) in known {
            #expect(Array(name.utf8).withUnsafeBufferPointer { FastEventReader.Key.word(of: $0) } == word, "\(name)")
        }
        #expect(Set(known.map(\.1)).count == known.count)
        #expect(Array("".utf8).withUnsafeBufferPointer { FastEventReader.Key.word(of: $0) } == 0)
        #expect(Array("versions1".utf8).withUnsafeBufferPointer { FastEventReader.Key.word(of: $0) } == 0)
    }

    /// Lines with an extra member in either object, its name 0–10 bytes: a known name again
    /// (a repeated member), a known name one byte off, a prefix or extension of one, the
    /// other object's names, names with an escape, a control character or a non-ASCII byte,
    /// and every cut of the line from the member's name on. Wherever the direct reader
    /// answers it gives the tree reader's event, and it answers exactly for the lines it
    /// should: no repeated member, no name it must look at, no cut line.
    @Test func memberNamesOfEveryLengthReadAsTheTreeReadsThem() {
        let outer = ["type", "user", "uuid", "schema", "sample"]
        let inner = ["uuid", "metric", "source", "start", "end", "unit", "zone", "value", "version"]
        var names = outer + inner + ["", "x", "ty", "typ", "typf", "types", "endx", "versio", "versionx", "versions1", "sampled", "abcdefgh", "abcdefghij"]
        names += (outer + inner).map { String($0.dropLast()) + "#" }
        let special = [#"ty\"pe"#, #"ty\\pe"#, "ty\tpe", "t\u{E9}pe", "\u{E9}", #"u\u0073er"#]
        names += special
        // In the base lines: the event's type, user and sample; the sample's members but version.
        let inBase = (outer: ["type", "user", "sample"], inner: ["uuid", "metric", "source", "start", "end", "unit", "zone", "value"])
        var read = 0
        for name in names {
            for isInner in [false, true] {
                let member = "\"\(name)\":1"
                let line = isInner
                    ? #"{"type":"sample-added","user":"ana","sample":{"uuid":"a1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":5,"unit":"count","zone":"UTC",\#(member)}}"#
                    : #"{"type":"sample-added","user":"ana","sample":{"uuid":"a1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":5,"unit":"count","zone":"UTC"},\#(member)}"#
                let bytes = Array(line.utf8)
                // A sample-added event has no uuid of its own: the direct reader leaves that to the tree.
                let expected = !special.contains(name) && !(isInner ? inBase.inner : inBase.outer).contains(name) && !(!isInner && name == "uuid")
                // The whole line, and the line cut at every byte from the member's name to its end.
                for cut in [bytes.count] + Array((bytes.count - member.utf8.count - 2)..<bytes.count) {
                    let piece = Array(bytes[..<cut])
                    var zones = ZoneMemo()
                    let fast = piece.withUnsafeBufferPointer { FastEventReader.event($0, zones: &zones) }
                    let tree = Self.treeEvent(piece)
                    #expect((fast != nil) == (expected && cut == bytes.count), "\(name) in the \(isInner ? "sample" : "event"), cut at \(cut)")
                    guard let fast else { continue }
                    read += 1
                    #expect(fast == tree, "\(name) in the \(isInner ? "sample" : "event")")
                }
            }
        }
        #expect(read > 40)
    }

    // MARK: names remembered from line to line

    /// One memo shared by 6,000 lines naming 300 users of 1–40 bytes (so the 64 slots of
    /// the memo collide and evict all the time, and names longer than its 32-byte slots
    /// pass by), 5 sources and 3 zones: every event is the one a fresh memo gives, and
    /// names the user, source and zone its line wrote.
    @Test func namesFromTheMemoAreTheNamesOfTheLine() {
        var g = SplitMix64(seed: 0x4E4D)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789-_.".utf8)
        let users = (0..<300).map { k in String(decoding: (0..<(1 + k % 40)).map { _ in alphabet[g.below(alphabet.count)] }, as: UTF8.self) }
        let sources = ["watch", "phone", "ring", "a-very-long-source-name-beyond-32-bytes", "é-source"]
        let zones = ["UTC", "Europe/Berlin", "America/Argentina/ComodRivadavia"]
        var shared = ZoneMemo()
        var checked = 0
        for k in 0..<6_000 {
            let user = users[g.below(users.count)], source = sources[g.below(sources.count)], zone = zones[g.below(zones.count)]
            let deleted = g.below(10) == 0
            let text = deleted
                ? #"{"type":"sample-deleted","user":"\#(user)","uuid":"u\#(k)"}"#
                : #"{"type":"sample-added","user":"\#(user)","sample":{"uuid":"u\#(k)","metric":"steps","source":"\#(source)","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":5,"unit":"count","zone":"\#(zone)"}}"#
            let bytes = Array(text.utf8)
            var fresh = ZoneMemo()
            let once = bytes.withUnsafeBufferPointer { FastEventReader.event($0, zones: &fresh) }
            let memo = bytes.withUnsafeBufferPointer { FastEventReader.event($0, zones: &shared) }
            #expect(memo == once, "\(text)")
            switch memo {
            case .sampleAdded(let s)?:
                #expect(s.user == user && s.source == source && s.zone == zone && s.uuid == "u\(k)")
                checked += 1
            case .sampleDeleted(let u, let uuid)?:
                #expect(u == user && uuid == "u\(k)")
                checked += 1
            default:
                Issue.record("not read directly: \(text)")
            }
        }
        #expect(checked == 6_000)
    }
}
