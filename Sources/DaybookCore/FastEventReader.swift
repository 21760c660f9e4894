import DaybookSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a valid event line straight into its `Event`, in one pass, without building a
/// JSON tree.
///
/// It answers only for valid lines of the usual shape — a `sample-added` or
/// `sample-deleted` object whose known members have the expected JSON types, each once, no
/// escapes in keys or strings, schema absent or 1, every rule of
/// `EventDecoder.validateSample` met. For anything else it returns nil and `EventDecoder`
/// takes the general path, which reports the exact fault; so this reader never decides
/// that a line is invalid, and never words an error. Unknown members are skipped.
/// Complexity: O(n) in the line length.
enum FastEventReader {
    /// The event of a valid line of the usual shape, or nil. Builds only what the event
    /// keeps: four Strings of a sample (user, uuid, source, zone), none for its type,
    /// metric, unit or times; an id of ASCII (nearly every one) is NFC without a look.
    /// Complexity: O(n) in the line length, one pass.
    static func event(_ bytes: UnsafeBufferPointer<UInt8>, zones: inout ZoneMemo) -> Event? {
        var r = JSONParser.Reader(bytes: bytes)
        var type: Text?, user: Text?, uuid: Text?
        var sample: Sample?
        var seen = Members()
        let ok = object(&r) { key, r in
            if key.is("type") { guard seen.first(0) else { return false }; type = text(&r); return type != nil }
            if key.is("user") { guard seen.first(1) else { return false }; user = text(&r); return user != nil }
            if key.is("uuid") { guard seen.first(2) else { return false }; uuid = text(&r); return uuid != nil }
            if key.is("schema") {
                guard seen.first(3), case .number(1)? = try? r.number() else { return false }
                return true
            }
            if key.is("sample") {
                guard seen.first(4) else { return false }
                sample = validSample(&r, zones: &zones)
                return sample != nil
            }
            return seen.firstUnknown(key.string) && skip(&r, depth: 1)
        }
        guard ok, let type, let user, !user.bytes.isEmpty else { return nil }
        r.skipSpace()
        guard r.i == bytes.count else { return nil }
        if Key(bytes: type.bytes).is("sample-added") {
            guard uuid == nil, var s = sample, let name = id(user) else { return nil }
            s.user = name
            return .sampleAdded(s)
        }
        if Key(bytes: type.bytes).is("sample-deleted") {
            guard sample == nil, let uuid, !uuid.bytes.isEmpty, let name = id(user), let sampleID = id(uuid) else { return nil }
            return .sampleDeleted(user: name, uuid: sampleID)
        }
        return nil
    }

    /// A sample that passes every rule of `EventDecoder.validateSample`, computed as it
    /// computes it (same conversions, same bounds), with an empty user; nil otherwise.
    private static func validSample(_ r: inout JSONParser.Reader, zones: inout ZoneMemo) -> Sample? {
        var uuid: Text?, metricName: Text?, source: Text?, start: Text?, end: Text?, unit: Text?, zone: Text?
        var value: Double?
        var version: Int64 = 0
        var seen = Members()
        let ok = object(&r) { key, r in
            if key.is("uuid") { guard seen.first(0) else { return false }; uuid = text(&r); return uuid != nil }
            if key.is("metric") { guard seen.first(1) else { return false }; metricName = text(&r); return metricName != nil }
            if key.is("source") { guard seen.first(2) else { return false }; source = text(&r); return source != nil }
            if key.is("start") { guard seen.first(3) else { return false }; start = text(&r); return start != nil }
            if key.is("end") { guard seen.first(4) else { return false }; end = text(&r); return end != nil }
            if key.is("unit") { guard seen.first(5) else { return false }; unit = text(&r); return unit != nil }
            if key.is("zone") { guard seen.first(6) else { return false }; zone = text(&r); return zone != nil }
            if key.is("value") {
                guard seen.first(7), r.i < r.bytes.count, r.bytes[r.i] == 45 || (r.bytes[r.i] >= 48 && r.bytes[r.i] <= 57),
                      case .number(let d)? = try? r.number() else { return false }
                value = d
                return true
            }
            if key.is("version") {
                guard seen.first(8), let v = integer(&r) else { return false }
                version = v
                return true
            }
            return seen.firstUnknown(key.string) && skip(&r, depth: 2) // the sample's members are one level deeper
        }
        guard ok, let uuid, !uuid.bytes.isEmpty, let metricName, let source, !source.bytes.isEmpty, let start, let end,
              let raw = value, let unit, let zone else { return nil }
        guard let entry = units.first(where: { $0.name.elementsEqual(metricName.bytes) }),
              let factor = entry.units.first(where: { $0.unit.elementsEqual(unit.bytes) })?.factor,
              case .instant(let from) = Instant.parse(start.bytes), case .instant(let to) = Instant.parse(end.bytes), to >= from else { return nil }
        let metric = entry.metric
        guard EventDecoder.lastsAtMostAWeek(from: from, to: to), EventDecoder.admits(raw, for: metric) else { return nil }
        let converted = raw * factor
        guard converted.isFinite, converted <= metric.maximumPerSample else { return nil }
        guard let sampleID = id(uuid), let sourceName = id(source), let zoneName = id(zone) else { return nil }
        if !zones.contains(zone.bytes) {
            guard ZoneRules.named(zoneName) != nil else { return nil }
            zones.insert(zone.bytes)
        }
        return Sample(user: "", uuid: sampleID, metric: metric, source: sourceName,
                      start: from, end: to, value: converted, zone: zoneName, version: version)
    }

    /// Each metric's name and its units with their factors, as bytes (`Metric.units`),
    /// made once: matching a line's metric and unit builds nothing.
    private static let units: [(metric: Metric, name: [UInt8], units: [(unit: [UInt8], factor: Double)])] =
        Metric.allCases.map { m in (m, Array(m.rawValue.utf8), m.units.map { (Array($0.unit.utf8), $0.factor) }) }

    /// A string value as it stands between its quotes, and whether it is all ASCII (seen by
    /// the same scan, so nothing looks at its bytes twice).
    private struct Text {
        var bytes: UnsafeBufferPointer<UInt8>
        var ascii: Bool
    }

    /// A string value without escapes or control characters, or nil (the caller gives up)
    /// for anything else. Bytes of 0x80 and above are checked by `id`.
    private static func text(_ r: inout JSONParser.Reader) -> Text? {
        guard r.i < r.bytes.count, r.bytes[r.i] == 34, let base = r.bytes.baseAddress else { return nil }
        let start = r.i + 1
        var i = start
        var high: UInt8 = 0
        // Eight bytes at a time while none of them is a quote, a backslash or a control
        // character (each found by the classic "has a zero byte" test on the word); the word
        // that holds one, and the tail, go byte by byte below, which decides as before.
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= r.bytes.count {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
            let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((w &- ones &* 0x20) & ~w)
            guard special & highs == 0 else { break }
            if w & highs != 0 { high = 0x80 }
            i += 8
        }
        while i < r.bytes.count {
            let c = r.bytes[i]
            if c == 34 {
                r.i = i + 1
                return Text(bytes: UnsafeBufferPointer(rebasing: r.bytes[start..<i]), ascii: high < 0x80)
            }
            if c == 92 || c < 0x20 { return nil }
            high |= c
            i += 1
        }
        return nil
    }

    /// An id or name as the event keeps it: ASCII as it stands; anything else only if it is
    /// valid UTF-8 in normalization form C (else nil, and the general path names the fault).
    private static func id(_ text: Text) -> String? {
        if text.ascii { return String(decoding: text.bytes, as: UTF8.self) }
        guard let string = String(validating: text.bytes, as: UTF8.self), EventDecoder.isNFC(string) else { return nil }
        return string
    }

    /// A non-negative integer literal that fits in an Int64 (digits only, no leading zero
    /// before another digit, not followed by a fraction or exponent), or nil: the general
    /// path then decides, and names the fault.
    private static func integer(_ r: inout JSONParser.Reader) -> Int64? {
        let start = r.i
        var n: Int64 = 0
        while r.i < r.bytes.count, r.bytes[r.i] >= 48, r.bytes[r.i] <= 57 {
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int64(r.bytes[r.i] - 48))
            guard !o1, !o2 else { return nil }
            n = a
            r.i += 1
        }
        let digits = r.i - start
        guard digits > 0, !(digits > 1 && r.bytes[start] == 48) else { return nil }
        if r.i < r.bytes.count, r.bytes[r.i] == 46 || r.bytes[r.i] == 101 || r.bytes[r.i] == 69 { return nil }
        return n
    }

    /// The members of one object seen so far, to give up on a repeated one (the tree reader
    /// then names it). Known members are bits; unknown ones, rare, go in an array.
    private struct Members {
        private var known: UInt16 = 0
        private var unknown: [String] = []

        /// True the first time `bit` is asked for.
        mutating func first(_ bit: Int) -> Bool {
            defer { known |= 1 << bit }
            return known & (1 << bit) == 0
        }

        mutating func firstUnknown(_ key: String) -> Bool {
            if unknown.contains(key) { return false }
            unknown.append(key)
            return true
        }
    }

    /// A member's name as it stands in the line: printable ASCII without escapes (anything
    /// else goes to the general path), compared byte for byte, no String made.
    private struct Key {
        let bytes: UnsafeBufferPointer<UInt8>

        func `is`(_ name: StaticString) -> Bool {
            guard bytes.count == name.utf8CodeUnitCount, let base = bytes.baseAddress else { return false }
            return memcmp(base, name.utf8Start, bytes.count) == 0
        }

        var string: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// The raw name at a member's opening quote, or nil for an escape, a control character,
    /// a byte ≥ 0x80 or no closing quote.
    private static func key(_ r: inout JSONParser.Reader) -> Key? {
        guard let name = text(&r), name.ascii else { return nil }
        return Key(bytes: name.bytes)
    }

    /// Walks an object's members, calling `member(key, &reader)` positioned at each value;
    /// the callback consumes the value and returns false to give up.
    private static func object(_ r: inout JSONParser.Reader, _ member: (Key, inout JSONParser.Reader) -> Bool) -> Bool {
        r.skipSpace()
        guard r.i < r.bytes.count, r.bytes[r.i] == 123 else { return false }
        r.i += 1
        r.skipSpace()
        if r.i < r.bytes.count, r.bytes[r.i] == 125 { r.i += 1; return true }
        while true {
            r.skipSpace()
            guard let key = key(&r) else { return false }
            r.skipSpace()
            guard r.i < r.bytes.count, r.bytes[r.i] == 58 else { return false }
            r.i += 1
            r.skipSpace()
            guard member(key, &r) else { return false }
            r.skipSpace()
            guard r.i < r.bytes.count else { return false }
            if r.bytes[r.i] == 44 { r.i += 1; continue }
            if r.bytes[r.i] == 125 { r.i += 1; return true }
            return false
        }
    }

    /// Skips a value at `depth` (as `JSONParser` counts it), so that the nesting limit is
    /// the general parser's: a line is never accepted here and malformed there.
    private static func skip(_ r: inout JSONParser.Reader, depth: Int) -> Bool {
        (try? r.value(depth: depth)) != nil
    }
}

/// Zone names a decoder found valid lately (`ZoneRules.named`), as bytes: a stream of
/// events names a handful of zones, so most lines skip the shared cache's lock and String
/// hash. Holds at most 8; only ever names that `ZoneRules.named` accepted.
public struct ZoneMemo: Sendable {
    private var names: [[UInt8]] = []
    private var next = 0

    public init() {}

    func contains(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        names.contains { $0.elementsEqual(name) }
    }

    mutating func insert(_ name: UnsafeBufferPointer<UInt8>) {
        if names.count < 8 {
            names.append(Array(name))
        } else {
            names[next] = Array(name)
            next = (next + 1) % 8
        }
    }
}
