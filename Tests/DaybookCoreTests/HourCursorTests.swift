@testable import DaybookCore
import DaybookSupport
import Testing

/// `HourCursor`: the civil hour holding an instant, kept while instants move forward, found
/// again from the next segment or by search when they leave it.
@Suite struct HourCursorTests {
    func ns(_ text: String) throws -> Int64 { try Instant(rfc3339: text).nanoseconds }

    /// New York 2026: 2026-03-08T07:00Z (-05:00 → -04:00) and 2026-11-01T06:00Z (-04:00 →
    /// -05:00). Forward inside an hour, into the next segment, back to an earlier one, and a
    /// year ahead: each hour's bounds and civil day by hand.
    @Test func followsInstantsForwardAndBack() throws {
        let rules = try #require(ZoneRules.named("America/New_York"))
        var hours = HourCursor(rules)
        func at(_ t: String) throws -> String {
            hours.move(to: try ns(t))
            return "\(Instant(nanoseconds: hours.start)) \(Instant(nanoseconds: hours.end)) \(CivilDay(number: hours.day))"
        }
        #expect(try at("2026-03-08T06:30:00Z") == "2026-03-08T06:00:00Z 2026-03-08T07:00:00Z 2026-03-08") // 01:30-05:00
        #expect(try at("2026-03-08T06:59:59Z") == "2026-03-08T06:00:00Z 2026-03-08T07:00:00Z 2026-03-08") // the same hour
        #expect(try at("2026-03-08T07:10:00Z") == "2026-03-08T07:00:00Z 2026-03-08T08:00:00Z 2026-03-08") // 03:10-04:00: no 02:00
        #expect(try at("2026-11-01T05:30:00Z") == "2026-11-01T05:00:00Z 2026-11-01T06:00:00Z 2026-11-01") // 01:30-04:00
        #expect(try at("2026-11-01T06:30:00Z") == "2026-11-01T06:00:00Z 2026-11-01T07:00:00Z 2026-11-01") // 01:30-05:00, next segment
        #expect(try at("2026-11-01T04:59:00Z") == "2026-11-01T04:00:00Z 2026-11-01T05:00:00Z 2026-11-01") // back: 00:59-04:00
        #expect(try at("2026-11-01T03:59:00Z") == "2026-11-01T03:00:00Z 2026-11-01T04:00:00Z 2026-10-31") // 23:59-04:00
        #expect(try at("2027-07-01T12:00:00Z") == "2027-07-01T12:00:00Z 2027-07-01T13:00:00Z 2027-07-01") // segments ahead
        #expect(try at("1969-12-31T23:30:00Z") == "1969-12-31T23:00:00Z 1970-01-01T00:00:00Z 1969-12-31") // before 1970: floors
    }

    /// Random instants, mostly forward in small steps, sometimes far back or ahead: the
    /// cursor's hour equals the hour found from scratch by the segment search, in zones
    /// with half-hour, 45-minute and 30-minute-shift rules.
    @Test(arguments: ["America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "America/Santiago", "UTC"])
    func equalsTheHourFoundFromScratch(zone: String) throws {
        let rules = try #require(ZoneRules.named(zone))
        var rng = SplitMix64(seed: 28)
        var hours = HourCursor(rules)
        var t = try ns("2024-01-01T00:00:00Z")
        for _ in 0..<20_000 {
            switch rng.below(20) {
            case 0: t -= Int64(rng.below(400 * 86_400)) * Instant.nanosPerSecond
            case 1: t += Int64(rng.below(400 * 86_400)) * Instant.nanosPerSecond
            default: t += Int64(rng.below(40 * 60)) * Instant.nanosPerSecond
            }
            hours.move(to: t)
            let k = rules.segment(containing: t)
            let segmentStart = k > 0 ? rules.transitions[k - 1] : Int64.min
            let segmentEnd = k < rules.transitions.count ? rules.transitions[k] : Int64.max
            let offset = rules.offsets[k]
            let wallHour = floorDiv(t + offset, ZoneRules.nanosPerHour)
            #expect(hours.start == max(segmentStart, wallHour * ZoneRules.nanosPerHour - offset))
            #expect(hours.end == min(segmentEnd, (wallHour + 1) * ZoneRules.nanosPerHour - offset))
            #expect(hours.day == Int32(floorDiv(t + offset, Instant.nanosPerDay)))
            #expect(hours.start <= t && t < hours.end)
        }
    }
}
