import DaybookCore
import DaybookSupport
import Testing

/// `SampleUUID`: a canonical uuid kept as 16 bytes and a case, any other text as a String,
/// with the form invisible from outside: the text comes back byte for byte, and equality
/// and order are those of the texts' bytes.
@Suite struct SampleUUIDTests {
    static let lower = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    static let upper = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"

    @Test func canonicalUUIDsAreKeptAsBytesAndComeBackAsTheirText() throws {
        let l = SampleUUID(Self.lower), u = SampleUUID(Self.upper)
        let lw = try #require(l.canonical), uw = try #require(u.canonical)
        // 3f2504e0 4f89 11d3 → the first word; 9a0c 0305e82c3301 → the second.
        #expect(lw.high == 0x3f25_04e0_4f89_11d3 && lw.low == 0x9a0c_0305_e82c_3301 && !lw.upper)
        #expect(uw.high == lw.high && uw.low == lw.low && uw.upper)
        #expect(l.text == Self.lower && u.text == Self.upper)
        #expect(l != u, "two spellings are two uuids, as the store keys them")
        // Digits alone are lower case (no letter to say otherwise).
        let digits = SampleUUID("12345678-1234-1234-1234-123456789012")
        #expect(digits.canonical?.upper == false && digits.text == "12345678-1234-1234-1234-123456789012")
        #expect(SampleUUID(high: lw.high, low: lw.low, upper: true) == u)
    }

    @Test func otherTextsStayText() {
        for text in ["", "u1", "3F2504E0-4f89-11D3-9A0C-0305E82C3301", // mixed case
                     "3f2504e0-4f89-11d3-9a0c-0305e82c330",             // 35 bytes
                     "3f2504e0-4f89-11d3-9a0c-0305e82c33011",           // 37 bytes
                     "3f2504e04-f89-11d3-9a0c-0305e82c3301",            // a dash out of place
                     "3f2504e0-4f89-11d3-9a0c-0305e82c330g",            // not hex
                     "é-ü-😀", "user-3-0-259-watch"] {
            let id = SampleUUID(text)
            #expect(id.canonical == nil, "\(text)")
            #expect(id.text == text)
            #expect(id.withUTF8 { Array($0) } == Array(text.utf8))
        }
        #expect(SampleUUID().isEmpty && SampleUUID("").isEmpty && !SampleUUID(Self.lower).isEmpty)
    }

    @Test func bytesOfACanonicalTextReadAsItsText() {
        var text = Self.upper
        let fromBytes = text.withUTF8 { SampleUUID(canonical: $0) }
        #expect(fromBytes == SampleUUID(Self.upper))
        var other = "not-a-uuid"
        #expect(other.withUTF8 { SampleUUID(canonical: $0) } == nil)
    }

    /// Every byte value at every digit's place, against a character-by-character reading:
    /// the word-at-a-time parse accepts exactly the hex digits and reads their values.
    @Test func everyByteAtEveryPlaceParsesAsACharacterByCharacterReadingDoes() {
        func reference(_ bytes: [UInt8]) -> (UInt64, UInt64, Bool)? {
            var words: [UInt64] = [0, 0], digits = 0, lower = false, upper = false
            for (i, b) in bytes.enumerated() {
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard b == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let v: UInt8
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): v = b - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): v = b - UInt8(ascii: "a") + 10; lower = true
                case UInt8(ascii: "A")...UInt8(ascii: "F"): v = b - UInt8(ascii: "A") + 10; upper = true
                default: return nil
                }
                words[digits / 16] = words[digits / 16] << 4 | UInt64(v)
                digits += 1
            }
            return lower && upper ? nil : (words[0], words[1], upper)
        }
        for base in [Self.lower, Self.upper, "01234567-89ab-cdef-0123-456789abcdef", "00000000-0000-0000-0000-000000000000"] {
            let original = Array(base.utf8)
            for place in 0..<36 where ![8, 13, 18, 23].contains(place) {
                for value in 0...255 {
                    var bytes = original
                    bytes[place] = UInt8(value)
                    let parsed = bytes.withUnsafeBufferPointer { SampleUUID(canonical: $0) }
                    let expected = reference(bytes)
                    #expect(parsed?.canonical?.high == expected?.0 && parsed?.canonical?.low == expected?.1
                            && parsed?.canonical?.upper == expected?.2, "byte \(value) at \(place) of \(base)")
                }
            }
        }
    }

    /// Equality, hashing and order agree with the texts, over random uuids of every form.
    @Test(arguments: Array(UInt64(1)...20))
    func equalityAndOrderAreThoseOfTheTexts(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let hex = Array("0123456789abcdef"), HEX = Array("0123456789ABCDEF")
        func random() -> String {
            switch rng.next() % 5 {
            case 0, 1, 2:
                // Few distinct digits, so that prefixes and whole uuids repeat.
                let digits = rng.next() % 2 == 0 ? hex : HEX
                var s = ""
                for i in 0..<32 {
                    if i == 8 || i == 12 || i == 16 || i == 20 { s.append("-") }
                    s.append(digits[Int(rng.next() % 3) * (i % 2 == 0 ? 5 : 1)])
                }
                return s
            case 3: return "u\(rng.next() % 20)"
            default: return ["", "é", "zzz", "0", "-"][Int(rng.next() % 5)]
            }
        }
        let texts = (0..<200).map { _ in random() }
        let ids = texts.map(SampleUUID.init)
        for _ in 0..<2_000 {
            let a = Int(rng.next() % 200), b = Int(rng.next() % 200)
            let sameBytes = Array(texts[a].utf8) == Array(texts[b].utf8)
            #expect((ids[a] == ids[b]) == sameBytes, "\(texts[a]) \(texts[b])")
            if sameBytes { #expect(ids[a].hash64 == ids[b].hash64 && ids[a].hashValue == ids[b].hashValue) }
            #expect((ids[a] < ids[b]) == Array(texts[a].utf8).lexicographicallyPrecedes(Array(texts[b].utf8)), "\(texts[a]) \(texts[b])")
        }
        #expect(Set(ids).count == Set(texts.map { Array($0.utf8) }).count)
    }

    @Test func aSampleKeepsItsUUIDsText() {
        var s = Sample(user: "ana", uuid: Self.upper, metric: .steps, source: "watch", start: Instant(nanoseconds: 0),
                       end: Instant(nanoseconds: 60_000_000_000), value: 80, zone: "UTC")
        #expect(s.uuid == Self.upper && s.compactUUID.canonical != nil)
        s.uuid = "walk-1"
        #expect(s.uuid == "walk-1" && s.compactUUID == SampleUUID("walk-1"))
        #expect(s == Sample(user: "ana", uuid: SampleUUID("walk-1"), metric: .steps, source: "watch", start: Instant(nanoseconds: 0),
                            end: Instant(nanoseconds: 60_000_000_000), value: 80, zone: "UTC"))
        #expect(String(reflecting: s).contains("uuid: \"walk-1\""))
    }
}
