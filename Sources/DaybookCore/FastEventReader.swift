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
        guard let parsed = parse(bytes, zones: &zones) else { return nil }
        switch parsed {
        case .added(let user, let s):
            guard let userName = name(user, &zones), let sampleID = sampleUUID(s.uuid), let sourceName = name(s.source, &zones),
                  let zoneName = name(s.zone, &zones) else { return nil }
            return .sampleAdded(Sample(user: userName, uuid: sampleID, metric: s.metric, source: sourceName,
                                       start: s.start, end: s.end, value: s.value, zone: zoneName, version: s.version))
        case .deleted(let user, let uuid):
            guard let userName = name(user, &zones), let sampleID = id(uuid) else { return nil }
            return .sampleDeleted(user: userName, uuid: sampleID)
        }
    }

    /// A valid line of the usual shape, read and checked but with its names (user, uuid,
    /// source, zone) left as the line's bytes: what `event` builds an `Event` from and a
    /// `StagedBatch` numbers without making a String for a name it has. A name that is not
    /// ASCII is checked where it is made (`id`): nil there sends the line the general way.
    enum Parsed {
        case added(user: Text, sample: ParsedSample)
        case deleted(user: Text, uuid: Text)
    }

    /// A sample that passes every rule of `EventDecoder.validateSample` but the checks of
    /// its names that are not ASCII, its value converted to the metric's unit.
    struct ParsedSample {
        var uuid: Text
        var metric: Metric
        var source: Text
        var start: Instant
        var end: Instant
        var value: Double
        var zone: Text
        var version: Int64
    }

    /// `Parsed` of a line (pointing into `bytes`), or nil for anything but a valid line of
    /// the usual shape. Complexity: O(n) in the line length, one pass.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, zones: inout ZoneMemo) -> Parsed? {
        guard let base = bytes.baseAddress else { return nil }
        var c = Cursor(base: base, count: bytes.count)
        var type: Text?, user: Text?, uuid: Text?
        var sample: ParsedSample?
        var sawSample = false
        var seen = Members()
        guard c.open() else { return nil }
        if !c.closeAtOnce() {
            repeat {
                guard let key = c.key() else { return nil }
                switch key.word {
                case Key.type:
                    guard seen.first(0), let t = c.text() else { return nil }
                    type = t
                case Key.user:
                    guard seen.first(1), let t = c.text() else { return nil }
                    user = t
                case Key.uuid:
                    guard seen.first(2), let t = c.text() else { return nil }
                    uuid = t
                case Key.schema:
                    guard seen.first(3), case .number(1)? = c.jsonNumber() else { return nil }
                case Key.sample:
                    guard seen.first(4), let s = validSample(&c, zones: &zones) else { return nil }
                    sample = s
                    sawSample = true
                default:
                    guard seen.firstUnknown(key.text.string), c.skip(depth: 1) else { return nil }
                }
            } while c.nextMember()
            guard c.closed else { return nil }
        }
        guard let type, let user, !user.bytes.isEmpty else { return nil }
        c.skipSpace()
        guard c.atEnd else { return nil }
        if type.is("sample-added") {
            guard uuid == nil, let sample else { return nil }
            return .added(user: user, sample: sample)
        }
        if type.is("sample-deleted") {
            guard !sawSample, let uuid, !uuid.bytes.isEmpty else { return nil }
            return .deleted(user: user, uuid: uuid)
        }
        return nil
    }

    /// A sample that passes every rule of `EventDecoder.validateSample`, computed as it
    /// computes it (same conversions, same bounds), its names as bytes; nil otherwise.
    private static func validSample(_ c: inout Cursor, zones: inout ZoneMemo) -> ParsedSample? {
        var uuid: Text?, metricName: Text?, source: Text?, start: Text?, end: Text?, unit: Text?, zone: Text?
        var value: Double?
        var version: Int64 = 0
        var seen = Members()
        guard c.open() else { return nil }
        if !c.closeAtOnce() {
            repeat {
                guard let key = c.key() else { return nil }
                switch key.word {
                case Key.uuid:
                    guard seen.first(0), let t = c.text() else { return nil }
                    uuid = t
                case Key.metric:
                    guard seen.first(1), let t = c.text() else { return nil }
                    metricName = t
                case Key.source:
                    guard seen.first(2), let t = c.text() else { return nil }
                    source = t
                case Key.start:
                    guard seen.first(3), let t = c.text() else { return nil }
                    start = t
                case Key.end:
                    guard seen.first(4), let t = c.text() else { return nil }
                    end = t
                case Key.unit:
                    guard seen.first(5), let t = c.text() else { return nil }
                    unit = t
                case Key.zone:
                    guard seen.first(6), let t = c.text() else { return nil }
                    zone = t
                case Key.value:
                    guard seen.first(7), let d = c.sampleValue() else { return nil }
                    value = d
                case Key.version:
                    guard seen.first(8), let v = c.integer() else { return nil }
                    version = v
                default:
                    // The sample's members are one level deeper.
                    guard seen.firstUnknown(key.text.string), c.skip(depth: 2) else { return nil }
                }
            } while c.nextMember()
            guard c.closed else { return nil }
        }
        guard let uuid, !uuid.bytes.isEmpty, let metricName, let source, !source.bytes.isEmpty, let start, let end,
              let raw = value, let unit, let zone else { return nil }
        guard let metric = metric(metricName), let factor = factor(unit, of: metric),
              case .instant(let from) = Instant.parse(start.bytes, memo: &zones.date),
              case .instant(let to) = Instant.parse(end.bytes, memo: &zones.date), to >= from else { return nil }
        guard EventDecoder.lastsAtMostAWeek(from: from, to: to), EventDecoder.admits(raw, for: metric) else { return nil }
        let converted = raw * factor
        guard converted.isFinite, converted <= metric.maximumPerSample, metric.isCumulative || converted > 0 else { return nil }
        if !zones.contains(zone.bytes) {
            guard let zoneName = id(zone), ZoneRules.named(zoneName) != nil else { return nil }
            zones.insert(zone.bytes)
        }
        return ParsedSample(uuid: uuid, metric: metric, source: source, start: from, end: to, value: converted, zone: zone, version: version)
    }

    /// The metric a name spells (`Metric.rawValue`), compared as bytes: nothing is built.
    private static func metric(_ name: Text) -> Metric? {
        if name.is("steps") { return .steps }
        if name.is("heart_rate") { return .heartRate }
        if name.is("active_energy") { return .activeEnergy }
        if name.is("distance") { return .distance }
        if name.is("distance_cycling") { return .distanceCycling }
        if name.is("basal_energy") { return .basalEnergy }
        if name.is("flights_climbed") { return .flightsClimbed }
        if name.is("water") { return .water }
        if name.is("dietary_energy") { return .dietaryEnergy }
        if name.is("exercise_time") { return .exerciseTime }
        if name.is("sleep") { return .sleep }
        if name.is("stand_time") { return .standTime }
        if name.is("resting_heart_rate") { return .restingHeartRate }
        if name.is("heart_rate_variability") { return .heartRateVariability }
        if name.is("body_mass") { return .bodyMass }
        if name.is("oxygen_saturation") { return .oxygenSaturation }
        if name.is("respiratory_rate") { return .respiratoryRate }
        // A metric the configuration added (`MetricCatalogue.install`): looked up by its text.
        return Metric.added.isEmpty ? nil : Metric.added[name.string]
    }

    /// The factor `Metric.units` gives `unit` for `metric`, found by bytes; nil for a unit
    /// the metric does not accept. `FastEventReaderTests` checks it against `Metric.units`
    /// for every metric and unit.
    static func factor(_ unit: UnsafeBufferPointer<UInt8>, of metric: Metric) -> Double? {
        factor(Text(bytes: unit, ascii: true), of: metric)
    }

    private static func factor(_ unit: Text, of metric: Metric) -> Double? {
        switch metric {
        case .steps, .flightsClimbed: return unit.is("count") ? 1 : nil
        case .heartRate, .restingHeartRate, .respiratoryRate: return unit.is("count/min") ? 1 : nil
        case .heartRateVariability: return unit.is("ms") ? 1 : nil
        case .oxygenSaturation: return unit.is("%") ? 1 : nil
        case .bodyMass:
            if unit.is("kg") { return 1 }
            if unit.is("g") { return 0.001 }
            return unit.is("lb") ? 0.45359237 : nil
        case .activeEnergy, .basalEnergy, .dietaryEnergy:
            if unit.is("kcal") || unit.is("Cal") { return 1 }
            return unit.is("kJ") ? 1 / 4.184 : nil
        case .distance, .distanceCycling:
            if unit.is("m") { return 1 }
            if unit.is("km") { return 1000 }
            return unit.is("mi") ? 1609.344 : nil
        case .exerciseTime, .standTime, .sleep:
            if unit.is("min") { return 1 }
            if unit.is("s") { return 1.0 / 60 }
            return unit.is("h") ? 60 : nil
        case .water:
            if unit.is("mL") { return 1 }
            if unit.is("L") { return 1000 }
            return unit.is("fl_oz_us") ? 29.5735295625 : nil
        default:
            // A metric the configuration added: its entry's units, by their text.
            // (`FastEventReaderTests` checks every built-in one against the catalogue.)
            return metric.index >= MetricCatalogue.builtIn.count ? metric.definition.factor(of: unit.string) : nil
        }
    }

    /// A string value as it stands between its quotes, and whether it is all ASCII (seen by
    /// the same scan, so nothing looks at its bytes twice).
    struct Text {
        var bytes: UnsafeBufferPointer<UInt8>
        var ascii: Bool

        /// Whether the text is exactly `name`, byte for byte.
        func `is`(_ name: StaticString) -> Bool {
            guard bytes.count == name.utf8CodeUnitCount, let base = bytes.baseAddress else { return false }
            return memcmp(base, name.utf8Start, bytes.count) == 0
        }

        var string: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// A member's name, and its bytes as one little-endian word when it has 1 to 8 of them
    /// (0 otherwise): every name the event format knows is 3 to 7 ASCII bytes, so a name is
    /// told by one integer compare instead of a length check and a `memcmp` per candidate.
    struct Key {
        var text: Text
        var word: UInt64

        /// The word of each known name (`FastEventReaderTests` checks them against `word(of:)`).
        static let type: UInt64 = 0x6570_7974, user: UInt64 = 0x7265_7375, uuid: UInt64 = 0x6469_7575
        static let schema: UInt64 = 0x616d_6568_6373, sample: UInt64 = 0x656c_706d_6173
        static let metric: UInt64 = 0x6369_7274_656d, source: UInt64 = 0x6563_7275_6f73
        static let start: UInt64 = 0x74_7261_7473, end: UInt64 = 0x64_6e65, unit: UInt64 = 0x7469_6e75
        static let zone: UInt64 = 0x656e_6f7a, value: UInt64 = 0x65_756c_6176, version: UInt64 = 0x6e_6f69_7372_6576

        /// The word of `bytes` as `key()` computes it: 1 to 8 bytes little-endian, else 0.
        static func word(of bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
            guard (1...8).contains(bytes.count) else { return 0 }
            var w: UInt64 = 0
            for (k, b) in bytes.enumerated() { w |= UInt64(b) << (8 * UInt64(k)) }
            return w
        }
    }

    /// An id or name as the event keeps it: ASCII as it stands; anything else only if it is
    /// valid UTF-8 in normalization form C (else nil, and the general path names the fault).
    static func id(_ text: Text) -> String? {
        if text.ascii { return String(decoding: text.bytes, as: UTF8.self) }
        guard let string = String(validating: text.bytes, as: UTF8.self), EventDecoder.isNFC(string) else { return nil }
        return string
    }

    /// A sample's uuid as `id` reads it: a canonical UUID straight to its 16 bytes (no
    /// String is made), any other text through `id`.
    private static func sampleUUID(_ text: Text) -> SampleUUID? {
        if let canonical = SampleUUID(canonical: text.bytes) { return canonical }
        return id(text).map(SampleUUID.init)
    }

    /// A name a stream repeats (a user, a source, a zone) as `id` reads it, an ASCII one
    /// from the memo's recent Strings.
    private static func name(_ text: Text, _ memo: inout ZoneMemo) -> String? {
        text.ascii ? memo.name(text.bytes) : id(text)
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

    /// A position in a line, read through a raw pointer: every step checks the end itself,
    /// so nothing pays a bounds check per byte. Anything unusual (a nested value to skip,
    /// a number beyond the simple ones) goes through `JSONParser.Reader` at the same offset,
    /// so the rules of what is valid JSON stay the parser's.
    private struct Cursor {
        let base: UnsafePointer<UInt8>
        let count: Int
        var i = 0
        /// Set by `nextMember` when it stopped at the object's closing brace.
        var closed = false

        init(base: UnsafePointer<UInt8>, count: Int) {
            self.base = base
            self.count = count
        }

        var atEnd: Bool { i == count }

        mutating func skipSpace() {
            while i < count {
                let b = base[i]
                guard b == 32 || b == 10 || b == 13 || b == 9 else { return }
                i += 1
            }
        }

        /// Skips space and an object's opening brace.
        mutating func open() -> Bool {
            skipSpace()
            guard i < count, base[i] == 123 else { return false }
            i += 1
            return true
        }

        /// True (and past it) when the object just opened is `{}`.
        mutating func closeAtOnce() -> Bool {
            skipSpace()
            guard i < count, base[i] == 125 else { return false }
            i += 1
            return true
        }

        /// A member's name and the colon after it, positioned at the value; nil for a name
        /// with an escape, a control character or a byte ≥ 0x80, or no colon.
        /// The usual name, up to 7 bytes with 8 bytes of line after its opening quote, is
        /// read from one word: its closing quote is found by the same "has a zero byte" test
        /// as `text()`'s, and any other special or non-ASCII byte before it goes the long way.
        mutating func key() -> Key? {
            if i < count, base[i] <= 32 { skipSpace() }
            let key: Key
            if i + 9 <= count, base[i] == 34 {
                let w = UnsafeRawPointer(base + i + 1).loadUnaligned(as: UInt64.self)
                let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
                let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
                let special = (((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((w &- ones &* 0x20) & ~w) | w) & highs
                let k = special.trailingZeroBitCount >> 3
                if k > 0, k < 8, base[i + 1 + k] == 34 {
                    key = Key(text: Text(bytes: UnsafeBufferPointer(start: base + i + 1, count: k), ascii: true),
                              word: w & (UInt64.max >> (64 - 8 * UInt64(k))))
                    i += k + 2
                } else {
                    guard let long = longKey() else { return nil }
                    key = long
                }
            } else {
                guard let long = longKey() else { return nil }
                key = long
            }
            // The usual compact form first: the colon right after the name, the value right
            // after the colon (every JSON space is a byte ≤ 32).
            if i + 1 < count, base[i] == 58, base[i + 1] > 32 {
                i += 1
                return key
            }
            skipSpace()
            guard i < count, base[i] == 58 else { return nil }
            i += 1
            skipSpace()
            return key
        }

        /// A name `key()` does not read from one word (empty, 8 bytes or more, near the end
        /// of the line, or with a byte it must look at): through `text()`.
        private mutating func longKey() -> Key? {
            guard let name = text(), name.ascii else { return nil }
            return Key(text: name, word: Key.word(of: name.bytes))
        }

        /// After a member's value: true past a comma (another member follows), false at the
        /// closing brace (`closed` set) or anything else (`closed` not set: give up).
        mutating func nextMember() -> Bool {
            closed = false
            skipSpace()
            guard i < count else { return false }
            if base[i] == 44 { i += 1; return true }
            if base[i] == 125 { i += 1; closed = true }
            return false
        }

        /// A string value without escapes or control characters, or nil (the caller gives
        /// up) for anything else. Bytes of 0x80 and above are checked by `id`.
        mutating func text() -> Text? {
            guard i < count, base[i] == 34 else { return nil }
            let start = i + 1
            var j = start
            var seen: UInt64 = 0
            // Eight bytes at a time. In each word the classic "has a zero byte" tests mark
            // every quote, backslash and control character; the lowest mark is exact
            // (a false mark can only sit above a true one), so the first special byte is
            // found by counting trailing zeros: a quote ends the string, anything else
            // gives up. Bytes of 0x80 and above before the end make the text non-ASCII.
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while j + 8 <= count {
                let w = UnsafeRawPointer(base + j).loadUnaligned(as: UInt64.self)
                let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
                let special = (((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((w &- ones &* 0x20) & ~w)) & highs
                if special != 0 {
                    let k = special.trailingZeroBitCount >> 3
                    guard base[j + k] == 34 else { return nil }
                    if k > 0 { seen |= w & (UInt64.max >> (64 - 8 * k)) }
                    i = j + k + 1
                    return Text(bytes: UnsafeBufferPointer(start: base + start, count: j + k - start), ascii: seen & highs == 0)
                }
                seen |= w
                j += 8
            }
            var high = UInt8(truncatingIfNeeded: (seen & highs) == 0 ? 0 : 0x80)
            while j < count {
                let b = base[j]
                if b == 34 {
                    i = j + 1
                    return Text(bytes: UnsafeBufferPointer(start: base + start, count: j - start), ascii: high < 0x80)
                }
                if b == 92 || b < 0x20 { return nil }
                high |= b
                j += 1
            }
            return nil
        }

        /// A sample's value: a number literal that starts with a minus or a digit. Up to 15
        /// significant digits with at most 15 after the point and no exponent, it is read
        /// here as `m / 10^k` of two exact doubles, one correctly rounded division: the
        /// value `strtod` gives for the same text (Clinger's fast path). Anything else goes
        /// to `JSONParser.Reader.number`, which reads it as the tree reader does.
        mutating func sampleValue() -> Double? {
            guard i < count, base[i] == 45 || (base[i] >= 48 && base[i] <= 57) else { return nil }
            let start = i
            var j = i
            let negative = base[j] == 45
            if negative { j += 1 }
            var mantissa: UInt64 = 0
            var digits = 0
            var fraction = 0
            if j < count, base[j] == 48 {
                j += 1
                digits = 1
                if j < count, base[j] >= 48, base[j] <= 57 { return slowNumber(from: start) }
            } else {
                while j < count, base[j] >= 48, base[j] <= 57 {
                    mantissa = mantissa &* 10 &+ UInt64(base[j] - 48)
                    digits += 1
                    j += 1
                }
                guard digits > 0 else { return slowNumber(from: start) }
            }
            if j < count, base[j] == 46 {
                j += 1
                while j < count, base[j] >= 48, base[j] <= 57 {
                    mantissa = mantissa &* 10 &+ UInt64(base[j] - 48)
                    digits += 1
                    fraction += 1
                    j += 1
                }
                guard fraction > 0 else { return slowNumber(from: start) }
            }
            guard digits <= 15, !(j < count && (base[j] == 101 || base[j] == 69)) else { return slowNumber(from: start) }
            i = j
            let magnitude = fraction == 0 ? Double(mantissa) : Double(mantissa) / Cursor.powersOfTen[fraction]
            return negative ? -magnitude : magnitude
        }

        /// 10⁰ … 10¹⁵, each exact in a double.
        private static let powersOfTen: [Double] = (0...15).map { k in (0..<k).reduce(1.0) { r, _ in r * 10 } }

        private mutating func slowNumber(from start: Int) -> Double? {
            i = start
            guard case .number(let d)? = jsonNumber() else { return nil }
            return d
        }

        /// A number as `JSONParser.Reader.number` reads it here, or nil for a fault.
        mutating func jsonNumber() -> JSONValue? {
            var r = JSONParser.Reader(bytes: UnsafeBufferPointer(start: base, count: count))
            r.i = i
            guard let v = try? r.number() else { return nil }
            i = r.i
            return v
        }

        /// Skips a value at `depth` (as `JSONParser` counts it), so that the nesting limit
        /// is the general parser's: a line is never accepted here and malformed there.
        mutating func skip(depth: Int) -> Bool {
            var r = JSONParser.Reader(bytes: UnsafeBufferPointer(start: base, count: count))
            r.i = i
            guard (try? r.value(depth: depth)) != nil else { return false }
            i = r.i
            return true
        }

        /// A non-negative integer literal that fits in an Int64 (digits only, no leading
        /// zero before another digit, not followed by a fraction or exponent), or nil: the
        /// general path then decides, and names the fault.
        mutating func integer() -> Int64? {
            let start = i
            var n: Int64 = 0
            while i < count, base[i] >= 48, base[i] <= 57 {
                let (m, o1) = n.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(base[i] - 48))
                guard !o1, !o2 else { return nil }
                n = a
                i += 1
            }
            let digits = i - start
            guard digits > 0, !(digits > 1 && base[start] == 48) else { return nil }
            if i < count, base[i] == 46 || base[i] == 101 || base[i] == 69 { return nil }
            return n
        }
    }
}

/// What a decoder remembers from line to line of one stream: zone names it found valid
/// lately (`ZoneRules.named`), as bytes, so most lines skip the shared cache's lock and
/// String hash (at most 8; only ever names that `ZoneRules.named` accepted); and the Strings
/// of ASCII names it read lately (users, sources, zones), so a name the stream repeats is
/// a compare and a retain instead of a new String.
public struct ZoneMemo: Sendable {
    /// The date of the last timestamp read (`Instant.parse(_:memo:)`).
    var date = Instant.DateMemo()
    private var names: [[UInt8]] = []
    private var next = 0
    /// A direct-mapped cache of names of 1 ... `width` bytes: slot k's bytes at
    /// `k * width`, its length (0: empty) and its String. Made on the second name asked
    /// for, so a memo used for one line costs nothing.
    private var slotBytes: [UInt8] = []
    private var slotLengths: [UInt8] = []
    private var slotStrings: [String] = []
    private var asked = 0
    private static let slots = 64, width = 32

    public init() {}

    func contains(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = name.baseAddress else { return false }
        return names.contains { known in
            known.count == name.count && known.withUnsafeBufferPointer { k in k.baseAddress.map { memcmp($0, base, name.count) == 0 } ?? false }
        }
    }

    mutating func insert(_ name: UnsafeBufferPointer<UInt8>) {
        if names.count < 8 {
            names.append(Array(name))
        } else {
            names[next] = Array(name)
            next = (next + 1) % 8
        }
    }

    /// The String of ASCII `bytes` (which the caller has checked): the remembered one when
    /// the slot of these bytes holds them, else a new one, remembered in that slot.
    mutating func name(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let n = bytes.count
        guard n > 0, n <= Self.width, let source = bytes.baseAddress else { return String(decoding: bytes, as: UTF8.self) }
        if slotStrings.isEmpty {
            asked += 1
            guard asked > 1 else { return String(decoding: bytes, as: UTF8.self) }
            slotBytes = Array(repeating: 0, count: Self.slots * Self.width)
            slotLengths = Array(repeating: 0, count: Self.slots)
            slotStrings = Array(repeating: "", count: Self.slots)
        }
        let slot = Self.slot(source, n)
        let offset = slot * Self.width
        if Int(slotLengths[slot]) == n,
           slotBytes.withUnsafeBufferPointer({ all in all.baseAddress.map { memcmp($0 + offset, source, n) == 0 } ?? false }) {
            return slotStrings[slot]
        }
        let string = String(decoding: bytes, as: UTF8.self)
        slotBytes.withUnsafeMutableBufferPointer { all in
            if let target = all.baseAddress { (target + offset).update(from: source, count: n) }
        }
        slotLengths[slot] = UInt8(n)
        slotStrings[slot] = string
        return string
    }

    /// A slot for `n` bytes at `p` (1 ≤ n ≤ width): their length, first and last eight
    /// bytes (all of them below eight) mixed by two multiplications.
    private static func slot(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int {
        var h = UInt64(n)
        if n >= 8 {
            h ^= UnsafeRawPointer(p).loadUnaligned(as: UInt64.self)
            h = h &* 0x9E37_79B9_7F4A_7C15
            h ^= UnsafeRawPointer(p + n - 8).loadUnaligned(as: UInt64.self)
        } else {
            for k in 0..<n { h = h << 8 | UInt64(p[k]) }
        }
        return Int(truncatingIfNeeded: (h &* 0x9E37_79B9_7F4A_7C15) >> 58)
    }
}
