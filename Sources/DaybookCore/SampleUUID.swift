import DaybookSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A sample's uuid as the log spells it, kept without a heap String when it is a canonical
/// UUID: 8-4-4-4-12 hex digits of one case (digits alone count as lower case) are kept as
/// their 16 bytes and their case; any other text (the event format allows any id) as the
/// String.
///
///     let id = SampleUUID("3f2504e0-4f89-11d3-9a0c-0305e82c3301")   // 16 bytes, lower case
///     id.text                                                       // the same 36 characters
///
/// The projector reads, keys, compares and stores a uuid on every event: as a String of 36
/// bytes it was allocated, retained at every copy of its sample and hashed as text. The
/// text comes back byte for byte, so the form is invisible outside: two values are equal
/// exactly when their texts are the same bytes, and order as their texts' bytes do (for
/// the NFC ids the event format accepts, as the Strings do).
///
/// Complexity: O(1) to hash, compare and copy a canonical uuid; O(n) in the text otherwise.
public struct SampleUUID: Sendable, Hashable, Comparable, CustomStringConvertible {
    @usableFromInline
    enum Form: Sendable {
        /// The 16 bytes, big-endian in two words (`high` holds the first 16 hex digits).
        case lower(UInt64, UInt64)
        case upper(UInt64, UInt64)
        /// Never a canonical UUID's text: every initialiser checks.
        case text(String)
    }

    @usableFromInline
    var form: Form

    /// The empty text (a placeholder: the event format refuses an empty uuid).
    public init() { form = .text("") }

    /// The uuid of this form (a staged batch gives its uuids back: `StagedBatch`).
    @inline(__always)
    init(form: Form) { self.form = form }

    /// The uuid spelled `text`.
    public init(_ text: String) {
        var copy = text
        if copy.utf8.count == 36, let canonical = copy.withUTF8({ SampleUUID(canonical: $0) }) {
            self = canonical
        } else {
            form = .text(text)
        }
    }

    /// The uuid of these UTF-8 bytes if they are a canonical UUID's text, else nil.
    /// Eight characters at a time in one word (`hexWord`), no branch per character: the
    /// reader calls this for every sample.
    public init?(canonical bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == 36, let p = bytes.baseAddress,
              p[8] == UInt8(ascii: "-"), p[13] == UInt8(ascii: "-"), p[18] == UInt8(ascii: "-"), p[23] == UInt8(ascii: "-")
        else { return nil }
        let raw = UnsafeRawPointer(p)
        @inline(__always) func load8(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        @inline(__always) func load4(_ at: Int) -> UInt64 { UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self))) }
        // 8-4-4-4-12: characters 0–7 | 9–12, 14–17 | 19–22, 24–27 | 28–35.
        let a = SampleUUID.hexWord(load8(0)), b = SampleUUID.hexWord(load4(9) | load4(14) << 32)
        let c = SampleUUID.hexWord(load4(19) | load4(24) << 32), d = SampleUUID.hexWord(load8(28))
        let invalid = a.invalid | b.invalid | c.invalid | d.invalid
        let lower = a.lower | b.lower | c.lower | d.lower, upper = (a.upper | b.upper | c.upper | d.upper) != 0
        guard invalid == 0, lower == 0 || !upper else { return nil }
        let high = UInt64(a.value) << 32 | UInt64(b.value), low = UInt64(c.value) << 32 | UInt64(d.value)
        form = upper ? .upper(high, low) : .lower(high, low)
    }

    /// Eight hex digits, the first in the lowest byte of `w`: their value (the first digit
    /// the most significant), a mask that is 0 exactly when all eight are hex digits, and
    /// masks of the lower- and upper-case letters among them. Bytewise compares without carries between bytes: a byte
    /// under 0x80 with 0x80 set, less `c`, keeps its top bit exactly when it was ≥ `c`.
    @inline(__always)
    static func hexWord(_ w: UInt64) -> (value: UInt32, invalid: UInt64, lower: UInt64, upper: UInt64) {
        let ones: UInt64 = 0x0101_0101_0101_0101, tops: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func atLeast(_ c: UInt64) -> UInt64 { ((w | tops) &- ones &* c) & tops }
        let digit = atLeast(0x30) & ~atLeast(0x3A)
        let upperLetter = atLeast(0x41) & ~atLeast(0x47)
        let lowerLetter = atLeast(0x61) & ~atLeast(0x67)
        let invalid = (w & tops) | ((digit | upperLetter | lowerLetter) ^ tops)
        // A digit's low nibble is its value; a letter's is 1–6, and 9 more makes 10–15.
        let letters = (upperLetter | lowerLetter) >> 7
        let nibbles = (w & (ones &* 0x0F)) &+ letters &* 9
        // Two digits a byte (the first high), then four bytes big-endian in 32 bits.
        let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00FF_00FF_00FF_00FF
        let packed = UInt32(truncatingIfNeeded: (pairs | pairs >> 8) & 0xFFFF) | UInt32(truncatingIfNeeded: (pairs >> 32 | pairs >> 40) & 0xFFFF) << 16
        return (packed.byteSwapped, invalid, lowerLetter, upperLetter)
    }

    /// Per byte value, its two hex digits as one little-endian 16-bit word: lower case
    /// (entries 0–255), then upper case (256–511).
    private static let hexPairs: [UInt16] = {
        var table: [UInt16] = []
        table.reserveCapacity(512)
        for digits in ["0123456789abcdef", "0123456789ABCDEF"] {
            let d = Array(digits.utf8)
            for b in 0..<256 { table.append(UInt16(d[b >> 4]) | UInt16(d[b & 15]) << 8) }
        }
        return table
    }()

    /// A canonical uuid of these 16 bytes (as two big-endian words) in one case.
    public init(high: UInt64, low: UInt64, upper: Bool) {
        form = upper ? .upper(high, low) : .lower(high, low)
    }

    /// The 16 bytes and case of a canonical uuid; nil for any other text.
    public var canonical: (high: UInt64, low: UInt64, upper: Bool)? {
        switch form {
        case .lower(let h, let l): return (h, l, false)
        case .upper(let h, let l): return (h, l, true)
        case .text: return nil
        }
    }

    /// The text as the log spelled it.
    public var text: String {
        switch form {
        case .text(let s): return s
        case .lower, .upper: return withUTF8 { String(decoding: $0, as: UTF8.self) }
        }
    }

    public var description: String { text }

    /// Whether the text is empty.
    public var isEmpty: Bool {
        if case .text(let s) = form { return s.isEmpty }
        return false
    }

    /// Calls `body` with the text's UTF-8 bytes (a canonical uuid's 36 characters are
    /// written on the stack, not allocated).
    @inline(__always)
    public func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch form {
        case .text(let s):
            var copy = s
            return try copy.withUTF8(body)
        case .lower(let h, let l):
            return try SampleUUID.withCanonicalText(h, l, upper: false, body)
        case .upper(let h, let l):
            return try SampleUUID.withCanonicalText(h, l, upper: true, body)
        }
    }

    /// Writes the 36 characters on the stack, two digits per table lookup, and calls `body`.
    @usableFromInline
    static func withCanonicalText<R>(_ high: UInt64, _ low: UInt64, upper: Bool,
                                     _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        return try withUnsafeMutableBytes(of: &buffer) { raw in
            hexPairs.withUnsafeBufferPointer { pairs in
                let base = upper ? 256 : 0
                // Byte k of the 16 (big-endian in the words) goes to its place in 8-4-4-4-12.
                @inline(__always)
                func put(_ word: UInt64, _ byte: Int, at offset: Int) {
                    let b = Int(truncatingIfNeeded: word >> UInt64(56 - 8 * byte)) & 0xFF
                    raw.storeBytes(of: pairs[base + b].littleEndian, toByteOffset: offset, as: UInt16.self)
                }
                for k in 0..<4 { put(high, k, at: 2 * k) }           // 0–7
                for k in 4..<6 { put(high, k, at: 2 * k + 1) }       // 9–12
                for k in 6..<8 { put(high, k, at: 2 * k + 2) }       // 14–17
                for k in 0..<2 { put(low, k, at: 19 + 2 * k) }       // 19–22
                for k in 2..<8 { put(low, k, at: 20 + 2 * k) }       // 24–35
                raw[8] = UInt8(ascii: "-")
                raw[13] = UInt8(ascii: "-")
                raw[18] = UInt8(ascii: "-")
                raw[23] = UInt8(ascii: "-")
            }
            return try body(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 36))
        }
    }

    /// A seeded 64-bit hash (`NameHash`): of the 16 bytes and case of a canonical uuid, of
    /// the text's bytes otherwise. Stable within a process only.
    @inline(__always)
    public var hash64: UInt64 {
        switch form {
        case .lower(let h, let l): return NameHash.of(words: h, l)
        case .upper(let h, let l): return NameHash.of(words: h, ~l)
        case .text(let s): return NameHash.of(s)
        }
    }

    public static func == (a: SampleUUID, b: SampleUUID) -> Bool {
        switch (a.form, b.form) {
        case (.lower(let h1, let l1), .lower(let h2, let l2)), (.upper(let h1, let l1), .upper(let h2, let l2)):
            return h1 == h2 && l1 == l2
        case (.text(let x), .text(let y)): return NameHash.sameBytes(x, y)
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hash64) }
    public func _rawHashValue(seed: Int) -> Int { NameHash.table(hash64, seed: seed) }

    /// The order of the texts' bytes.
    public static func < (a: SampleUUID, b: SampleUUID) -> Bool {
        switch (a.form, b.form) {
        case (.lower(let h1, let l1), .lower(let h2, let l2)), (.upper(let h1, let l1), .upper(let h2, let l2)):
            return h1 != h2 ? h1 < h2 : l1 < l2
        default:
            return a.withUTF8 { x in b.withUTF8 { y in SampleUUID.precedes(x, y) } }
        }
    }

    /// Whether UTF-8 bytes `x` come before `y` (byte order, a prefix first).
    public static func precedes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = min(x.count, y.count)
        if n > 0, let a = x.baseAddress, let b = y.baseAddress {
            let c = memcmp(a, b, n)
            if c != 0 { return c < 0 }
        }
        return x.count < y.count
    }
}
