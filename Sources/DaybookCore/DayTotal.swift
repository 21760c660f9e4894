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
    /// Minimum, maximum, mean and count of every sample that starts on the day.
    case discrete(min: Double, max: Double, average: Double, count: Int)
}

extension DaySummary {
    /// The figures as JSON members, as rows print them: `"value":V` for a cumulative
    /// summary, `"min":…,"max":…,"avg":…,"count":N` for a discrete one (numbers as
    /// `DayTotal.format`; the shares are not included).
    public var jsonFields: String {
        switch self {
        case .cumulative(let value, _):
            "\"value\":\(DayTotal.format(value))"
        case .discrete(let min, let max, let average, let count):
            "\"min\":\(DayTotal.format(min)),\"max\":\(DayTotal.format(max)),\"avg\":\(DayTotal.format(average)),\"count\":\(count)"
        }
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

    /// Rounds to 6 decimal places for output, so that 7050.000000000001 prints as 7050.
    public static func format(_ value: Double) -> String {
        let rounded = (value * 1e6).rounded() / 1e6
        return JSONWriter.number(rounded.isFinite ? rounded : value)
    }
}
