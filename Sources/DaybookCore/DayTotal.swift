import DaybookSupport

/// Identifies one row of the read model: a user's metric on one civil day.
public struct DayKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var user: String
    public var metric: Metric
    public var day: CivilDay

    public init(user: String, metric: Metric, day: CivilDay) {
        self.user = user
        self.metric = metric
        self.day = day
    }

    /// Sorted by user (code-point order), metric, day: the order `daybook rollup` prints.
    public static func < (a: DayKey, b: DayKey) -> Bool {
        if a.user != b.user { return a.user.utf8.lexicographicallyPrecedes(b.user.utf8) }
        if a.metric != b.metric { return a.metric < b.metric }
        return a.day < b.day
    }

    public var description: String { "\(user)/\(metric.rawValue)/\(day)" }

    /// Users compare byte for byte, as the store keys them (`NameHash`); a batch's dirty days
    /// are hashed with `NameHash`, not SipHash over the user's bytes.
    public static func == (a: DayKey, b: DayKey) -> Bool {
        a.day == b.day && a.metric == b.metric && NameHash.sameBytes(a.user, b.user)
    }
    private var mixed: UInt64 {
        NameHash.of(user) ^ (UInt64(UInt32(bitPattern: day.number)) << 8 | UInt64(metric.index)) &* 0x9E37_79B9_7F4A_7C15
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(mixed) }
    public func _rawHashValue(seed: Int) -> Int { NameHash.table(mixed, seed: seed) }
}

/// The rows a batch may change, gathered as its events apply: the keys, and the last key
/// added, so that a run of events on one user's day (how a sync arrives) adds the key once
/// instead of hashing it again for each event.
public struct DirtyDays: Sendable {
    public private(set) var keys = Set<DayKey>()
    /// The last few keys added, as plain words (day, metric, the user String's two words):
    /// a batch of a few users' events adds each of their days over and over, and comparing
    /// eight words costs less than hashing a key. Equal words are the same user (the same
    /// small String, or the same storage, which the set keeps alive); a key they miss goes
    /// to the set, which is exact.
    private var recent: [Recent] = []
    private var next = 0

    private struct Recent: Equatable {
        var day: Int32
        var metric: UInt8
        var user: (UInt64, UInt64)
        static func == (a: Recent, b: Recent) -> Bool {
            a.day == b.day && a.metric == b.metric && a.user.0 == b.user.0 && a.user.1 == b.user.1
        }
    }

    public init() {}

    public mutating func insert(_ key: DayKey) {
        guard MemoryLayout<String>.size == 16 else {
            keys.insert(key)
            return
        }
        let r = Recent(day: key.day.number, metric: UInt8(key.metric.storageCode), user: unsafeBitCast(key.user, to: (UInt64, UInt64).self))
        for i in recent.indices where recent[i] == r { return }
        // Remembered by the words of the user the set holds (alive as long as this is), not
        // of the key's, which may be another String of the same bytes, freed after this call.
        let member = keys.insert(key).memberAfterInsert
        var kept = r
        kept.user = unsafeBitCast(member.user, to: (UInt64, UInt64).self)
        if recent.count < 8 {
            recent.append(kept)
        } else {
            recent[next] = kept
            next = (next + 1) & 7
        }
    }
}

/// What one source contributed to a cumulative day total.
public struct SourceShare: Equatable, Sendable {
    public var source: String
    public var value: Double
    public init(source: String, value: Double) {
        self.source = source
        self.value = value
    }
}

/// The figures of one day.
public enum DaySummary: Equatable, Sendable {
    /// A deduplicated sum, with what each source contributed (highest-ranked first).
    case cumulative(value: Double, sources: [SourceShare])
    /// Minimum, maximum, mean and count of every sample that starts on the day, and the
    /// value of the latest of them: the last by start, then end, then uuid (HealthKit's most
    /// recent, made independent of the order samples arrived in). `latest` is nil only in a
    /// row an older Daybook wrote, until its projector upgrades the shard.
    case discrete(min: Double, max: Double, average: Double, count: Int, latest: Double?)
}

extension DaySummary {
    /// The figures as JSON members, as rows print them: `"value":V` for a cumulative
    /// summary, `"min":…,"max":…,"avg":…,"count":N,"latest":…` for a discrete one (numbers
    /// as `DayTotal.format`, an unknown latest as null; the shares are not included).
    public var jsonFields: String {
        switch self {
        case .cumulative(let value, _):
            "\"value\":\(DayTotal.format(value))"
        case .discrete(let min, let max, let average, let count, let latest):
            "\"min\":\(DayTotal.format(min)),\"max\":\(DayTotal.format(max)),\"avg\":\(DayTotal.format(average)),\"count\":\(count),\"latest\":\(DayTotal.format(latest))"
        }
    }

    /// A discrete row's latest as the text renderings end it: `, latest 62`, or nothing when
    /// an older Daybook's row does not know it.
    public static func latestText(_ latest: Double?) -> String {
        latest.map { ", latest \(DayTotal.format($0))" } ?? ""
    }
}

/// One row of the read model.
public struct DayTotal: Equatable, Sendable {
    public var key: DayKey
    public var summary: DaySummary

    public init(key: DayKey, summary: DaySummary) {
        self.key = key
        self.summary = summary
    }

    /// The JSON line `daybook rollup` prints for this row (keys in a fixed order).
    public var jsonLine: String {
        "{\"user\":\(JSONWriter.quoted(key.user)),\"metric\":\"\(key.metric.rawValue)\",\"day\":\"\(key.day)\"," + summary.jsonFields + "}"
    }

    /// `format(_:)` of a value that may be unknown; `null` when it is.
    public static func format(_ value: Double?) -> String {
        value.map { format($0) } ?? "null"
    }

    /// Rounds to 6 decimal places for output, so that 7050.000000000001 prints as 7050.
    public static func format(_ value: Double) -> String {
        let micros = (value * 1e6).rounded()
        // 1e-4 ≤ |rounded| < 4e9 and not whole: Swift's shortest form of micros / 1e6 is its
        // decimal with the trailing zeros dropped (below 2^32 a Double is finer than 1e-6,
        // so no other decimal of 6 places or fewer reads back to it; from 1e-4 up Swift
        // writes no exponent). Written by integer arithmetic: a read answer prints a few
        // hundred of these.
        if abs(micros) >= 100, abs(micros) < 4e15, micros.truncatingRemainder(dividingBy: 1e6) != 0 {
            return decimal(micros: Int64(micros))
        }
        let rounded = micros / 1e6
        return JSONWriter.number(rounded.isFinite ? rounded : value)
    }

    /// `micros` / 10⁶ as a decimal: sign, whole part, point, up to 6 digits without trailing
    /// zeros (micros not a multiple of 10⁶).
    static func decimal(micros: Int64) -> String {
        let magnitude = micros.magnitude
        var whole = magnitude / 1_000_000
        var fraction = magnitude % 1_000_000
        var places = 6
        while fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        var wholeDigits = 1
        var scale: UInt64 = 10
        while scale <= whole {
            wholeDigits += 1
            scale *= 10
        }
        let sign = micros < 0 ? 1 : 0
        let count = sign + wholeDigits + 1 + places
        return String(unsafeUninitializedCapacity: count) { out in
            if sign == 1 { out[0] = UInt8(ascii: "-") }
            var i = sign + wholeDigits - 1
            repeat {
                out[i] = UInt8(truncatingIfNeeded: 48 + whole % 10)
                whole /= 10
                i -= 1
            } while i >= sign
            out[sign + wholeDigits] = UInt8(ascii: ".")
            var k = count - 1
            for _ in 0..<places {
                out[k] = UInt8(truncatingIfNeeded: 48 + fraction % 10)
                fraction /= 10
                k -= 1
            }
            return count
        }
    }
}
