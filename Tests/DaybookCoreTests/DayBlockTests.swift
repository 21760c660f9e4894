import DaybookCore
import Testing

/// The rules `daybook totals` shows days by: a row, "no data" or "unknown" (`DayBlock`).
struct DayBlockTests {
    static func at(_ text: String) -> Instant { try! Instant(rfc3339: text) }
    static func day(_ text: String) -> CivilDay { CivilDay(text)! }

    /// ana's steps on 11-27: watch 3000 + phone 5400 × 45/60 = 7050 (not the naive 8400, not
    /// the max 5400); on 11-29 the phone alone, 1200.
    static let rows = [
        DayTotal(key: DayKey(user: "ana", metric: .steps, day: day("2026-11-27")),
                 summary: .cumulative(value: 7050, sources: [SourceShare(source: "watch", value: 3000), SourceShare(source: "phone", value: 4050)])),
        DayTotal(key: DayKey(user: "ana", metric: .steps, day: day("2026-11-29")),
                 summary: .cumulative(value: 1200, sources: [SourceShare(source: "phone", value: 1200)])),
    ]

    /// The phone last checked in 2026-11-29T23:30Z: 11-30 00:30 in Berlin, so 11-29 was over
    /// there and 11-30 is its first unknown day. The watch (steps too) checked in on 12-02.
    static let pairs = ["ana": [
        SourceSync(user: "ana", source: "phone", lastCheckIn: at("2026-11-29T23:30:00Z"), zone: "Europe/Berlin", metrics: [.steps]),
        SourceSync(user: "ana", source: "watch", lastCheckIn: at("2026-12-02T12:00:00Z"), metrics: [.steps]),
    ]]

    @Test func everyDayOfTheRangeIsARowNoDataOrUnknown() throws {
        let blocks = DayBlock.blocks(Self.rows, user: "ana", from: Self.day("2026-11-26"), to: Self.day("2026-12-01"), pairs: Self.pairs)
        #expect(blocks.map { "\($0.user) \($0.metric.rawValue)" } == ["ana steps"])
        var shown: [String] = []
        blocks[0].forEachDay(everyDay: true) { day, row, unknown in
            let what = row.map { row -> String in
                guard case .cumulative(let v, _) = row.summary else { return "?" }
                return "\(Int(v))"
            } ?? (unknown.isEmpty ? "no data" : "unknown: " + unknown.map(\.source).joined(separator: ","))
            shown.append("\(day) \(what)")
        }
        #expect(shown == ["2026-11-26 no data", "2026-11-27 7050", "2026-11-28 no data", "2026-11-29 1200",
                          "2026-11-30 unknown: phone", "2026-12-01 unknown: phone"])

        // Without every day: only rows and unknown days (an empty day is no row and no line).
        var sparse: [String] = []
        blocks[0].forEachDay(everyDay: false) { day, _, _ in sparse.append("\(day)") }
        #expect(sparse == ["2026-11-27", "2026-11-29", "2026-11-30", "2026-12-01"])
    }

    @Test func withoutARangeABlockRunsFromItsFirstToItsLastRow() {
        let blocks = DayBlock.blocks(Self.rows, pairs: Self.pairs)
        #expect(blocks.count == 1)
        #expect(blocks[0].first == Self.day("2026-11-27") && blocks[0].last == Self.day("2026-11-29"))
        // Asked for one user and a range, a metric their sources speak for gets a block even
        // without rows; with no pairs for it, none.
        let distance = DayBlock.blocks([], user: "ana", metric: .distance, from: Self.day("2026-11-26"), to: Self.day("2026-11-27"), pairs: Self.pairs)
        #expect(distance.map(\.metric) == [.distance])
        #expect(DayBlock.blocks([], user: "bob", from: Self.day("2026-11-26"), to: Self.day("2026-11-27"), pairs: [:]).isEmpty)
    }
}
