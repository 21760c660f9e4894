import DaybookSupport
import Testing

/// `NameHash` and `NameKey`: names hash by their bytes (every length across the 8-byte step
/// and its tail), compare by their bytes, and keep a table's answers.
@Suite struct NameHashTests {
    @Test func theHashIsOfTheBytesAndEveryByteCounts() {
        // Lengths 0 through 24 cover an empty name, tails of 1–7 bytes and whole words.
        for n in 0...24 {
            let name = String(repeating: "a", count: n)
            #expect(NameHash.of(name) == name.utf8.withContiguousStorageIfAvailable { NameHash.of(UnsafeRawBufferPointer($0)) })
            for i in 0..<n {
                var bytes = Array(name.utf8)
                bytes[i] = UInt8(ascii: "b")
                #expect(NameHash.of(String(decoding: bytes, as: UTF8.self)) != NameHash.of(name), "length \(n), byte \(i)")
            }
        }
        // A name and the same bytes with a zero byte appended differ (the length goes in).
        #expect(NameHash.of("ana") != NameHash.of("ana\u{0}"))
    }

    @Test func namesCompareBytesNotCanonicalEquivalence() {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed) // Swift's String equality: canonical equivalence
        #expect(!NameHash.sameBytes(composed, decomposed))
        #expect(NameKey(composed) != NameKey(decomposed))
        #expect(NameHash.sameBytes("3F2504E0-4F89-11D3-9A0C-0305E82C3301", "3F2504E0-4F89-11D3-9A0C-0305E82C3301"))
        #expect(!NameHash.sameBytes("user-1", "user-2"))
        #expect(NameHash.sameBytes("", ""))
        let key = Array("user-7".utf8)
        key.withUnsafeBufferPointer { bytes in
            #expect(NameHash.sameBytes(bytes, "user-7"))
            #expect(!NameHash.sameBytes(bytes, "user-70"))
            #expect(!NameHash.sameBytes(bytes, "user-8"))
        }
    }

    @Test func oneStorageAndTwoStoragesOfANameCompareAlike() {
        // A large name and a copy of it share storage (the identity fast path); the same bytes
        // built apart do not, and are compared by content; one byte off is another name, also
        // when count and storage kind match.
        let name = String(repeating: "x", count: 40)
        let copy = name
        let rebuilt = String(repeating: "x", count: 39) + "x"
        let other = String(repeating: "x", count: 39) + "y"
        #expect(NameHash.sameBytes(name, copy))
        #expect(NameHash.sameBytes(name, rebuilt))
        #expect(!NameHash.sameBytes(name, other))
        #expect(!NameHash.sameBytes(name, String(repeating: "x", count: 41)))
        // Small names (up to 15 bytes) live in the String itself.
        #expect(NameHash.sameBytes("user-1", String("user-" + "1")))
        #expect(!NameHash.sameBytes("user-1", "user-1 "))
    }

    @Test func aTableOfNameKeysKeepsEveryAnswer() {
        // 10,000 uuid-like names, each stored and found again; a name not stored is not found.
        var table: [NameKey: Int] = [:]
        for i in 0..<10_000 { table[NameKey("uuid-\(i)-padding-padding-padding")] = i }
        #expect(table.count == 10_000)
        for i in stride(from: 0, to: 10_000, by: 7) { #expect(table[NameKey("uuid-\(i)-padding-padding-padding")] == i) }
        #expect(table[NameKey("uuid-10000-padding-padding-padding")] == nil)
    }

    @Test func theFinaliserIsMurmur3s() {
        // fmix64 of 1, computed from its definition (three xor-shifts, two multiplies): pinned because the store's uuid index keeps
        // its output on disk (SamplePackTests pins the whole uuid hash too).
        #expect(NameHash.finalize(0) == 0)
        #expect(NameHash.finalize(1) == 0xB456_BCFC_34C2_CB2C)
    }
}
