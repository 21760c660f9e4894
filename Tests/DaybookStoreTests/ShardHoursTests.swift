import DaybookSupport
import DaybookTestSupport
@testable import DaybookStore
@testable import DaybookCore
import Foundation
import Testing

/// Hours and explanations read back from a real shard file written the projector's way (a
/// ledger cached over the shard, each batch committed with its rows), while it is open for
/// writing: they equal the in-memory ledger's, under the priority the shard records.
@Suite struct ShardHoursTests {
    let scratch = TemporaryDirectory()

    /// Writes `events` into the shard of partition 0 in `dir` in batches of `batch`, as a
    /// projector does; returns the shard (still open, so still locked).
    static func project(_ events: [Event], into dir: String, priority: SourcePriority = .builtIn, batch: Int = 3) throws -> Shard {
        let shard = try Shard(directory: dir, topic: "health-samples", partition: 0, fingerprint: priority.fingerprint)
        let ledger = Ledger(priority: priority, store: shard, cacheBudgetBytes: 0)
        var i = 0
        while i < events.count {
            let part = Array(events[i..<min(events.count, i + batch)])
            try ledger.load(for: part)
            var commit = Shard.Batch(nextOffset: Int64(i + part.count))
            var dirty = Set<DayKey>()
            for (j, e) in part.enumerated() {
                let changed = ledger.apply(e, at: Int64(i + j))
                switch e {
                case .sampleAdded(let s): if !changed.isEmpty { commit.upserts.append(.init(s, Int64(i + j))) }
                case .sampleDeleted(let u, let id): commit.deletes.append((u, SampleUUID(id)))
                case .sourceCheckedIn: break
                }
                dirty.formUnion(changed)
            }
            commit.rows = ledger.recompute(dirty)
            try shard.commit(commit)
            ledger.evictIfOverBudget()
            i += part.count
        }
        return shard
    }

    static func sample(_ uuid: String, _ source: String, _ start: String, _ end: String, _ value: Double,
                       metric: Metric = .steps, zone: String = "America/New_York", user: String = "ana") -> Event {
        .sampleAdded(Sample(user: user, uuid: uuid, metric: metric, source: source, start: try! Instant(rfc3339: start),
                            end: try! Instant(rfc3339: end), value: value, zone: zone))
    }

    static func dataDirectory(_ scratch: TemporaryDirectory) throws -> String {
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// The fall-back night of `HourTotalsTests` (America/New_York, 2026-11-01: watch 900,
    /// phone 1200, day 1500), with the phone's sample edited (1000, then 1200 in force), a
    /// phone sample deleted, another user, and a week-long manual sample ending in the
    /// night's first hour (the packs of seven days before the day are read for it).
    static let night: [Event] = [
        sample("w", "watch", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00", 900),
        sample("p", "phone", "2026-11-01T01:30:00-05:00", "2026-11-01T03:30:00-05:00", 1000),
        sample("x", "phone", "2026-11-01T05:00:00-05:00", "2026-11-01T06:00:00-05:00", 5000),
        sample("m", "manual", "2026-10-25T00:30:00-04:00", "2026-11-01T00:30:00-04:00", 10_080),
        sample("b", "watch", "2026-11-01T01:10:00-04:00", "2026-11-01T01:50:00-04:00", 400, user: "bo"),
        sample("p", "phone", "2026-11-01T01:30:00-05:00", "2026-11-01T03:30:00-05:00", 1200), // an edit: 1200 in force
        .sampleDeleted(user: "ana", uuid: "x"),
    ]

    @Test func hoursOfAShardEqualTheLedgersAndAddUpToItsRows() throws {
        let dir = try Self.dataDirectory(scratch)
        let shard = try Self.project(Self.night, into: dir)
        let path = shard.path
        let reader = ShardReader(directory: dir)
        let day = CivilDay("2026-11-01")!
        let hours = try reader.hours(inShardAt: path, user: "ana", metric: .steps, from: day, to: day)
        // The manual week, 10 080 over 7 × 24 × 60 = 10 080 minutes (1 a minute), wins
        // 00:00–00:30-04:00 of the day: 30. Day 1500 + 30 = 1530 (naive 23 580, max 10 080).
        // Hours: 00:00-04:00 manual 30 + watch 150 = 180; then as HourTotalsTests: 300, 300, 450, 300.
        #expect(hours.map { "\($0.startText) \(DayTotal.format(value($0)))" } == [
            "2026-11-01T00:00:00-04:00 180",
            "2026-11-01T01:00:00-04:00 300",
            "2026-11-01T01:00:00-05:00 300",
            "2026-11-01T02:00:00-05:00 450",
            "2026-11-01T03:00:00-05:00 300",
        ])
        let rows = try reader.totals(.init(user: "ana", metric: .steps, from: day, to: day))
        #expect(rows.map(\.jsonLine) == [#"{"user":"ana","metric":"steps","day":"2026-11-01","value":1530}"#])
        expectHoursAddUp(hours, to: rows)

        // The same from the in-memory ledger of the log, over the whole week.
        let ledger = Ledger()
        for (i, e) in Self.night.enumerated() { ledger.apply(e, at: Int64(i)) }
        let week = CivilDay("2026-10-25")!
        let stored = try reader.hours(inShardAt: path, user: "ana", metric: .steps, from: week, to: day)
        #expect(stored == ledger.hours(user: "ana", metric: .steps, from: week, to: day))
        #expect(stored.count == 7 * 24 + 1 + 4, "a whole week of hours, the repeated one twice")
        expectHoursAddUp(stored, to: try reader.totals(.init(user: "ana", metric: .steps, from: week, to: day)))
        // A snapshot answers the same; bo's hour is his own.
        let snapshot = try reader.snapshot(ofShardAt: path)
        #expect(try snapshot.hours(user: "ana", metric: .steps, from: day, to: day) == hours)
        snapshot.end()
        #expect(try reader.hours(inShardAt: path, user: "bo", metric: .steps, from: day, to: day).map(\.jsonLine) == [
            #"{"user":"bo","metric":"steps","day":"2026-11-01","start":"2026-11-01T01:00:00-04:00","end":"2026-11-01T01:00:00-05:00","value":400}"#,
        ])
        // Over every shard, as totals --bucket hour reads them.
        #expect(try reader.hours(.init(user: "ana", metric: .steps, from: day, to: day)) == hours)
        #expect(try reader.hours(.init(from: day, to: day)).map(\.key.user) == ["ana", "ana", "ana", "ana", "ana", "bo"])
        // Nothing asked, nothing read: a user the shard does not hold, a range backwards.
        #expect(try reader.hours(inShardAt: path, user: "cy", metric: .steps, from: day, to: day).isEmpty)
        #expect(try reader.hours(inShardAt: path, user: "ana", metric: .steps, from: day, to: week).isEmpty)
        _ = shard
    }

    @Test func hoursFollowThePriorityTheShardRecords() throws {
        // Phone first: the phone (1200 over 2 h) wins 01:30–03:30-05:00 whole, the watch
        // (900 over 3 h, 5 a minute) keeps 00:30-04:00 – 01:30-05:00 (2 h): 600. Day 1800.
        let dir = try Self.dataDirectory(scratch)
        let phoneFirst = SourcePriority(defaultOrder: ["phone", "watch", "manual"])
        let shard = try Self.project([Self.night[0], Self.night[5]], into: dir, priority: phoneFirst)
        let day = CivilDay("2026-11-01")!
        let hours = try ShardReader(directory: dir).hours(inShardAt: shard.path, user: "ana", metric: .steps, from: day, to: day)
        #expect(hours.map { DayTotal.format(value($0)) } == ["150", "300", "450", "600", "300"])
        expectHoursAddUp(hours, to: try ShardReader(directory: dir).totals(.init(user: "ana", metric: .steps)))
    }

    /// Hour reads take the packs without uuids, and read them again only for samples whose
    /// bounds tie (the only ones a tie-break compares uuids of): here the two phone samples
    /// of 01:00–02:00-04:00 in different packs' order, and not the watch's or the lone phone's.
    @Test func hourReadsFetchOnlyTheUUIDsOfTiedSamples() throws {
        let dir = try Self.dataDirectory(scratch)
        let events: [Event] = [
            Self.sample("p-2", "phone", "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", 100),
            Self.sample("w-1", "watch", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00", 900),
            Self.sample("p-1", "phone", "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", 100),
            Self.sample("p-3", "phone", "2026-11-01T05:00:00-05:00", "2026-11-01T06:00:00-05:00", 60),
        ]
        let shard = try Self.project(events, into: dir)
        let day = CivilDay("2026-11-01")!
        let db = try Database(path: shard.path, readOnly: true)
        var window: SampleWindow?
        try db.inReadTransaction {
            window = try StoredSamples(database: db, path: shard.path).hourWindow(user: "ana", metric: .steps, from: day, to: day)
        }
        let held = try #require(window)
        let tied = held.recordsNeedingUUIDs(.steps)
        #expect(tied.map { held.heldUUID(.steps, place: $0) }.sorted() == ["p-1", "p-2"])
        #expect(held.count == 4)
        #expect((0..<4).filter { !tied.contains($0) }.map { held.heldUUID(.steps, place: $0) } == ["", ""])
        // The watch (900 over 3 h, 5 a minute) wins; the phone hour adds nothing; p-3's hour 60.
        // Hours: 00:00-04:00 150, 01:00-04:00 300, 01:00-05:00 300, 02:00-05:00 150, 05:00-05:00 60 (day 960).
        let hours = try ShardReader(directory: dir).hours(inShardAt: shard.path, user: "ana", metric: .steps, from: day, to: day)
        #expect(hours.map { DayTotal.format(value($0)) } == ["150", "300", "300", "150", "60"])
        let ledger = Ledger()
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        #expect(hours == ledger.hours(user: "ana", metric: .steps, from: day, to: day))
        expectHoursAddUp(hours, to: try ShardReader(directory: dir).totals(.init(user: "ana", metric: .steps)))
        _ = shard
    }

    @Test func explainReadsTheShardsSamples() throws {
        let dir = try Self.dataDirectory(scratch)
        let shard = try Self.project(Self.night, into: dir)
        let key = DayKey(user: "ana", metric: .steps, day: CivilDay("2026-11-01")!)
        let e = try ShardReader(directory: dir).explain(inShardAt: shard.path, key)
        // manual 00:00–00:30-04:00, watch 00:30-04:00 – 02:30-05:00, phone to 03:30-05:00.
        #expect(e.pieces.map { "\($0.winner.uuid) \(DayTotal.format($0.contribution))" } == ["m 30", "w 900", "p 600"])
        #expect(e.pieces[1].beaten.map(\.uuid) == ["p"])
        #expect(e.total?.jsonLine == #"{"user":"ana","metric":"steps","day":"2026-11-01","value":1530}"#)
        let ledger = Ledger()
        for (i, ev) in Self.night.enumerated() { ledger.apply(ev, at: Int64(i)) }
        #expect(e.total == ledger.explain(key).total)
    }

    /// Days far from any sample (a read may ask for 9999-12-31) are no rows and an empty
    /// explanation, not an Int64 overflow of their nanosecond bounds.
    @Test func daysFarBeyondTheSamplesReadAsEmpty() throws {
        let dir = try Self.dataDirectory(scratch)
        let shard = try Self.project(Self.night, into: dir)
        let reader = ShardReader(directory: dir)
        for (from, to) in [("9999-12-25", "9999-12-31"), ("0001-01-01", "0001-01-07"), ("1800-01-01", "2026-11-01")] {
            let hours = try reader.hours(inShardAt: shard.path, user: "ana", metric: .steps, from: CivilDay(from)!, to: CivilDay(to)!)
            #expect(hours.isEmpty == (to != "2026-11-01"), "\(from)...\(to)")
        }
        let e = try reader.explain(inShardAt: shard.path, DayKey(user: "ana", metric: .steps, day: CivilDay("9999-12-31")!))
        #expect(e.pieces.isEmpty && e.total == nil)
    }

    /// Hour reads decode only the packs the shard's zones can reach, by the offsets those
    /// zones have from 1900 on: a shard naming Tokyo alone, 0 (UTC's) to +10:00 (its summer
    /// time of 1948–51); one naming Kiritimati and Pago Pago, -11:22:48 (Pago Pago's local
    /// mean time to 1911) to +14:00 (Kiritimati since 1995). Samples and instants an hour each
    /// side of the edges of today's offsets (+09:00; +14:00 and -11:00), in each zone, give
    /// the ledger's hours (which reads every sample) on every range around them.
    @Test func hourReadsNarrowTheirPacksToTheShardsZones() throws {
        let hour = Instant.nanosPerSecond * 3_600
        let pagoPagoMeanTime = -(11 * hour + Instant.nanosPerSecond * (22 * 60 + 48))
        for (zones, offsets) in [(["Asia/Tokyo"], (min: Int64(0), max: 10 * hour)),
                                 (["Pacific/Kiritimati", "Pacific/Pago_Pago"], (min: pagoPagoMeanTime, max: 14 * hour))] {
            let dir = try Self.dataDirectory(scratch)
            var events: [Event] = []
            // Around 2024-03-10 and 2024-03-12 (UTC): an hour each side of every edge.
            for (n, start) in ["2024-03-09T09:30:00Z", "2024-03-09T10:30:00Z", "2024-03-09T14:30:00Z", "2024-03-09T15:30:00Z",
                               "2024-03-09T23:30:00Z", "2024-03-10T00:30:00Z", "2024-03-12T10:30:00Z", "2024-03-12T14:30:00Z",
                               "2024-03-12T15:30:00Z", "2024-03-12T23:30:00Z", "2024-03-13T10:30:00Z", "2024-03-13T11:30:00Z"].enumerated() {
                let t = try Instant(rfc3339: start)
                let zone = zones[n % zones.count]
                events.append(.sampleAdded(Sample(user: "ana", uuid: "s\(n)", metric: .steps, source: n % 3 == 0 ? "phone" : "watch",
                                                  start: t, end: Instant(nanoseconds: t.nanoseconds + hour), value: Double(60 + n), zone: zone)))
                events.append(.sampleAdded(Sample(user: "ana", uuid: "i\(n)", metric: .steps, source: "manual",
                                                  start: t, end: t, value: 7, zone: zone)))
            }
            let shard = try Self.project(events, into: dir)
            let db = try Database(path: shard.path, readOnly: true)
            try db.inReadTransaction {
                let found = try StoredSamples(database: db, path: shard.path).zoneOffsets()
                #expect(found.min == offsets.min && found.max == offsets.max, "\(zones)")
            }
            let ledger = Ledger()
            for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
            let reader = ShardReader(directory: dir)
            for (from, to) in [("2024-03-09", "2024-03-09"), ("2024-03-10", "2024-03-12"), ("2024-03-11", "2024-03-11"),
                               ("2024-03-12", "2024-03-13"), ("2024-03-08", "2024-03-14")] {
                let hours = try reader.hours(inShardAt: shard.path, user: "ana", metric: .steps, from: CivilDay(from)!, to: CivilDay(to)!)
                #expect(hours == ledger.hours(user: "ana", metric: .steps, from: CivilDay(from)!, to: CivilDay(to)!), "\(zones) \(from)...\(to)")
            }
            _ = shard
        }
    }

    func value(_ h: HourTotal) -> Double {
        if case .cumulative(let v, _) = h.summary { return v }
        return .nan
    }
}

/// The printed hours of each day add up to its printed row (cumulative rows only here).
func expectHoursAddUp(_ hours: [HourTotal], to days: [DayTotal], sourceLocation: SourceLocation = #_sourceLocation) {
    for day in days {
        guard case .cumulative(let value, _) = day.summary else { continue }
        let sum = hours.filter { $0.key == day.key }.reduce(Decimal(0)) { total, h in
            guard case .cumulative(let v, _) = h.summary else { return total }
            return total + Decimal(string: DayTotal.format(v))!
        }
        #expect(sum == Decimal(string: DayTotal.format(value))!, "\(day.jsonLine): hours add up to \(sum)", sourceLocation: sourceLocation)
    }
}
