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
    public init?(canonical bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == 36, let base = bytes.baseAddress else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        var seen: UInt8 = 0 // bit 0: a lower-case letter, bit 1: an upper-case one
        var digits = 0
        for i in 0..<36 {
            let b = base[i]
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard b == UInt8(ascii: "-") else { return nil }
                continue
            }
            let v: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = b &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"):
                v = b &- UInt8(ascii: "a") &+ 10
                seen |= 1
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                v = b &- UInt8(ascii: "A") &+ 10
                seen |= 2
            default: return nil
            }
            if digits < 16 { high = high << 4 | UInt64(v) } else { low = low << 4 | UInt64(v) }
            digits += 1
        }
        switch seen {
        case 3: return nil
        case 2: form = .upper(high, low)
        default: form = .lower(high, low)
        }
    }

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

    @usableFromInline
    static func withCanonicalText<R>(_ high: UInt64, _ low: UInt64, upper: Bool,
                                     _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        return try withUnsafeMutableBytes(of: &buffer) { raw in
            let out = raw.bindMemory(to: UInt8.self)
            let letter: UInt8 = upper ? UInt8(ascii: "A") &- 10 : UInt8(ascii: "a") &- 10
            var o = 0
            for d in 0..<32 {
                if d == 8 || d == 12 || d == 16 || d == 20 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                let word = d < 16 ? high : low
                let v = UInt8(truncatingIfNeeded: word >> UInt64(60 - (d & 15) * 4)) & 15
                out[o] = v < 10 ? UInt8(ascii: "0") &+ v : letter &+ v
                o += 1
            }
            return try body(UnsafeBufferPointer(rebasing: out[0..<36]))
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
