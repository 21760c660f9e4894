import DaybookSupport

/// A health metric Daybook totals: an entry of the metric catalogue (`MetricCatalogue`)
/// whose aggregation Daybook computes, with its canonical unit and how it aggregates.
///
/// A value of a few bytes, compared and hashed by its number: its entry's place in the
/// catalogue, which is also its number in a shard's state store (never renumbered).
public struct Metric: RawRepresentable, CaseIterable, Hashable, Comparable, Sendable, BitwiseCopyable, CustomDebugStringConvertible {
    /// The catalogue entry's place (`MetricCatalogue.builtIn`). Two bytes in all with
    /// `aggregation` (the enum this was took one): a staged event holds one (`StagedEventTests`).
    private let code: UInt8
    /// How its samples make its rows: the catalogue entry's, kept in the value, since the
    /// ledger asks for every sample.
    public let aggregation: Aggregation

    /// The metric of catalogue entry `index`.
    private init(_ index: UInt8) {
        code = index
        aggregation = Metric.definitions[Int(index)].aggregation
    }

    /// Whether its samples are summed over time (`priority_sum`, `sum`, `duration_priority`),
    /// not summarized (`discrete`).
    @inline(__always)
    public var isCumulative: Bool { aggregation != .discrete }

    /// Whether every sample counts (`sum`: water, nutrition), not only the highest-ranked
    /// source's over each piece of time (`priority_sum`, `duration_priority`).
    @inline(__always)
    public var countsEverySample: Bool { aggregation == .sum }

    /// Whether a row counts the time its samples cover, in minutes, not their values
    /// (`duration_priority`: exercise minutes, sleep).
    @inline(__always)
    public var countsTime: Bool { aggregation == .durationPriority }

    /// The catalogue entry's place, an index (0 ..< `tableSize`) for array-backed tables.
    @inline(__always)
    var index: Int { Int(code) }

    public static let steps = Metric(0)
    public static let activeEnergy = Metric(1)
    public static let distance = Metric(2)
    public static let heartRate = Metric(3)
    public static let distanceCycling = Metric(4)
    public static let basalEnergy = Metric(5)
    public static let flightsClimbed = Metric(6)
    public static let exerciseTime = Metric(7)
    public static let standTime = Metric(8)
    public static let water = Metric(9)
    public static let dietaryEnergy = Metric(10)
    public static let restingHeartRate = Metric(11)
    public static let heartRateVariability = Metric(12)
    public static let bodyMass = Metric(13)
    public static let oxygenSaturation = Metric(14)
    public static let respiratoryRate = Metric(15)
    public static let sleep = Metric(16)

    /// Entries of tables indexed by a metric's `index`: one per catalogue entry.
    static let tableSize = definitions.count

    /// The metrics events carry: every catalogue entry, in catalogue order.
    public static let allCases: [Metric] = (0..<tableSize).map { Metric(UInt8($0)) }

    /// The name in events, rows and queries (the catalogue entry's).
    public var rawValue: String { Metric.names[index] }

    public init?(rawValue: String) {
        guard let metric = Metric.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = metric
    }

    static let names: [String] = definitions.map(\.name)

    /// The names a refusal lists: every metric of this process's catalogue, and where more
    /// come from (`steps, …, sleep, or one the configuration adds`).
    public static let acceptedNames: String = allCases.map(\.rawValue).joined(separator: ", ")
        + ", or one the configuration adds (its metrics section, --config)"

    /// The metrics the configuration added to the catalogue, by name (empty without any).
    static let added: [String: Metric] = Dictionary(uniqueKeysWithValues: allCases.dropFirst(MetricCatalogue.builtIn.count).map { ($0.rawValue, $0) })

    /// The unit values are stored in (the catalogue's, `MetricDefinition.canonicalUnit`).
    public var canonicalUnit: String { definition.canonicalUnit }

    /// Accepted units and the factor that converts each to the canonical unit (the catalogue's).
    public var units: [(unit: String, factor: Double)] { definition.units.map { ($0.name, $0.factor) } }

    /// The largest value one sample may carry, in the canonical unit (the catalogue's,
    /// `MetricDefinition.maximumPerSample`: a week of extreme activity; anything larger is a
    /// unit or producer bug, and bounding each sample keeps every day's sum finite).
    public var maximumPerSample: Double { Metric.bounds[index] }

    public static func < (a: Metric, b: Metric) -> Bool { a.rawValue < b.rawValue }

    public static func == (a: Metric, b: Metric) -> Bool { a.code == b.code }

    /// Hashes the index: hashing its name's String with SipHash cost ~500 instructions for
    /// each `Set<Metric>` insert of a batch's every sample.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public func _rawHashValue(seed: Int) -> Int { NameHash.table(UInt64(index) &+ 1, seed: seed) }

    /// The metric's number in a shard's state store (never renumber: shards keep it).
    public var storageCode: Int { index }

    /// As the enum this was printed itself (`DaybookCore.Metric.steps`), so that dumps of
    /// events read the same (the decoder's golden answers are such dumps).
    public var debugDescription: String { "DaybookCore.Metric." + Metric.swiftNames[index] }
    /// Each entry's name in Swift: its event name in lower camel case (`active_energy` →
    /// `activeEnergy`), as the enum's cases were named.
    static let swiftNames: [String] = definitions.map { entry in
        let words = entry.name.split(separator: "_")
        return words.enumerated().map { i, word in i == 0 ? String(word) : word.prefix(1).uppercased() + word.dropFirst() }.joined()
    }

    public init?(storageCode: Int) {
        guard let metric = Metric.allCases.first(where: { $0.index == storageCode }) else { return nil }
        self = metric
    }
}

/// One measurement from one source, in the metric's canonical unit.
public struct Sample: Hashable, Sendable {
    public var user: String
    /// The uuid, kept as its 16 bytes when it is a canonical UUID (`SampleUUID`): the
    /// projector's tables key on this, not on the text.
    public var compactUUID: SampleUUID
    /// The uuid's text, byte for byte as the log spelled it.
    public var uuid: String {
        get { compactUUID.text }
        set { compactUUID = SampleUUID(newValue) }
    }
    public var metric: Metric
    public var source: String
    public var start: Instant
    public var end: Instant
    public var value: Double
    /// IANA identifier of the zone the sample was recorded in.
    public var zone: String
    /// The producer's version of this uuid (0 … Int64.max; absent in the log means 0). An
    /// add replaces the sample in force only if its version is at least as high; among
    /// overlapping samples of one rank the higher version wins (`Guides/Dedupe.md`).
    public var version: Int64

    public init(user: String, uuid: String, metric: Metric, source: String,
                start: Instant, end: Instant, value: Double, zone: String, version: Int64 = 0) {
        self.init(user: user, uuid: SampleUUID(uuid), metric: metric, source: source, start: start, end: end,
                  value: value, zone: zone, version: version)
    }

    public init(user: String, uuid: SampleUUID, metric: Metric, source: String,
                start: Instant, end: Instant, value: Double, zone: String, version: Int64 = 0) {
        self.user = user
        self.compactUUID = uuid
        self.metric = metric
        self.source = source
        self.start = start
        self.end = end
        self.value = value
        self.zone = zone
        self.version = version
    }

    /// True for a point measurement (start == end).
    public var isInstant: Bool { start == end }
}

/// A source's word that it synced: "I am alive as of `at`", whether or not it had
/// anything new. Silence detection asserts on these, not on samples: a user who rested
/// sends no samples but still checks in.
public struct CheckIn: Hashable, Sendable {
    public var user: String
    public var source: String
    public var at: Instant
    /// The metrics the source syncs, if the producer said (nil: not said).
    public var metrics: [Metric]?

    public init(user: String, source: String, at: Instant, metrics: [Metric]? = nil) {
        self.user = user
        self.source = source
        self.at = at
        self.metrics = metrics
    }
}

/// An entry of the `health-samples` log (event format version 1).
public enum Event: Hashable, Sendable {
    /// Adds a sample, or replaces the sample with the same (user, uuid).
    case sampleAdded(Sample)
    /// Removes a sample and leaves a tombstone so that it can never come back.
    case sampleDeleted(user: String, uuid: String)
    /// A source synced (see `CheckIn`); it changes no totals, only the sync state.
    case sourceCheckedIn(CheckIn)

    public var user: String {
        switch self {
        case .sampleAdded(let s): return s.user
        case .sampleDeleted(let user, _): return user
        case .sourceCheckedIn(let c): return c.user
        }
    }

    /// The sample the event is about; nil for a check-in.
    public var uuid: String? {
        switch self {
        case .sampleAdded(let s): return s.uuid
        case .sampleDeleted(_, let uuid): return uuid
        case .sourceCheckedIn: return nil
        }
    }
}

extension Sample: CustomDebugStringConvertible {
    /// The fields as a reflection prints them, the uuid as its text (not its compact form):
    /// what a sample printed as before the uuid had one (the decoder's golden answers).
    public var debugDescription: String {
        "DaybookCore.Sample(user: \(String(reflecting: user)), uuid: \(String(reflecting: uuid)), "
            + "metric: \(String(reflecting: metric)), source: \(String(reflecting: source)), "
            + "start: \(String(reflecting: start)), end: \(String(reflecting: end)), value: \(String(reflecting: value)), "
            + "zone: \(String(reflecting: zone)), version: \(String(reflecting: version)))"
    }
}
