@testable import DaybookCore
import DaybookSupport
import Foundation
import DaybookTestSupport
import Testing

/// Seeded random logs checked against a slow reference, and the ledger against itself.
@Suite struct PropertyTests {
    static let seeds = Array(1...60).map(UInt64.init)

    @Test(arguments: seeds)
    func batchMatchesTheReference(seed: UInt64) {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let ledger = Ledger(priority: LogGenerator.priority)
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        let actual = ledger.allTotals()
        let expected = Reference(priority: LogGenerator.priority).totals(events)
        #expect(Set(actual.map { "\($0.key)" }) == Set(expected.keys), "rows differ (seed \(seed))")
        for row in actual {
            guard let want = expected["\(row.key)"] else { continue }
            switch (row.summary, want) {
            case (.cumulative(let v, _), .cumulative(let w, _)):
                #expect(abs(v - w) <= 1e-6 * max(1, abs(w)), "\(row.key): \(v) vs reference \(w) (seed \(seed))")
            case (.discrete(let a, let b, let c, let d, let l), .discrete(let e, let f, let g, let h, let m)):
                #expect(a == e && b == f && abs(c - g) < 1e-9 && d == h && l == m, "\(row.key) (seed \(seed))")
            default:
                Issue.record("\(row.key): kinds differ (seed \(seed))")
            }
        }
    }

    @Test(arguments: seeds)
    func incrementalEqualsBatchAtEveryCheckpoint(seed: UInt64) {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let incremental = Ledger(priority: LogGenerator.priority)
        var rows: [DayKey: DayTotal] = [:]
        for (i, e) in events.enumerated() {
            for (key, total) in incremental.recompute(incremental.apply(e, at: Int64(i))) { rows[key] = total }
            if i % 5 == 4 || i == events.count - 1 {
                let batch = Ledger(priority: LogGenerator.priority)
                for (j, f) in events.prefix(i + 1).enumerated() { batch.apply(f, at: Int64(j)) }
                #expect(rows.values.sorted { $0.key < $1.key } == batch.allTotals(), "after event \(i) (seed \(seed))")
            }
        }
    }

    @Test(arguments: seeds)
    func deliveringAnEventTwiceChangesNothing(seed: UInt64) {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let once = totals(events)
        var rng = SplitMix64(seed: seed ^ 0xD0D0)
        for _ in 0..<5 {
            let i = Int(rng.next() % UInt64(events.count))
            var twice = events
            twice.insert(events[i], at: i + 1) // a redelivery right behind the original
            #expect(totals(twice) == once, "event \(i) twice in a row (seed \(seed))")
            // A late redelivery, when nothing after it touched the same sample.
            if !events[(i + 1)...].contains(where: { $0.user == events[i].user && $0.uuid == events[i].uuid }) {
                var late = events
                late.append(events[i])
                #expect(totals(late) == once, "event \(i) again at the end (seed \(seed))")
            }
        }
    }

    /// The totals are a function of the current version of each sample: any order of the
    /// log that keeps each (user, uuid)'s own events in order gives the same rows, to the
    /// bit — same-source overlaps, versions, stale re-sends, edits and deletions included.
    @Test(arguments: seeds)
    func anyOrderKeepingEachSampleInOrderGivesIdenticalTotals(seed: UInt64) {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        let original = totals(events)
        var rng = SplitMix64(seed: seed ^ 0xBEEF)
        for _ in 0..<5 {
            let permuted = LogGenerator.permuteKeepingEachSampleInOrder(events, rng: &rng)
            #expect(totals(permuted) == original, "seed \(seed)")
        }
    }

    /// A producer that publishes its whole log again (a retry of everything) changes nothing.
    @Test(arguments: seeds)
    func aLogPublishedTwiceEqualsItPublishedOnce(seed: UInt64) {
        var generator = LogGenerator(seed: seed)
        let events = generator.log()
        #expect(totals(events + events) == totals(events), "seed \(seed)")
    }

    func totals(_ events: [Event]) -> [DayTotal] {
        let ledger = Ledger(priority: LogGenerator.priority)
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        return ledger.allTotals()
    }
}

extension DayTotal {
    func approximatelyEquals(_ other: DayTotal) -> Bool {
        guard key == other.key else { return false }
        switch (summary, other.summary) {
        case (.cumulative(let a, _), .cumulative(let b, _)): return abs(a - b) <= 1e-9 * max(1, abs(b))
        case (.discrete(let a, let b, let c, let d, let l), .discrete(let e, let f, let g, let h, let m)):
            return a == e && b == f && abs(c - g) <= 1e-9 * max(1, abs(g)) && d == h && l == m
        default: return false
        }
    }
}

/// Random logs around DST transitions: several sources and zones, same-source overlaps,
/// edits (a higher version, the same version, or a stale re-send of a lower one),
/// deletions, re-sends after deletion, exact redeliveries, instants, samples across midnight.
/// All times are whole minutes so that the reference can discretise per minute exactly.
struct LogGenerator {
    static let priority = SourcePriority(defaultOrder: ["watch", "phone", "manual"], perMetric: [.distance: ["phone", "watch"]])
    static let sources = ["watch", "phone", "manual", "zed", "abe"]
    static let zones = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "UTC"]
    /// Midnights (UTC) of days around transitions in the zones above.
    static let anchors: [Int64] = ["2024-03-31", "2024-03-10", "2024-04-07", "2024-09-08", "2024-10-27", "2024-11-03"]
        .map { Int64(CivilDay($0)!.number) * 86_400 }

    var rng: SplitMix64
    private var counter = 0

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func log() -> [Event] {
        let windowStart = LogGenerator.anchors[rng.below(LogGenerator.anchors.count)] - 86_400
        let minutes = 3 * 24 * 60
        let count = 10 + rng.below(50)
        var events: [Event] = []
        var samples: [Sample] = []
        var deletedUUIDs: [(String, String)] = []

        func fresh(user: String, uuid: String) -> Sample {
            // Every aggregation: priority_sum (steps, distance), sum (water), duration_priority
            // (exercise time) and discrete (heart rate, resting heart rate).
            let metricRoll = rng.below(20)
            let metric: Metric = metricRoll < 8 ? .steps : metricRoll < 11 ? .distance : metricRoll < 13 ? .water
                : metricRoll < 15 ? .exerciseTime : metricRoll < 18 ? .heartRate : .restingHeartRate
            let source = LogGenerator.sources[rng.below(LogGenerator.sources.count)]
            let zone = rng.below(5) == 0 ? LogGenerator.zones[rng.below(LogGenerator.zones.count)]
                : LogGenerator.zones[user == "u1" ? 0 : 2 + Int(windowStart / 86_400 % 3)]
            let start = windowStart + Int64(rng.below(minutes)) * 60
            let length: Int64 = rng.below(5) == 0 ? 0 : Int64(1 + (rng.below(4) == 0 ? rng.below(2000) : rng.below(240))) * 60
            var value = Double(rng.below(1000))
            if !metric.isCumulative { value += 30 }
            return Sample(user: user, uuid: uuid, metric: metric, source: source,
                          start: Instant(seconds: start), end: Instant(seconds: start + length), value: value, zone: zone)
        }

        while events.count < count {
            let user = rng.below(3) == 0 ? "u2" : "u1"
            let roll = rng.below(100)
            if roll < 65 || samples.isEmpty {
                counter += 1
                let s = fresh(user: user, uuid: "s\(counter)")
                samples.append(s)
                events.append(.sampleAdded(s))
            } else if roll < 77 {
                // Edit: same uuid, new value (and new times, unless the metric's kind would
                // change), at a higher version, the same version, or a lower one (a stale re-send).
                let k = rng.below(samples.count)
                var s = samples[k]
                let version = s.version
                let moved = fresh(user: s.user, uuid: s.uuid)
                if moved.metric.isCumulative == s.metric.isCumulative {
                    s = moved
                } else {
                    s.value = Double(rng.below(1000)) + (s.metric.isCumulative ? 0 : 30)
                }
                let versionRoll = rng.below(10)
                s.version = versionRoll < 5 ? version + 1 + Int64(rng.below(3)) : versionRoll < 8 ? version : max(0, version - 1)
                if s.version >= version { samples[k] = s }
                events.append(.sampleAdded(s))
            } else if roll < 88 {
                let s = samples[rng.below(samples.count)]
                events.append(.sampleDeleted(user: s.user, uuid: s.uuid))
                deletedUUIDs.append((s.user, s.uuid))
            } else if roll < 94, !deletedUUIDs.isEmpty {
                // A retry that tries to resurrect a deleted sample.
                let (u, id) = deletedUUIDs[rng.below(deletedUUIDs.count)]
                if var s = samples.first(where: { $0.user == u && $0.uuid == id }) {
                    s.value += 1
                    events.append(.sampleAdded(s))
                }
            } else if let e = events.randomElement(using: &rng) {
                events.append(e) // an exact redelivery
            }
        }
        return events
    }

    /// A random order in which each sample's own events keep their relative order.
    static func permuteKeepingEachSampleInOrder(_ events: [Event], rng: inout SplitMix64) -> [Event] {
        var slots = Array(events.indices)
        for i in stride(from: slots.count - 1, to: 0, by: -1) { slots.swapAt(i, rng.below(i + 1)) }
        var positions: [String: [Int]] = [:]
        for (slot, original) in slots.enumerated() {
            let e = events[original]
            positions["\(e.user)|\(e.uuid ?? "")", default: []].append(slot)
        }
        var out = events
        var next: [String: Int] = [:]
        var sortedPositions = positions.mapValues { $0.sorted() }
        for e in events {
            let key = "\(e.user)|\(e.uuid ?? "")"
            let k = next[key, default: 0]
            out[sortedPositions[key]![k]] = e
            next[key] = k + 1
        }
        sortedPositions.removeAll()
        return out
    }
}


/// The rules of Guides/Dedupe.md written the slow, obvious way: replay the log into a map,
/// then walk every minute and every instant. Civil days come from Foundation's Calendar,
/// not from `ZoneRules`, so the two are checked against each other.
struct Reference {
    let priority: SourcePriority
    private var calendars: [String: Calendar] = [:]

    init(priority: SourcePriority) { self.priority = priority }

    mutating func day(_ seconds: Int64, _ zone: String) -> String {
        if calendars[zone] == nil {
            var c = Calendar(identifier: .gregorian)
            c.timeZone = TimeZone(identifier: zone)!
            calendars[zone] = c
        }
        let parts = calendars[zone]!.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    func totals(_ events: [Event]) -> [String: DaySummary] {
        var copy = self
        return copy.compute(events)
    }

    private mutating func compute(_ events: [Event]) -> [String: DaySummary] {
        var live: [String: (sample: Sample, seq: Int)] = [:]
        var tombstones: Set<String> = []
        for (i, e) in events.enumerated() {
            let key = "\(e.user)|\(e.uuid ?? "")"
            switch e {
            case .sampleAdded(let s):
                if tombstones.contains(key) { continue }
                if let old = live[key], old.sample == s || s.version < old.sample.version { continue }
                live[key] = (s, i)
            case .sampleDeleted:
                tombstones.insert(key)
                live[key] = nil
            case .sourceCheckedIn:
                continue
            }
        }
        var sums: [String: Double] = [:]
        var heart: [String: [(Int, Double)]] = [:]
        var latest: [String: Sample] = [:]
        let all = Array(live.values)
        // Rank, then version, start, end, value, uuid bytes: never the log position.
        func better(_ a: (sample: Sample, seq: Int), _ b: (sample: Sample, seq: Int)) -> Bool {
            let x = a.sample, y = b.sample
            if x.source != y.source { return priority.ranks(x.source, above: y.source, for: x.metric) }
            if x.version != y.version { return x.version > y.version }
            if x.start != y.start { return x.start > y.start }
            if x.end != y.end { return x.end > y.end }
            if x.value != y.value { return x.value > y.value }
            return Array(y.uuid.utf8).lexicographicallyPrecedes(Array(x.uuid.utf8))
        }
        for user in Set(all.map(\.sample.user)) {
            for metric in Metric.allCases {
                let mine = all.filter { $0.sample.user == user && $0.sample.metric == metric }
                guard !mine.isEmpty else { continue }
                if !metric.isCumulative {
                    for m in mine {
                        let k = "\(user)/\(metric.rawValue)/\(day(m.sample.start.nanoseconds / 1_000_000_000, m.sample.zone))"
                        heart[k, default: []].append((m.seq, m.sample.value))
                        // The latest: the sample last by start, then end, then uuid.
                        if let l = latest[k], (l.start, l.end, l.uuid) >= (m.sample.start, m.sample.end, m.sample.uuid) {} else { latest[k] = m.sample }
                    }
                    continue
                }
                // priority_sum: the best covering sample's value pro rata; sum: every covering
                // sample's; duration_priority: the minute itself, to the best's day.
                let everySample = metric.countsEverySample, countsTime = metric.countsTime
                let intervals = mine.filter { !$0.sample.isInstant }
                let lo = mine.map { $0.sample.start.nanoseconds / 1_000_000_000 }.min()!
                let hi = mine.map { $0.sample.end.nanoseconds / 1_000_000_000 }.max()!
                var t = lo
                while t < hi {
                    let covering = intervals.filter { $0.sample.start.nanoseconds / 1_000_000_000 <= t && t < $0.sample.end.nanoseconds / 1_000_000_000 }
                    if everySample {
                        for c in covering {
                            let minutes = Double(c.sample.end.nanoseconds - c.sample.start.nanoseconds) / 60e9
                            sums["\(user)/\(metric.rawValue)/\(day(t, c.sample.zone))", default: 0] += c.sample.value / minutes
                        }
                    } else if var best = covering.first {
                        for c in covering.dropFirst() where better(c, best) { best = c }
                        let minutes = Double(best.sample.end.nanoseconds - best.sample.start.nanoseconds) / 60e9
                        sums["\(user)/\(metric.rawValue)/\(day(t, best.sample.zone))", default: 0] += countsTime ? 1 : best.sample.value / minutes
                    }
                    t += 60
                }
                for p in mine where p.sample.isInstant {
                    let at = p.sample.start
                    let shadowedByInterval = intervals.contains {
                        $0.sample.start <= at && at < $0.sample.end
                            && priority.ranks($0.sample.source, above: p.sample.source, for: metric)
                    }
                    let outranked = mine.contains { $0.sample.isInstant && $0.sample.start == at && $0.sample.uuid != p.sample.uuid && better($0, p) }
                    // sum: every instant counts; duration_priority: a counted instant covers no
                    // time, but its day has a row (of 0).
                    if everySample || (!shadowedByInterval && !outranked) {
                        sums["\(user)/\(metric.rawValue)/\(day(at.nanoseconds / 1_000_000_000, p.sample.zone))", default: 0] += countsTime ? 0 : p.sample.value
                    }
                }
            }
        }
        var out: [String: DaySummary] = sums.mapValues { .cumulative(value: $0, sources: []) }
        for (k, values) in heart {
            let v = values.sorted { $0.0 < $1.0 }.map(\.1)
            out[k] = .discrete(min: v.min()!, max: v.max()!, average: v.reduce(0, +) / Double(v.count), count: v.count, latest: latest[k]?.value)
        }
        return out
    }
}
