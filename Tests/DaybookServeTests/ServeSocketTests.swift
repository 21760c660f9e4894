import DaybookCore
import DaybookHTTP
import DaybookServe
import DaybookStore
import DaybookSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `daybook serve`'s read routes over a real socket (ReadService on loopback, URLSession as
/// the client), over a shard the projection path wrote from hand-built nights: the day rows
/// equal `daybook rollup`'s (a ledger over the same log), the hour rows equal
/// `daybook totals --bucket hour`'s (`ShardReader.hours`), and every day's printed hours add
/// up to its printed row.
@Suite struct ServeSocketTests {
    static func sample(_ uuid: String, _ source: String, _ start: String, _ end: String, _ value: Int, zone: String,
                       metric: String = "steps") -> String {
        let unit = metric == "heart_rate" ? "count/min" : "count"
        return #"{"type":"sample-added","user":"ana","sample":{"uuid":"\#(uuid)","metric":"\#(metric)","source":"\#(source)","start":"\#(start)","end":"\#(end)","value":\#(value),"unit":"\#(unit)","zone":"\#(zone)"}}"#
    }

    /// Each night's arithmetic (the watch outranks the phone; "naive" sums every sample,
    /// "max" takes the larger source: neither is the answer):
    static let log = [
        // New York's fall-back night, 2026-11-01 (02:00 EDT = 06:00Z becomes 01:00 EST).
        // watch 04:30Z–07:30Z 900 (5 a minute); phone 06:30Z–08:30Z 1200 (10 a minute) wins
        // only 07:30Z–08:30Z: 600. Day 1500 (naive 2100, max 1200). Hours: 00:00-04:00 150;
        // 01:00-04:00 300; 01:00-05:00 300; 02:00-05:00 150 + 300 = 450; 03:00-05:00 300.
        sample("ny-w", "watch", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00", 900, zone: "America/New_York"),
        sample("ny-p", "phone", "2026-11-01T01:30:00-05:00", "2026-11-01T03:30:00-05:00", 1200, zone: "America/New_York"),
        // New York's spring night, 2026-03-08 (02:00 EST = 07:00Z becomes 03:00 EDT).
        // phone 06:00Z–07:30Z 600 (400 an hour) alone 06:00Z–06:30Z: 200; watch 06:30Z–07:30Z
        // 600. Day 800 (naive 1200, max 600). Hours: 01:00-05:00 (to 03:00-04:00) 200 + 300
        // = 500; 03:00-04:00 300; no 02:00 row.
        sample("sp-p", "phone", "2026-03-08T01:00:00-05:00", "2026-03-08T03:30:00-04:00", 600, zone: "America/New_York"),
        sample("sp-w", "watch", "2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00", 600, zone: "America/New_York"),
        // Kolkata (+05:30), 2024-05-10: watch 10:15–11:45 900 (10 a minute); phone 11:30–12:30
        // 600 (10 a minute) alone 11:45–12:30: 450. Day 1350 (naive 1500, max 900). Hours:
        // 10:00 450; 11:00 450 + 150 = 600; 12:00 300.
        sample("in-w", "watch", "2024-05-10T10:15:00+05:30", "2024-05-10T11:45:00+05:30", 900, zone: "Asia/Kolkata"),
        sample("in-p", "phone", "2024-05-10T11:30:00+05:30", "2024-05-10T12:30:00+05:30", 600, zone: "Asia/Kolkata"),
        // Across midnight in Berlin (+02:00): watch 06-01 23:30 → 06-02 00:30, 600; phone
        // 23:45 → 00:45, 900 (15 a minute), alone 00:30–00:45: 225. 06-01: 300 (naive 525);
        // 06-02: 300 + 225 = 525 (naive 975, max 675). Hours: 06-01 23:00 300; 06-02 00:00 525.
        sample("mn-w", "watch", "2024-06-01T23:30:00+02:00", "2024-06-02T00:30:00+02:00", 600, zone: "Europe/Berlin"),
        sample("mn-p", "phone", "2024-06-01T23:45:00+02:00", "2024-06-02T00:45:00+02:00", 900, zone: "Europe/Berlin"),
        // Instants beside an interval (UTC), 2024-07-01: watch 09:00–10:00 600; a phone instant
        // of 50 at 09:30 lies under the watch and is shadowed; one of 40 at 10:30 counts.
        // Day 640 (naive 690, max 600). Hours: 09:00 600; 10:00 40.
        sample("it-w", "watch", "2024-07-01T09:00:00Z", "2024-07-01T10:00:00Z", 600, zone: "UTC"),
        sample("it-p1", "phone", "2024-07-01T09:30:00Z", "2024-07-01T09:30:00Z", 50, zone: "UTC"),
        sample("it-p2", "phone", "2024-07-01T10:30:00Z", "2024-07-01T10:30:00Z", 40, zone: "UTC"),
        // Heart rate on the fall-back night: 80 and 90 in 01:00-04:00, 70 in 01:00-05:00.
        sample("hr-a", "watch", "2026-11-01T01:10:00-04:00", "2026-11-01T01:10:00-04:00", 80, zone: "America/New_York", metric: "heart_rate"),
        sample("hr-b", "phone", "2026-11-01T01:20:00-04:00", "2026-11-01T01:20:00-04:00", 90, zone: "America/New_York", metric: "heart_rate"),
        sample("hr-c", "watch", "2026-11-01T01:10:00-05:00", "2026-11-01T01:10:00-05:00", 70, zone: "America/New_York", metric: "heart_rate"),
    ]

    /// The `rows` of a totals answer, each as the line `rollup` / `totals --format json`
    /// prints for it (the user and metric put in front).
    static func rowLines(_ body: String, metric: String) throws -> [String] {
        let rows = try #require(body.range(of: #""rows":["#)).upperBound
        let end = try #require(body.range(of: #"],"unknown""#)).lowerBound
        let list = body[rows..<end]
        guard !list.isEmpty else { return [] }
        return list.dropFirst().dropLast().components(separatedBy: "},{").map { #"{"user":"ana","metric":"\#(metric)","# + $0 + "}" }
    }

    static func fetch(_ url: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: try #require(URL(string: url)))
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func daysEqualRollupAndHoursEqualTotalsOverASocket() async throws {
        let fixture = try ServeFixture(log: Self.log)
        let service = try fixture.service { $0.port = 0 }
        try service.start()
        defer { service.stop() }
        let base = "http://127.0.0.1:\(try #require(service.port))"

        // What `daybook rollup` prints for the log, and what `totals --bucket hour` prints.
        let ledger = Ledger()
        for (i, line) in Self.log.enumerated() { ledger.apply(try EventDecoder().decode(line), at: Int64(i)) }
        let rollup = ledger.allTotals().sorted { $0.key < $1.key }
        let shard = try #require(try ShardReader(directory: fixture.data).shardPaths().first)

        for (metric, from, to) in [(Metric.steps, "2024-05-10", "2026-11-01"), (.heartRate, "2026-11-01", "2026-11-01")] {
            // 2024-05-10 to 2026-11-01 is over 366 days: ask a year at a time.
            var days: [String] = []
            var hours: [String] = []
            var start = try #require(CivilDay(from))
            let last = try #require(CivilDay(to))
            while start <= last {
                let end = min(start.adding(days: 365), last)
                let query = "?metric=\(metric.rawValue)&from=\(start)&to=\(end)"
                let day = try await Self.fetch(base + "/v1/users/ana/totals" + query)
                #expect(day.status == 200, "\(day.body)")
                days += try Self.rowLines(day.body, metric: metric.rawValue)
                let hour = try await Self.fetch(base + "/v1/users/ana/totals" + query + "&bucket=hour")
                #expect(hour.status == 200, "\(hour.body)")
                hours += try Self.rowLines(hour.body, metric: metric.rawValue)
                start = end.adding(days: 1)
            }
            #expect(days == rollup.filter { $0.key.metric == metric }.map(\.jsonLine))
            let printed = try ShardReader(directory: fixture.data).hours(inShardAt: shard, user: "ana", metric: metric,
                                                                         from: try #require(CivilDay(from)), to: last)
            #expect(hours == printed.map(\.jsonLine))
            if metric == .steps {
                // Each day's printed hours add up to its printed row, exactly.
                for row in rollup where row.key.metric == .steps {
                    guard case .cumulative(let value, _) = row.summary else { continue }
                    let sum = printed.filter { $0.key.day == row.key.day }.reduce(Decimal(0)) { total, hour in
                        guard case .cumulative(let v, _) = hour.summary else { return total }
                        return total + (Decimal(string: DayTotal.format(v)) ?? .nan)
                    }
                    #expect(sum == Decimal(string: DayTotal.format(value)), "\(row.key)")
                }
                #expect(days == [
                    #"{"user":"ana","metric":"steps","day":"2024-05-10","value":1350}"#,
                    #"{"user":"ana","metric":"steps","day":"2024-06-01","value":300}"#,
                    #"{"user":"ana","metric":"steps","day":"2024-06-02","value":525}"#,
                    #"{"user":"ana","metric":"steps","day":"2024-07-01","value":640}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-03-08","value":800}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-11-01","value":1500}"#,
                ])
                #expect(hours.filter { $0.contains(#""day":"2026-11-01""#) } == [
                    #"{"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T00:00:00-04:00","end":"2026-11-01T01:00:00-04:00","value":150}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T01:00:00-04:00","end":"2026-11-01T01:00:00-05:00","value":300}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T01:00:00-05:00","end":"2026-11-01T02:00:00-05:00","value":300}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T02:00:00-05:00","end":"2026-11-01T03:00:00-05:00","value":450}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T03:00:00-05:00","end":"2026-11-01T04:00:00-05:00","value":300}"#,
                ])
                #expect(hours.filter { $0.contains(#""day":"2026-03-08""#) } == [
                    #"{"user":"ana","metric":"steps","day":"2026-03-08","start":"2026-03-08T01:00:00-05:00","end":"2026-03-08T03:00:00-04:00","value":500}"#,
                    #"{"user":"ana","metric":"steps","day":"2026-03-08","start":"2026-03-08T03:00:00-04:00","end":"2026-03-08T04:00:00-04:00","value":300}"#,
                ])
                #expect(hours.filter { $0.contains(#""day":"2024-05-10""#) }.map { $0.contains(#""start":"2024-05-10T11:00:00+05:30""#) && $0.hasSuffix(#""value":600}"#) }
                        == [false, true, false])
                #expect(hours.filter { $0.contains(#""day":"2024-07-01""#) }.map { $0.components(separatedBy: #""value":"#).last ?? "" } == ["600}", "40}"])
            } else {
                #expect(days == [#"{"user":"ana","metric":"heart_rate","day":"2026-11-01","min":70,"max":90,"avg":80,"count":3,"latest":70}"#])
                #expect(hours.map { $0.components(separatedBy: #""min":"#).last ?? "" } == ["80,\"max\":90,\"avg\":85,\"count\":2,\"latest\":90}", "70,\"max\":70,\"avg\":70,\"count\":1,\"latest\":70}"])
            }
        }
    }
}
