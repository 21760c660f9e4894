import DaybookCore
import DaybookSupport

/// A synthetic Apple Health `export.xml`, record by record, with the quirks of real ones:
/// timestamps printed at one export-time offset whatever the season, device strings whose
/// `0x…` pointer changes per record, a watch and a phone counting the same walk, manual
/// entries, third-party apps, byte-identical repeats, same interval with another value,
/// zero-length samples, `HKTimeZone` on some records only, the units km/mi/m, kcal/Cal/kJ,
/// kg/g/lb, oxygen saturation as a fraction of 1, sleep records of every asleep value and
/// the in-bed and awake ones Daybook does not count, and records of types Daybook does not
/// total. Deterministic for a seed.
///
/// Each record comes with its `Truth` (what it means, in canonical units), so a reference
/// can compute the right totals without reading the XML. Used by `daybook import generate`
/// (benchmarks, trying the import) and by the property tests.
public struct ExportGenerator {
    /// What one generated record means.
    public struct Truth: Equatable, Sendable {
        public var metric: Metric
        /// The Daybook source the default mapping gives it.
        public var source: String
        /// Seconds since 1970.
        public var start: Int64
        public var end: Int64
        /// In the metric's canonical unit, as the event format converts it.
        public var value: Double
        public var zone: String
        /// Records with the same id are one sample: the highest version, the later on a tie.
        public var id: String?
        /// The event's version: the record's HKMetadataKeySyncVersion, else creationDate in ms.
        public var version: Int64 = 0
    }

    /// Zone of records without `HKTimeZone` metadata: pass it as `--zone`.
    public let defaultZone = "Europe/Berlin"
    /// The offset every timestamp is printed at (the phone's offset when it exported).
    public let exportOffsetSeconds = 2 * 3_600

    private var rng: SplitMix64
    private let windowStart: Int64
    private let windowMinutes: Int
    private var previous: (xml: String, truth: Truth?)?
    private var counter = 0

    /// Records start within `days` days from `start` (seconds since 1970, whole minutes).
    public init(seed: UInt64, start: Int64, days: Int) {
        rng = SplitMix64(seed: seed)
        windowStart = start
        windowMinutes = max(1, days) * 24 * 60
    }

    /// The prolog, a DOCTYPE with an internal subset as the Health app writes it, `ExportDate` and `Me`.
    public var header: String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!-- HealthKit Export Version: 13 -->
        <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
        <!ATTLIST HealthData
          locale CDATA #REQUIRED
        >
        <!ELEMENT ExportDate EMPTY>
        <!ATTLIST ExportDate
          value CDATA #REQUIRED
        >
        <!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
        <!ATTLIST Record
          type          CDATA #REQUIRED
          unit          CDATA #IMPLIED
          value         CDATA #IMPLIED
          sourceName    CDATA #REQUIRED
          sourceVersion CDATA #IMPLIED
          device        CDATA #IMPLIED
          creationDate  CDATA #IMPLIED
          startDate     CDATA #REQUIRED
          endDate       CDATA #REQUIRED
        >
        <!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
        <!ELEMENT MetadataEntry EMPTY>
        <!ATTLIST MetadataEntry
          key   CDATA #REQUIRED
          value CDATA #REQUIRED
        >
        ]>
        <HealthData locale="en_DE">
         <ExportDate value="\(time(windowStart + Int64(windowMinutes) * 60 + 86_400))"/>
         <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-01-01" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexNotSet" HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>

        """
    }

    public let footer = "</HealthData>\n"

    /// The next record's XML (ending in a newline) and its truth (nil for a type Daybook skips).
    public mutating func next() -> (xml: String, truth: Truth?) {
        counter += 1
        let roll = rng.below(100)
        if roll < 3, let previous { return previous } // byte-identical repeat
        let record: (xml: String, truth: Truth?)
        if roll < 6, let previous, let truth = previous.truth, truth.metric.isCumulative, truth.id == nil, !isCategory(truth.metric) {
            record = same(as: previous.xml, truth: truth) // same interval and source, another value
        } else if roll < 12 {
            record = otherType()
        } else {
            record = fresh()
        }
        previous = record
        return record
    }

    private mutating func fresh() -> (xml: String, truth: Truth?) {
        // Steps most (the property tests compare their days with the naive sum), then metrics
        // of priority_sum, discrete (four, oxygen saturation's fraction among them) and
        // duration_priority (sleep, a category). No `sum` metric: the property tests'
        // reference does not compute that aggregation.
        let metrics: [(Metric, Int)] = [(.steps, 7), (.distance, 3), (.activeEnergy, 3), (.heartRate, 2), (.restingHeartRate, 1),
                                        (.bodyMass, 1), (.oxygenSaturation, 1), (.sleep, 2)]
        var metricRoll = rng.below(metrics.reduce(0) { $0 + $1.1 })
        var metric = Metric.steps
        for (m, weight) in metrics {
            if metricRoll < weight { metric = m; break }
            metricRoll -= weight
        }
        let sourceRoll = rng.below(10)
        let start = windowStart + Int64(rng.below(windowMinutes)) * 60
        // Readings are instants; a resting heart rate spans the day it sums up (here minutes to hours).
        let instant = metric == .heartRate || metric == .bodyMass || metric == .oxygenSaturation
        let minutes: Int64 = instant || rng.below(12) == 0 ? 0 : Int64(1 + (rng.below(5) == 0 ? rng.below(180) : rng.below(15)))
        let end = start + minutes * 60
        let zone: String? = rng.below(4) == 0 ? (rng.below(3) == 0 ? "America/New_York" : "Europe/Berlin") : nil
        var metadata: [(String, String)] = []
        if let zone { metadata.append(("HKTimeZone", zone)) }
        let (unit, raw, canonical) = isCategory(metric) ? (nil, asleepValue(), Double(minutes)) : value(for: metric)
        var name: String, version: String, device: String?, source: String, id: String? = nil
        var syncVersion: Int64?
        switch sourceRoll {
        case 0..<4:
            (name, version, source) = ("Ana’s Apple Watch", "10.4", "watch")
            device = "&lt;&lt;HKDevice: 0x\(pointer())&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,1, software:10.4, creation date:2024-01-02 10:00:00 +0000&gt;"
        case 4..<8:
            (name, version, source) = ("Ana’s iPhone", "17.4", "phone")
            device = "&lt;&lt;HKDevice: 0x\(pointer())&gt;, name:iPhone, manufacturer:Apple Inc., model:iPhone, hardware:iPhone15,2, software:17.4, creation date:2024-01-02 10:00:00 +0000&gt;"
        case 8:
            (name, version, source, device) = ("Health", "17.4", "manual", nil)
            metadata.append(("HKWasUserEntered", "1"))
        default:
            (name, version, source, device) = ("Sleep &amp; Steps", "3.1", "sleep-steps", nil)
            if rng.below(2) == 0 {
                id = "sync-\(rng.below(40))" // a few ids reused: the highest version (the later on a tie) wins
                metadata.append(("HKMetadataKeySyncIdentifier", id ?? ""))
                syncVersion = Int64(1 + rng.below(3))
                metadata.append(("HKMetadataKeySyncVersion", String(syncVersion ?? 0)))
            }
        }
        if metric == .heartRate, rng.below(2) == 0 { metadata.append(("HKMetadataKeyHeartRateMotionContext", "1")) }
        let created = end + Int64(rng.below(3_600))
        let xml = recordXML(type: type(of: metric), name: name, version: version, device: device, unit: unit,
                            created: created, start: start, end: end, value: raw, metadata: metadata)
        let truth = Truth(metric: metric, source: source, start: start, end: end, value: canonical,
                          zone: zone ?? defaultZone, id: id.map { "\(type(of: metric))|\(name)|\($0)" },
                          version: syncVersion ?? created * 1_000)
        return (xml, truth)
    }

    private mutating func same(as xml: String, truth: Truth) -> (xml: String, truth: Truth?) {
        let (_, raw, canonical) = value(for: truth.metric, unit: unitText(in: xml))
        guard let v = xml.range(of: " value=\""), let close = xml[v.upperBound...].firstIndex(of: "\"") else { return (xml, truth) }
        var changed = truth
        changed.value = canonical
        return (String(xml[..<v.upperBound]) + raw + String(xml[close...]), changed)
    }

    private mutating func otherType() -> (xml: String, truth: Truth?) {
        let start = windowStart + Int64(rng.below(windowMinutes)) * 60
        // Types outside the catalogue, and sleep values that are not sleep (in bed, awake).
        let kinds = [("HKQuantityTypeIdentifierBloodGlucose", "mg/dL", "92"), ("HKQuantityTypeIdentifierBodyTemperature", "degC", "36.8"),
                     ("HKQuantityTypeIdentifierBloodPressureSystolic", "mmHg", "120"), ("HKCategoryTypeIdentifierSleepAnalysis", "", "")]
        let k = kinds[rng.below(kinds.count)]
        let xml: String
        if k.1.isEmpty {
            xml = " <Record type=\"\(k.0)\" sourceName=\"Ana’s Apple Watch\" sourceVersion=\"10.4\" creationDate=\"\(time(start + 3_600))\" startDate=\"\(time(start))\" endDate=\"\(time(start + 1_800))\" value=\"HKCategoryValueSleepAnalysis\(rng.below(3) == 0 ? "Awake" : "InBed")\">\n  <MetadataEntry key=\"HKTimeZone\" value=\"Europe/Berlin\"/>\n </Record>\n"
        } else {
            xml = recordXML(type: k.0, name: "Ana’s iPhone", version: "17.4", device: nil, unit: k.1, created: start + 600,
                            start: start, end: start + 600, value: k.2, metadata: [])
        }
        return (xml, nil)
    }

    /// A `<Record>`; a category record (`unit` nil) has no unit attribute.
    private func recordXML(type: String, name: String, version: String, device: String?, unit: String?, created: Int64,
                           start: Int64, end: Int64, value: String, metadata: [(String, String)]) -> String {
        var s = " <Record type=\"\(type)\" sourceName=\"\(name)\" sourceVersion=\"\(version)\""
        if let device { s += " device=\"\(device)\"" }
        if let unit { s += " unit=\"\(unit)\"" }
        s += " creationDate=\"\(time(created))\" startDate=\"\(time(start))\" endDate=\"\(time(end))\" value=\"\(value)\""
        guard !metadata.isEmpty else { return s + "/>\n" }
        s += ">\n"
        for (k, v) in metadata { s += "  <MetadataEntry key=\"\(k)\" value=\"\(v)\"/>\n" }
        return s + " </Record>\n"
    }

    private func type(of metric: Metric) -> String {
        AppleHealthImporter.metrics.first { $0.value == metric }?.key ?? ""
    }

    /// Whether the metric's records are a category's (sleep): a value name, no unit.
    private func isCategory(_ metric: Metric) -> Bool { AppleHealthImporter.categoryValues[type(of: metric)] != nil }

    /// One of the sleep values Daybook counts, the stages most often, as watches since iOS 16 write them.
    private mutating func asleepValue() -> String {
        let values = ["AsleepCore", "AsleepCore", "AsleepDeep", "AsleepREM", "AsleepREM", "AsleepUnspecified", "Asleep"]
        return "HKCategoryValueSleepAnalysis" + values[rng.below(values.count)]
    }

    private func unitText(in xml: String) -> String? {
        guard let u = xml.range(of: " unit=\""), let close = xml[u.upperBound...].firstIndex(of: "\"") else { return nil }
        return String(xml[u.upperBound..<close])
    }

    /// A unit of the metric (or `unit`), a value as text, and that value in the canonical unit
    /// (as the event format converts it; oxygen saturation's fraction as the percent it means).
    private mutating func value(for metric: Metric, unit: String? = nil) -> (unit: String?, raw: String, canonical: Double) {
        let units = metric.units
        let chosen = unit.flatMap { u in units.first { $0.unit == u } } ?? units[rng.below(units.count)]
        let raw: String
        switch metric {
        case .steps: raw = rng.below(40) == 0 ? "30000" : String(rng.below(1_500))
        case .heartRate: raw = String(45 + rng.below(120))
        case .distance, .distanceCycling:
            let meters = rng.below(2_000)
            raw = chosen.unit == "m" ? String(meters) : chosen.unit == "km" ? decimal(meters, scale: 1_000) : decimal(meters * 621, scale: 1_000_000)
        case .activeEnergy, .basalEnergy:
            let tenths = rng.below(3_000)
            raw = chosen.unit == "kJ" ? decimal(tenths * 4_184, scale: 10_000) : decimal(tenths, scale: 10)
        case .flightsClimbed: raw = String(rng.below(20))
        case .restingHeartRate: raw = String(40 + rng.below(50))
        case .bodyMass:
            let tenths = 450 + rng.below(800) // 45.0 to 124.9 kg
            raw = chosen.unit == "g" ? String(tenths * 100) : chosen.unit == "kg" ? decimal(tenths, scale: 10) : decimal(tenths * 22, scale: 100)
        case .oxygenSaturation:
            // Written as a fraction of 1 (HealthKit's percent unit): 0.97, 0.955, 1; meant as 97, 95.5, 100 %.
            let permille = 880 + rng.below(121)
            return (chosen.unit, decimal(permille, scale: 1_000), Double(permille) / 10)
        default: raw = "1"
        }
        return (chosen.unit, raw, (Double(raw) ?? 0) * chosen.factor)
    }

    /// `n / scale` as a plain decimal with at most 6 fractional digits ("0.0372").
    private func decimal(_ n: Int, scale: Int) -> String {
        let whole = n / scale
        var frac = String(n % scale)
        let digits = String(scale).count - 1
        frac = String(repeating: "0", count: digits - frac.count) + frac
        while frac.hasSuffix("0") { frac.removeLast() }
        return frac.isEmpty ? String(whole) : "\(whole).\(frac)"
    }

    private mutating func pointer() -> String { String(0x1_0000_0000 + UInt64(rng.below(0xFFFF_FFFF)), radix: 16) }

    /// `YYYY-MM-DD HH:MM:SS +0200`: the instant at the export-time offset, whatever the season.
    func time(_ seconds: Int64) -> String {
        let wall = Instant(seconds: seconds).format(offsetSeconds: exportOffsetSeconds) // 2024-01-10T11:00:00+02:00
        let u = Array(wall.utf8)
        return String(decoding: u[0..<10] + [32] + u[11..<19] + [32] + u[19..<22] + u[23..<25], as: UTF8.self)
    }
}
