/// A sample as the resolver sees it: interned, ranked, and stamped with its log position.
struct Record {
    var start: Int64
    var end: Int64
    var value: Double
    /// Log position of the version in force: the record's identity in the ledger, never an
    /// input to the arithmetic (the totals do not depend on where in the log a sample sits).
    var seq: Int64
    /// The producer's version of the sample (`Sample.version`).
    var version: Int64
    /// Interned source id (index into the ledger's source table).
    var source: Int32
    /// Interned zone id (index into the ledger's zone table).
    var zone: Int32
    /// The uuid, 16 bytes when canonical: a record holds no String to retain or hash.
    var uuid: SampleUUID
    /// Whether a cached ledger names the uuid in its user's uuid map; false for a record a
    /// load read back from the store (eviction then has no entry to remove). In the padding
    /// after `uuid`: the record stays 72 bytes.
    var named = true

    var isInstant: Bool { start == end }

    /// The tie-break between two samples of the same rank: the higher version, then the
    /// later start, the later end, the larger value, the greater uuid (UTF-8 byte order).
    /// Health Connect's order (lastModifiedTime, start, end, value) made total by the uuid,
    /// so the winner is a function of the samples alone, never of their order in the log.
    @inline(__always)
    func outranksAtSameRank(_ other: Record) -> Bool {
        if version != other.version { return version > other.version }
        if start != other.start { return start > other.start }
        if end != other.end { return end > other.end }
        if value != other.value { return value > other.value }
        return other.uuid < uuid
    }

    /// A fixed order of the samples of one (user, metric) that does not depend on the log:
    /// by start, end and uuid (unique among them). Sums run in this order, so that any two
    /// computations of a day agree to the bit.
    @inline(__always)
    func precedesInSumOrder(_ other: Record) -> Bool {
        if start != other.start { return start < other.start }
        if end != other.end { return end < other.end }
        return uuid < other.uuid
    }

    /// A discrete metric's figures (min, max, mean, count, latest) of the records at
    /// `indices` (not empty), summed in the sum order so that any two computations agree to
    /// the bit: a day's row and an hour's row alike. The latest is the last in that order
    /// (start, end, uuid): the same sample whatever order the records came in.
    static func discreteSummary(_ records: [Record], _ indices: [Int]) -> DaySummary {
        let ordered = indices.sorted { records[$0].precedesInSumOrder(records[$1]) }
        var lo = Double.infinity, hi = -Double.infinity, sum = 0.0
        for i in ordered {
            lo = min(lo, records[i].value)
            hi = max(hi, records[i].value)
            sum += records[i].value
        }
        return .discrete(min: lo, max: hi, average: sum / Double(ordered.count), count: ordered.count,
                         latest: ordered.last.map { records[$0].value })
    }
}

/// A stretch of the timeline won by one interval sample.
struct Run {
    var start: Int64
    var end: Int64
    /// Index of the winning record.
    var winner: Int
}

/// What happened to an instantaneous sample.
struct InstantOutcome {
    var record: Int
    /// The record that shadowed it (an interval of a higher-ranked source, or a better
    /// instant at the same moment); nil when it counts.
    var shadowedBy: Int?
}

/// Resolves overlapping samples of one user and one cumulative metric into the parts of
/// the timeline each sample wins, and attributes them to civil days.
///
/// Rules (see `Guides/Dedupe.md`): every instant of time is won by exactly one covering
/// interval sample, the highest-ranked, then by `Record.outranksAtSameRank` (version,
/// start, end, value, uuid); the winner contributes
/// `value × piece / its length`. An instantaneous sample counts in full unless an interval
/// of a strictly higher-ranked source covers it or a better instant shares its moment.
///
/// Complexity: O(n log n) for n records (a sort, and a binary heap whose top is the
/// current winner; entries whose end has passed are dropped lazily when they surface),
/// plus O(r + d) for r runs and d civil-day pieces.
struct TimelineResolver {
    let records: [Record]
    /// Rank of each record's source: lower is better.
    let rank: (Int32) -> Int32

    /// True when record `a` beats record `b` for a piece of timeline.
    @inline(__always)
    func beats(_ a: Int, _ b: Int) -> Bool {
        let ra = rank(records[a].source), rb = rank(records[b].source)
        if ra != rb { return ra < rb }
        return records[a].outranksAtSameRank(records[b])
    }

    /// The runs of the timeline, in time order, with adjacent runs of one winner merged.
    func runs() -> [Run] {
        var order: [Int] = []
        order.reserveCapacity(records.count)
        for i in records.indices where !records[i].isInstant { order.append(i) }
        order.sort { records[$0].start < records[$1].start }

        var runs: [Run] = []
        runs.reserveCapacity(order.count) // about one run per interval: growing it cost a tenth of this function
        var heap = WinnerHeap(resolver: self)
        var next = 0
        var t = Int64.min
        while next < order.count || !heap.isEmpty {
            if heap.isEmpty { t = records[order[next]].start }
            while next < order.count, records[order[next]].start <= t {
                heap.push(order[next])
                next += 1
            }
            while let top = heap.top, records[top].end <= t { heap.pop() }
            guard let winner = heap.top else { continue }
            var until = records[winner].end
            if next < order.count { until = min(until, records[order[next]].start) }
            if let last = runs.last, last.winner == winner, last.end == t {
                runs[runs.count - 1].end = until
            } else {
                runs.append(Run(start: t, end: until, winner: winner))
            }
            t = until
        }
        return runs
    }

    /// The runs and instants of a metric every sample of which counts (`Aggregation.sum`:
    /// water, nutrition): each interval sample is a run of its own over its whole span, runs
    /// overlap, and every instant counts in full. `DayAttribution` then gives each sample's
    /// value to the days (and hours) it spans, pro rata, as it does a winner's.
    static func everySample(_ records: [Record]) -> (runs: [Run], instants: [InstantOutcome]) {
        var runs: [Run] = []
        var instants: [InstantOutcome] = []
        for i in records.indices {
            if records[i].isInstant {
                instants.append(InstantOutcome(record: i, shadowedBy: nil))
            } else {
                runs.append(Run(start: records[i].start, end: records[i].end, winner: i))
            }
        }
        return (runs, instants)
    }

    /// The runs and instant outcomes of `records` under `metric`'s aggregation: deduplicated
    /// by rank (`priority_sum`, `duration_priority`), or every sample (`sum`).
    func resolve(_ metric: Metric) -> (runs: [Run], instants: [InstantOutcome]) {
        if metric.countsEverySample { return TimelineResolver.everySample(records) }
        let runs = runs()
        return (runs, instants(runs: runs))
    }

    /// Decides each instantaneous sample against the runs and against the other instants.
    func instants(runs: [Run]) -> [InstantOutcome] {
        var order: [Int] = []
        for i in records.indices where records[i].isInstant { order.append(i) }
        guard !order.isEmpty else { return [] }
        // Same moment: the best instant first.
        order.sort { a, b in
            records[a].start != records[b].start ? records[a].start < records[b].start : beats(a, b)
        }
        var outcomes: [InstantOutcome] = []
        outcomes.reserveCapacity(order.count)
        var r = 0
        var best: Int? = nil
        for i in order {
            let t = records[i].start
            if let b = best, records[b].start == t {
                outcomes.append(InstantOutcome(record: i, shadowedBy: b))
                continue
            }
            best = i
            while r < runs.count, runs[r].end <= t { r += 1 }
            if r < runs.count, runs[r].start <= t, rank(records[runs[r].winner].source) < rank(records[i].source) {
                outcomes.append(InstantOutcome(record: i, shadowedBy: runs[r].winner))
            } else {
                outcomes.append(InstantOutcome(record: i, shadowedBy: nil))
            }
        }
        return outcomes
    }
}

/// A binary max-heap of record indices ordered by `TimelineResolver.beats`.
struct WinnerHeap {
    let resolver: TimelineResolver
    var items: [Int] = []

    init(resolver: TimelineResolver) { self.resolver = resolver }

    var isEmpty: Bool { items.isEmpty }
    var top: Int? { items.first }

    mutating func push(_ x: Int) {
        items.append(x)
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) >> 1
            guard resolver.beats(items[i], items[p]) else { break }
            items.swapAt(i, p)
            i = p
        }
    }

    mutating func pop() {
        let last = items.removeLast()
        guard !items.isEmpty else { return }
        items[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count, resolver.beats(items[l], items[m]) { m = l }
            if r < items.count, resolver.beats(items[r], items[m]) { m = r }
            if m == i { return }
            items.swapAt(i, m)
            i = m
        }
    }
}

/// Collects what each record contributes to each civil day, then sums per day in a fixed
/// order (`Record.precedesInSumOrder`) so that any two computations of a day agree to the bit.
struct DayAttribution {
    /// (day, record, nanoseconds); nanoseconds == -1 marks an instant counted in full.
    private var pieces: [(day: Int32, record: Int, nanos: Int64)] = []

    mutating func add(day: Int32, record: Int, nanos: Int64) { pieces.append((day, record, nanos)) }

    /// Attributes runs and counted instants to days of each winner's own zone.
    /// `include` filters days (nil: all days).
    mutating func attribute(runs: [Run], instants: [InstantOutcome], records: [Record],
                            zones: [ZoneRules], include: ((Int32) -> Bool)?) {
        pieces.reserveCapacity(runs.count + instants.count)
        for run in runs {
            let r = records[run.winner]
            zones[Int(r.zone)].forEachDay(from: run.start, to: run.end) { day, nanos in
                if include?(day.number) ?? true { pieces.append((day.number, run.winner, nanos)) }
            }
        }
        for outcome in instants where outcome.shadowedBy == nil {
            let r = records[outcome.record]
            let day = zones[Int(r.zone)].day(of: Instant(nanoseconds: r.start)).number
            if include?(day) ?? true { pieces.append((day, outcome.record, -1)) }
        }
    }

    /// What a sample contributes to a day or an hour: its value pro rata of the `nanos` of its
    /// span there (or whole, an instant), or, for a metric that counts time
    /// (`Metric.countsTime`), those minutes themselves (an instant covers none).
    @inline(__always)
    static func contribution(value: Double, start: Int64, end: Int64, nanos: Int64, whole: Bool, countsTime: Bool) -> Double {
        if countsTime { return whole ? 0 : Double(nanos) / 60e9 }
        return whole ? value : value * (Double(nanos) / Double(end - start))
    }

    /// Per day: the total and per-source contributions (in source-id order).
    func totals(records: [Record], countsTime: Bool = false) -> [(day: Int32, value: Double, bySource: [(source: Int32, value: Double)])] {
        let sorted = pieces.sorted { a, b in
            a.day != b.day ? a.day < b.day : records[a.record].precedesInSumOrder(records[b.record])
        }
        var out: [(day: Int32, value: Double, bySource: [(source: Int32, value: Double)])] = []
        var i = 0
        while i < sorted.count {
            let day = sorted[i].day
            var total = 0.0
            var bySource: [(source: Int32, value: Double)] = []
            while i < sorted.count, sorted[i].day == day {
                let index = sorted[i].record
                let r = records[index]
                var nanos: Int64 = 0
                var whole = false
                while i < sorted.count, sorted[i].day == day, sorted[i].record == index {
                    if sorted[i].nanos < 0 { whole = true } else { nanos += sorted[i].nanos }
                    i += 1
                }
                let contribution = DayAttribution.contribution(value: r.value, start: r.start, end: r.end, nanos: nanos, whole: whole,
                                                               countsTime: countsTime)
                total += contribution
                if let k = bySource.firstIndex(where: { $0.source == r.source }) {
                    bySource[k].value += contribution
                } else {
                    bySource.append((r.source, contribution))
                }
            }
            out.append((day, total, bySource))
        }
        return out
    }
}
