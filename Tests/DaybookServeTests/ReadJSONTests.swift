import DaybookCore
import DaybookServe
import DaybookSupport
import Testing

/// The JSON of the answers the shard read model cannot give yet (hours, explain), over
/// values made by hand and by the core's own `Ledger.explain`.
@Suite struct ReadJSONTests {
    let asOf = AsOf(partition: 3, nextOffset: 12, lag: 0, role: .owned)

    @Test func explainSaysWhichSampleWonWhichStretch() throws {
        let ledger = Ledger(priority: .builtIn)
        for (i, line) in ServeFixture.log.enumerated() { ledger.apply(try EventDecoder().decode(line), at: Int64(i)) }
        let json = ReadJSON.explain(ledger.explain(DayKey(user: "ana", metric: .steps, day: CivilDay("2024-03-30")!)), asOf: asOf)
        // The watch wins 08:00–09:00 over the phone (3000); the phone alone 09:00–09:15: 5400 × 15/60 = 1350.
        let w1 = #"{"uuid":"w1","source":"watch","zone":"UTC","start":"2024-03-30T08:00:00Z","end":"2024-03-30T09:00:00Z","value":3000}"#
        let p1 = #"{"uuid":"p1","source":"phone","zone":"UTC","start":"2024-03-30T08:15:00Z","end":"2024-03-30T09:15:00Z","value":5400}"#
        #expect(json.hasPrefix(#"{"user":"ana","metric":"steps","day":"2024-03-30","pieces":["#))
        #expect(json.contains(#""winner":\#(w1),"beaten":[\#(p1)]"#))
        #expect(json.contains(#"{"start":"2024-03-30T09:00:00Z","end":"2024-03-30T09:15:00Z","winner":\#(p1),"beaten":[],"contribution":1350}"#))
        #expect(json.hasSuffix(#""total":{"value":4350,"sources":[{"source":"watch","value":3000},{"source":"phone","value":1350}]},"as_of":{"partition":3,"next_offset":12,"lag":0,"role":"owned"}}"#))
        #expect(throws: Never.self) { try JSONParser.parse(json) }
    }

    /// A fall-back night in New York: 01:00 comes twice, at -04:00 and then at -05:00, and
    /// each is its own row, keyed by its local start with the offset in force.
    @Test func hourRowsCarryTheirOffsets() throws {
        let first = try Instant(rfc3339: "2024-11-03T05:00:00Z") // 01:00-04:00
        let second = try Instant(rfc3339: "2024-11-03T06:00:00Z") // 01:00-05:00
        let third = try Instant(rfc3339: "2024-11-03T07:00:00Z") // 02:00-05:00
        let day = DayKey(user: "ana", metric: .steps, day: try #require(CivilDay("2024-11-03")))
        let rows = [HourTotal(key: day, start: first, startOffsetSeconds: -14_400, end: second, endOffsetSeconds: -18_000, summary: .cumulative(value: 600, sources: [SourceShare(source: "watch", value: 600)])),
                    HourTotal(key: day, start: second, startOffsetSeconds: -18_000, end: third, endOffsetSeconds: -18_000, summary: .cumulative(value: 400, sources: []))]
        let json = ReadJSON.hours(user: "ana", metric: .steps, rows, sources: false, asOf: asOf)
        #expect(json == #"{"user":"ana","metric":"steps","bucket":"hour","rows":[{"day":"2024-11-03","start":"2024-11-03T01:00:00-04:00","end":"2024-11-03T01:00:00-05:00","value":600},"#
            + #"{"day":"2024-11-03","start":"2024-11-03T01:00:00-05:00","end":"2024-11-03T02:00:00-05:00","value":400}],"unknown":[],"as_of":{"partition":3,"next_offset":12,"lag":0,"role":"owned"}}"#)
    }

    /// Shares in rank order, a source name escaped, a half-hour offset, and a start with a
    /// fraction of a second (the general path of the time's text).
    @Test func hourRowsWithSources() throws {
        let day = DayKey(user: "ana", metric: .steps, day: try #require(CivilDay("2024-03-30")))
        let rows = [
            HourTotal(key: day, start: try Instant(rfc3339: "2024-03-30T04:30:00Z"), startOffsetSeconds: 19_800,
                      end: try Instant(rfc3339: "2024-03-30T05:30:00Z"), endOffsetSeconds: 19_800,
                      summary: .cumulative(value: 1350.5, sources: [SourceShare(source: "watch", value: 1000), SourceShare(source: "pho\"ne", value: 350.5)])),
            HourTotal(key: day, start: try Instant(rfc3339: "2024-03-30T05:30:00.25Z"), startOffsetSeconds: 19_800,
                      end: try Instant(rfc3339: "2024-03-30T06:30:00Z"), endOffsetSeconds: 19_800,
                      summary: .cumulative(value: 2.5, sources: [SourceShare(source: "watch", value: 2.5)])),
        ]
        let json = ReadJSON.hours(user: "ana", metric: .steps, rows, sources: true, asOf: asOf)
        #expect(json == #"{"user":"ana","metric":"steps","bucket":"hour","rows":[{"day":"2024-03-30","start":"2024-03-30T10:00:00+05:30","end":"2024-03-30T11:00:00+05:30","value":1350.5,"#
            + #""sources":[{"source":"watch","value":1000},{"source":"pho\"ne","value":350.5}]},"#
            + #"{"day":"2024-03-30","start":"2024-03-30T11:00:00.25+05:30","end":"2024-03-30T12:00:00+05:30","value":2.5,"sources":[{"source":"watch","value":2.5}]}],"#
            + #""unknown":[],"as_of":{"partition":3,"next_offset":12,"lag":0,"role":"owned"}}"#)
        #expect(throws: Never.self) { try JSONParser.parse(json) }
    }

    /// Rows past the first guess of the answer's size (long source names: the buffer grows),
    /// an hour ending at the next day's midnight (its end's date is not the row's), and hours
    /// before 1970 (negative instants: the day is floored): each time as `HourTotal.localTime`.
    @Test func hourRowsPastTheFirstBufferAndAcrossMidnights() throws {
        let long = String(repeating: "wrist-", count: 60)
        var rows: [HourTotal] = []
        for (start, offset, day) in [("1969-12-31T22:00:00Z", 3_600, "1969-12-31"), ("1969-12-31T23:00:00Z", 0, "1969-12-31"),
                                     ("2024-03-30T22:00:00Z", 7_200, "2024-03-31"), ("2024-03-30T23:00:00Z", 3_600, "2024-03-31"),
                                     ("2024-03-31T04:15:00Z", 20_700, "2024-03-31")] {
            let s = try Instant(rfc3339: start)
            let e = Instant(nanoseconds: s.nanoseconds + 3_600 * Instant.nanosPerSecond)
            let day = try #require(CivilDay(day))
            rows.append(HourTotal(key: DayKey(user: "ana", metric: .steps, day: day), start: s, startOffsetSeconds: offset,
                                  end: e, endOffsetSeconds: offset,
                                  summary: .cumulative(value: 7, sources: [SourceShare(source: long, value: 7)])))
        }
        let json = ReadJSON.hours(user: "ana", metric: .steps, rows, sources: true, asOf: asOf)
        let expected = rows.map { row in
            #"{"day":"\#(row.key.day)","start":"\#(row.startText)","end":"\#(row.endText)","value":7,"sources":[{"source":"\#(long)","value":7}]}"#
        }
        #expect(json == #"{"user":"ana","metric":"steps","bucket":"hour","rows":["# + expected.joined(separator: ",")
            + #"],"unknown":[],"as_of":{"partition":3,"next_offset":12,"lag":0,"role":"owned"}}"#)
        // By hand: 23:00+01:00 on 1969-12-31 ends at the next day's midnight.
        #expect(json.contains(#"{"day":"1969-12-31","start":"1969-12-31T23:00:00+01:00","end":"1970-01-01T00:00:00+01:00","#))
        #expect(json.contains(#""start":"2024-03-31T10:00:00+05:45","end":"2024-03-31T11:00:00+05:45""#))
    }
}
