import Synchronization

/// How the samples of a metric make its day's (and hour's) row. The anchors aggregate each
/// health type in one of these ways: Health Connect's `PriorityRecordsAggregator` and
/// `AggregationType`, HealthKit's `cumulativeSum` and `discreteAverage`/`Min`/`Max`/`mostRecent`.
public enum Aggregation: String, Sendable, CaseIterable, BitwiseCopyable {
    /// Deduplicated by source priority per sub-interval, pro rata, summed by civil day and
    /// hour: steps, distance, energy burned, flights (a watch and a phone counting the same
    /// walk count it once).
    case prioritySum = "priority_sum"
    /// Every sample counts: water and nutrition (two apps logging two glasses drank two).
    case sum
    /// Minimum, maximum, mean, count and latest by the civil day (and hour) of each sample's
    /// start: heart rate, body mass.
    case discrete
    /// The time the samples cover, deduplicated by source priority: exercise minutes, sleep.
    case durationPriority = "duration_priority"
}

/// A unit a metric accepts, and the factor that converts a value in it to the canonical unit.
public struct MetricUnit: Sendable, Equatable {
    public let name: String
    public let factor: Double

    public init(_ name: String, _ factor: Double) {
        self.name = name
        self.factor = factor
    }
}

/// One entry of the metric catalogue: what the event format calls the metric, the unit its
/// values are stored in, the units it accepts, the largest value one sample may carry, how
/// its samples aggregate, and the Apple Health types that import as it.
public struct MetricDefinition: Sendable, Equatable {
    /// The name in events (`sample.metric`), rows and queries.
    public let name: String
    /// The unit values are stored and totalled in: the first of `units`, factor 1.
    public var canonicalUnit: String { units[0].name }
    /// Accepted units, the canonical one first.
    public let units: [MetricUnit]
    /// The largest value one sample may carry, in the canonical unit. A sample lasts at most
    /// 7 days, so these are a week of extreme activity (or, for a discrete metric, beyond any
    /// human reading); anything larger is a unit or producer bug, and the bound keeps every
    /// day's sum finite.
    public let maximumPerSample: Double
    public let aggregation: Aggregation
    /// The `HKQuantityTypeIdentifier…` (or `HKCategoryTypeIdentifier…`) records of an Apple
    /// Health export that are this metric.
    public let healthKit: [String]

    public init(name: String, units: [MetricUnit], maximumPerSample: Double, aggregation: Aggregation, healthKit: [String]) {
        precondition(!units.isEmpty && units[0].factor == 1, "a metric's first unit is its canonical one, factor 1")
        self.name = name
        self.units = units
        self.maximumPerSample = maximumPerSample
        self.aggregation = aggregation
        self.healthKit = healthKit
    }

    /// The factor `unit` converts by, nil if the metric does not accept it.
    public func factor(of unit: String) -> Double? { units.first { $0.name == unit }?.factor }
}

/// The built-in metric catalogue: every metric a phone records that Daybook names, with its
/// units, bound and aggregation (issue 30). Events carry every entry (`Metric.allCases`;
/// `topics/README.md` lists them all). An entry's place is its metric's number in the
/// shards: entries are only ever added at the end.
public enum MetricCatalogue {
    static let energy = [MetricUnit("kcal", 1), MetricUnit("Cal", 1), MetricUnit("kJ", 1 / 4.184)]
    static let length = [MetricUnit("m", 1), MetricUnit("km", 1_000), MetricUnit("mi", 1_609.344)]
    static let minutes = [MetricUnit("min", 1), MetricUnit("s", 1.0 / 60), MetricUnit("h", 60)]
    static let perMinute = [MetricUnit("count/min", 1)]
    static let week = 7.0 * 24 * 60 // minutes in a sample's longest span

    public static let builtIn: [MetricDefinition] = [
        MetricDefinition(name: "steps", units: [MetricUnit("count", 1)], maximumPerSample: 2_000_000, // ~200,000 a day for 7 days
                         aggregation: .prioritySum, healthKit: ["HKQuantityTypeIdentifierStepCount"]),
        MetricDefinition(name: "active_energy", units: energy, maximumPerSample: 100_000, // kcal: ~14,000 a day for 7 days
                         aggregation: .prioritySum, healthKit: ["HKQuantityTypeIdentifierActiveEnergyBurned"]),
        MetricDefinition(name: "distance", units: length, maximumPerSample: 5_000_000, // m: 5,000 km, a week on a bicycle and more
                         aggregation: .prioritySum, healthKit: ["HKQuantityTypeIdentifierDistanceWalkingRunning"]),
        MetricDefinition(name: "heart_rate", units: perMinute, maximumPerSample: 400, // above any recorded human heart rate
                         aggregation: .discrete, healthKit: ["HKQuantityTypeIdentifierHeartRate"]),
        MetricDefinition(name: "distance_cycling", units: length, maximumPerSample: 10_000_000, // m: ~1,400 km a day for 7 days
                         aggregation: .prioritySum, healthKit: ["HKQuantityTypeIdentifierDistanceCycling"]),
        MetricDefinition(name: "basal_energy", units: energy, maximumPerSample: 50_000, // kcal: ~7,000 a day for 7 days
                         aggregation: .prioritySum, healthKit: ["HKQuantityTypeIdentifierBasalEnergyBurned"]),
        MetricDefinition(name: "flights_climbed", units: [MetricUnit("count", 1)], maximumPerSample: 20_000, // ~3,000 a day for 7 days
                         aggregation: .prioritySum, healthKit: ["HKQuantityTypeIdentifierFlightsClimbed"]),
        MetricDefinition(name: "exercise_time", units: minutes, maximumPerSample: week,
                         aggregation: .durationPriority, healthKit: ["HKQuantityTypeIdentifierAppleExerciseTime"]),
        MetricDefinition(name: "stand_time", units: minutes, maximumPerSample: week,
                         aggregation: .durationPriority, healthKit: ["HKQuantityTypeIdentifierAppleStandTime"]),
        MetricDefinition(name: "water", units: [MetricUnit("mL", 1), MetricUnit("L", 1_000), MetricUnit("fl_oz_us", 29.5735295625)],
                         maximumPerSample: 100_000, // mL: ~14 L a day for 7 days
                         aggregation: .sum, healthKit: ["HKQuantityTypeIdentifierDietaryWater"]),
        MetricDefinition(name: "dietary_energy", units: energy, maximumPerSample: 100_000, // kcal: ~14,000 a day for 7 days
                         aggregation: .sum, healthKit: ["HKQuantityTypeIdentifierDietaryEnergyConsumed"]),
        MetricDefinition(name: "resting_heart_rate", units: perMinute, maximumPerSample: 400,
                         aggregation: .discrete, healthKit: ["HKQuantityTypeIdentifierRestingHeartRate"]),
        MetricDefinition(name: "heart_rate_variability", units: [MetricUnit("ms", 1)], maximumPerSample: 5_000, // SDNN: beyond any reading
                         aggregation: .discrete, healthKit: ["HKQuantityTypeIdentifierHeartRateVariabilitySDNN"]),
        MetricDefinition(name: "body_mass", units: [MetricUnit("kg", 1), MetricUnit("g", 0.001), MetricUnit("lb", 0.45359237)],
                         maximumPerSample: 1_000, // kg: beyond any human
                         aggregation: .discrete, healthKit: ["HKQuantityTypeIdentifierBodyMass"]),
        MetricDefinition(name: "oxygen_saturation", units: [MetricUnit("%", 1)], maximumPerSample: 100,
                         aggregation: .discrete, healthKit: ["HKQuantityTypeIdentifierOxygenSaturation"]),
        MetricDefinition(name: "respiratory_rate", units: perMinute, maximumPerSample: 200, // breaths a minute: beyond any reading
                         aggregation: .discrete, healthKit: ["HKQuantityTypeIdentifierRespiratoryRate"]),
        MetricDefinition(name: "sleep", units: minutes, maximumPerSample: week,
                         aggregation: .durationPriority, healthKit: ["HKCategoryTypeIdentifierSleepAnalysis"]),
    ]

    /// The entry (built in, or added by the configuration) an Apple Health record of type
    /// `type` imports as, if any.
    public static func definition(forHealthKit type: String) -> MetricDefinition? {
        Metric.definitions.first { $0.healthKit.contains(type) }
    }

    /// The entry (built in, or added by the configuration) named `name`, if any.
    public static func definition(named name: String) -> MetricDefinition? {
        Metric.definitions.first { $0.name == name }
    }

    /// The most entries a catalogue holds, built-in and added: a metric's place must fit the
    /// uuid index's (`Shard.placeMetrics`, checked equal by `UUIDIndexTests`).
    public static let maximumEntries = 38

    /// Why entries cannot be added to this process's catalogue.
    public struct InstallError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The entries added to this process's catalogue, and whether metrics are in use (from
    /// then on the catalogue is fixed: every metric's number and rule must stay what they were).
    private static let installation = Mutex<(added: [MetricDefinition], inUse: Bool)>(([], false))

    /// Adds `entries` (a configuration's metrics, checked by its reader) after the built-in
    /// ones for the rest of the process: in the given order, from place `builtIn.count` on,
    /// they are metrics like the built-in ones (events, rows, shards, imports). A process
    /// installs them at start-up, before it names any metric; installing the same entries
    /// again does nothing (a command that reads its configuration twice).
    /// - Throws: when metrics are already in use under other entries, or when the entries
    ///   would make a name twice or more entries than `maximumEntries`.
    public static func install(adding entries: [MetricDefinition]) throws(InstallError) {
        var names = Set(builtIn.map(\.name))
        for entry in entries where !names.insert(entry.name).inserted {
            throw InstallError(description: "metric \(entry.name) is in the catalogue twice")
        }
        guard builtIn.count + entries.count <= maximumEntries else {
            throw InstallError(description: "\(entries.count) metrics added to the \(builtIn.count) built in: at most \(maximumEntries - builtIn.count) can be")
        }
        let refused: InstallError? = installation.withLock { state in
            if state.added == entries { return nil }
            if state.inUse { return InstallError(description: "the metric catalogue is already in use under other entries; add metrics before anything names one") }
            state.added = entries
            return nil
        }
        if let refused { throw refused }
    }

    /// This process's catalogue: the built-in entries, then the installed ones. Fixes it.
    static func entriesInUse() -> [MetricDefinition] {
        installation.withLock { state in
            state.inUse = true
            return builtIn + state.added
        }
    }

    /// What a shard's rows depend on in each entry, in place order: `name:aggregation:unit`
    /// (its canonical unit), one per entry. A shard records this (`Shard`) and refuses to be
    /// opened under entries that say otherwise for a place it holds (`changes(from:to:)`).
    public static func record(_ entries: [MetricDefinition]) -> String {
        entries.map { "\($0.name):\($0.aggregation.rawValue):\($0.canonicalUnit)" }.joined(separator: ";")
    }

    /// The places whose entry `current` gives differently from `recorded` (a `record`), each
    /// with the recorded entry and the current one (nil when `current` has no such place).
    /// Entries `current` adds after the recorded ones are no change: a shard built before
    /// them holds no row of theirs.
    public static func changes(from recorded: String, to current: [MetricDefinition]) -> [Change] {
        let now = record(current).split(separator: ";").map(String.init)
        let was = recorded.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        return was.indices.compactMap { i in
            i < now.count && now[i] == was[i] ? nil : Change(place: i, was: was[i], now: i < now.count ? now[i] : nil)
        }
    }

    /// A place whose entry differs between a shard's record and a catalogue (`changes`).
    public struct Change: Sendable, Equatable {
        public var place: Int
        /// The recorded entry, `name:aggregation:unit`.
        public var was: String
        /// The catalogue's entry at the place, nil when it has none.
        public var now: String?
        /// The recorded entry's metric name.
        public var name: Substring { was.prefix { $0 != ":" } }
    }
}

extension Metric {
    /// The catalogue's entry for this metric (`MetricCatalogue.builtIn`): its units, bound and
    /// aggregation come from there.
    public var definition: MetricDefinition { Metric.definitions[index] }

    /// `maximumPerSample` by `index`: read for every event decoded, so without copying an
    /// entry (its strings and arrays retained and released).
    static let bounds: [Double] = definitions.map(\.maximumPerSample)

    /// The entries of `allCases`, by `index`, looked up once: the catalogue metrics are
    /// numbered by (a shard records it, `MetricCatalogue.record`), the built-in entries and
    /// those the configuration added (`MetricCatalogue.install`).
    public static let definitions: [MetricDefinition] = MetricCatalogue.entriesInUse()
}
