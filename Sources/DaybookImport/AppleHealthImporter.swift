import DaybookCore
import DaybookSupport
import Foundation

/// Turns the records of an Apple Health export into `sample-added` events, one record at a
/// time, and keeps the summary of what it did.
///
/// Each event carries the record's own value and unit (`km`, `Cal`, `kJ`…: the format
/// accepts them and converts), except:
///
/// - oxygen saturation, which the export writes in `%` as a fraction (HealthKit's percent
///   unit: `0.97`) and the event in Daybook's `%` of 0–100 (`97`; `percentFractions`);
/// - sleep, a category: its records have no unit and their value names a state. The asleep
///   states become events of the minutes they cover (`min`; the row counts covered time
///   anyway); in bed and awake are skipped and counted per value (`categoryValues`).
///
/// Its instants are written at the offset of the sample's zone (never the export-time offset
/// of the file), and its uuid depends only on the record:
///
/// - `HKExternalUUID`, else `HKMetadataKeySyncIdentifier` metadata, with the type and
///   source name: a record the writer re-synced keeps its uuid, so the newer one replaces it;
/// - else a version-5 UUID of (type, sourceName, sourceVersion, device with its
///   `0x…` pointer removed, unit, creationDate, startDate, endDate, value), instants as
///   instants (a re-export at another offset gives the same uuid), the value as the record
///   writes it (an oxygen saturation's `0.97`, not the event's `97`; a category's value
///   name, `HKCategoryValueSleepAnalysisAsleepCore`, not the event's minutes), an absent
///   attribute as the empty text (a category record has no `unit`: its unit field is
///   empty), and an occurrence number for byte-identical records, which stay distinct samples.
///
/// The uuid depends neither on `--zone` nor on `--source-map`: importing again with a
/// corrected zone or mapping replaces the samples instead of adding to them.
///
/// Each event carries a `version`: `HKMetadataKeySyncVersion` when it is a non-negative
/// integer, else the record's `creationDate` in milliseconds since 1970 (0 before 1970 or
/// without one). Records that share an id (writers reuse `HKMetadataKeySyncIdentifier` for
/// unrelated records) collapse into the one of the highest version, the last of them in the
/// file on a tie: a record whose id was already seen at a higher version is not written,
/// and one written earlier at a lower or equal version is replaced by the later one (the
/// event format's version rule). The summary counts them (`collapsedRecords`). So the
/// totals never depend on the order of records, and importing under another `--zone` gives
/// what a clean import under it gives.
///
/// Every line is checked by `EventDecoder` before it is handed out, so it obeys every rule
/// of the event format; a record that breaks one is counted under the rule's code and skipped.
///
/// Memory: 8 bytes per distinct record for the occurrence numbers (a set of 64-bit
/// fingerprints), 16 per distinct metadata id for its highest version, plus the summary's
/// small tables.
public struct AppleHealthImporter {
    public struct Options: Sendable {
        public var user: String
        /// The zone of records without `HKTimeZone` metadata (nil: such records are counted
        /// as `missingZone` and not converted).
        public var zone: String?
        public var sourceMap: SourceMap

        public init(user: String, zone: String? = nil, sourceMap: SourceMap = SourceMap()) {
            self.user = user
            self.zone = zone
            self.sourceMap = sourceMap
        }
    }

    /// What became of one record.
    public enum Outcome: Equatable {
        /// A valid event: its JSON line and the sample it decodes to.
        case event(line: String, sample: Sample)
        /// Another type, or a rejected record (see the summary).
        case skipped
        /// No `HKTimeZone` metadata and no `--zone`.
        case missingZone
    }

    /// HealthKit types Daybook totals, and their metrics: the catalogue's types
    /// (`MetricDefinition.healthKit`) of the metrics events carry — its quantity types, and
    /// the category types whose values `categoryValues` sorts. A category type the catalogue
    /// gains without such a table is not imported: the summary names it as in the catalogue
    /// but not imported yet, since its values may mean anything.
    public static let metrics: [String: Metric] = Dictionary(uniqueKeysWithValues: Metric.allCases.flatMap { metric in
        metric.definition.healthKit.filter { $0.hasPrefix("HKQuantityTypeIdentifier") || categoryValues[$0] != nil }.map { ($0, metric) }
    })

    /// What a category record's value means for its metric.
    public enum CategoryValue: Sendable {
        /// The metric counts it: an event of the time the record covers.
        case counted
        /// A state the metric does not count (in bed, awake): skipped, and counted per value
        /// in the summary (`ImportSummary.uncountedValues`), never dropped silently.
        case notCounted
    }

    /// The category types Daybook imports, and what each of their values means. A value in
    /// neither list is rejected (`unknown_category_value`, naming it): a new HealthKit state
    /// could be sleep or not, and guessing would move the totals either way.
    ///
    /// Sleep: the asleep states are sleep — `Asleep` (written before iOS 16, one value for
    /// all of a night's sleep), `AsleepUnspecified`, and the stages `AsleepCore`,
    /// `AsleepDeep`, `AsleepREM`. `InBed` and `Awake` are not: a night's `InBed` spans its
    /// asleep records, and counting it would count the same minutes twice at least.
    public static let categoryValues: [String: [String: CategoryValue]] = [
        "HKCategoryTypeIdentifierSleepAnalysis": [
            "HKCategoryValueSleepAnalysisAsleep": .counted,
            "HKCategoryValueSleepAnalysisAsleepUnspecified": .counted,
            "HKCategoryValueSleepAnalysisAsleepCore": .counted,
            "HKCategoryValueSleepAnalysisAsleepDeep": .counted,
            "HKCategoryValueSleepAnalysisAsleepREM": .counted,
            "HKCategoryValueSleepAnalysisInBed": .notCounted,
            "HKCategoryValueSleepAnalysisAwake": .notCounted,
        ],
    ]

    /// Quantity types an export writes in `%` as a fraction of 1 (HealthKit's percent unit:
    /// `value="0.97"` is 97 %), while the event format's `%` runs from 0 to 100: their values
    /// are multiplied by 100 (`hundredfold`). Of the catalogue's types only oxygen saturation
    /// is one; HealthKit's other percent types (body fat, walking asymmetry…) are not in it.
    /// A record already in 0–100 (`97`) becomes 9,700 and is rejected as implausible, named.
    public static let percentFractions: Set<String> = ["HKQuantityTypeIdentifierOxygenSaturation"]

    public let options: Options
    public private(set) var summary = ImportSummary()
    private let decoder = EventDecoder()
    private let defaultRules: ZoneRules?
    private var seen = Set<UInt64>()
    private var repeats: [UInt64: Int] = [:]
    /// The highest version seen of each metadata id (by a fingerprint of its uuid).
    private var highestVersions: [UInt64: Int64] = [:]

    /// Checks the options: the user must be a non-empty NFC id, the zone an IANA name.
    public init(options: Options) throws(ImportOptionError) {
        guard !options.user.isEmpty else { throw ImportOptionError(.emptyUser) }
        guard options.user.utf8.elementsEqual(options.user.precomposedStringWithCanonicalMapping.utf8) else {
            throw ImportOptionError(.userNotNFC(options.user))
        }
        if let zone = options.zone {
            guard let rules = ZoneRules.named(zone) else {
                throw ImportOptionError(.unknownZone(zone))
            }
            defaultRules = rules
        } else {
            defaultRules = nil
        }
        self.options = options
    }

    public mutating func convert(_ r: ExportRecord) -> Outcome {
        summary.records += 1
        guard let type = r.type else { return reject(r, "missing_attribute", "the record has no type attribute") }
        guard let metric = AppleHealthImporter.metrics[type] else {
            summary.otherTypes[type, default: 0] += 1
            return .skipped
        }
        if let problem = r.problem { return reject(r, "unreadable_text", problem) }
        let values = AppleHealthImporter.categoryValues[type]
        // A category record has no unit (its value names a state): its event is in minutes.
        let eventUnit = values == nil ? r.unit : "min"
        guard let sourceName = r.sourceName, let unit = eventUnit, let startText = r.startDate, let endText = r.endDate, let valueText = r.value else {
            let missing = [("sourceName", r.sourceName), ("unit", eventUnit), ("startDate", r.startDate), ("endDate", r.endDate), ("value", r.value)]
                .filter { $0.1 == nil }.map(\.0).joined(separator: ", ")
            return reject(r, "missing_attribute", "no \(missing) attribute")
        }
        if let values {
            switch values[valueText] {
            case .counted?: break
            case .notCounted?:
                // Before its uuid: a skipped record must not count as an id or a repeat.
                summary.uncountedValues[type, default: [:]][valueText, default: 0] += 1
                return .skipped
            case nil:
                let known = values.keys.sorted().joined(separator: ", ")
                return reject(r, "unknown_category_value", "value \(JSONWriter.quoted(valueText)) is not a value of \(type) Daybook knows (\(known)); it is neither counted nor guessed at")
            }
        }
        let start = ExportTime.instant(startText)
        let end = ExportTime.instant(endText)
        // A category's value is its name, hashed as written (`uuid`).
        let recordValue = values == nil ? AppleHealthImporter.number(valueText) : nil
        let uuid = self.uuid(r, type: type, sourceName: sourceName, unit: r.unit ?? "", start: start, end: end, value: recordValue)
        let (version, versionFromMetadata) = AppleHealthImporter.version(r)

        guard let start, let end else {
            let bad = start == nil ? ("startDate", startText) : ("endDate", endText)
            return reject(r, "bad_date", "\(bad.0) \(JSONWriter.quoted(bad.1)) is not an export timestamp (YYYY-MM-DD HH:MM:SS ±hhmm)")
        }
        let parsed: Double?
        if values != nil {
            // The minutes the record covers: a duration_priority row counts the time its samples
            // cover and reads no value, but the event's must be valid. Never negative, so that
            // a record ending before it starts is rejected as that (end_before_start).
            parsed = Double(max(0, end.nanoseconds - start.nanoseconds)) / 60e9
        } else {
            parsed = recordValue
        }
        guard var value = parsed else { return reject(r, "bad_value", "value \(JSONWriter.quoted(valueText)) is not a decimal number") }
        if unit == "%", AppleHealthImporter.percentFractions.contains(type), let percent = AppleHealthImporter.hundredfold(valueText) {
            // Said here, not by the format's bound alone, which would name the 9700 % the record never wrote.
            guard percent <= metric.maximumPerSample else {
                return reject(r, EventError.Code.implausibleValue.rawValue, "value \(JSONWriter.quoted(valueText)) % would be \(JSONWriter.number(percent)) %: exports write \(metric.rawValue) as a fraction of 1 (0.97 is 97 %)")
            }
            value = percent
        }
        guard metric.units.contains(where: { $0.unit == unit }) else {
            return reject(r, "unit_mismatch", "\(JSONWriter.quoted(unit)) is not a unit of \(metric.rawValue) Daybook accepts (\(metric.units.map(\.unit).joined(separator: ", ")))")
        }
        let zone: String
        let rules: ZoneRules
        let fromMetadata: Bool
        if let named = r.timeZone, let found = ZoneRules.named(named) {
            (zone, rules, fromMetadata) = (named, found, true)
        } else if let fallback = options.zone, let fallbackRules = defaultRules {
            if let named = r.timeZone { summary.unusableTimeZones[named, default: 0] += 1 }
            (zone, rules, fromMetadata) = (fallback, fallbackRules, false)
        } else {
            if let named = r.timeZone { summary.unusableTimeZones[named, default: 0] += 1 }
            summary.missingZone += 1
            if summary.firstMissingZoneLine == nil { summary.firstMissingZoneLine = r.line }
            return .missingZone
        }
        let idKey = r.externalUUID != nil || r.syncIdentifier != nil ? AppleHealthImporter.fingerprint(uuid) : nil
        if let idKey, let highest = highestVersions[idKey], version < highest {
            summary.collapsedRecords += 1 // a higher version of its id was written already
            return .skipped
        }
        let (source, clue) = options.sourceMap.source(name: sourceName, version: r.sourceVersion, device: r.device,
                                                       userEntered: r.wasUserEntered == "1")
        let line = AppleHealthImporter.line(user: options.user, uuid: uuid, metric: metric, source: source,
                                            start: start.format(offsetSeconds: rules.offsetSeconds(at: start)),
                                            end: end.format(offsetSeconds: rules.offsetSeconds(at: end)),
                                            value: value, unit: unit, zone: zone, version: version)
        let sample: Sample
        do {
            guard case .sampleAdded(let s) = try decoder.decode(line) else { return reject(r, "internal", "not a sample") }
            sample = s
        } catch {
            return reject(r, error.code.rawValue, error.description)
        }
        if let idKey {
            if highestVersions[idKey] != nil { summary.collapsedRecords += 1 } // the one written before is replaced
            highestVersions[idKey] = version
        }
        summary.count(sample, zoneFromMetadata: fromMetadata, clue: clue, sourceName: sourceName, sourceVersion: r.sourceVersion)
        if versionFromMetadata { summary.versionsFromMetadata += 1 }
        return .event(line: line, sample: sample)
    }

    private mutating func reject(_ r: ExportRecord, _ code: String, _ message: String) -> Outcome {
        summary.reject(code: code, line: r.line, message: message)
        return .skipped
    }

    /// A `sample-added` line in format version 1, with the record's own unit.
    static func line(user: String, uuid: String, metric: Metric, source: String, start: String, end: String,
                     value: Double, unit: String, zone: String, version: Int64) -> String {
        "{\"type\":\"sample-added\",\"user\":\(JSONWriter.quoted(user)),\"sample\":{\"uuid\":\"\(uuid)\",\"metric\":\"\(metric.rawValue)\",\"source\":\(JSONWriter.quoted(source)),\"start\":\"\(start)\",\"end\":\"\(end)\",\"value\":\(JSONWriter.number(value)),\"unit\":\(JSONWriter.quoted(unit)),\"zone\":\(JSONWriter.quoted(zone)),\"version\":\(version)}}"
    }

    /// A record's version: `HKMetadataKeySyncVersion` when it is an integer ≥ 0, else its
    /// `creationDate` in ms since 1970 (0 before 1970, or without a readable one).
    /// Also says whether it came from the metadata (the summary counts those).
    static func version(_ r: ExportRecord) -> (value: Int64, fromMetadata: Bool) {
        if let v = r.syncVersion.flatMap(syncVersion) { return (v, true) }
        guard let created = r.creationDate.flatMap(ExportTime.instant) else { return (0, false) }
        return (max(0, created.nanoseconds / 1_000_000), false)
    }

    /// `HKMetadataKeySyncVersion` as an integer ≥ 0 (writers store an integer, some as
    /// `2.0`), or nil.
    static func syncVersion(_ text: String) -> Int64? {
        if let v = Int64(text), v >= 0 { return v }
        guard let d = Double(text), d >= 0, d < 9_007_199_254_740_992, d == d.rounded(.towardZero) else { return nil }
        return Int64(d)
    }

    /// FNV-1a of a uuid's text.
    static func fingerprint(_ uuid: String) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for c in uuid.utf8 { h = (h ^ UInt64(c)) &* 0x0000_0100_0000_01B3 }
        return h
    }

    /// A plain decimal (`523`, `0.0372`, `1.5e3`, `-2`); no hex, `nan` or `inf`.
    static func number(_ text: String) -> Double? {
        guard !text.isEmpty, text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 || $0 == 43 || $0 == 101 || $0 == 69 }),
              let d = Double(text), d.isFinite else { return nil }
        return d
    }

    /// 100 × the plain decimal `text`, read as the decimal with its exponent raised by 2, so
    /// that it is the double nearest the exact product (`0.57` × 100 in binary is
    /// 56.99999999999999; `0.57e2` reads as 57). Nil where `number` gives nil.
    static func hundredfold(_ text: String) -> Double? {
        guard let plain = number(text) else { return nil }
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) else { return number(text + "e2") }
        // An exponent too long for an Int is far outside any reading: the binary product will do.
        guard let exponent = Int(text[text.index(after: e)...]), case (let raised, false) = exponent.addingReportingOverflow(2) else {
            return plain * 100
        }
        return number(text[..<e] + "e" + String(raised))
    }

    /// The device string without its per-record pointer (`<<HKDevice: 0x283b5c5f0>` → `<<HKDevice: 0x>`).
    static func stableDevice(_ device: String) -> String {
        var utf8 = Array(device.utf8)[...]
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        while let c = utf8.first {
            utf8 = utf8.dropFirst()
            bytes.append(c)
            if c == 48, utf8.first == 120 { // "0x"
                bytes.append(120)
                utf8 = utf8.dropFirst()
                while let h = utf8.first, (h >= 48 && h <= 57) || (h >= 97 && h <= 102) || (h >= 65 && h <= 70) { utf8 = utf8.dropFirst() }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func uuid(_ r: ExportRecord, type: String, sourceName: String, unit: String,
                               start: Instant?, end: Instant?, value: Double?) -> String {
        let separator: UInt8 = 0x1F
        if let id = r.externalUUID ?? r.syncIdentifier {
            summary.idsFromMetadata += 1
            let kind = r.externalUUID != nil ? "HKExternalUUID" : "HKMetadataKeySyncIdentifier"
            let name = [kind, type, sourceName, id].joined(separator: "\u{1F}")
            return NameUUID.v5(namespace: NameUUID.appleHealth, name: Array(name.utf8))
        }
        func instant(_ i: Instant?, _ raw: String?) -> String { i.map { String($0.nanoseconds) } ?? (raw ?? "") }
        let fields = [
            "record", type, sourceName, r.sourceVersion ?? "", r.device.map(AppleHealthImporter.stableDevice) ?? "", unit,
            instant(r.creationDate.flatMap(ExportTime.instant), r.creationDate),
            instant(start, r.startDate), instant(end, r.endDate),
            value.map(JSONWriter.number) ?? (r.value ?? ""),
        ]
        var name: [UInt8] = []
        for (i, f) in fields.enumerated() {
            if i > 0 { name.append(separator) }
            name += f.utf8
        }
        let first = NameUUID.v5(namespace: NameUUID.appleHealth, name: name)
        let fingerprint = AppleHealthImporter.fingerprint(first) // a collision only numbers a record 1, harmlessly
        if seen.insert(fingerprint).inserted { return first }
        let occurrence = repeats[fingerprint, default: 0] + 1
        repeats[fingerprint] = occurrence
        summary.repeatedRecords += 1
        name.append(separator)
        name += "#\(occurrence)".utf8
        return NameUUID.v5(namespace: NameUUID.appleHealth, name: name)
    }
}

/// An `AppleHealthImporter.Options` the importer refuses, by the option at fault.
public struct ImportOptionError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// `Options.user` is empty.
        case emptyUser
        /// `Options.user` (given) is not in Unicode NFC.
        case userNotNFC(String)
        /// `Options.zone` (given) is not an IANA time zone name.
        case unknownZone(String)
    }

    public var kind: Kind

    public init(_ kind: Kind) { self.kind = kind }

    /// What is wrong, in this library's terms; `reason` is the same without naming the option.
    public var message: String {
        switch kind {
        case .emptyUser: "the user id " + reason
        case .userNotNFC: "the user id " + reason
        case .unknownZone(let zone): "the default zone \(JSONWriter.quoted(zone)) " + reason
        }
    }

    /// Why the value is refused and how to fix it, for a caller that names the option itself.
    public var reason: String {
        switch kind {
        case .emptyUser: "must not be empty"
        case .userNotNFC: "is not in Unicode NFC; ids are compared byte for byte, so normalize it (NFC)"
        case .unknownZone: "is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)"
        }
    }

    public var description: String { message }
}
