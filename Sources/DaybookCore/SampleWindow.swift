/// The samples of one user that a read needs, taken from a store, and what they give at
/// read time: civil-hour rows (`HourRollup`), or a day's explanation.
///
/// A store fills it with every live sample that can reach the days asked: for cumulative
/// metrics every sample overlapping their UTC days ± 1 (a civil day lies within its UTC
/// day ± 1), for heart rate every sample starting in them. Given those, its rows equal an
/// in-memory `Ledger`'s of the whole log (`Ledger.hours`): the same records, resolved by
/// the same runs, summed in the same order.
///
/// Complexity: `add` is O(1) amortised; `hours` O(n log n) for the n samples of the metric.
public struct SampleWindow {
    public let user: String
    public let priority: SourcePriority
    private var sources: [String] = []
    private var sourceIDs: [String: Int32] = [:]
    private var zones: [ZoneRules] = []
    private var zoneIDs: [String: Int32] = [:]
    /// What `ledger()` replays (samples added with their uuids).
    private var records = [[Record]](repeating: [], count: Metric.tableSize)
    /// Every sample added, as the hour rollup reads them.
    private var columns = [SampleColumns](repeating: SampleColumns(), count: Metric.tableSize)
    /// Whether samples were added without their uuids (`addWithoutUUID`).
    private var uuidsLeftOut = false

    public init(user: String, priority: SourcePriority) {
        self.user = user
        self.priority = priority
    }

    /// Number of samples added.
    public var count: Int { columns.reduce(0) { $0 + $1.count } }

    /// Adds a live sample of `user` (a sample of another user is ignored), with its log
    /// position. Each uuid must be added once: a store holds one version of it in force.
    public mutating func add(_ sample: Sample, seq: Int64) {
        guard sample.user == user else { return }
        let record = Record(start: sample.start.nanoseconds, end: sample.end.nanoseconds, value: sample.value, seq: seq,
                            version: sample.version, source: intern(source: sample.source), zone: intern(zone: sample.zone),
                            uuid: sample.compactUUID)
        records[sample.metric.index].append(record)
        columns[sample.metric.index].append(start: record.start, end: record.end, value: record.value, version: record.version,
                                            source: record.source, zone: record.zone, uuid: sample.uuid)
    }

    /// The window's id of source `name`, for `add(uuid:…)` (the first call of a name interns it).
    public mutating func sourceID(_ name: String) -> Int32 { intern(source: name) }

    /// The window's id of zone `identifier`, for `add(uuid:…)` (the first call builds or
    /// finds its rules; an unknown zone degrades to UTC, as in `add(_:seq:)`).
    public mutating func zoneID(_ identifier: String) -> Int32 { intern(zone: identifier) }

    /// Adds a live sample of `user` as `add(_:seq:)` does, its source and zone given by the
    /// ids `sourceID` and `zoneID` returned: a store that names them by its own ids looks each
    /// name up once per window, not twice per sample, and builds no `Sample`.
    public mutating func add(uuid: String, metric: Metric, source: Int32, zone: Int32, start: Int64, end: Int64,
                             value: Double, version: Int64, seq: Int64) {
        precondition(Int(source) < sources.count && Int(zone) < zones.count, "ids come from sourceID and zoneID")
        records[metric.index].append(Record(start: start, end: end, value: value, seq: seq, version: version,
                                            source: source, zone: zone, uuid: SampleUUID(uuid)))
        columns[metric.index].append(start: start, end: end, value: value, version: version, source: source, zone: zone, uuid: uuid)
    }

    /// `add(uuid:…)` with the uuid left out, for a store that reads it again only if a read
    /// needs it (only samples that share their start and end with another are told apart by
    /// uuid: `Record.outranksAtSameRank`, `precedesInSumOrder`). After the last such add,
    /// `recordsNeedingUUIDs(metric)` names the samples a tie-break can reach, and `setUUID`
    /// gives each of them its uuid. A window filled this way answers hours, not `ledger()`
    /// (which needs every uuid).
    public mutating func addWithoutUUID(metric: Metric, source: Int32, zone: Int32, start: Int64, end: Int64,
                                        value: Double, version: Int64, seq: Int64) {
        precondition(Int(source) < sources.count && Int(zone) < zones.count, "ids come from sourceID and zoneID")
        columns[metric.index].append(start: start, end: end, value: value, version: version, source: source, zone: zone, uuid: "")
        uuidsLeftOut = true
    }

    /// `addWithoutUUID` of many samples at once, given as parallel arrays of equal length (a
    /// store's decoded packs): the arrays are taken as they are when the window holds no
    /// sample of `metric` yet, so that nothing is copied per sample.
    public mutating func addWithoutUUIDs(metric: Metric, start: [Int64], end: [Int64], value: [Double], version: [Int64],
                                         source: [Int32], zone: [Int32]) {
        let n = start.count
        precondition(end.count == n && value.count == n && version.count == n && source.count == n && zone.count == n,
                     "one element per sample in each array")
        precondition(!source.contains { Int($0) >= sources.count } && !zone.contains { Int($0) >= zones.count }, "ids come from sourceID and zoneID")
        uuidsLeftOut = true
        if columns[metric.index].count == 0 {
            columns[metric.index] = SampleColumns(start: start, end: end, value: value, version: version, source: source, zone: zone,
                                                  uuid: [String](repeating: "", count: n))
            return
        }
        for i in 0..<n {
            columns[metric.index].append(start: start[i], end: end[i], value: value[i], version: version[i], source: source[i],
                                         zone: zone[i], uuid: "")
        }
    }

    /// The places (in order of adding, from 0) of `metric`'s samples that share their start and
    /// end with another: the only ones whose uuids a tie-break compares.
    public func recordsNeedingUUIDs(_ metric: Metric) -> [Int] { columns[metric.index].tiedPlaces() }

    /// The uuid the sample added `place`-th of `metric` holds now ("" when left out), for tests.
    func heldUUID(_ metric: Metric, place: Int) -> String { columns[metric.index].uuid[place] }

    /// Gives the sample added `place`-th (from 0) of `metric` its uuid.
    public mutating func setUUID(_ uuid: String, metric: Metric, place: Int) {
        columns[metric.index].uuid[place] = uuid
    }

    /// The hour rows of `metric` on the civil days `from` through `to`, sorted by day, start
    /// and end; none when `from` is after `to`.
    public func hours(_ metric: Metric, from: CivilDay, to: CivilDay) -> [HourTotal] {
        rows(metric, from: from, to: to).hours
    }

    /// `hours(_:from:to:)` apportioned from day totals already known (a shard's stored day
    /// rows of these samples, read in the same snapshot): each day's hours then add up to its
    /// stored row by construction, and no day is computed twice. A day missing from
    /// `dayTotals` is anchored on its hours' raw sum. Heart rate ignores `dayTotals`.
    public func hours(_ metric: Metric, from: CivilDay, to: CivilDay, dayTotals: [CivilDay: Double]) -> [HourTotal] {
        guard from <= to else { return [] }
        var anchors: [Int32: Double] = [:]
        for (day, value) in dayTotals { anchors[day.number] = value }
        return HourRollup.rows(columns: columns[metric.index], rank: rankTable(for: metric), zones: zones, sources: sources,
                               user: user, metric: metric, days: from.number...to.number, anchors: anchors).hours
    }

    /// The hour rows and the day rows they were anchored on (heart rate: no day rows).
    func rows(_ metric: Metric, from: CivilDay, to: CivilDay) -> (hours: [HourTotal], days: [DayTotal]) {
        guard from <= to else { return ([], []) }
        return HourRollup.rows(columns: columns[metric.index], rank: rankTable(for: metric), zones: zones, sources: sources,
                               user: user, metric: metric, days: from.number...to.number)
    }

    /// An in-memory ledger of these samples, for what only a ledger answers (`explain`).
    public func ledger() -> Ledger {
        precondition(!uuidsLeftOut, "a window filled by addWithoutUUID answers hours, not ledger()")
        let ledger = Ledger(priority: priority)
        for metric in Metric.allCases {
            for r in records[metric.index] {
                ledger.apply(.sampleAdded(Sample(user: user, uuid: r.uuid, metric: metric, source: sources[Int(r.source)],
                                                 start: Instant(nanoseconds: r.start), end: Instant(nanoseconds: r.end),
                                                 value: r.value, zone: zones[Int(r.zone)].identifier, version: r.version)),
                             at: r.seq)
            }
        }
        return ledger
    }

    private mutating func intern(source: String) -> Int32 {
        if let id = sourceIDs[source] { return id }
        let id = Int32(sources.count)
        sources.append(source)
        sourceIDs[source] = id
        return id
    }

    private mutating func intern(zone: String) -> Int32 {
        if let id = zoneIDs[zone] { return id }
        let id = Int32(zones.count)
        zones.append(ZoneRules.forSamples(zone))
        zoneIDs[zone] = id
        return id
    }

    /// Source id → rank (0 is best) for `metric`, as `Ledger` ranks them.
    private func rankTable(for metric: Metric) -> [Int32] { priority.rankTable(sources, for: metric) }
}
