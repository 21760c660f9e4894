import DaybookSupport

/// Which source wins when samples overlap: a per-metric order, else the default order.
///
/// Sources not listed rank below every listed one, among themselves in code-point
/// (UTF-8 byte) order of their names, so the ranking is total and never depends on
/// the order samples arrive in.
public struct SourcePriority: Equatable, Sendable {
    public var defaultOrder: [String]
    public var perMetric: [Metric: [String]]

    public static let builtIn = SourcePriority(defaultOrder: ["watch", "phone", "manual"], perMetric: [:])

    public init(defaultOrder: [String], perMetric: [Metric: [String]] = [:]) {
        self.defaultOrder = defaultOrder
        self.perMetric = perMetric
    }

    public func order(for metric: Metric) -> [String] { perMetric[metric] ?? defaultOrder }

    /// A stable description of the ranking (`default=watch>phone>manual;steps=…`), stored with
    /// read models so that totals built under another ranking are never mixed in.
    public var fingerprint: String {
        (["default=" + defaultOrder.joined(separator: ">")]
            + perMetric.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value.joined(separator: ">"))" })
            .joined(separator: ";")
    }

    /// The priority a `fingerprint` describes, as a shard records it
    /// (`default=watch>phone>manual;steps=phone>watch`); nil when the text is not one.
    /// A fingerprint does not quote names: a source whose name holds `>`, `;` or `=` reads
    /// back as other names (the shard's own check, `sameRanking`, compares the same text).
    public init?(fingerprint: String) {
        let parts = fingerprint.split(separator: ";", omittingEmptySubsequences: false)
        guard let first = parts.first, first.hasPrefix("default=") else { return nil }
        func names(_ list: Substring) -> [String] {
            list.isEmpty ? [] : list.split(separator: ">", omittingEmptySubsequences: false).map(String.init)
        }
        self.init(defaultOrder: names(first.dropFirst("default=".count)))
        for part in parts.dropFirst() {
            guard let equals = part.firstIndex(of: "="), let metric = Metric(rawValue: String(part[..<equals])) else { return nil }
            perMetric[metric] = names(part[part.index(after: equals)...])
        }
    }

    /// The same ranking without the per-metric orders that repeat the default one
    /// (`config/daybook.json` lists steps' order although it is the default).
    public var canonical: SourcePriority {
        SourcePriority(defaultOrder: defaultOrder, perMetric: perMetric.filter { $0.value != defaultOrder })
    }

    /// Each of `sources`' rank for `metric` (0 is best, in the order of `ranks(_:above:for:)`,
    /// which breaks ties by name), indexed as `sources`.
    func rankTable(_ sources: [String], for metric: Metric) -> [Int32] {
        let ordered = sources.indices.sorted { ranks(sources[$0], above: sources[$1], for: metric) }
        var table = [Int32](repeating: 0, count: sources.count)
        for (rank, id) in ordered.enumerated() { table[id] = Int32(rank) }
        return table
    }

    /// Whether two priorities rank every source of every metric alike.
    public func ranksLike(_ other: SourcePriority) -> Bool { canonical == other.canonical }

    /// Whether two fingerprints (as stored in shards) describe the same ranking.
    public static func sameRanking(_ a: String, _ b: String) -> Bool {
        canonicalFingerprint(a) == canonicalFingerprint(b)
    }

    static func canonicalFingerprint(_ fingerprint: String) -> String {
        let parts = fingerprint.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, first.hasPrefix("default=") else { return fingerprint }
        let order = first.dropFirst("default=".count)
        return ([first] + parts.dropFirst().filter { $0.split(separator: "=", maxSplits: 1).dropFirst().first != order }).joined(separator: ";")
    }

    /// True when `a` outranks `b` for `metric`.
    public func ranks(_ a: String, above b: String, for metric: Metric) -> Bool {
        let order = order(for: metric)
        let ia = order.firstIndex(of: a) ?? order.count
        let ib = order.firstIndex(of: b) ?? order.count
        if ia != ib { return ia < ib }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

/// Why a configuration could not be used.
public struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var field: String
    public var message: String
    public var description: String { "\(field): \(message)" }

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

extension SourcePriority {
    /// Why `name` cannot be a source name in a configuration (surrounding white space, a
    /// control character), or nil.
    public static func nameProblem(_ name: String) -> String? {
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return "holds a control character"
        }
        if let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
           first.properties.isWhitespace || last.properties.isWhitespace {
            return "has white space at its start or end"
        }
        return nil
    }

    /// Reads the `priority` member of a configuration object:
    /// `{"priority":{"default":["watch","phone","manual"],"steps":["watch","phone"]}}`.
    /// A missing `priority` or `default` falls back to the built-in order; a configuration
    /// that is not an object is refused (it cannot say anything, so it is a mistake).
    public init(configuration json: JSONValue) throws(ConfigurationError) {
        self = .builtIn
        guard case .object = json else {
            throw ConfigurationError(field: "(top level)", message: "must be a JSON object, got \(json.summary)")
        }
        guard let section = json["priority"] else { return }
        guard case .object(let members) = section else {
            throw ConfigurationError(field: "priority", message: "must be an object of source lists, got \(section.summary)")
        }
        for (key, value) in members.sorted(by: { $0.key < $1.key }) {
            let path = "priority.\(key)"
            guard case .array(let items) = value else {
                throw ConfigurationError(field: path, message: "must be an array of source names, got \(value.summary)")
            }
            guard !items.isEmpty else {
                throw ConfigurationError(field: path, message: "is an empty list, which would rank every source by name alone; list the sources in order of priority, or leave \(path) out")
            }
            var names: [String] = []
            for (i, item) in items.enumerated() {
                guard case .string(let name) = item, !name.isEmpty else {
                    throw ConfigurationError(field: "\(path)[\(i)]", message: "must be a non-empty source name, got \(item.summary)")
                }
                // " watch" is not the source "watch": it would silently rank a name no sample has.
                if let problem = Self.nameProblem(name) {
                    throw ConfigurationError(field: "\(path)[\(i)]", message: "\(JSONWriter.quoted(name)) \(problem); write the source name exactly as the samples give it")
                }
                guard !names.contains(name) else {
                    throw ConfigurationError(field: "\(path)[\(i)]", message: "\(JSONWriter.quoted(name)) is listed twice")
                }
                names.append(name)
            }
            if key == "default" {
                defaultOrder = names
            } else if let metric = Metric(rawValue: key) {
                perMetric[metric] = names
            } else {
                throw ConfigurationError(field: path, message: "\(JSONWriter.quoted(key)) is not a metric; use one of default, \(Metric.acceptedNames)")
            }
        }
    }
}
