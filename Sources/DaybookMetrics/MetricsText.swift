/// Metric families in the Prometheus text exposition format, version 0.0.4: what the
/// node_exporter textfile collector reads from `*.prom` files.
///
/// Add samples family by family, in any order; each family is written once, with its
/// `# HELP` and `# TYPE` lines and all its samples together, in the order families were
/// first added.
///
/// ```swift
/// var metrics = MetricsText()
/// metrics.gauge("daybook_stale_pairs", help: "Pairs silent past their threshold.", value: 3, labels: ["source": "watch"])
/// metrics.gauge("daybook_stale_pairs", help: "Pairs silent past their threshold.", value: 0, labels: ["source": "phone"])
/// metrics.counter("daybook_events_applied_total", help: "Events applied.", value: 1_234)
/// try metrics.write(to: "/var/lib/node_exporter/textfile/daybook.prom")
/// ```
///
/// Names are part of the program, not of its input: an invalid metric or label name, a
/// counter without `_total`, a family added again as another type or with other help, or
/// the same labels twice in one family stop the program (`precondition`). Label values and
/// help text may hold anything; they are escaped. Samples carry no timestamps (the
/// textfile collector refuses them).
public struct MetricsText: Sendable {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    private struct Family: Sendable {
        var name: String
        var help: String
        var kind: Kind
        var lines: [String] = []
        var series: Set<MetricLabels> = []
    }

    private var families: [Family] = []
    private var index: [String: Int] = [:]

    public init() {}

    /// Whether no sample has been added.
    public var isEmpty: Bool { families.isEmpty }

    /// The names of the families added so far, in the order they are written.
    public var familyNames: [String] { families.map(\.name) }

    /// Adds one sample of a counter: a count since the process started, which only goes up
    /// (Prometheus takes a restart's drop to 0 as a reset). `name` must end in `_total`.
    public mutating func counter(_ name: String, help: String, value: Double, labels: MetricLabels = [:]) {
        precondition(name.hasSuffix("_total"), "counter \(name): a counter's name ends in _total")
        precondition(value.isNaN || value >= 0, "counter \(name): a counter cannot be negative, got \(value)")
        add(name, help: help, kind: .counter, labels: labels) { ["\(name)\(labels.rendered) \(Self.number(value))"] }
    }

    /// Adds one sample of a counter (see `counter(_:help:value:labels:)`).
    public mutating func counter(_ name: String, help: String, value: some BinaryInteger, labels: MetricLabels = [:]) {
        counter(name, help: help, value: Double(value), labels: labels)
    }

    /// Adds one sample of a gauge: a value that can go up and down (a lag, a fraction, a
    /// timestamp in seconds, 0 or 1 for a check).
    public mutating func gauge(_ name: String, help: String, value: Double, labels: MetricLabels = [:]) {
        add(name, help: help, kind: .gauge, labels: labels) { ["\(name)\(labels.rendered) \(Self.number(value))"] }
    }

    /// Adds one sample of a gauge (see `gauge(_:help:value:labels:)`).
    public mutating func gauge(_ name: String, help: String, value: some BinaryInteger, labels: MetricLabels = [:]) {
        gauge(name, help: help, value: Double(value), labels: labels)
    }

    /// Adds one histogram series: `name_bucket{le="…"}` cumulative for each upper bound and
    /// `+Inf`, then `name_sum` and `name_count`. `labels` must not use `le`.
    public mutating func histogram(_ name: String, help: String, _ histogram: Histogram, labels: MetricLabels = [:]) {
        precondition(!labels.names.contains("le"), "histogram \(name): le is the bucket label; name yours otherwise")
        for suffix in ["_bucket", "_sum", "_count", "_total"] {
            precondition(!name.hasSuffix(suffix), "histogram \(name): the family name must not end in \(suffix) (it is added to the samples)")
        }
        add(name, help: help, kind: .histogram, labels: labels) {
            var lines: [String] = []
            lines.reserveCapacity(histogram.upperBounds.count + 3)
            for (bound, count) in zip(histogram.upperBounds, histogram.cumulativeCounts) {
                lines.append("\(name)_bucket\(labels.appending("le", Self.number(bound)).rendered) \(count)")
            }
            lines.append("\(name)_bucket\(labels.appending("le", "+Inf").rendered) \(histogram.count)")
            lines.append("\(name)_sum\(labels.rendered) \(Self.number(histogram.sum))")
            lines.append("\(name)_count\(labels.rendered) \(histogram.count)")
            return lines
        }
    }

    private mutating func add(_ name: String, help: String, kind: Kind, labels: MetricLabels, lines: () -> [String]) {
        precondition(Self.isMetricName(name), "\(name) is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        let i: Int
        if let existing = index[name] {
            i = existing
            precondition(families[i].kind == kind, "\(name) was added as a \(families[i].kind), not a \(kind)")
            precondition(families[i].help == help, "\(name) was added with other help text")
        } else {
            i = families.count
            index[name] = i
            families.append(Family(name: name, help: help, kind: kind))
        }
        precondition(families[i].series.insert(labels).inserted, "\(name)\(labels.rendered) was added twice")
        families[i].lines += lines()
    }

    /// The exposition text: every family's HELP, TYPE and samples, each line ending in `\n`.
    public var text: String {
        var out = ""
        for family in families {
            out += "# HELP \(family.name) \(Self.escapedHelp(family.help))\n"
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for line in family.lines {
                out += line
                out += "\n"
            }
        }
        return out
    }

    /// Writes `text` to `path` atomically (see `MetricsFile.write(_:to:)`).
    public func write(to path: String) throws(MetricsFileError) {
        try MetricsFile.write(text, to: path)
    }

    // MARK: Format

    /// A sample value as Prometheus parses it: `NaN`, `+Inf`, `-Inf`; whole numbers as
    /// integers (no exponent, no `.0`) up to 2^63; others in the shortest form that reads
    /// back to the same double (`0.005`, `1717171717.123`, `1e-07`).
    public static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9.2e18 { return String(Int64(value)) }
        return value.description
    }

    /// HELP text escaped: `\` as `\\`, a line break as `\n` (quotes stay).
    static func escapedHelp(_ text: String) -> String { MetricLabels.escaped(text, quotes: false) }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(48...57).contains(first) else { return false }
        return name.utf8.allSatisfy { isNameByte($0) || $0 == UInt8(ascii: ":") }
    }

    static func isNameByte(_ b: UInt8) -> Bool {
        (65...90).contains(b) || (97...122).contains(b) || (48...57).contains(b) || b == UInt8(ascii: "_")
    }
}

/// The labels of one sample, in the order written: `["topic": "health-samples", "partition": "3"]`.
///
/// Names follow Prometheus (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`, each once);
/// values may hold anything and are escaped (`\\`, `\"`, `\n`).
public struct MetricLabels: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    public struct Label: Sendable, Hashable {
        public var name: String
        public var value: String
    }

    public private(set) var labels: [Label]

    public init(_ pairs: [(name: String, value: String)]) {
        labels = []
        labels.reserveCapacity(pairs.count)
        for (name, value) in pairs { self = appending(name, value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { (name: $0.0, value: $0.1) })
    }

    public var names: [String] { labels.map(\.name) }

    /// These labels and one more at the end.
    public func appending(_ name: String, _ value: String) -> MetricLabels {
        precondition(MetricLabels.isLabelName(name), "\(name) is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)")
        precondition(!names.contains(name), "label \(name) given twice")
        var copy = self
        copy.labels.append(Label(name: name, value: value))
        return copy
    }

    /// `{a="x",b="y"}`, or nothing without labels.
    var rendered: String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { "\($0.name)=\"\(Self.escapedValue($0.value))\"" }.joined(separator: ",") + "}"
    }

    /// A label value escaped: `\` as `\\`, `"` as `\"`, a line break as `\n`.
    static func escapedValue(_ text: String) -> String { escaped(text, quotes: true) }

    static func escaped(_ text: String, quotes: Bool) -> String {
        var out = ""
        for c in text.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"" where quotes: out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(48...57).contains(first), !name.hasPrefix("__") else { return false }
        return name.utf8.allSatisfy(MetricsText.isNameByte)
    }
}
