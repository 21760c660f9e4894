@testable import DaybookCore
import DaybookSupport
import Foundation
import Testing

/// Seeded random logs around DST nights in whole-, half- and quarter-hour zones, with
/// overlapping sources, of every aggregation: the printed hours of every day add up to its printed row, each
/// hour's shares to its value, and a window of the samples gives the ledger's hours.
@Suite struct HourPropertyTests {
    static let zones = ["America/New_York", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe", "Europe/Berlin", "UTC", "Pacific/Chatham"]
    /// UTC midnights of days around transitions of the zones above (2026).
    static let anchors: [Int64] = ["2026-03-08", "2026-11-01", "2026-04-05", "2026-10-04", "2026-03-29", "2026-09-27"]
        .map { Int64(CivilDay($0)!.number) * Instant.nanosPerDay }
    static let sources = ["watch", "phone", "manual"]

    static func log(seed: UInt64) -> [Event] {
        var rng = SplitMix64(seed: seed)
        let base = anchors[rng.below(anchors.count)] - Instant.nanosPerDay
        var events: [Event] = []
        for n in 0..<(20 + rng.below(60)) {
            // Every aggregation: priority_sum (steps, distance), sum (water), duration_priority
            // (exercise time), discrete (heart rate, body mass).
            let roll = rng.below(20)
            let metric: Metric = roll < 4 ? .heartRate : roll < 5 ? .bodyMass : roll < 8 ? .distance : roll < 10 ? .water
                : roll < 12 ? .exerciseTime : .steps
            let start = base + Int64(rng.below(3 * 24 * 60)) * 60 * Instant.nanosPerSecond + Int64(rng.below(60)) * Instant.nanosPerSecond
            let length: Int64 = !metric.isCumulative || rng.below(6) == 0 ? 0
                : Int64(1 + (rng.below(5) == 0 ? rng.below(3000) : rng.below(180))) * 60 * Instant.nanosPerSecond + Int64(rng.below(7)) * 1_000_000
            // Values with fractions that no power of ten holds exactly (sevenths).
            let value = !metric.isCumulative ? Double(40 + rng.below(150)) : Double(rng.below(100_000)) / 7
            let user = rng.below(3) == 0 ? "bo" : "ana"
            events.append(.sampleAdded(Sample(user: user, uuid: "s\(n)", metric: metric, source: sources[rng.below(sources.count)],
                                              start: Instant(nanoseconds: start), end: Instant(nanoseconds: start + length),
                                              value: value, zone: zones[rng.below(zones.count)])))
        }
        return events
    }

    @Test(arguments: Array(UInt64(1)...120))
    func hoursOfEachDayAddUpToItsRow(seed: UInt64) {
        let events = Self.log(seed: seed)
        let ledger = Ledger()
        var windows = ["ana": SampleWindow(user: "ana", priority: .builtIn), "bo": SampleWindow(user: "bo", priority: .builtIn)]
        for (i, e) in events.enumerated() {
            ledger.apply(e, at: Int64(i))
            if case .sampleAdded(let s) = e { windows[s.user]?.add(s, seq: Int64(i)) }
        }
        let rows = ledger.allTotals()
        guard let low = rows.map(\.key.day).min(), let high = rows.map(\.key.day).max() else { return }
        let range = low...high
        var pick = SplitMix64(seed: seed ^ 0xB0)
        for user in ["ana", "bo"] {
            for metric in Metric.allCases {
                let days = rows.filter { $0.key.user == user && $0.key.metric == metric }
                let hours = ledger.hours(user: user, metric: metric, from: range.lowerBound, to: range.upperBound)
                expectHoursAddUp(hours, to: days, in: range)
                #expect(windows[user]!.hours(metric, from: range.lowerBound, to: range.upperBound) == hours, "window (seed \(seed))")
                // One day asked alone gives that day's hours of the whole range.
                if let day = days.randomElement(using: &pick) {
                    #expect(ledger.hours(user: user, metric: metric, from: day.key.day, to: day.key.day) == hours.filter { $0.key.day == day.key.day },
                            "\(day.key) alone (seed \(seed))")
                }
                // A civil hour lasts at most an hour (less beside an offset change).
                for h in hours {
                    #expect(h.end > h.start && h.end.nanoseconds - h.start.nanoseconds <= ZoneRules.nanosPerHour, "\(h.jsonLine) (seed \(seed))")
                }
            }
        }
    }

    /// The order hour pieces are summed in: equal to sorting them all by (hour, the records'
    /// sum order), whether they come by hour (pieces of one zone's runs; groups above and
    /// below the 32 pieces where a group is sorted instead of insertion-sorted) or not.
    @Test(arguments: Array(UInt64(1)...40))
    func piecesAreOrderedAsAFullSortWouldOrderThem(seed: UInt64) {
        var rng = SplitMix64(seed: seed ^ 0x9_1ECE5)
        let hourNanos: Int64 = 3_600 * Instant.nanosPerSecond
        // Records with few distinct bounds (ties on start and end are told apart by uuid).
        let records = (0..<60).map { i -> Record in
            let start = Int64(rng.next() % 8) * 600 * Instant.nanosPerSecond
            let end = start + Int64(1 + rng.next() % 3) * 600 * Instant.nanosPerSecond
            return Record(start: start, end: end, value: 1, seq: Int64(i), version: 0, source: 0, zone: 0, uuid: SampleUUID("u\(rng.next() % 1000)-\(i)"))
        }
        var pieces: [(hour: HourRollup.HourKey, record: Int, nanos: Int64)] = []
        let hours = 1 + Int(rng.next() % 4)
        for h in 0..<hours {
            let key = HourRollup.HourKey(day: 0, start: Int64(h) * hourNanos, end: Int64(h + 1) * hourNanos, zone: 0)
            let count = seed % 5 == 0 && h == 0 ? 45 : Int(rng.next() % 12) // one hour above 32 pieces now and then
            for _ in 0..<count { pieces.append((key, Int(rng.next() % UInt64(records.count)), Int64(rng.next() % 100))) }
        }
        if seed % 3 == 0 { pieces.shuffle(using: &rng) } // not by hour: the whole-array path
        var ordered = pieces
        HourRollup.orderBySumOrder(&ordered, records: records)
        var rank = [Int](repeating: 0, count: records.count)
        for (place, index) in records.indices.sorted(by: { records[$0].precedesInSumOrder(records[$1]) }).enumerated() { rank[index] = place }
        let expected = pieces.sorted { a, b in a.hour != b.hour ? a.hour < b.hour : rank[a.record] < rank[b.record] }
        // Pieces of one record in one hour may come in either order (they add up as integers).
        func key(_ p: [(hour: HourRollup.HourKey, record: Int, nanos: Int64)]) -> [String] { p.map { "\($0.hour.start) \($0.record)" } }
        #expect(key(ordered) == key(expected))
        #expect(ordered.map(\.nanos).reduce(0, +) == pieces.map(\.nanos).reduce(0, +))
    }
}
