@testable import DaybookCore
import DaybookSupport
import Testing

/// Hostile numbers: timestamps outside what integer nanoseconds can hold, values whose sum
/// would overflow. Each used to trap (SIGILL) or print `inf`; each is now a named rejection.
@Suite struct InputBoundsTests {
    let decoder = EventDecoder()

    func sample(start: String, end: String, value: String = "100", metric: String = "steps", unit: String = "count") -> String {
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"u1","metric":"\#(metric)","source":"watch","start":"\#(start)","end":"\#(end)","value":\#(value),"unit":"\#(unit)","zone":"UTC"}}"#
    }

    func rejection(_ line: String) -> EventError? {
        do {
            _ = try decoder.decode(line)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        ("0001-01-01T00:00:00Z", "0001-01-01T01:00:00Z"),   // year 1: used to overflow Int64 ns
        ("9999-12-31T23:00:00Z", "9999-12-31T23:59:59Z"),   // year 9999
        ("1677-09-21T00:00:00Z", "1677-09-21T00:10:00Z"),   // just inside Int64 ns, outside the range
        ("1899-12-31T23:59:59Z", "1900-01-01T00:00:01Z"),   // start one second early
        ("2199-12-31T23:59:59Z", "2200-01-01T00:00:00Z"),   // end exactly at the exclusive bound
        ("2262-04-12T00:00:00Z", "2262-04-12T00:00:01Z"),   // past Int64 ns
    ])
    func rejectsTimestampsOutsideTheAcceptedRange(start: String, end: String) {
        let error = rejection(sample(start: start, end: end))
        #expect(error?.code == .badTime)
        #expect(error?.field == "sample.start" || error?.field == "sample.end")
        #expect(error?.message.contains("outside the accepted range 1900-01-01T00:00:00Z ..< 2200-01-01T00:00:00Z") == true)
    }

    @Test func aSampleSpanningTheWholeRangeIsTooLongNotAnOverflow() {
        // 1900-01-01 to 2199-12-31 is ~300 years = ~9.47e18 ns > Int64.max (9.22e18): the
        // duration is compared without subtracting in Int64 (found by the fuzzer).
        let error = rejection(sample(start: "1900-01-01T00:00:00Z", end: "2199-12-31T00:00:00Z"))
        #expect(error?.code == .tooLong && error?.field == "sample.end")
        #expect(error?.message.contains("at most 7 are accepted") == true)
    }

    @Test func acceptsBothEndsOfTheRange() throws {
        // 1900-01-01T00:00:00Z = -2,208,988,800 s; 2199-12-31T23:59:59.999999999Z = 7,258,118,399.999999999 s.
        let first = try Instant(rfc3339: "1900-01-01T00:00:00Z")
        let last = try Instant(rfc3339: "2199-12-31T23:59:59.999999999Z")
        #expect(first.nanoseconds == -2_208_988_800_000_000_000)
        #expect(last.nanoseconds == 7_258_118_399_999_999_999)
        #expect(first.description == "1900-01-01T00:00:00Z")
        #expect(last.description == "2199-12-31T23:59:59.999999999Z")
        // An offset moves a wall time inside the range out of it: 2200-01-01T00:30+01:00 is 2199-12-31T23:30Z.
        #expect(try Instant(rfc3339: "2200-01-01T00:30:00+01:00").nanoseconds == 7_258_116_600_000_000_000)
        #expect(throws: TimestampError.self) { try Instant(rfc3339: "1900-01-01T00:30:00+01:00") }
    }

    @Test func aWholeRolledUpWeekAtTheEdgeOfTheRangeDoesNotTrap() throws {
        // Two overlapping sources late on the last day of 2199: watch 22:00–23:00 600 steps wins;
        // phone 22:30–23:30 900 steps keeps 23:00–23:30 = 450. Total 1050; naive sum 1500; max 900.
        let events: [Event] = [
            try decoder.decode(sample(start: "2199-12-31T22:00:00Z", end: "2199-12-31T23:00:00Z", value: "600")),
            try decoder.decode(sample(start: "2199-12-31T22:30:00Z", end: "2199-12-31T23:30:00Z", value: "900")
                .replacingOccurrences(of: #""uuid":"u1""#, with: #""uuid":"u2""#)
                .replacingOccurrences(of: #""source":"watch""#, with: #""source":"phone""#)),
        ]
        let rows = rollup(events)
        expectDiscriminating(events, total: 1050)
        #expect(value(rows, "2199-12-31") == 1050)
    }

    @Test(arguments: [
        ("steps", "count", "2000001"), ("steps", "count", "1e308"),
        ("distance", "km", "5000.001"), ("distance", "mi", "1e306"),
        ("active_energy", "kcal", "100000.5"), ("active_energy", "kJ", "1e308"),
        ("heart_rate", "count/min", "401"),
    ])
    func rejectsImplausibleValues(metric: String, unit: String, value: String) {
        let error = rejection(sample(start: "2024-03-02T09:00:00Z", end: "2024-03-02T10:00:00Z", value: value, metric: metric, unit: unit))
        #expect(error?.code == .implausibleValue || error?.code == .notFinite)
        #expect(error?.field == "sample.value")
        #expect(error.map { $0.message.contains("at most") || $0.message.contains("overflows") } == true)
    }

    @Test func acceptsTheMaximumItself() throws {
        let event = try decoder.decode(sample(start: "2024-03-02T09:00:00Z", end: "2024-03-02T10:00:00Z", value: "5000", metric: "distance", unit: "km"))
        guard case .sampleAdded(let s) = event else { Issue.record("not an add"); return }
        #expect(s.value == 5_000_000)
    }

    @Test func manyMaximalSamplesSumToAFiniteDay() throws {
        // 1,000 back-to-back one-minute watch samples of 2,000,000 steps each (00:00–16:40),
        // and a phone sample of 1,000,000 over the same 1,000 minutes that the watch outranks
        // everywhere: the day is 1,000 × 2e6 = 2e9 (finite, never inf); naive sum 2.001e9; max 2e6.
        var events: [Event] = [
            .sampleAdded(Sample(user: "ana", uuid: "p", metric: .steps, source: "phone", start: try Instant(rfc3339: "2024-03-02T00:00:00Z"),
                                end: try Instant(rfc3339: "2024-03-02T16:40:00Z"), value: 1_000_000, zone: "UTC")),
        ]
        for i in 0..<1_000 {
            let start = Instant(nanoseconds: try Instant(rfc3339: "2024-03-02T00:00:00Z").nanoseconds + Int64(i) * 60 * Instant.nanosPerSecond)
            let end = Instant(nanoseconds: start.nanoseconds + 60 * Instant.nanosPerSecond)
            events.append(.sampleAdded(Sample(user: "ana", uuid: "m\(i)", metric: .steps, source: "watch", start: start, end: end, value: 2_000_000, zone: "UTC")))
        }
        expectDiscriminating(events, total: 2_000_000_000)
        #expect(value(rollup(events), "2024-03-02") == 2_000_000_000)
    }

    @Test func jsonNeverPrintsANonFiniteNumber() {
        #expect(JSONWriter.number(.infinity) == "null")
        #expect(JSONWriter.number(-.infinity) == "null")
        #expect(JSONWriter.number(.nan) == "null")
        #expect(JSONWriter.number(1e300) == "1e+300")
    }
}

@Suite struct NormalizationTests {
    @Test func idsMustBeNFCSoThatEqualMeansByteEqual() throws {
        let decoder = EventDecoder()
        func line(user: String, uuid: String = "u1", source: String = "watch") -> String {
            #"{"type":"sample-added","user":"\#(user)","sample":{"uuid":"\#(uuid)","metric":"steps","source":"\#(source)","start":"2024-03-02T09:00:00Z","end":"2024-03-02T10:00:00Z","value":1,"unit":"count","zone":"UTC"}}"#
        }
        // "\u{e9}" is NFC; "e\u{301}" is its NFD spelling, equal to it under Swift's ==.
        #expect("\u{e9}" == "e\u{301}")
        #expect(throws: Never.self) { try decoder.decode(line(user: "\u{e9}")) }
        for (text, field) in [(line(user: "e\u{301}"), "user"), (line(user: "a", uuid: "e\u{301}"), "sample.uuid"),
                              (line(user: "a", source: "e\u{301}"), "sample.source"),
                              (#"{"type":"sample-deleted","user":"e\u0301","uuid":"x"}"#, "user")] {
            do {
                _ = try decoder.decode(text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == .notNormalized && error.field == field, "\(error)")
            }
        }
    }
}
