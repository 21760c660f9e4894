import DaybookSupport

/// One civil hour of a user's metric: a row of `daybook totals --bucket hour`.
///
/// Hours are civil hours of each winning sample's own zone (`ZoneRules`' civil hours): the
/// repeated hour of a fall-back night is two rows, the skipped hour of a spring night none,
/// and an hour without data is no row. A cumulative hour's value and per-source shares are
/// whole micro-units (6 decimals), apportioned so that the hours of a civil day add up to
/// that day's printed total exactly and each hour's shares to its value (`HourRollup`).
/// Heart rate's hours count the samples that start in them.
public struct HourTotal: Equatable, Sendable {
    /// The user, the metric and the civil day the hour belongs to (that of its start).
    public var key: DayKey
    /// The hour's first instant, and the UTC offset in force then (seconds).
    public var start: Instant
    public var startOffsetSeconds: Int
    /// The instant the hour ends (exclusive), and the UTC offset in force then: across an
    /// offset change this is the new offset (`01:00-04:00` → `01:00-05:00`).
    public var end: Instant
    public var endOffsetSeconds: Int
    public var summary: DaySummary

    public init(key: DayKey, start: Instant, startOffsetSeconds: Int, end: Instant, endOffsetSeconds: Int, summary: DaySummary) {
        self.key = key
        self.start = start
        self.startOffsetSeconds = startOffsetSeconds
        self.end = end
        self.endOffsetSeconds = endOffsetSeconds
        self.summary = summary
    }

    /// The start as RFC 3339 local time with its offset (`2026-11-01T01:00:00-04:00`).
    public var startText: String { HourTotal.localTime(start, offsetSeconds: startOffsetSeconds) }
    /// The end as RFC 3339 local time with its offset (`2026-11-01T01:00:00-05:00`).
    public var endText: String { HourTotal.localTime(end, offsetSeconds: endOffsetSeconds) }

    /// `instant` as RFC 3339 wall time at `offsetSeconds`, always with a numeric offset
    /// (`+00:00`, never `Z`: it is a local time whose offset happens to be zero).
    public static func localTime(_ instant: Instant, offsetSeconds: Int) -> String {
        instant.text(offsetSeconds: offsetSeconds, zulu: false)
    }

    /// The JSON line `daybook totals --bucket hour --format json` prints for this hour:
    /// user, metric, day, start, end, then value or min, max, avg and count (keys in a
    /// fixed order; numbers as `DayTotal.format`).
    public var jsonLine: String {
        "{\"user\":\(JSONWriter.quoted(key.user)),\"metric\":\"\(key.metric.rawValue)\",\"day\":\"\(key.day)\""
            + ",\"start\":\"\(startText)\",\"end\":\"\(endText)\"," + summary.jsonFields + "}"
    }
}

extension HourTotal {
    /// Appends `localTime(instant, offsetSeconds:)`'s UTF-8 to `out`, without building a String
    /// for the common case (whole seconds, a year of 0–9999, an offset under 100 hours): a
    /// read answer writes two of these per hour row.
    public static func appendLocalTime(_ instant: Instant, offsetSeconds: Int, to out: inout [UInt8]) {
        let wall = instant.nanoseconds + Int64(offsetSeconds) * Instant.nanosPerSecond
        let dayNumber = floorDiv(wall, Instant.nanosPerDay)
        let inDay = wall - dayNumber * Instant.nanosPerDay
        let minutes = abs(offsetSeconds) / 60
        let (year, month, day) = CivilDay(number: Int32(dayNumber)).components
        guard inDay % Instant.nanosPerSecond == 0, (0...9999).contains(year), minutes / 60 < 100 else {
            out.append(contentsOf: localTime(instant, offsetSeconds: offsetSeconds).utf8)
            return
        }
        let secs = Int(inDay / Instant.nanosPerSecond)
        appendDate(year: year, month: month, day: day, to: &out)
        out.append(UInt8(ascii: "T"))
        appendTwoDigits(secs / 3600, to: &out)
        out.append(UInt8(ascii: ":"))
        appendTwoDigits(secs / 60 % 60, to: &out)
        out.append(UInt8(ascii: ":"))
        appendTwoDigits(secs % 60, to: &out)
        out.append(offsetSeconds < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
        appendTwoDigits(minutes / 60, to: &out)
        out.append(UInt8(ascii: ":"))
        appendTwoDigits(minutes % 60, to: &out)
    }

    /// Appends `day.description`'s UTF-8 to `out` (`YYYY-MM-DD`), without a String for a year
    /// of 0–9999.
    public static func appendDay(_ day: CivilDay, to out: inout [UInt8]) {
        let (year, month, dayOfMonth) = day.components
        guard (0...9999).contains(year) else {
            out.append(contentsOf: day.description.utf8)
            return
        }
        appendDate(year: year, month: month, day: dayOfMonth, to: &out)
    }

    @inline(__always)
    private static func appendDate(year: Int, month: Int, day: Int, to out: inout [UInt8]) {
        appendTwoDigits(year / 100, to: &out)
        appendTwoDigits(year % 100, to: &out)
        out.append(UInt8(ascii: "-"))
        appendTwoDigits(month, to: &out)
        out.append(UInt8(ascii: "-"))
        appendTwoDigits(day, to: &out)
    }

    @inline(__always)
    private static func appendTwoDigits(_ v: Int, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: 48 + v / 10))
        out.append(UInt8(truncatingIfNeeded: 48 + v % 10))
    }
}
