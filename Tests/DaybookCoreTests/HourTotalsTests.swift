@testable import DaybookCore
import DaybookSupport
import Foundation
import Testing

/// A printed number (`DayTotal.format`) as an exact decimal, so sums are checked as printed.
func printed(_ value: Double) -> Decimal { Decimal(string: DayTotal.format(value))! }

/// Hour rows of each hand-built fixture, each checked against its day rows: the printed
/// hours of a day add up to the printed day, each hour's shares to its value.
@Suite struct HourTotalsTests {
    /// The hours of `events` on `from`…`to`, with the day rows, after checking that the
    /// hours of every day sum to its row and an in-store window gives the same rows.
    func hours(_ events: [Event], metric: Metric = .steps, from: String, to: String,
               sourceLocation: SourceLocation = #_sourceLocation) -> (hours: [HourTotal], days: [DayTotal]) {
        let ledger = Ledger()
        var window = SampleWindow(user: "ana", priority: .builtIn)
        for (i, e) in events.enumerated() {
            ledger.apply(e, at: Int64(i))
            if case .sampleAdded(let s) = e { window.add(s, seq: Int64(i)) }
        }
        let hours = ledger.hours(user: "ana", metric: metric, from: CivilDay(from)!, to: CivilDay(to)!)
        let days = ledger.allTotals().filter { $0.key.metric == metric }
        #expect(window.hours(metric, from: CivilDay(from)!, to: CivilDay(to)!) == hours, "the window differs from the ledger", sourceLocation: sourceLocation)
        expectHoursAddUp(hours, to: days, in: CivilDay(from)!...CivilDay(to)!, sourceLocation: sourceLocation)
        return (hours, days)
    }

    /// "start → end value" for each hour, with shares: what the fixtures compare.
    func lines(_ hours: [HourTotal]) -> [String] {
        hours.map { h in
            switch h.summary {
            case .cumulative(let v, let shares):
                return "\(h.startText) \(h.endText) \(DayTotal.format(v)) " + shares.map { "\($0.source)=\(DayTotal.format($0.value))" }.joined(separator: ",")
            case .discrete(let lo, let hi, let avg, let n, let latest):
                return "\(h.startText) \(h.endText) \(DayTotal.format(lo))/\(DayTotal.format(hi))/\(DayTotal.format(avg))/\(n) latest \(DayTotal.format(latest))"
            }
        }
    }

    @Test func aFallBackNightHasTwoOneOClockHours() {
        // America/New_York, 2026-11-01: 02:00 EDT (06:00Z) becomes 01:00 EST.
        // watch 00:30-04:00 → 02:30-05:00 (04:30Z–07:30Z, 3 h) 900: 5 a minute.
        // phone 01:30-05:00 → 03:30-05:00 (06:30Z–08:30Z, 2 h) 1200: 10 a minute; it wins
        // only 07:30Z–08:30Z (the watch outranks it): 600. Day 900 + 600 = 1500 (naive 2100, max 1200).
        // Hours: 00:00-04:00 30 min watch 150; 01:00-04:00 watch 300; 01:00-05:00 watch 300;
        // 02:00-05:00 watch 30 min 150 + phone 30 min 300 = 450; 03:00-05:00 phone 30 min 300.
        let events = [
            added("w", "watch", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00", 900, zone: "America/New_York"),
            added("p", "phone", "2026-11-01T01:30:00-05:00", "2026-11-01T03:30:00-05:00", 1200, zone: "America/New_York"),
        ]
        expectDiscriminating(events, total: 1500)
        let (hours, days) = hours(events, from: "2026-11-01", to: "2026-11-01")
        #expect(days.map(\.jsonLine) == [#"{"user":"ana","metric":"steps","day":"2026-11-01","value":1500}"#])
        #expect(lines(hours) == [
            "2026-11-01T00:00:00-04:00 2026-11-01T01:00:00-04:00 150 watch=150",
            "2026-11-01T01:00:00-04:00 2026-11-01T01:00:00-05:00 300 watch=300",
            "2026-11-01T01:00:00-05:00 2026-11-01T02:00:00-05:00 300 watch=300",
            "2026-11-01T02:00:00-05:00 2026-11-01T03:00:00-05:00 450 watch=150,phone=300",
            "2026-11-01T03:00:00-05:00 2026-11-01T04:00:00-05:00 300 phone=300",
        ])
        #expect(hours[1].jsonLine == #"{"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T01:00:00-04:00","end":"2026-11-01T01:00:00-05:00","value":300}"#)
    }

    @Test func heartRateCountsInTheHourHoldingEachSample() {
        // The repeated hour again: 80 and 90 bpm in 01:00-04:00, 70 in 01:00-05:00. Day: 3
        // samples, min 70, max 90, avg 80, latest 70 (c, 06:10Z, after b's 05:20Z); the hours'
        // counts 2 + 1 = 3, latest 90 (b) and 70.
        let events = [
            added("a", "watch", "2026-11-01T01:10:00-04:00", "2026-11-01T01:10:00-04:00", 80, metric: .heartRate, zone: "America/New_York"),
            added("b", "phone", "2026-11-01T01:20:00-04:00", "2026-11-01T01:20:00-04:00", 90, metric: .heartRate, zone: "America/New_York"),
            added("c", "watch", "2026-11-01T01:10:00-05:00", "2026-11-01T01:10:00-05:00", 70, metric: .heartRate, zone: "America/New_York"),
        ]
        let (hours, days) = hours(events, metric: .heartRate, from: "2026-11-01", to: "2026-11-01")
        #expect(days.map(\.jsonLine) == [#"{"user":"ana","metric":"heart_rate","day":"2026-11-01","min":70,"max":90,"avg":80,"count":3,"latest":70}"#])
        #expect(lines(hours) == [
            "2026-11-01T01:00:00-04:00 2026-11-01T01:00:00-05:00 80/90/85/2 latest 90",
            "2026-11-01T01:00:00-05:00 2026-11-01T02:00:00-05:00 70/70/70/1 latest 70",
        ])
    }

    @Test func aSpringNightHasNoTwoOClockHour() {
        // America/New_York, 2026-03-08: 02:00 EST (07:00Z) becomes 03:00 EDT.
        // watch 01:30-05:00 → 03:30-04:00 (06:30Z–07:30Z, 1 h) 600: 10 a minute.
        // phone 01:00-05:00 → 03:00-04:00 (06:00Z–07:00Z) 240: 4 a minute; it wins 06:00Z–06:30Z: 120.
        // Day 720 (naive 840, max 600). Hours: 01:00-05:00 (ends at 03:00-04:00) phone 120 +
        // watch 300 = 420; 03:00-04:00 watch 300. No 02:00 row.
        let events = [
            added("w", "watch", "2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00", 600, zone: "America/New_York"),
            added("p", "phone", "2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", 240, zone: "America/New_York"),
        ]
        expectDiscriminating(events, total: 720)
        let (hours, _) = hours(events, from: "2026-03-08", to: "2026-03-08")
        #expect(lines(hours) == [
            "2026-03-08T01:00:00-05:00 2026-03-08T03:00:00-04:00 420 watch=300,phone=120",
            "2026-03-08T03:00:00-04:00 2026-03-08T04:00:00-04:00 300 watch=300",
        ])
    }

    @Test func kolkataHoursStartAtHalfPast() {
        // Asia/Kolkata (+05:30): watch 09:45–11:15 900 (10 a minute); phone 10:30–12:30 1200
        // (10 a minute) wins 11:15–12:30 (75 min): 750. Day 1650 (naive 2100, max 1200).
        // Hours (09:00+05:30 is 03:30Z): 09 watch 150; 10 watch 600; 11 watch 150 + phone 450; 12 phone 300.
        let events = [
            added("w", "watch", "2026-05-10T09:45:00+05:30", "2026-05-10T11:15:00+05:30", 900, zone: "Asia/Kolkata"),
            added("p", "phone", "2026-05-10T10:30:00+05:30", "2026-05-10T12:30:00+05:30", 1200, zone: "Asia/Kolkata"),
        ]
        expectDiscriminating(events, total: 1650)
        let (hours, _) = hours(events, from: "2026-05-10", to: "2026-05-10")
        #expect(hours.first?.start == (try? Instant(rfc3339: "2026-05-10T03:30:00Z")))
        #expect(lines(hours) == [
            "2026-05-10T09:00:00+05:30 2026-05-10T10:00:00+05:30 150 watch=150",
            "2026-05-10T10:00:00+05:30 2026-05-10T11:00:00+05:30 600 watch=600",
            "2026-05-10T11:00:00+05:30 2026-05-10T12:00:00+05:30 600 watch=150,phone=450",
            "2026-05-10T12:00:00+05:30 2026-05-10T13:00:00+05:30 300 phone=300",
        ])
    }

    @Test func kathmanduHoursStartAtQuarterPast() {
        // Asia/Kathmandu (+05:45): phone 06:00–08:00 360 (3 a minute); watch 06:50–07:10 40
        // (2 a minute) wins its 20 minutes. Phone keeps 06:00–06:50 (150) and 07:10–08:00 (150).
        // Day 340 (naive 400, max 360). Hours (06:00+05:45 is 00:15Z): 06 watch 20 + phone 150; 07 the same.
        let events = [
            added("p", "phone", "2026-05-10T06:00:00+05:45", "2026-05-10T08:00:00+05:45", 360, zone: "Asia/Kathmandu"),
            added("w", "watch", "2026-05-10T06:50:00+05:45", "2026-05-10T07:10:00+05:45", 40, zone: "Asia/Kathmandu"),
        ]
        expectDiscriminating(events, total: 340)
        let (hours, _) = hours(events, from: "2026-05-10", to: "2026-05-10")
        #expect(hours.first?.start == (try? Instant(rfc3339: "2026-05-10T00:15:00Z")))
        #expect(lines(hours) == [
            "2026-05-10T06:00:00+05:45 2026-05-10T07:00:00+05:45 170 watch=20,phone=150",
            "2026-05-10T07:00:00+05:45 2026-05-10T08:00:00+05:45 170 watch=20,phone=150",
        ])
    }

    @Test func aLordHoweNightSplitsTheHourAtItsHalfHourShift() {
        // Australia/Lord_Howe, 2026-04-05: 02:00 +11:00 (04-04T15:00Z) becomes 01:30 +10:30.
        // watch 00:30+11:00 → 02:30+10:30 (13:30Z–16:00Z, 150 min) 300: 2 a minute.
        // phone 01:45+10:30 → 03:15+10:30 (15:15Z–16:45Z, 90 min) 450: 5 a minute; wins
        // 16:00Z–16:45Z: 225. Day 525 (naive 750, max 450).
        // Hours: 00:00+11 30 min 60; 01:00+11 (to the shift, 01:30+10:30) 120; 01:30+10:30
        // (the repeated half hour) 60; 02:00+10:30 watch 60 + phone 30 min 150; 03:00+10:30 phone 75.
        let events = [
            added("w", "watch", "2026-04-05T00:30:00+11:00", "2026-04-05T02:30:00+10:30", 300, zone: "Australia/Lord_Howe"),
            added("p", "phone", "2026-04-05T01:45:00+10:30", "2026-04-05T03:15:00+10:30", 450, zone: "Australia/Lord_Howe"),
        ]
        expectDiscriminating(events, total: 525)
        let (hours, _) = hours(events, from: "2026-04-05", to: "2026-04-05")
        #expect(lines(hours) == [
            "2026-04-05T00:00:00+11:00 2026-04-05T01:00:00+11:00 60 watch=60",
            "2026-04-05T01:00:00+11:00 2026-04-05T01:30:00+10:30 120 watch=120",
            "2026-04-05T01:30:00+10:30 2026-04-05T02:00:00+10:30 60 watch=60",
            "2026-04-05T02:00:00+10:30 2026-04-05T03:00:00+10:30 210 watch=60,phone=150",
            "2026-04-05T03:00:00+10:30 2026-04-05T04:00:00+10:30 75 phone=75",
        ])
    }

    @Test func lordHoweHoursOnBothNights() {
        // Fall back (2026-04-05): 01:00+11:00 lasts 60 min, 01:30+10:30 30 min. Spring
        // forward (2026-10-04, 02:00+10:30 becomes 02:30+11:00): 01:00+10:30 lasts 60 min
        // and ends at 02:30+11:00, then 02:30+11:00 30 min; no hour starts at 02:00.
        let rules = ZoneRules.named("Australia/Lord_Howe")!
        func walk(_ from: String, _ to: String) -> [String] {
            var out: [String] = []
            rules.forEachHour(from: try! Instant(rfc3339: from).nanoseconds, to: try! Instant(rfc3339: to).nanoseconds) { start, end, day, nanos in
                let s = HourTotal.localTime(Instant(nanoseconds: start), offsetSeconds: rules.offsetSeconds(at: Instant(nanoseconds: start)))
                let e = HourTotal.localTime(Instant(nanoseconds: end), offsetSeconds: rules.offsetSeconds(at: Instant(nanoseconds: end)))
                out.append("\(CivilDay(number: day)) \(s) \(e) \(nanos / 60_000_000_000)")
            }
            return out
        }
        #expect(walk("2026-04-05T01:00:00+11:00", "2026-04-05T03:00:00+10:30") == [
            "2026-04-05 2026-04-05T01:00:00+11:00 2026-04-05T01:30:00+10:30 60",
            "2026-04-05 2026-04-05T01:30:00+10:30 2026-04-05T02:00:00+10:30 30",
            "2026-04-05 2026-04-05T02:00:00+10:30 2026-04-05T03:00:00+10:30 60",
        ])
        #expect(walk("2026-10-04T01:00:00+10:30", "2026-10-04T04:00:00+11:00") == [
            "2026-10-04 2026-10-04T01:00:00+10:30 2026-10-04T02:30:00+11:00 60",
            "2026-10-04 2026-10-04T02:30:00+11:00 2026-10-04T03:00:00+11:00 30",
            "2026-10-04 2026-10-04T03:00:00+11:00 2026-10-04T04:00:00+11:00 60",
        ])
    }

    @Test func aSampleAcrossMidnightSplitsIntoBothDaysHours() {
        // Europe/Berlin: watch 23:20–00:50 100 (90 min): 40 min 44.444444…, 50 min 55.555555….
        // manual 23:00–00:00 60 (1 a minute) wins only 23:00–23:20: 20.
        // 06-01: 20 + 44.444444 = 64.444444; 06-02: 55.555556 (naive 160 for both, max 100).
        let events = [
            added("w", "watch", "2026-06-01T23:20:00+02:00", "2026-06-02T00:50:00+02:00", 100),
            added("m", "manual", "2026-06-01T23:00:00+02:00", "2026-06-02T00:00:00+02:00", 60),
        ]
        let (hours, days) = hours(events, from: "2026-06-01", to: "2026-06-02")
        #expect(days.map(\.jsonLine) == [
            #"{"user":"ana","metric":"steps","day":"2026-06-01","value":64.444444}"#,
            #"{"user":"ana","metric":"steps","day":"2026-06-02","value":55.555556}"#,
        ])
        #expect(lines(hours) == [
            "2026-06-01T23:00:00+02:00 2026-06-02T00:00:00+02:00 64.444444 watch=44.444444,manual=20",
            "2026-06-02T00:00:00+02:00 2026-06-02T01:00:00+02:00 55.555556 watch=55.555556",
        ])
        // Asked for one day, the other day's hour is not there.
        #expect(lines(self.hours(events, from: "2026-06-02", to: "2026-06-02").hours) == [lines(hours)[1]])
    }

    @Test func anInstantBesideAnInterval() {
        // Europe/Berlin: watch 10:00–10:30 300; a phone instant at 10:10 (50) lies under the
        // higher-ranked watch: not counted; a phone instant at 10:45 (40) counts, and a manual
        // instant at 11:05 (25) in the next hour. Day 365 (naive 415, max 300).
        let events = [
            added("w", "watch", "2026-06-01T10:00:00+02:00", "2026-06-01T10:30:00+02:00", 300),
            added("p1", "phone", "2026-06-01T10:10:00+02:00", "2026-06-01T10:10:00+02:00", 50),
            added("p2", "phone", "2026-06-01T10:45:00+02:00", "2026-06-01T10:45:00+02:00", 40),
            added("m", "manual", "2026-06-01T11:05:00+02:00", "2026-06-01T11:05:00+02:00", 25),
        ]
        expectDiscriminating(events, total: 365)
        let (hours, _) = hours(events, from: "2026-06-01", to: "2026-06-01")
        #expect(lines(hours) == [
            "2026-06-01T10:00:00+02:00 2026-06-01T11:00:00+02:00 340 watch=300,phone=40",
            "2026-06-01T11:00:00+02:00 2026-06-01T12:00:00+02:00 25 manual=25",
        ])
    }

    @Test func phoneAndWatchOverlappingApportionTheLastMicroUnit() {
        // Europe/Berlin: phone 09:20–10:20 100 (5/3 a minute); watch 09:40–10:00 50 wins its
        // 20 minutes. Phone keeps 09:20–09:40 and 10:00–10:20: 33.333333… each. Day
        // 50 + 66.666666… = 116.666667 (naive 150, max 100). Rounded on its own each hour
        // would print 83.333333 + 33.333333 = 116.666666, a micro-unit short of the day;
        // apportioned, the missing micro-unit goes to the larger remainder (a tie between the
        // two phone thirds: the earlier hour), 83.333334 + 33.333333 = 116.666667.
        let events = [
            added("p", "phone", "2026-06-01T09:20:00+02:00", "2026-06-01T10:20:00+02:00", 100),
            added("w", "watch", "2026-06-01T09:40:00+02:00", "2026-06-01T10:00:00+02:00", 50),
        ]
        expectDiscriminating(events, total: 116.666667)
        let (hours, days) = hours(events, from: "2026-06-01", to: "2026-06-01")
        #expect(days.map(\.jsonLine) == [#"{"user":"ana","metric":"steps","day":"2026-06-01","value":116.666667}"#])
        #expect(lines(hours) == [
            "2026-06-01T09:00:00+02:00 2026-06-01T10:00:00+02:00 83.333334 watch=50,phone=33.333334",
            "2026-06-01T10:00:00+02:00 2026-06-01T11:00:00+02:00 33.333333 phone=33.333333",
        ])
    }

    @Test func londonAndLisbonShareOneHourRow() {
        // January: London and Lisbon both show +00:00. The watch's London half hour
        // 09:00–09:30 (30) and the phone's Lisbon 09:30–10:30 (60, 1 a minute) meet in one
        // civil hour: one row 09:00–10:00 of 30 + 30, the watch's share first (it outranks the
        // phone); 10:00–11:00 the phone's other 30. Day 90.
        let events = [
            added("w", "watch", "2026-01-15T09:00:00Z", "2026-01-15T09:30:00Z", 30, zone: "Europe/London"),
            added("p", "phone", "2026-01-15T09:30:00Z", "2026-01-15T10:30:00Z", 60, zone: "Europe/Lisbon"),
        ]
        let (hours, days) = hours(events, from: "2026-01-15", to: "2026-01-15")
        #expect(days.map(\.jsonLine) == [#"{"user":"ana","metric":"steps","day":"2026-01-15","value":90}"#])
        #expect(lines(hours) == [
            "2026-01-15T09:00:00+00:00 2026-01-15T10:00:00+00:00 60 watch=30,phone=30",
            "2026-01-15T10:00:00+00:00 2026-01-15T11:00:00+00:00 30 phone=30",
        ])
    }

    @Test func tokyoAndLondonHoursOfOneInstantAreTwoRowsInOffsetOrder() {
        // 00:00–01:00Z is 09:00+09:00 in Tokyo and 00:00+00:00 in London, both on 2026-01-15:
        // the watch's Tokyo half hour (30) and the phone's London half hour (60) are two rows of
        // the same bounds, London's (offset 0) first although Tokyo's zone was seen first. Day 90.
        let events = [
            added("w", "watch", "2026-01-15T00:00:00Z", "2026-01-15T00:30:00Z", 30, zone: "Asia/Tokyo"),
            added("p", "phone", "2026-01-15T00:30:00Z", "2026-01-15T01:00:00Z", 60, zone: "Europe/London"),
        ]
        let (hours, _) = hours(events, from: "2026-01-15", to: "2026-01-15")
        #expect(lines(hours) == [
            "2026-01-15T00:00:00+00:00 2026-01-15T01:00:00+00:00 60 phone=60",
            "2026-01-15T09:00:00+09:00 2026-01-15T10:00:00+09:00 30 watch=30",
        ])
    }

    @Test func localTimesWrittenAsBytesReadAsTheirText() throws {
        func bytes(_ rfc3339: String, _ offset: Int) throws -> String {
            var out: [UInt8] = []
            HourTotal.appendLocalTime(try Instant(rfc3339: rfc3339), offsetSeconds: offset, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(try bytes("2026-11-01T06:00:00Z", -18_000) == "2026-11-01T01:00:00-05:00")
        #expect(try bytes("2026-11-01T06:00:00Z", 0) == "2026-11-01T06:00:00+00:00")
        // New York's local mean time (-4:56:02): the offset's seconds are not shown.
        #expect(try bytes("1900-01-01T00:00:00Z", -17_762) == "1899-12-31T19:03:58-04:56")
        // A fraction of a second takes the general path.
        #expect(try bytes("2024-03-30T05:30:00.25Z", 19_800) == "2024-03-30T11:00:00.25+05:30")
        var day: [UInt8] = []
        HourTotal.appendDay(try #require(CivilDay("0987-01-02")), to: &day)
        #expect(String(decoding: day, as: UTF8.self) == "0987-01-02")
    }

    @Test func onlySamplesSharingBothBoundsNeedTheirUUIDs() {
        // Places 0 and 2 share their start only; 1 and 3 start and end together.
        var window = SampleWindow(user: "ana", priority: .builtIn)
        let source = window.sourceID("watch"), zone = window.zoneID("UTC")
        for (start, end) in [(0, 60), (100, 160), (0, 30), (100, 160), (200, 260)] as [(Int64, Int64)] {
            window.addWithoutUUID(metric: .steps, source: source, zone: zone, start: start * Instant.nanosPerSecond,
                                  end: end * Instant.nanosPerSecond, value: 1, version: 0, seq: 0)
        }
        #expect(window.recordsNeedingUUIDs(.steps) == [1, 3])
        #expect(window.recordsNeedingUUIDs(.distance) == [])
    }

    @Test func largestRemainderStaysWithinOneMicroUnit() {
        // Three thirds of 1 (333333.33… micro-units each) must add up to 1.000000: the first
        // (ties go to the earlier cell) gets the missing micro-unit.
        #expect(HourRollup.apportion([1.0 / 3, 1.0 / 3, 1.0 / 3], total: 1) == [333_334, 333_333, 333_333])
        #expect(HourRollup.apportion([0.1, 0.2], total: 0.3) == [100_000, 200_000])
        // Too large for exact micro-units: nil, the raw shares stand (never a trap).
        #expect(HourRollup.apportion([1e300], total: 1e300) == nil)
        #expect(HourRollup.apportion([], total: 0) == [])
    }
}

/// Requires the printed hours of each day to add up to its printed row, and each hour's
/// printed shares to its printed value (heart rate: the counts to the day's count).
/// `days` are the rows of one (user, metric); those in `range` must be exactly the days with hours.
func expectHoursAddUp(_ hours: [HourTotal], to days: [DayTotal], in range: ClosedRange<CivilDay>,
                      sourceLocation: SourceLocation = #_sourceLocation) {
    var byDay: [DayKey: [HourTotal]] = [:]
    for h in hours { byDay[h.key, default: []].append(h) }
    let relevant = days.filter { range.contains($0.key.day) }
    #expect(Set(byDay.keys) == Set(relevant.map(\.key)), "days with hours differ from the day rows", sourceLocation: sourceLocation)
    for day in relevant {
        let rows = byDay[day.key] ?? []
        switch day.summary {
        case .cumulative(let value, _):
            let sum = rows.reduce(Decimal(0)) { total, h in
                guard case .cumulative(let v, let shares) = h.summary else { return total }
                let shareSum = shares.reduce(Decimal(0)) { $0 + printed($1.value) }
                #expect(shareSum == printed(v), "\(h.jsonLine): shares add up to \(shareSum)", sourceLocation: sourceLocation)
                return total + printed(v)
            }
            #expect(sum == printed(value), "\(day.jsonLine): its hours add up to \(sum)", sourceLocation: sourceLocation)
        case .discrete(let lo, let hi, _, let count, let latest):
            // The day's latest is the latest of one of its hours (the one its latest sample
            // starts in; not always the last to start, when zones of other offsets overlap).
            var n = 0, low = Double.infinity, high = -Double.infinity, latests: [Double?] = []
            for h in rows {
                guard case .discrete(let a, let b, _, let c, let l) = h.summary else { continue }
                n += c
                low = min(low, a)
                high = max(high, b)
                latests.append(l)
            }
            #expect(n == count && low == lo && high == hi && latests.contains(latest),
                    "\(day.jsonLine): hours count \(n), \(low)–\(high), latests \(latests)", sourceLocation: sourceLocation)
        }
    }
}

/// `sum` metrics (water, dietary energy): every sample counts, pro rata over its span, in
/// days and hours, by the ledger and by a store's window alike.
@Suite struct EverySampleCountsTests {
    @Test func twoAppsLoggingWaterBothCountAndAcrossMidnightSplitProRata() {
        // Berlin (UTC+2 in May). The phone logs 300 mL over 12:00–13:00; an app 200 mL over
        // 12:30–13:30 (overlapping: under priority_sum the phone would keep 12:30–13:00 and
        // these two would give 300 + 200 × 30/60 = 400); the watch 250 mL at 18:00 (an instant).
        // Every sample counts: 300 + 200 + 250 = 750 on 6 May. 400 mL over 23:00–01:00 gives
        // 200 to each day: 6 May 950, 7 May 200.
        let events = [
            added("a", "phone", "2024-05-06T12:00:00+02:00", "2024-05-06T13:00:00+02:00", 300, metric: .water),
            added("b", "hydro", "2024-05-06T12:30:00+02:00", "2024-05-06T13:30:00+02:00", 200, metric: .water),
            added("c", "watch", "2024-05-06T18:00:00+02:00", "2024-05-06T18:00:00+02:00", 250, metric: .water),
            added("d", "phone", "2024-05-06T23:00:00+02:00", "2024-05-07T01:00:00+02:00", 400, metric: .water),
        ]
        let rows = rollup(events)
        #expect(value(rows, "2024-05-06", metric: .water) == 950)
        #expect(value(rows, "2024-05-07", metric: .water) == 200)
        // The hours: 12:00 the phone's whole 300 and the app's first half (100); 13:00 the
        // app's second half (100); 18:00 the watch's 250; 23:00 200; 00:00 200.
        let (hours, _) = HourTotalsTests().hours(events, metric: .water, from: "2024-05-06", to: "2024-05-07")
        let values = hours.map { h -> String in
            guard case .cumulative(let v, _) = h.summary else { return "?" }
            return "\(h.startText) \(DayTotal.format(v))"
        }
        #expect(values == ["2024-05-06T12:00:00+02:00 400", "2024-05-06T13:00:00+02:00 100", "2024-05-06T18:00:00+02:00 250",
                           "2024-05-06T23:00:00+02:00 200", "2024-05-07T00:00:00+02:00 200"], "\(values)")
        // The same samples as steps (priority_sum): the phone keeps the overlap, 400 + 250 + 200.
        let asSteps = rollup(events.map { e in
            guard case .sampleAdded(var s) = e else { return e }
            s.metric = .steps
            return .sampleAdded(s)
        })
        #expect(value(asSteps, "2024-05-06") == 850)
    }

    @Test func explainShowsEveryWaterSampleAndNoneBeaten() {
        let ledger = Ledger()
        ledger.apply(added("a", "phone", "2024-05-06T12:00:00+02:00", "2024-05-06T13:00:00+02:00", 300, metric: .water), at: 0)
        ledger.apply(added("b", "hydro", "2024-05-06T12:30:00+02:00", "2024-05-06T13:30:00+02:00", 200, metric: .water), at: 1)
        let e = ledger.explain(DayKey(user: "ana", metric: .water, day: CivilDay("2024-05-06")!))
        #expect(e.pieces.count == 2 && e.pieces.allSatisfy(\.beaten.isEmpty))
        #expect(e.pieces.map(\.contribution).reduce(0, +) == 500)
    }

    @Test func dietaryEnergyInKilojoulesIsSummedInKilocalories() throws {
        // 418.4 kJ is 100 kcal; two apps' 100 kcal snacks at one moment both count: 200.
        let decoder = EventDecoder()
        let a = try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"a","metric":"dietary_energy","source":"lose-it","start":"2024-05-06T10:00:00Z","end":"2024-05-06T10:00:00Z","value":418.4,"unit":"kJ","zone":"UTC"}}"#)
        let b = try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"b","metric":"dietary_energy","source":"phone","start":"2024-05-06T10:00:00Z","end":"2024-05-06T10:00:00Z","value":100,"unit":"kcal","zone":"UTC"}}"#)
        #expect(value(rollup([a, b]), "2024-05-06", metric: .dietaryEnergy) == 200)
    }
}

/// `duration_priority` metrics (exercise and stand minutes, sleep): a row is the time the
/// samples cover, in minutes, each piece credited to the highest-ranked source over it.
@Suite struct TimeCoveredTests {
    @Test func exerciseMinutesFromTwoOverlappingSessionsCountOnce() {
        // The watch's session 08:00–08:45 (it says 45 min), the phone's 08:30–09:00 (30 min).
        // Covered: 08:00–09:00, 60 minutes (naive 75, max 45); the watch keeps 08:00–08:45
        // (45), the phone 08:45–09:00 (15). One hour, 08:00: 60.
        let events = [
            added("w", "watch", "2024-05-06T08:00:00+02:00", "2024-05-06T08:45:00+02:00", 45, metric: .exerciseTime),
            added("p", "phone", "2024-05-06T08:30:00+02:00", "2024-05-06T09:00:00+02:00", 30, metric: .exerciseTime),
        ]
        let rows = rollup(events)
        #expect(value(rows, "2024-05-06", metric: .exerciseTime) == 60)
        guard case .cumulative(_, let shares)? = rows["ana exercise_time 2024-05-06"]?.summary else {
            Issue.record("no row")
            return
        }
        #expect(shares.map(\.source) == ["watch", "phone"] && shares.map { ($0.value * 1e6).rounded() / 1e6 } == [45, 15])
        let (hours, _) = HourTotalsTests().hours(events, metric: .exerciseTime, from: "2024-05-06", to: "2024-05-06")
        #expect(HourTotalsTests().lines(hours) == ["2024-05-06T08:00:00+02:00 2024-05-06T09:00:00+02:00 60 watch=45,phone=15"],
                "\(HourTotalsTests().lines(hours))")
    }

    @Test func aNightOfSleepSplitsAtMidnightAndItsValueDoesNotCount() {
        // 23:00–07:00 in Berlin, whatever value it carries (here 1): 60 minutes on the 6th,
        // 420 on the 7th. An instant covers no time.
        let events = [
            added("n", "watch", "2024-05-06T23:00:00+02:00", "2024-05-07T07:00:00+02:00", 1, metric: .sleep),
            added("i", "phone", "2024-05-08T12:00:00+02:00", "2024-05-08T12:00:00+02:00", 30, metric: .sleep),
        ]
        let rows = rollup(events)
        #expect(value(rows, "2024-05-06", metric: .sleep) == 60)
        #expect(value(rows, "2024-05-07", metric: .sleep) == 420)
        // The instant is a sample of the 8th: its day has data, 0 minutes of it (as a sample of
        // 0 steps makes a row of 0), not no row.
        #expect(value(rows, "2024-05-08", metric: .sleep) == 0)
        _ = HourTotalsTests().hours(events, metric: .sleep, from: "2024-05-06", to: "2024-05-07")
    }
}
