import DaybookCore
import DaybookSupport

/// What an import did: records per metric and source, what was skipped and why, which
/// zones were used and where they came from, and the time span of the events.
public struct ImportSummary: Equatable, Sendable {
    /// `<Record>` elements read.
    public var records = 0
    /// Events written (valid lines).
    public var events = 0
    public var byMetric: [Metric: [String: Int]] = [:]
    /// Records of types Daybook does not total, by type.
    public var otherTypes: [String: Int] = [:]
    /// Records of a category type Daybook imports whose value its metric does not count
    /// (sleep's in bed and awake), by type and value.
    public var uncountedValues: [String: [String: Int]] = [:]
    /// Rejected records by reason code, with the first one's line and message.
    public var rejected: [String: Rejection] = [:]
    /// Records with no usable `HKTimeZone` while no `--zone` was given.
    public var missingZone = 0
    public var firstMissingZoneLine: Int?
    /// Per zone: events whose zone came from `HKTimeZone`, and from `--zone`.
    public var zones: [String: ZoneUse] = [:]
    /// `HKTimeZone` values that are not IANA zone names (`--zone` was used instead).
    public var unusableTimeZones: [String: Int] = [:]
    /// Per source: what decided it, and a few of the (sourceName, sourceVersion) behind it.
    public var sources: [String: SourceClues] = [:]
    /// Records whose uuid came from `HKExternalUUID` or `HKMetadataKeySyncIdentifier`.
    public var idsFromMetadata = 0
    /// Records identical to an earlier one (numbered by occurrence, kept distinct).
    public var repeatedRecords = 0
    /// Records that share an HKExternalUUID/HKMetadataKeySyncIdentifier with another and
    /// collapsed into the one of the highest version (not written, or replaced by a later one).
    public var collapsedRecords = 0
    /// Events whose version is their record's `HKMetadataKeySyncVersion` (the rest: its creationDate).
    public var versionsFromMetadata = 0
    public var earliest: Instant?
    public var latest: Instant?

    public struct Rejection: Equatable, Sendable {
        public var count: Int
        public var firstLine: Int
        public var firstMessage: String
    }

    public struct ZoneUse: Equatable, Sendable {
        public var fromMetadata = 0
        public var fromOption = 0
    }

    public struct SourceClues: Equatable, Sendable {
        /// The built-in clues that decided the source ("model:Watch", "HKWasUserEntered").
        public var clues: Set<String> = []
        /// The source-map rules that decided it, as `field:text` ("version:10.2").
        public var rules: Set<String> = []
        /// Up to five `"name" version` examples, in order of first appearance.
        public var examples: [String] = []
    }

    public var rejectedCount: Int { rejected.values.reduce(0) { $0 + $1.count } }

    mutating func reject(code: String, line: Int, message: String) {
        if var r = rejected[code] {
            r.count += 1
            rejected[code] = r
        } else {
            rejected[code] = Rejection(count: 1, firstLine: line, firstMessage: message)
        }
    }

    mutating func count(_ s: Sample, zoneFromMetadata: Bool, clue: SourceMap.Clue, sourceName: String, sourceVersion: String?) {
        events += 1
        byMetric[s.metric, default: [:]][s.source, default: 0] += 1
        if zoneFromMetadata { zones[s.zone, default: ZoneUse()].fromMetadata += 1 } else { zones[s.zone, default: ZoneUse()].fromOption += 1 }
        // In place: a copy of the entry would copy its set on every record.
        switch clue {
        case .rule(let rule): sources[s.source, default: SourceClues()].rules.insert(rule)
        case .builtIn(let text): sources[s.source, default: SourceClues()].clues.insert(text)
        }
        if sources[s.source, default: SourceClues()].examples.count < 5 {
            let example = JSONWriter.quoted(sourceName) + (sourceVersion.map { " " + $0 } ?? "")
            if sources[s.source]?.examples.contains(example) == false { sources[s.source]?.examples.append(example) }
        }
        if earliest.map({ s.start < $0 }) ?? true { earliest = s.start }
        if latest.map({ s.end > $0 }) ?? true { latest = s.end }
    }

    /// What `render` calls the two options a caller gave the importer: a command line names
    /// them by its flags.
    public struct Names: Sendable {
        /// `Options.zone`, the zone of records without `HKTimeZone` ("default zone").
        public var defaultZone: String
        /// A rule of `Options.sourceMap` ("source map").
        public var sourceMapRule: String

        public init(defaultZone: String, sourceMapRule: String) {
            self.defaultZone = defaultZone
            self.sourceMapRule = sourceMapRule
        }

        public static let library = Names(defaultZone: "default zone", sourceMapRule: "source map")
    }

    /// The summary for people, one fact per line; `destination` says where the events went,
    /// `names` what the options are called.
    public func render(destination: String, names: Names = .library) -> String {
        var lines: [String] = []
        let skippedOther = otherTypes.values.reduce(0, +)
        let uncounted = uncountedValues.values.reduce(0) { $0 + $1.values.reduce(0, +) }
        lines.append("\(NumberText.grouped(records)) records read: \(NumberText.grouped(events)) events \(destination), \(NumberText.grouped(skippedOther)) of other types skipped, \(uncounted > 0 ? "\(NumberText.grouped(uncounted)) of other values skipped, " : "")\(NumberText.grouped(rejectedCount)) rejected\(missingZone > 0 ? ", \(NumberText.grouped(missingZone)) without a zone" : "")")
        for metric in Metric.allCases {
            guard let bySource = byMetric[metric] else { continue }
            let total = bySource.values.reduce(0, +)
            let parts = bySource.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key) \(NumberText.grouped($0.value))" }
            lines.append("  \(metric.rawValue): \(NumberText.grouped(total)) (\(parts.joined(separator: ", ")))")
        }
        for (source, clue) in sources.sorted(by: { $0.key < $1.key }) {
            let decided = clue.rules.sorted().map { "\(names.sourceMapRule) \($0)" } + clue.clues.sorted()
            lines.append("  source \(source) ← \(decided.joined(separator: ", ")): \(clue.examples.joined(separator: "; "))")
        }
        // Types the metric catalogue names but the importer does not map (none today; a
        // category type the catalogue gains before its values are sorted, `AppleHealthImporter.metrics`):
        // each one, with its metric, so that what was left out is never silent; then the
        // rest, the commonest first.
        let catalogued = otherTypes.compactMap { type, count in MetricCatalogue.definition(forHealthKit: type).map { (type, count, $0.name) } }
            .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
        if !catalogued.isEmpty {
            let shown = catalogued.map { "\($0.0) \(NumberText.grouped($0.1)) (\($0.2))" }.joined(separator: ", ")
            lines.append("skipped, in the metric catalogue but not imported yet (\(catalogued.count)): \(shown)")
        }
        // Each value a metric does not count, by its name after the type's own prefix
        // (`HKCategoryValueSleepAnalysisInBed` → `InBed`), since the line names the type.
        for (type, counts) in uncountedValues.sorted(by: { $0.key < $1.key }) {
            let prefix = "HKCategoryValue" + type.replacingOccurrences(of: "HKCategoryTypeIdentifier", with: "")
            let shown = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { value, count in
                let short = value.hasPrefix(prefix) && value.count > prefix.count ? String(value.dropFirst(prefix.count)) : value
                return "\(short) \(NumberText.grouped(count))"
            }
            let metric = MetricCatalogue.definition(forHealthKit: type)?.name ?? "imported"
            lines.append("skipped, \(type) values that are not \(metric) (\(counts.count)): \(shown.joined(separator: ", "))")
        }
        let others = otherTypes.filter { MetricCatalogue.definition(forHealthKit: $0.key) == nil }
        if !others.isEmpty {
            let top = others.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            let shown = top.prefix(5).map { "\($0.key) \(NumberText.grouped($0.value))" }.joined(separator: ", ")
            lines.append("skipped, other types (\(others.count)): \(shown)\(top.count > 5 ? ", …" : "")")
        }
        for (code, r) in rejected.sorted(by: { $0.key < $1.key }) {
            lines.append("rejected, \(code): \(NumberText.grouped(r.count)) (first at line \(r.firstLine): \(r.firstMessage))")
        }
        if !zones.isEmpty {
            let parts = zones.sorted { $0.key < $1.key }.map { zone, use -> String in
                var from: [String] = []
                if use.fromMetadata > 0 { from.append("HKTimeZone \(NumberText.grouped(use.fromMetadata))") }
                if use.fromOption > 0 { from.append("\(names.defaultZone) \(NumberText.grouped(use.fromOption))") }
                return "\(zone) (\(from.joined(separator: ", ")))"
            }
            lines.append("zones: \(parts.joined(separator: "; "))")
        }
        if !unusableTimeZones.isEmpty {
            let parts = unusableTimeZones.sorted { $0.key < $1.key }.map { "\(JSONWriter.quoted($0.key)) \(NumberText.grouped($0.value))" }
            lines.append("HKTimeZone values that are not IANA zones (used \(names.defaultZone) instead): \(parts.joined(separator: ", "))")
        }
        lines.append("ids: \(NumberText.grouped(idsFromMetadata)) from HKExternalUUID/HKMetadataKeySyncIdentifier, the rest derived from each record's fields; \(NumberText.grouped(repeatedRecords)) records repeat an earlier one exactly and are numbered by occurrence")
        lines.append("versions: \(NumberText.grouped(versionsFromMetadata)) events from HKMetadataKeySyncVersion, the rest from creationDate; \(NumberText.grouped(collapsedRecords)) records collapsed into a higher (or, on a tie, later) version of their id")
        if let earliest, let latest {
            lines.append("time span: \(earliest) to \(latest) (UTC)")
        }
        return lines.joined(separator: "\n")
    }
}
