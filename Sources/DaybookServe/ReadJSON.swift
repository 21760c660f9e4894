import DaybookCore
import DaybookSupport

/// Where an answer was read: what `as_of` says.
public struct AsOf: Sendable, Equatable {
    public var partition: Int32
    /// The shard's next offset: the answer holds every event of the partition before it.
    public var nextOffset: Int64
    /// Events in the log and not yet in the shard; nil when this member does not know the log end.
    public var lag: Int64?
    public var role: Placement.Role

    public init(partition: Int32, nextOffset: Int64, lag: Int64?, role: Placement.Role) {
        self.partition = partition
        self.nextOffset = nextOffset
        self.lag = lag
        self.role = role
    }

    var json: String {
        "{\"partition\":\(partition),\"next_offset\":\(nextOffset),\"lag\":\(lag.map(String.init) ?? "null"),\"role\":\"\(role.rawValue)\"}"
    }
}

/// The JSON bodies of the read routes. Keys are written in a fixed order and numbers as
/// `DayTotal.format` writes them (rounded to 6 decimals on output only), so an answer
/// equals `daybook totals --format json`'s figures byte for byte.
public enum ReadJSON {
    /// The answer of `GET /v1/users/{user}/totals?bucket=day`: a row per day that has one
    /// (an empty day is no row, never a zero), and under `unknown` each day of the range a
    /// source that speaks for the metric was last heard from on or before, with those
    /// sources: its data may still come (`DayBlock`, as `daybook totals` shows it).
    public static func days(_ block: DayBlock, sources: Bool, asOf: AsOf) -> String {
        var rows: [String] = []
        var unknown: [String] = []
        block.forEachDay(everyDay: false) { day, row, silent in
            if let row { rows.append("{\"day\":\"\(day)\"," + summary(row.summary, sources: sources) + "}") }
            if !silent.isEmpty {
                let list = silent.map { "{\"source\":\(JSONWriter.quoted($0.source)),\"last_seen\":\"\($0.lastSeen)\"}" }.joined(separator: ",")
                unknown.append("{\"day\":\"\(day)\",\"sources\":[\(list)]}")
            }
        }
        return head(user: block.user, metric: block.metric, bucket: .day) + ",\"rows\":[" + rows.joined(separator: ",") + "],\"unknown\":["
            + unknown.joined(separator: ",") + "],\"as_of\":" + asOf.json + "}"
    }

    /// The answer of `bucket=hour`: each hour with its civil day and its local start and end
    /// with the offsets in force (RFC 3339, as `daybook totals --bucket hour` prints them),
    /// so a repeated fall-back hour is two rows.
    public static func hours(user: String, metric: Metric, _ hours: [HourTotal], sources: Bool, asOf: AsOf) -> String {
        // One growing byte buffer (`AnswerBytes`), times and days written into it by integer
        // arithmetic: a week of hours is ~120 rows of ~10 writes each.
        var out = AnswerBytes(capacity: 160 + hours.count * (sources ? 200 : 128))
        out.put(text: head(user: user, metric: metric, bucket: .hour))
        out.put(",\"rows\":[")
        var quotedSources: [(name: String, quoted: String)] = [] // a read names a few sources, each many times
        for (i, hour) in hours.enumerated() {
            out.put(i == 0 ? "{\"day\":\"" : ",{\"day\":\"")
            out.put(day: hour.key.day)
            out.put("\",\"start\":\"")
            out.put(localTime: hour.start, offsetSeconds: hour.startOffsetSeconds)
            out.put("\",\"end\":\"")
            out.put(localTime: hour.end, offsetSeconds: hour.endOffsetSeconds)
            out.put("\",")
            switch hour.summary {
            case .cumulative(let value, let shares):
                out.put("\"value\":")
                out.put(text: DayTotal.format(value))
                if sources {
                    out.put(",\"sources\":[")
                    for (k, share) in shares.enumerated() {
                        out.put(k == 0 ? "{\"source\":" : ",{\"source\":")
                        if let known = quotedSources.first(where: { $0.name == share.source }) {
                            out.put(text: known.quoted)
                        } else {
                            let quoted = JSONWriter.quoted(share.source)
                            quotedSources.append((share.source, quoted))
                            out.put(text: quoted)
                        }
                        out.put(",\"value\":")
                        out.put(text: DayTotal.format(share.value))
                        out.put(UInt8(ascii: "}"))
                    }
                    out.put(UInt8(ascii: "]"))
                }
            case .discrete:
                out.put(text: summary(hour.summary, sources: sources))
            }
            out.put(UInt8(ascii: "}"))
        }
        out.put("],\"unknown\":[],\"as_of\":")
        out.put(text: asOf.json)
        out.put(UInt8(ascii: "}"))
        return out.string()
    }

    /// `GET /v1/users/{user}/days/{day}/explain`: each stretch of the day with the sample
    /// that won it (times in the winner's zone), those it beat and its contribution; each
    /// instant and whether it counted; the day's row (null: no data).
    public static func explain(_ e: Explanation, asOf: AsOf) -> String {
        func sample(_ s: Explanation.SampleRef) -> String {
            "{\"uuid\":\(JSONWriter.quoted(s.uuid)),\"source\":\(JSONWriter.quoted(s.source)),\"zone\":\(JSONWriter.quoted(s.zone)),"
                + "\"start\":\"\(s.start)\",\"end\":\"\(s.end)\",\"value\":\(DayTotal.format(s.value))}"
        }
        let pieces = e.pieces.map { p in
            "{\"start\":\"\(p.start.format(offsetSeconds: p.offsetSeconds))\",\"end\":\"\(p.end.format(offsetSeconds: p.offsetSeconds))\","
                + "\"winner\":\(sample(p.winner)),\"beaten\":[\(p.beaten.map(sample).joined(separator: ","))],\"contribution\":\(DayTotal.format(p.contribution))}"
        }
        let points = e.points.map { p in
            "{\"at\":\"\(p.sample.start.format(offsetSeconds: p.offsetSeconds))\",\"sample\":\(sample(p.sample)),"
                + "\"counted\":\(p.shadowedBy == nil),\"shadowed_by\":\(p.shadowedBy.map(sample) ?? "null")}"
        }
        let total = e.total.map { "{" + summary($0.summary, sources: true) + "}" } ?? "null"
        return "{\"user\":\(JSONWriter.quoted(e.key.user)),\"metric\":\"\(e.key.metric.rawValue)\",\"day\":\"\(e.key.day)\","
            + "\"pieces\":[\(pieces.joined(separator: ","))],\"points\":[\(points.joined(separator: ","))],\"total\":\(total),\"as_of\":\(asOf.json)}"
    }

    private static func head(user: String, metric: Metric, bucket: Bucket) -> String {
        "{\"user\":\(JSONWriter.quoted(user)),\"metric\":\"\(metric.rawValue)\",\"bucket\":\"\(bucket.rawValue)\""
    }

    /// A row's figures: `value` (and with `sources` each source's share, highest-ranked
    /// first), or heart rate's `min`, `max`, `avg`, `count`.
    static func summary(_ summary: DaySummary, sources: Bool) -> String {
        guard sources, case .cumulative(_, let shares) = summary else { return summary.jsonFields }
        return summary.jsonFields + ",\"sources\":[" + shares.map { "{\"source\":\(JSONWriter.quoted($0.source)),\"value\":\(DayTotal.format($0.value))}" }.joined(separator: ",") + "]"
    }
}
