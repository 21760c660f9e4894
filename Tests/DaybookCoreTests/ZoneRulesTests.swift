@testable import DaybookCore
import Foundation
import Testing

@Suite struct ZoneRulesTests {
    static let zones = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "UTC", "Asia/Kathmandu", "Europe/Moscow"]

    /// Every quarter hour of 2024 (and around 2011/2014 for Moscow's offset changes):
    /// the civil day from the transition table equals Foundation's Calendar.
    @Test(arguments: zones)
    func dayMatchesFoundationCalendar(zone: String) throws {
        let rules = try #require(ZoneRules.named(zone))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: zone))
        let ranges: [(Int64, Int64)] = [(1_704_067_200 - 86_400, 1_735_689_600 + 86_400), (1_293_840_000, 1_325_376_000), (1_404_172_800, 1_420_070_400)]
        for (from, to) in ranges {
            var t = from
            while t < to {
                let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: TimeInterval(t)))
                let expected = CivilDay(year: parts.year!, month: parts.month!, day: parts.day!)
                let actual = rules.day(of: Instant(seconds: t))
                if actual != expected {
                    Issue.record("\(zone) at \(Instant(seconds: t)): \(actual) vs Foundation \(expected)")
                    return
                }
                t += 900
            }
        }
    }
}

@Suite struct CivilDayBoundsTests {
    @Test func santiagoDayStartsAt0100WhenMidnightIsSkipped() throws {
        let rules = try #require(ZoneRules.named("America/Santiago"))
        let (start, end) = rules.bounds(of: try #require(CivilDay("2024-09-08")))
        #expect(start == (try Instant(rfc3339: "2024-09-08T01:00:00-03:00")))
        #expect(end == (try Instant(rfc3339: "2024-09-09T00:00:00-03:00")))
        #expect(end.nanoseconds - start.nanoseconds == 23 * 3_600 * Instant.nanosPerSecond)
    }

    @Test(arguments: [
        ("Europe/Berlin", "2024-03-31", 23.0), ("Europe/Berlin", "2024-10-27", 25.0),
        ("America/New_York", "2024-03-10", 23.0), ("America/New_York", "2024-11-03", 25.0),
        ("Australia/Lord_Howe", "2024-04-07", 24.5), ("Australia/Lord_Howe", "2024-10-06", 23.5),
        ("Europe/Berlin", "2024-06-01", 24.0),
    ])
    func dayLengths(zone: String, day: String, hours: Double) throws {
        let rules = try #require(ZoneRules.named(zone))
        let (start, end) = rules.bounds(of: try #require(CivilDay(day)))
        #expect(Double(end.nanoseconds - start.nanoseconds) / 3.6e12 == hours)
    }

    @Test func splitsAcrossDaysPieceByPiece() throws {
        // Berlin 2024-03-30 22:00+01 → 2024-04-01 02:00+02, across the spring-forward day:
        // 03-30: 22:00–24:00 = 2 h; 03-31: 23 h; 04-01: 00:00–02:00 = 2 h. Total 27 h elapsed.
        let rules = try #require(ZoneRules.named("Europe/Berlin"))
        var pieces: [(String, Double)] = []
        rules.forEachDay(from: try Instant(rfc3339: "2024-03-30T22:00:00+01:00").nanoseconds,
                         to: try Instant(rfc3339: "2024-04-01T02:00:00+02:00").nanoseconds) { day, nanos in
            pieces.append(("\(day)", Double(nanos) / 3.6e12))
        }
        #expect(pieces.map(\.0) == ["2024-03-30", "2024-03-31", "2024-04-01"])
        #expect(pieces.map(\.1) == [2, 23, 2])
    }
}
