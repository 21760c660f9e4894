/// A calendar date with no time zone: days since 1970-01-01 in the proleptic Gregorian calendar.
///
/// Conversions use Howard Hinnant's `days_from_civil` algorithm: O(1), no Foundation.
public struct CivilDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var number: Int32

    public init(number: Int32) { self.number = number }

    public init(year: Int, month: Int, day: Int) {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        number = Int32(era * 146_097 + doe - 719_468)
    }

    /// Parses `YYYY-MM-DD`; nil when the text is not a real date.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (1...12).contains(m), d >= 1, d <= CivilDay.daysIn(month: m, year: y) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    public var components: (year: Int, month: Int, day: Int) {
        let z = Int(number) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    public var description: String {
        let (y, m, d) = components
        if (0...9999).contains(y) {
            // The common case in one buffer (a read answer prints a day per row).
            return String(unsafeUninitializedCapacity: 10) { out in
                CivilDay.write(year: y, month: m, day: d, into: out)
                return 10
            }
        }
        var ys = String(y)
        if ys.count < 4 { ys = String(repeating: "0", count: 4 - ys.count) + ys }
        return "\(ys)-\(pad2(m))-\(pad2(d))"
    }

    /// Writes `YYYY-MM-DD` (a year of 0–9999) into the first 10 bytes of `out`.
    @inline(__always)
    static func write(year: Int, month: Int, day: Int, into out: UnsafeMutableBufferPointer<UInt8>) {
        writeTwoDigits(year / 100, at: 0, into: out)
        writeTwoDigits(year % 100, at: 2, into: out)
        out[4] = UInt8(ascii: "-")
        writeTwoDigits(month, at: 5, into: out)
        out[7] = UInt8(ascii: "-")
        writeTwoDigits(day, at: 8, into: out)
    }

    public static func < (a: CivilDay, b: CivilDay) -> Bool { a.number < b.number }

    public func adding(days: Int32) -> CivilDay { CivilDay(number: number + days) }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
