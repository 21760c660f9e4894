/// A point in time: nanoseconds since 1970-01-01T00:00:00Z.
///
/// Integer nanoseconds keep interval arithmetic exact: piece lengths add up to the
/// sample length to the nanosecond, so totals do not depend on how a timeline was cut.
public struct Instant: Hashable, Comparable, Sendable, BitwiseCopyable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public init(seconds: Int64) { self.nanoseconds = seconds * Instant.nanosPerSecond }

    public static let nanosPerSecond: Int64 = 1_000_000_000
    public static let nanosPerDay: Int64 = 86_400 * nanosPerSecond

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    /// RFC 3339 in UTC with as many fractional digits as needed (none for whole seconds).
    public var description: String { format(offsetSeconds: 0) }

    /// Formats the instant as RFC 3339 wall time at a fixed UTC offset (`Z` for offset 0).
    public func format(offsetSeconds: Int) -> String { text(offsetSeconds: offsetSeconds, zulu: true) }

    /// RFC 3339 wall time at `offsetSeconds`: `Z` for a zero offset when `zulu`, else always
    /// a numeric offset (`+00:00`). Written by integer arithmetic into one buffer: a read
    /// answer prints two of these per hour row, and building them from interpolated pieces
    /// cost ~5,000 instructions each (20 times this).
    public func text(offsetSeconds: Int, zulu: Bool) -> String {
        let wall = nanoseconds + Int64(offsetSeconds) * Instant.nanosPerSecond
        let day = CivilDay(number: Int32(floorDiv(wall, Instant.nanosPerDay)))
        let (year, month, dayOfMonth) = day.components
        let minutes = abs(offsetSeconds) / 60
        // Years of four digits and offsets under 100 hours fit the fixed layout (every instant
        // an event may carry, every zone); anything else takes the general path.
        guard (0...9999).contains(year), minutes / 60 < 100 else { return slowText(offsetSeconds: offsetSeconds, zulu: zulu) }
        let inDay = wall - Int64(day.number) * Instant.nanosPerDay
        let secs = Int(inDay / Instant.nanosPerSecond)
        var frac = Int(inDay % Instant.nanosPerSecond)
        return String(unsafeUninitializedCapacity: 35) { out in
            @inline(__always) func two(_ v: Int, at i: Int) { writeTwoDigits(v, at: i, into: out) }
            CivilDay.write(year: year, month: month, day: dayOfMonth, into: out)
            out[10] = UInt8(ascii: "T")
            two(secs / 3600, at: 11)
            out[13] = UInt8(ascii: ":")
            two(secs / 60 % 60, at: 14)
            out[16] = UInt8(ascii: ":")
            two(secs % 60, at: 17)
            var n = 19
            if frac != 0 {
                // As many fractional digits as needed: nine, less the trailing zeros.
                var digits = 9
                while frac % 10 == 0 {
                    frac /= 10
                    digits -= 1
                }
                out[n] = UInt8(ascii: ".")
                for k in stride(from: n + digits, to: n, by: -1) {
                    out[k] = UInt8(truncatingIfNeeded: 48 + frac % 10)
                    frac /= 10
                }
                n += digits + 1
            }
            if offsetSeconds == 0 && zulu {
                out[n] = UInt8(ascii: "Z")
                return n + 1
            }
            out[n] = offsetSeconds < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+")
            two(minutes / 60, at: n + 1)
            out[n + 3] = UInt8(ascii: ":")
            two(minutes % 60, at: n + 4)
            return n + 6
        }
    }

    /// The general form of `text(offsetSeconds:zulu:)`, for years outside 0–9999 and offsets
    /// of 100 hours or more (no event carries either).
    func slowText(offsetSeconds: Int, zulu: Bool) -> String {
        let wall = nanoseconds + Int64(offsetSeconds) * Instant.nanosPerSecond
        let day = CivilDay(number: Int32(floorDiv(wall, Instant.nanosPerDay)))
        let inDay = wall - Int64(day.number) * Instant.nanosPerDay
        let secs = inDay / Instant.nanosPerSecond
        let frac = inDay % Instant.nanosPerSecond
        var s = "\(day)T\(pad2(Int(secs / 3600))):\(pad2(Int(secs / 60 % 60))):\(pad2(Int(secs % 60)))"
        if frac != 0 {
            var digits = String(frac)
            digits = String(repeating: "0", count: 9 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            s += "." + digits
        }
        if offsetSeconds == 0 && zulu { return s + "Z" }
        let sign = offsetSeconds < 0 ? "-" : "+"
        let m = abs(offsetSeconds) / 60
        return s + "\(sign)\(pad2(m / 60)):\(pad2(m % 60))"
    }
}

@inline(__always)
func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}

func pad2(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }

/// Writes `v` (0–99) as two decimal digits at `out[i]` and `out[i + 1]`.
@inline(__always)
func writeTwoDigits(_ v: Int, at i: Int, into out: UnsafeMutableBufferPointer<UInt8>) {
    out[i] = UInt8(truncatingIfNeeded: 48 + v / 10)
    out[i + 1] = UInt8(truncatingIfNeeded: 48 + v % 10)
}

/// Why an RFC 3339 timestamp could not be read.
public struct TimestampError: Error, Equatable, Sendable {
    public var reason: String
}

extension Instant {
    /// The earliest instant an event may carry: 1900-01-01T00:00:00Z.
    public static let earliestAccepted = Instant(nanoseconds: -2_208_988_800 * nanosPerSecond)
    /// The first instant past the accepted range: 2200-01-01T00:00:00Z.
    ///
    /// Nanoseconds since 1970 in an `Int64` reach only 1677–2262; bounding timestamps well
    /// inside that keeps every sum of an instant, an offset and a duration (≤ 7 days) exact.
    public static let endOfAccepted = Instant(nanoseconds: 7_258_118_400 * nanosPerSecond)

    /// Parses an RFC 3339 timestamp (`2024-03-31T01:30:00.5+02:00`, `…Z`).
    ///
    /// Accepts `T`, `t` or a space between date and time, `Z`/`z` or `±HH:MM`, and up to
    /// nine fractional digits (more are truncated), for instants from 1900-01-01T00:00:00Z
    /// up to (not including) 2200-01-01T00:00:00Z. Rejects anything else with a reason.
    public init(rfc3339 text: String) throws(TimestampError) {
        var text = text
        switch text.withUTF8({ Instant.parse($0) }) {
        case .instant(let parsed):
            self = parsed
        case .malformed:
            throw TimestampError(reason: "is not an RFC 3339 timestamp (expected e.g. 2024-03-31T09:00:00+02:00)")
        case .fieldOutOfRange:
            throw TimestampError(reason: "has a date or time field out of range")
        case .outsideAcceptedRange:
            throw TimestampError(reason: "is outside the accepted range 1900-01-01T00:00:00Z ..< 2200-01-01T00:00:00Z")
        }
    }

    enum Parsed: Equatable {
        case instant(Instant)
        case malformed
        case fieldOutOfRange
        case outsideAcceptedRange
    }

    /// Reads the shape, then the field ranges, then the accepted range; never traps.
    static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Parsed {
        var memo = DateMemo()
        return parse(b, memo: &memo)
    }

    /// The last date `parse(_:memo:)` found in range, as its ten bytes and its day number:
    /// a sample's start and end, and a stream's next samples, mostly share it, and a date
    /// already checked needs neither its month's length nor its day number again.
    struct DateMemo {
        var head: UInt64 = 0
        var tail: UInt16 = 0
        var days: Int64 = 0
        var known = false
    }

    /// `parse(_:)`, answering the same for every text, with the date of the last one
    /// remembered in `memo`.
    static func parse(_ b: UnsafeBufferPointer<UInt8>, memo: inout DateMemo) -> Parsed {
        // The shortest well-formed text, `YYYY-MM-DDTHH:MM:SSZ`, has 20 bytes; every
        // shorter one fails a shape check below, so it is malformed.
        guard let p = b.baseAddress, b.count >= 20 else { return .malformed }
        let n = b.count
        /// The two digits at `k` as a number, or -1 when either is not a digit.
        func two(_ k: Int) -> Int {
            let hi = Int(p[k]) &- 48, lo = Int(p[k + 1]) &- 48
            return UInt(bitPattern: hi) < 10 && UInt(bitPattern: lo) < 10 ? hi &* 10 &+ lo : -1
        }
        let century = two(0), yy = two(2), month = two(5), day = two(8)
        let hour = two(11), minute = two(14), second = two(17)
        let separator = p[10]
        guard century >= 0, yy >= 0, p[4] == 45, month >= 0, p[7] == 45, day >= 0,
              separator == 84 || separator == 116 || separator == 32,
              hour >= 0, p[13] == 58, minute >= 0, p[16] == 58, second >= 0 else { return .malformed }
        let year = century * 100 + yy
        var i = 19
        var frac: Int64 = 0
        if p[i] == 46 {
            i += 1
            var digits = 0
            while i < n, p[i] >= 48, p[i] <= 57 {
                if digits < 9 { frac = frac * 10 + Int64(p[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return .malformed }
            for _ in digits..<max(digits, 9) { frac *= 10 }
        }
        guard i < n else { return .malformed }
        var offset = 0
        if p[i] == 90 || p[i] == 122 {
            i += 1
        } else if p[i] == 43 || p[i] == 45 {
            let negative = p[i] == 45
            i += 1
            guard i + 5 <= n else { return .malformed }
            let oh = two(i), om = two(i + 3)
            guard oh >= 0, p[i + 2] == 58, om >= 0 else { return .malformed }
            i += 5
            guard oh <= 23, om <= 59 else { return .fieldOutOfRange }
            offset = (oh * 60 + om) * 60 * (negative ? -1 : 1)
        } else {
            return .malformed
        }
        guard i == n else { return .malformed }
        // The date's ten bytes (`YYYY-MM-DD`, its shape checked above) as two words.
        let head = UnsafeRawPointer(p).loadUnaligned(as: UInt64.self)
        let tail = UnsafeRawPointer(p + 8).loadUnaligned(as: UInt16.self)
        let days: Int64
        if memo.known, memo.head == head, memo.tail == tail {
            days = memo.days // in range when it was remembered
        } else {
            guard (1...12).contains(month), day >= 1, day <= CivilDay.daysIn(month: month, year: year) else { return .fieldOutOfRange }
            days = Int64(CivilDay(year: year, month: month, day: day).number)
            memo = DateMemo(head: head, tail: tail, days: days, known: true)
        }
        guard hour <= 23, minute <= 59, second <= 59 else { return .fieldOutOfRange }
        // Years 0000–9999 give at most ~3.2e11 seconds: no overflow before the range check.
        let secs = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        let earliest = Instant.earliestAccepted.nanoseconds / Instant.nanosPerSecond
        let end = Instant.endOfAccepted.nanoseconds / Instant.nanosPerSecond
        guard secs >= earliest, secs < end else { return .outsideAcceptedRange }
        return .instant(Instant(nanoseconds: secs * Instant.nanosPerSecond + frac))
    }
}

extension Duration {
    /// The duration in seconds, fractions included (for rates, timings and output).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
