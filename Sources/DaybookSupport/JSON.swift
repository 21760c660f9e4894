#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A parsed JSON value. An object's members are unordered and unique: the parser refuses a
/// repeated key, since readers disagree on which occurrence counts.
///
/// `nonFinite` holds a number token that is not a finite double (`NaN`, `Infinity`,
/// `1e999`) so that validation can name the offending text instead of rejecting the line
/// as malformed.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case nonFinite(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// A short description of the value's kind and text for error messages.
    public var summary: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let d): return JSONWriter.number(d)
        case .nonFinite(let s): return s
        case .string(let s): return JSONWriter.quoted(s.count > 60 ? String(s.prefix(57)) + "..." : s)
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// Why a text is not JSON, with the byte offset where reading stopped.
public struct JSONSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// Not JSON text.
        case syntax
        /// A string (or member name) that is not valid UTF-8.
        case invalidUTF8
        /// An object with the same member name twice.
        case duplicateKey
    }

    public var offset: Int
    public var reason: String
    public var kind: Kind = .syntax
    /// Where in the value the fault is, as a member path (`sample.source`, `a[2].b`); nil
    /// at the top level.
    public var path: String? = nil
    public var description: String { "\(reason) at byte \(offset + 1)" }
}

/// A strict, allocation-light JSON reader over UTF-8 bytes (RFC 8259, plus the tokens
/// `NaN`, `Infinity` and `-Infinity`, which become `.nonFinite`). Complexity: O(n).
public struct JSONParser {
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { bytes in Result { () throws(JSONSyntaxError) in try parse(bytes) } }
        return try result.get()
    }

    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var ignored: [String: Int64]? = nil
        return try parse(bytes, exactIntegers: &ignored)
    }

    /// Parses like `parse(_:)` and, when `exactIntegers` is not nil, adds to it the exact
    /// value of every non-negative integer literal (no fraction, no exponent) that fits in
    /// an Int64, under its member path (`sample.version`): a Double holds integers exactly
    /// only up to 2⁵³.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>,
                             exactIntegers: inout [String: Int64]?) throws(JSONSyntaxError) -> JSONValue {
        var ignored: [String: String]? = nil
        return try parse(bytes, exactIntegers: &exactIntegers, numberTexts: &ignored)
    }

    /// Parses like `parse(_:exactIntegers:)` and, when `numberTexts` is not nil, adds to it
    /// every number's literal as written (`-0`, `1e3`, `9223372036854775808`) under its
    /// member path: an error message echoes what was written, not the Double it became.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, exactIntegers: inout [String: Int64]?,
                             numberTexts: inout [String: String]?) throws(JSONSyntaxError) -> JSONValue {
        var parser = Reader(bytes: bytes)
        parser.exactIntegers = exactIntegers
        parser.numberTexts = numberTexts
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.i == bytes.count else { throw parser.fail("unexpected text after the JSON value") }
        exactIntegers = parser.exactIntegers
        numberTexts = parser.numberTexts
        return value
    }

    /// A cursor over JSON bytes: the parser's own reader, public for readers that pick a
    /// known shape's members straight off the bytes (Core's `FastEventReader`) and fall back
    /// to `value(depth:)` for the rest. `i` is the offset of the next byte to read.
    public struct Reader {
        public let bytes: UnsafeBufferPointer<UInt8>
        public var i = 0
        /// The member names and array indices leading to the value being read.
        var path: [String] = []
        /// Exact non-negative integer literals by path, when asked for (`parse(_:exactIntegers:)`).
        var exactIntegers: [String: Int64]?
        /// Number literals as written, by path, when asked for (`parse(_:exactIntegers:numberTexts:)`).
        var numberTexts: [String: String]?

        public init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func fail(_ reason: String, _ kind: JSONSyntaxError.Kind = .syntax, at offset: Int? = nil) -> JSONSyntaxError {
            JSONSyntaxError(offset: offset ?? i, reason: reason, kind: kind, path: pathText)
        }

        var pathText: String? {
            guard !path.isEmpty else { return nil }
            return path.reduce("") { $0.isEmpty || $1.hasPrefix("[") ? $0 + $1 : $0 + "." + $1 }
        }

        /// A byte for an error message: `character 'x'` when printable ASCII, else `byte 0x1B`
        /// (never the raw byte, which could be a terminal control or half a character).
        static func describe(_ byte: UInt8) -> String {
            (0x21...0x7E).contains(byte) ? "character '\(Character(Unicode.Scalar(byte)))'"
                : "byte 0x" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }

        mutating func skipSpace() {
            while i < bytes.count {
                let c = bytes[i]
                guard c == 32 || c == 10 || c == 13 || c == 9 else { return }
                i += 1
            }
        }

        public mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            guard depth < 64 else { throw fail("nesting deeper than 64 levels") }
            guard i < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[i] {
            case 123: return try object(depth: depth)
            case 91: return try array(depth: depth)
            case 34: return .string(try string())
            case 116: try literal("true"); return .bool(true)
            case 102: try literal("false"); return .bool(false)
            case 110: try literal("null"); return .null
            case 78: try literal("NaN"); return .nonFinite("NaN")
            case 73: try literal("Infinity"); return .nonFinite("Infinity")
            case 45, 48...57: return try number()
            case 0xEF where i + 2 < bytes.count && bytes[i + 1] == 0xBB && bytes[i + 2] == 0xBF:
                throw fail("unexpected byte order mark (EF BB BF): it is accepted only at the start of a file")
            default: throw fail("unexpected \(Reader.describe(bytes[i]))")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count else { throw fail("unexpected end of input") }
            for k in 0..<n where bytes[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
            i += n
        }

        mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            i += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if i < bytes.count, bytes[i] == 125 { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == 34 else { throw fail("expected a string key") }
                let keyOffset = i
                let key = try string(isKey: true)
                path.append(key)
                guard members[key] == nil else {
                    throw fail("appears twice in one object", .duplicateKey, at: keyOffset)
                }
                skipSpace()
                guard i < bytes.count, bytes[i] == 58 else { throw fail("expected ':' after key \(JSONWriter.quoted(key))") }
                i += 1
                skipSpace()
                members[key] = try value(depth: depth + 1)
                path.removeLast()
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of input in an object") }
                if bytes[i] == 44 { i += 1; continue }
                if bytes[i] == 125 { i += 1; return .object(members) }
                throw fail("expected ',' or '}' in an object")
            }
        }

        mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            i += 1
            var items: [JSONValue] = []
            skipSpace()
            if i < bytes.count, bytes[i] == 93 { i += 1; return .array(items) }
            while true {
                skipSpace()
                path.append("[\(items.count)]")
                items.append(try value(depth: depth + 1))
                path.removeLast()
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of input in an array") }
                if bytes[i] == 44 { i += 1; continue }
                if bytes[i] == 93 { i += 1; return .array(items) }
                throw fail("expected ',' or ']' in an array")
            }
        }

        /// A string value or member name; refuses one that is not valid UTF-8 instead of
        /// repairing it (two different byte strings must never become one user id).
        public mutating func string(isKey: Bool = false) throws(JSONSyntaxError) -> String {
            i += 1
            let start = i
            var ascii = true
            // Fast path: no escapes.
            while i < bytes.count {
                let c = bytes[i]
                if c == 34 {
                    if !ascii { try validateUTF8(start..<i, isKey: isKey) }
                    let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                    i += 1
                    return s
                }
                if c == 92 { break }
                if c < 0x20 { throw fail("control character in a string") }
                if c >= 0x80 { ascii = false }
                i += 1
            }
            var out = Array(bytes[start..<i])
            while i < bytes.count {
                let c = bytes[i]
                if c == 34 {
                    // Escapes are ASCII and decode to whole characters, so the raw text is
                    // valid UTF-8 exactly when the decoded one is; checking it finds the byte.
                    if !ascii { try validateUTF8(start..<i, isKey: isKey) }
                    i += 1
                    return String(decoding: out, as: UTF8.self)
                }
                if c < 0x20 { throw fail("control character in a string") }
                if c >= 0x80 { ascii = false }
                if c != 92 { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { break }
                let e = bytes[i]
                i += 1
                switch e {
                case 34: out.append(34)
                case 92: out.append(92)
                case 47: out.append(47)
                case 98: out.append(8)
                case 102: out.append(12)
                case 110: out.append(10)
                case 114: out.append(13)
                case 116: out.append(9)
                case 117:
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard i + 1 < bytes.count, bytes[i] == 92, bytes[i + 1] == 117 else { throw fail("unpaired surrogate") }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                    out.append(contentsOf: String(Character(u)).utf8)
                default: throw fail("invalid escape: backslash then \(Reader.describe(e))")
                }
            }
            throw fail("unterminated string")
        }

        /// Throws `.invalidUTF8` at the first byte of `range` that is not well-formed UTF-8
        /// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
        func validateUTF8(_ range: Range<Int>, isKey: Bool) throws(JSONSyntaxError) {
            var k = range.lowerBound
            while k < range.upperBound {
                let b = bytes[k]
                if b < 0x80 { k += 1; continue }
                let length: Int
                var low: UInt8 = 0x80, high: UInt8 = 0xBF
                switch b {
                case 0xC2...0xDF: length = 2
                case 0xE0: length = 3; low = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: length = 3
                case 0xED: length = 3; high = 0x9F
                case 0xF0: length = 4; low = 0x90
                case 0xF1...0xF3: length = 4
                case 0xF4: length = 4; high = 0x8F
                default: length = 0
                }
                var ok = length > 0 && k + length <= range.upperBound
                if ok {
                    ok = (low...high).contains(bytes[k + 1])
                    for n in 2..<max(2, length) where ok { ok = (0x80...0xBF).contains(bytes[k + n]) }
                }
                guard ok else {
                    throw fail((isKey ? "a member name is " : "") + "not valid UTF-8: \(Reader.describe(b))", .invalidUTF8, at: k)
                }
                k += length
            }
        }

        mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
            guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case 48...57: d = UInt32(c - 48)
                case 97...102: d = UInt32(c - 87)
                case 65...70: d = UInt32(c - 55)
                default: throw fail("invalid \\u escape")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }

        public mutating func number() throws(JSONSyntaxError) -> JSONValue {
            // FastEventReader calls this directly for "schema", possibly at the end of the input.
            guard i < bytes.count else { throw fail("unexpected end of input") }
            let start = i
            var negative = false
            if bytes[i] == 45 {
                negative = true
                i += 1
                if i < bytes.count, bytes[i] == 73 { try literal("Infinity"); return .nonFinite("-Infinity") }
            }
            guard i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 else { throw fail("invalid number") }
            var mantissa: UInt64 = 0
            var digits = 0
            if bytes[i] == 48 {
                i += 1
                digits = 1
            } else {
                while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 {
                    mantissa = mantissa &* 10 &+ UInt64(bytes[i] - 48)
                    digits += 1
                    i += 1
                }
            }
            var simple = true
            if i < bytes.count, bytes[i] == 46 {
                simple = false
                i += 1
                let f = i
                while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
                guard i > f else { throw fail("invalid number: no digits after '.'") }
            }
            if i < bytes.count, bytes[i] == 101 || bytes[i] == 69 {
                simple = false
                i += 1
                if i < bytes.count, bytes[i] == 43 || bytes[i] == 45 { i += 1 }
                let e = i
                while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
                guard i > e else { throw fail("invalid number: no digits in the exponent") }
            }
            if numberTexts != nil {
                let key = pathText ?? "", text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                numberTexts?[key] = text
            }
            // Up to 19 digits the mantissa is exact (< 10¹⁹ < 2⁶⁴).
            if simple, !negative, exactIntegers != nil, digits <= 19, let exact = Int64(exactly: mantissa) {
                let key = pathText ?? ""
                exactIntegers?[key] = exact
            }
            if simple && digits <= 15 {
                let d = Double(mantissa)
                return .number(negative ? -d : d)
            }
            // General case: the C library's correctly rounded conversion.
            var buffer = [CChar](repeating: 0, count: i - start + 1)
            for k in start..<i { buffer[k - start] = CChar(bitPattern: bytes[k]) }
            let d = strtod(buffer, nil)
            if !d.isFinite {
                return .nonFinite(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self))
            }
            return .number(d)
        }
    }
}

/// Small helpers for writing JSON text by hand (faster and more predictable than
/// Foundation's encoder, and the output is byte-stable across platforms).
public enum JSONWriter {
    public static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20 || (0x7F...0x9F).contains(u.value):
                // C0 must be escaped (RFC 8259); DEL and C1 are too, so that no control
                // character reaches a terminal that shows the JSON.
                let h = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// A double as JSON: integers without a fraction, others in shortest round-trip form, and
    /// `null` for NaN and infinities, which JSON cannot represent (validation keeps them out).
    public static func number(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return "\(d)"
    }
}
