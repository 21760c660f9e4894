import DaybookSupport
import Foundation

/// Why an event line was rejected. The description names the field, the bad value and
/// what would be accepted; it never echoes a health value unless that value is the fault.
public struct EventError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case malformedJSON = "malformed_json"
        case missingField = "missing_field"
        case wrongType = "wrong_type"
        case unsupportedSchema = "unsupported_schema"
        case unknownType = "unknown_type"
        case unknownMetric = "unknown_metric"
        case unitMismatch = "unit_mismatch"
        case badTime = "bad_time"
        case badZone = "bad_zone"
        case endBeforeStart = "end_before_start"
        case tooLong = "duration_too_long"
        case notFinite = "not_finite"
        case negativeValue = "negative_value"
        case implausibleValue = "implausible_value"
        case nonPositiveHeartRate = "non_positive_heart_rate"
        case emptyString = "empty_string"
        case invalidUTF8 = "invalid_utf8"
        case duplicateKey = "duplicate_key"
        case notNormalized = "not_nfc"
        case badVersion = "bad_version"
    }

    public var code: Code
    /// The JSON path of the offending field (`sample.unit`), or nil for the whole line.
    public var field: String?
    public var message: String

    public var description: String {
        field.map { "\($0): \(message)" } ?? message
    }
}

/// Turns one line of the log into an `Event`, enforcing every rule of format version 1.
public struct EventDecoder: Sendable {
    /// Largest accepted event: 1 MiB (an event is a few hundred bytes). Files, stdin and
    /// Kafka messages share it, so `rollup` and the projector agree on every log.
    public static let maximumEventBytes = 1 << 20

    /// Longest accepted sample: 7 days.
    public static let maximumDuration: Int64 = 7 * Instant.nanosPerDay

    public init() {}

    public func decode(_ line: String) throws(EventError) -> Event {
        var line = line
        let result = line.withUTF8 { bytes in Result { () throws(EventError) in try decode(bytes) } }
        return try result.get()
    }

    /// Decodes a batch of lines on up to 8 cores, in order: one result per line, a nil line
    /// (longer than `lineLimit`, not kept) refused as `lineTooLong`.
    ///
    /// Complexity: O(total bytes), spread over the cores.
    public func decode(batch lines: [UnsafeBufferPointer<UInt8>?], lineLimit: Int) -> [Result<Event, EventError>] {
        let tooLong = EventError.lineTooLong(limit: lineLimit)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        // A line is microseconds of work: contiguous slices, one per core, not a task per line.
        return lines.parallelMap(slices: workers) { line in
            guard let bytes = line else { return .failure(tooLong) }
            return Result { () throws(EventError) in try decode(bytes) }
        }
    }

    public func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(EventError) -> Event {
        var zones = ZoneMemo()
        return try decode(bytes, zones: &zones)
    }

    /// Decodes like `decode(_:)`, remembering in `zones` the zone names found valid, for
    /// the next lines of the same stream (a partition's batch keeps one).
    public func decode(_ bytes: UnsafeBufferPointer<UInt8>, zones: inout ZoneMemo) throws(EventError) -> Event {
        // Well-formed events of the usual shape are read without building a tree; anything
        // else (including every invalid line) goes the general way, which names the fault.
        if let event = FastEventReader.event(bytes, zones: &zones) { return event }
        return try decodeGenerally(bytes)
    }

    /// Decodes one line like `decode(_:zones:)` straight into `batch` at `position`: a valid
    /// line of the usual shape without an `Event` or a String for a name the batch has
    /// (`StagedBatch`); anything else the general way, which names the fault (nothing is
    /// added then).
    /// - Returns: the number of the event's user in the batch's names.
    public func stage(_ bytes: UnsafeBufferPointer<UInt8>, into batch: inout StagedBatch, position: Int64, deliveredAt: Instant?,
                      zones: inout ZoneMemo) throws(EventError) -> Int32 {
        if let parsed = FastEventReader.parse(bytes, zones: &zones),
           let user = batch.append(parsed, position: position, deliveredAt: deliveredAt) {
            return user
        }
        return batch.append(try decodeGenerally(bytes), position: position, deliveredAt: deliveredAt)
    }

    /// The general way: a JSON tree, every rule checked in order, the fault named.
    private func decodeGenerally(_ bytes: UnsafeBufferPointer<UInt8>) throws(EventError) -> Event {
        let json: JSONValue
        var integers: [String: Int64]? = [:]
        var texts: [String: String]? = [:]
        do {
            json = try JSONParser.parse(bytes, exactIntegers: &integers, numberTexts: &texts)
        } catch {
            throw EventError(syntax: error)
        }
        return try decode(json, exactIntegers: integers ?? [:], numberTexts: texts ?? [:])
    }

    /// Decodes a parsed event. `exactIntegers` holds the exact values of its integer
    /// literals by path, as `JSONParser.parse(_:exactIntegers:)` gives them: a
    /// `sample.version` is read from there (a Double holds integers exactly only to 2⁵³).
    public func decode(_ json: JSONValue, exactIntegers: [String: Int64]) throws(EventError) -> Event {
        try decode(json, exactIntegers: exactIntegers, numberTexts: [:])
    }

    /// Decodes like `decode(_:exactIntegers:)`; a bad version is echoed from `numberTexts`
    /// (literals as written, by path, as `JSONParser.parse(_:exactIntegers:numberTexts:)`
    /// gives them) where it has one, so the words match those of `decode(_:)` on the bytes.
    public func decode(_ json: JSONValue, exactIntegers: [String: Int64], numberTexts: [String: String]) throws(EventError) -> Event {
        guard case .object = json else {
            throw EventError(code: .wrongType, field: nil, message: "an event must be a JSON object, got \(json.summary)")
        }
        if let schema = json["schema"] {
            guard case .number(let n) = schema, n == 1 else {
                throw EventError(code: .unsupportedSchema, field: "schema",
                                 message: "\(schema.summary) is not a supported schema version; this build reads schema 1")
            }
        }
        let type = try string(json, "type", path: "type")
        let user = try nonEmpty(json, "user", path: "user")
        switch type {
        case "sample-added":
            guard let sample = json["sample"] else {
                throw EventError(code: .missingField, field: "sample", message: "missing; sample-added needs a sample object")
            }
            guard case .object = sample else {
                throw EventError(code: .wrongType, field: "sample", message: "must be an object, got \(sample.summary)")
            }
            return .sampleAdded(try decodeSample(sample, user: user, exactIntegers: exactIntegers, numberTexts: numberTexts))
        case "sample-deleted":
            return try deletion(user: user, uuid: try nonEmpty(json, "uuid", path: "uuid"))
        case "source-checked-in":
            return .sourceCheckedIn(try decodeCheckIn(json, user: user))
        default:
            throw EventError(code: .unknownType, field: "type",
                             message: "\(JSONWriter.quoted(type)) is not an event type; use sample-added, sample-deleted or source-checked-in")
        }
    }

    private func decodeCheckIn(_ json: JSONValue, user: String) throws(EventError) -> CheckIn {
        try requireNFC(user, path: "user")
        let source = try nonEmpty(json, "source", path: "source")
        try requireNFC(source, path: "source")
        let at = try time(try string(json, "at", path: "at"), path: "at")
        var metrics: [Metric]?
        switch json["metrics"] {
        case nil, .null?:
            metrics = nil
        case .array(let items)?:
            var list: [Metric] = []
            for (i, item) in items.enumerated() {
                guard case .string(let name) = item else {
                    throw EventError(code: .wrongType, field: "metrics[\(i)]", message: "must be a metric name (a string), got \(item.summary)")
                }
                guard let metric = Metric(rawValue: name) else {
                    throw EventError(code: .unknownMetric, field: "metrics[\(i)]",
                                     message: "\(JSONWriter.quoted(name)) is not a metric; use one of \(Metric.acceptedNames)")
                }
                if !list.contains(metric) { list.append(metric) }
            }
            metrics = list.sorted()
        case let other?:
            throw EventError(code: .wrongType, field: "metrics", message: "must be an array of metric names, got \(other.summary)")
        }
        return CheckIn(user: user, source: source, at: at, metrics: metrics)
    }

    private func decodeSample(_ s: JSONValue, user: String, exactIntegers: [String: Int64], numberTexts: [String: String]) throws(EventError) -> Sample {
        let uuid = try nonEmpty(s, "uuid", path: "sample.uuid")
        let metricName = try string(s, "metric", path: "sample.metric")
        let source = try string(s, "source", path: "sample.source") // emptiness: validateSample, after the metric
        let start = try string(s, "start", path: "sample.start")
        let end = try string(s, "end", path: "sample.end")
        let raw: Double
        switch s["value"] {
        case nil:
            throw EventError(code: .missingField, field: "sample.value", message: "missing; a sample needs a numeric value")
        case .number(let d)?:
            raw = d
        case .nonFinite(let text)?:
            throw EventError(code: .notFinite, field: "sample.value", message: "\(text) is not a finite number")
        case let other?:
            throw EventError(code: .wrongType, field: "sample.value", message: "must be a number, got \(other.summary)")
        }
        let unit = try string(s, "unit", path: "sample.unit")
        let zone = try string(s, "zone", path: "sample.zone")
        let version: Int64
        switch s["version"] {
        case nil, .null?:
            version = 0
        case .number(let d)?:
            // Not there: a sign, a fraction, an exponent, or more than Int64 holds.
            guard let exact = exactIntegers["sample.version"] else { throw EventError.badVersion(numberTexts["sample.version"] ?? JSONWriter.number(d)) }
            version = exact
        case .nonFinite(let text)?:
            throw EventError.badVersion(text)
        case let other?:
            throw EventError(code: .wrongType, field: "sample.version",
                             message: "must be an integer from 0 to \(Int64.max), got \(other.summary)")
        }
        return try validateSample(SampleFields(user: user, uuid: uuid, metric: metricName, source: source, start: start,
                                               end: end, value: raw, unit: unit, zone: zone, version: version))
    }

    /// The members of a sample with their JSON types already checked.
    struct SampleFields {
        var user, uuid, metric, source, start, end: String
        var value: Double
        var unit, zone: String
        var version: Int64 = 0
    }

    /// The rules of a sample that are about values, not JSON shape, each with its error (the
    /// fast reader keeps the same rules through `lastsAtMostAWeek` and `admits`, and the
    /// same bounds, without words).
    func validateSample(_ f: SampleFields) throws(EventError) -> Sample {
        try requireNFC(f.user, path: "user")
        guard !f.uuid.isEmpty else { throw EventError(code: .emptyString, field: "sample.uuid", message: "must not be empty") }
        try requireNFC(f.uuid, path: "sample.uuid")
        guard let metric = Metric(rawValue: f.metric) else {
            throw EventError(code: .unknownMetric, field: "sample.metric",
                             message: "\(JSONWriter.quoted(f.metric)) is not a metric; use one of \(Metric.acceptedNames)")
        }
        guard !f.source.isEmpty else { throw EventError(code: .emptyString, field: "sample.source", message: "must not be empty") }
        try requireNFC(f.source, path: "sample.source")
        let start = try time(f.start, path: "sample.start")
        let end = try time(f.end, path: "sample.end")
        guard end >= start else {
            throw EventError(code: .endBeforeStart, field: "sample.end",
                             message: "\(end) is before sample.start \(start)")
        }
        guard EventDecoder.lastsAtMostAWeek(from: start, to: end) else {
            let days = (Double(end.nanoseconds) - Double(start.nanoseconds)) / Double(Instant.nanosPerDay)
            throw EventError(code: .tooLong, field: "sample.end",
                             message: "the sample lasts \(JSONWriter.number((days * 100).rounded() / 100)) days; at most 7 are accepted")
        }
        let raw = f.value
        guard let factor = metric.units.first(where: { $0.unit == f.unit })?.factor else {
            let accepted = metric.units.map(\.unit).joined(separator: ", ")
            throw EventError(code: .unitMismatch, field: "sample.unit",
                             message: "\(JSONWriter.quoted(f.unit)) is not a unit of \(metric.rawValue); use \(accepted)")
        }
        guard EventDecoder.admits(raw, for: metric) else {
            throw metric.isCumulative
                ? EventError(code: .negativeValue, field: "sample.value",
                             message: "\(JSONWriter.number(raw)) is negative; \(metric.rawValue) is cumulative and cannot go down")
                : EventError(code: .nonPositiveHeartRate, field: "sample.value",
                             message: "\(JSONWriter.number(raw)) is not a positive \(metric == .heartRate ? "heart rate" : "reading of \(metric.rawValue)")")
        }
        guard ZoneRules.named(f.zone) != nil else {
            throw EventError(code: .badZone, field: "sample.zone",
                             message: "\(JSONWriter.quoted(f.zone)) is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)")
        }
        let value = raw * factor
        // A reading so small its conversion is 0 (a subnormal times a factor below 1) is no reading.
        guard metric.isCumulative || value > 0 else {
            throw EventError(code: .nonPositiveHeartRate, field: "sample.value",
                             message: "\(JSONWriter.number(raw)) \(f.unit) is 0 \(metric.canonicalUnit) once converted: not a positive reading of \(metric.rawValue)")
        }
        guard value.isFinite else {
            throw EventError(code: .notFinite, field: "sample.value", message: "\(JSONWriter.number(raw)) \(f.unit) overflows when converted to \(metric.canonicalUnit)")
        }
        guard value <= metric.maximumPerSample else {
            throw EventError(code: .implausibleValue, field: "sample.value",
                             message: "\(JSONWriter.number(raw)) \(f.unit) is more than one sample of \(metric.rawValue) can hold (at most \(JSONWriter.number(metric.maximumPerSample)) \(metric.canonicalUnit))")
        }
        return Sample(user: f.user, uuid: f.uuid, metric: metric, source: f.source,
                      start: start, end: end, value: value, zone: f.zone, version: f.version)
    }

    private func deletion(user: String, uuid: String) throws(EventError) -> Event {
        try requireNFC(user, path: "user")
        try requireNFC(uuid, path: "uuid")
        return .sampleDeleted(user: user, uuid: uuid)
    }

    /// Ids must be in Unicode normalization form C. Swift compares strings by canonical
    /// equivalence, so "\u{e9}" and "e\u{301}" would be one user (or one sample, or one
    /// source) to the core while Kafka keys and SQLite rows tell them apart; NFC is the one
    /// spelling of each equivalence class, so requiring it makes equal mean byte-equal.
    /// ASCII, nearly every id, is NFC and costs one pass over the bytes.
    private func requireNFC(_ text: String, path: String) throws(EventError) {
        guard EventDecoder.isNFC(text) else {
            throw EventError(code: .notNormalized, field: path,
                             message: "\(JSONWriter.quoted(text)) is not in Unicode normalization form C (NFC); ids are compared byte for byte, so normalize them (NFC) before publishing")
        }
    }

    /// Whether a sample from `start` to `end` (not before it) lasts at most
    /// `maximumDuration`. Instants more than ~292 years apart are more than Int64.max
    /// nanoseconds apart: that overflow is too long too.
    static func lastsAtMostAWeek(from start: Instant, to end: Instant) -> Bool {
        let (duration, overflow) = end.nanoseconds.subtractingReportingOverflow(start.nanoseconds)
        return !overflow && duration <= maximumDuration
    }

    /// Whether `raw` may be a value of `metric`: cumulative metrics cannot go down (≥ 0), a
    /// discrete metric's reading (heart rate, body mass, ...) is positive.
    static func admits(_ raw: Double, for metric: Metric) -> Bool {
        metric.isCumulative ? raw >= 0 : raw > 0
    }

    /// Whether `text` is in normalization form C (ASCII always is).
    static func isNFC(_ text: String) -> Bool {
        text.utf8.allSatisfy({ $0 < 0x80 }) || text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(text.utf8)
    }

    private func string(_ object: JSONValue, _ key: String, path: String) throws(EventError) -> String {
        switch object[key] {
        case .string(let s)?: return s
        case nil: throw EventError(code: .missingField, field: path, message: "missing")
        case let other?: throw EventError(code: .wrongType, field: path, message: "must be a string, got \(other.summary)")
        }
    }

    private func nonEmpty(_ object: JSONValue, _ key: String, path: String) throws(EventError) -> String {
        let s = try string(object, key, path: path)
        guard !s.isEmpty else { throw EventError(code: .emptyString, field: path, message: "must not be empty") }
        return s
    }

    private func time(_ text: String, path: String) throws(EventError) -> Instant {
        do {
            return try Instant(rfc3339: text)
        } catch {
            throw EventError(code: .badTime, field: path, message: "\(JSONWriter.quoted(text)) \(error.reason)")
        }
    }
}

extension EventError {
    /// A `sample.version` that is a number but not an integer from 0 to Int64.max.
    static func badVersion(_ text: String) -> EventError {
        EventError(code: .badVersion, field: "sample.version",
                   message: "\(text) is not a version; use an integer from 0 to \(Int64.max), written without a sign, fraction or exponent")
    }
}
