import DaybookCore
import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

/// `daybook totals --bucket hour` on a shard written the projector's way: the rows of the
/// library call (`ShardReader.hours`) in json, csv and table, and usage errors.
@Suite struct TotalsHoursTests {
    let scratch = TemporaryDirectory()

    /// The fall-back night (America/New_York, 2026-11-01): watch 00:30-04:00 → 02:30-05:00
    /// 900 (5 a minute), phone 01:30-05:00 → 03:30-05:00 1200 (10 a minute, wins 07:30Z–08:30Z:
    /// 600). Day 1500 (naive 2100, max 1200); hours 150, 300, 300, 450, 300.
    func dataDirectory() throws -> String {
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let shard = try Shard(directory: dir, topic: "health-samples", partition: 0, fingerprint: SourcePriority.builtIn.fingerprint)
        let ledger = Ledger(priority: .builtIn, store: shard, cacheBudgetBytes: 0)
        let samples = [("w", "watch", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00", 900.0),
                       ("p", "phone", "2026-11-01T01:30:00-05:00", "2026-11-01T03:30:00-05:00", 1200.0)].map {
            Sample(user: "ana", uuid: $0.0, metric: .steps, source: $0.1, start: try! Instant(rfc3339: $0.2),
                   end: try! Instant(rfc3339: $0.3), value: $0.4, zone: "America/New_York")
        }
        let events = samples.map(Event.sampleAdded)
        try ledger.load(for: events)
        var batch = Shard.Batch(nextOffset: Int64(events.count))
        var dirty = Set<DayKey>()
        for (i, e) in events.enumerated() { dirty.formUnion(ledger.apply(e, at: Int64(i))) }
        batch.upserts = samples.enumerated().map { Shard.Upsert(sample: $1, seq: Int64($0)) }
        batch.rows = ledger.recompute(dirty)
        try shard.commit(batch)
        return dir
    }

    @Test func printsTheHoursInEachFormat() throws {
        let dir = try dataDirectory()
        let args = ["totals", "--data", dir, "--user", "ana", "--metric", "steps", "--from", "2026-11-01", "--to", "2026-11-01", "--bucket", "hour"]
        let json = try Daybook.run(args + ["--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout == """
        {"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T00:00:00-04:00","end":"2026-11-01T01:00:00-04:00","value":150}
        {"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T01:00:00-04:00","end":"2026-11-01T01:00:00-05:00","value":300}
        {"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T01:00:00-05:00","end":"2026-11-01T02:00:00-05:00","value":300}
        {"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T02:00:00-05:00","end":"2026-11-01T03:00:00-05:00","value":450}
        {"user":"ana","metric":"steps","day":"2026-11-01","start":"2026-11-01T03:00:00-05:00","end":"2026-11-01T04:00:00-05:00","value":300}

        """)
        // The library call the command makes, and the day row the hours add up to (1500).
        let rows = try ShardReader(directory: dir).hours(.init(user: "ana", metric: .steps, from: CivilDay("2026-11-01"), to: CivilDay("2026-11-01")))
        #expect(json.stdout == rows.map { $0.jsonLine + "\n" }.joined())
        let day = try Daybook.run(Array(args.dropLast(2)) + ["--format", "json"])
        #expect(day.stdout == #"{"user":"ana","metric":"steps","day":"2026-11-01","value":1500}"# + "\n", "\(day.stderr)")

        let csv = try Daybook.run(args + ["--format", "csv"])
        #expect(csv.status == 0, "\(csv.stderr)")
        let lines = csv.stdout.split(separator: "\n")
        #expect(lines.first == "user,metric,day,start,end,value,min,max,avg,count,sources,latest")
        #expect(lines[4] == "ana,steps,2026-11-01,2026-11-01T02:00:00-05:00,2026-11-01T03:00:00-05:00,450,,,,,watch=150;phone=300,")
        #expect(lines.count == 6)

        let table = try Daybook.run(args)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("ana · steps (count) by hour"), "\(table.stdout)")
        #expect(table.stdout.contains("2026-11-01T01:00:00-05:00 → 2026-11-01T02:00:00-05:00           300  watch 300"), "\(table.stdout)")

        // An hour without data is no row; a day without any prints no data.
        let empty = try Daybook.run(["totals", "--data", dir, "--user", "ana", "--from", "2026-11-02", "--to", "2026-11-02", "--bucket", "hour"])
        #expect(empty.status == 0 && empty.stdout == "no data\n", "\(empty.stdout)\(empty.stderr)")
    }

    @Test func refusesAnUnknownBucket() throws {
        let r = try Daybook.run(["totals", "--data", try dataDirectory(), "--bucket", "week"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--bucket 'week' is not one of day, hour"), "\(r.stderr)")
    }
}
