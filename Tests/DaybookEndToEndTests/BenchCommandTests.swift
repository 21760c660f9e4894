import DaybookTestSupport
import Foundation
import Testing

/// `daybook bench` (the pipeline benchmark) as a process: a small run end to end, and the
/// ways it refuses to start.
@Suite struct BenchCommandTests {
    /// The JSON line's keys, as BENCHMARKS.md and `daybook bench --help` document them.
    static let keys = [
        "bench", "version", "events", "users", "partitions", "seed", "uuids", "cores", "load_average", "log_bytes", "config",
        "publish_seconds", "publish_events_per_s", "publish_peak_rss_mb",
        "kcat_produce_seconds", "kcat_produce_events_per_s",
        "raw_direct_seconds", "raw_direct_events_per_s",
        "raw_group_seconds", "raw_group_events_per_s", "raw_group_first_message_seconds",
        "project_solo_seconds", "project_solo_events_per_s", "project_solo_peak_rss_mb",
        "project_group_seconds", "project_group_events_per_s", "project_group_peak_rss_mb",
        "restart_solo_seconds", "restart_solo_peak_rss_mb",
        "restart_group_seconds", "restart_group_peak_rss_mb",
        "data_bytes", "data_bytes_per_event", "core_samples_per_s",
        "ratio_project_solo_to_raw_direct", "ratio_project_group_to_raw_group", "ratio_publish_to_kcat_produce",
        "project_solo_cache_hits", "project_solo_cache_misses", "project_solo_cache_evictions",
        "project_group_cache_hits", "project_group_cache_misses", "project_group_cache_evictions",
        "arrival_raw_direct_seconds", "arrival_raw_direct_events_per_s",
        "arrival_raw_group_seconds", "arrival_raw_group_events_per_s",
        "arrival_project_solo_seconds", "arrival_project_solo_events_per_s", "arrival_project_solo_peak_rss_mb",
        "arrival_project_solo_cache_hits", "arrival_project_solo_cache_misses", "arrival_project_solo_cache_evictions",
        "arrival_project_group_seconds", "arrival_project_group_events_per_s", "arrival_project_group_peak_rss_mb",
        "arrival_project_group_cache_hits", "arrival_project_group_cache_misses", "arrival_project_group_cache_evictions",
        "project_solo_cpus", "project_group_cpus", "arrival_project_solo_cpus", "arrival_project_group_cpus",
        "ratio_arrival_project_solo_to_raw_direct", "ratio_arrival_project_group_to_raw_group",
        "instructions_events", "project_solo_instructions_per_event", "kcat_instructions_per_event", "ratio_project_solo_to_kcat_instructions",
        "naive_python_seconds", "ratio_naive_python_to_project_solo",
    ]
    /// Null unless python3 here can import confluent_kafka (CI's cannot).
    static let naiveKeys: Set = ["naive_python_seconds", "ratio_naive_python_to_project_solo"]

    static func benchDirectories() -> Set<String> {
        let tmp = FileManager.default.temporaryDirectory.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
        return Set(names.filter { $0.hasPrefix("daybook-bench.") })
    }

    let scratch = TemporaryDirectory()

    // A hang guard, not a timing assertion: the run takes ~20-40 s (three group joins and a
    // restart that waits out the old membership: the shortest session the embedded broker
    // accepts, through --config, which every project run gets).
    @Test(.timeLimit(.minutes(3))) func smallRunPrintsTheTableThenOneJSONLineWithEveryFigure() throws {
        let before = Self.benchDirectories()
        let config = try scratch.file(#"{"kafka":{"consumer":{"session.timeout.ms":6000,"heartbeat.interval.ms":500}}}"#, suffix: ".json")
        let r = try Daybook.run(["bench", "--events", "20000", "--partitions", "8", "--config", config, "--callgrind-events", "1000"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("daybook bench: 20,000 events") == true, "\(r.stdout)")
        #expect(r.stdout.contains("daybook project --solo"))
        #expect(r.stderr.contains("bench: daybook publish"))
        let last = try #require(lines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], "\(last)")
        #expect(Set(object.keys) == Set(Self.keys), "\(last)")
        // The keys come in the documented order.
        let order = Self.keys.compactMap { key in last.range(of: "\"\(key)\":").map { last.distance(from: last.startIndex, to: $0.lowerBound) } }
        #expect(order == order.sorted() && order.count == Self.keys.count)

        func number(_ key: String) -> Double { (object[key] as? NSNumber)?.doubleValue ?? -1 }
        #expect(object["bench"] as? String == "pipeline")
        #expect(number("events") == 20_000)
        #expect(number("partitions") == 8)
        #expect(number("seed") == 1)
        #expect(number("users") >= 1 && number("users") <= 200)
        #expect(number("cores") >= 1)
        #expect(object["config"] as? String == config)
        // ~230 bytes per event.
        #expect(number("log_bytes") > 20_000 * 150 && number("log_bytes") < 20_000 * 400)
        for key in Self.keys where !Self.naiveKeys.contains(key)
            && (key.hasSuffix("_per_s") || key.hasSuffix("_seconds") || key.hasSuffix("_rss_mb") || key.hasPrefix("ratio_")) {
            #expect(number(key) > 0, "\(key) in \(last)")
        }
        // The naive projector ran (both figures), or the table says why not (both null).
        if object["naive_python_seconds"] is NSNull {
            #expect(object["ratio_naive_python_to_project_solo"] is NSNull)
            #expect(r.stdout.contains("naive Python projector: not measured ("), "\(r.stdout)")
        } else {
            #expect(number("naive_python_seconds") > 0 && number("ratio_naive_python_to_project_solo") > 0)
            #expect(r.stdout.contains("naive Python projector (no dedupe, UTC days)"), "\(r.stdout)")
        }
        #expect(number("data_bytes") > 0)
        #expect(number("data_bytes_per_event") > 0 && number("data_bytes_per_event") < 10_000)
        // The raw group consumer's first message comes after its group join, before its last.
        #expect(number("raw_group_first_message_seconds") <= number("raw_group_seconds"))
        // Rates are events over seconds.
        let rate = number("events") / number("project_solo_seconds")
        #expect(abs(number("project_solo_events_per_s") - rate) <= rate * 0.01)
        // The cache figures are counts from the projectors' metrics files: every batch
        // needs windows, so each run has hits or misses; evictions are never negative.
        for prefix in ["project_solo", "project_group", "arrival_project_solo", "arrival_project_group"] {
            #expect(number(prefix + "_cache_hits") + number(prefix + "_cache_misses") > 0, "\(prefix) in \(last)")
            #expect(number(prefix + "_cache_evictions") >= 0, "\(prefix) in \(last)")
            // CPU over wall time: some work, at most every core (a little slack for clock granularity).
            #expect(number(prefix + "_cpus") > 0 && number(prefix + "_cpus") <= number("cores") + 0.5, "\(prefix) in \(last)")
        }
        #expect(r.stdout.contains("arrival order: daybook project --solo"))
        // Instructions per event, counted under callgrind on a log of their own: the
        // projector does more per event than a raw read, and both did some.
        #expect(number("instructions_events") == 1_000)
        #expect(number("kcat_instructions_per_event") > 100 && number("project_solo_instructions_per_event") > number("kcat_instructions_per_event"), "\(last)")
        #expect(r.stdout.contains("instructions per event (callgrind, 1,000 events in arrival order, 8 partitions)"), "\(r.stdout)")
        // The temporary directory is gone.
        #expect(Self.benchDirectories().subtracting(before).isEmpty)
    }

    @Test func refusesOptionsOfAnotherTarget() throws {
        let samples = try Daybook.run(["bench", "--samples", "5"])
        #expect(samples.status == 64)
        #expect(samples.stderr.contains("--events"))
        let events = try Daybook.run(["bench", "core", "--events", "5"])
        #expect(events.status == 64)
        let unknown = try Daybook.run(["bench", "everything"])
        #expect(unknown.status == 64)
        let help = try Daybook.run(["bench", "--help"])
        #expect(help.status == 0)
        for key in Self.keys { #expect(help.stdout.contains(key), "--help does not name \(key)") }
    }

    @Test func arrivalOrderIsTheSameEventsUsersInterleavedAndADeletionAfterItsSample() throws {
        let base = ["bench", "generate", "--samples", "20000", "--users", "3", "--seed", "7"]
        let user = try Daybook.run(base)
        let arrival = try Daybook.run(base + ["--order", "arrival"])
        #expect(user.status == 0 && arrival.status == 0, "\(user.stderr)\(arrival.stderr)")
        let u = user.stdout.split(separator: "\n"), a = arrival.stdout.split(separator: "\n")
        #expect(u.count > 19_000 && u.sorted() == a.sorted())
        #expect(u != a)
        func owner(_ line: Substring) -> String {
            guard let r = line.range(of: #""user":""#) else { return "" }
            return String(line[r.upperBound...].prefix { $0 != "\"" })
        }
        // User by user: 3 runs of users. By sync hour: the users take turns, hour by hour.
        func runs(_ lines: [Substring]) -> Int { zip(lines, lines.dropFirst()).filter { owner($0) != owner($1) }.count + 1 }
        #expect(runs(u) == 3)
        #expect(runs(a) > 100)
        for name in ["user-0", "user-1", "user-2"] {
            #expect(u.filter { owner($0) == name }.sorted() == a.filter { owner($0) == name }.sorted(), "\(name)'s events")
        }
        // Every deletion comes after the sample it deletes (seed 7 makes 3).
        var seen = Set<String>()
        var deletions = 0
        for line in a {
            guard let r = line.range(of: #""uuid":""#) else { continue }
            let uuid = String(line[r.upperBound...].prefix { $0 != "\"" })
            if line.contains(#""type":"sample-deleted""#) {
                deletions += 1
                #expect(seen.contains(uuid), "\(uuid) deleted before it is added")
            } else {
                seen.insert(uuid)
            }
        }
        #expect(deletions == 3)
        let bad = try Daybook.run(base + ["--order", "random"])
        #expect(bad.status == 64)
        let pipeline = try Daybook.run(["bench", "--order", "arrival"])
        #expect(pipeline.status == 64)
    }

    @Test func withoutKcatItSaysSoAndExits69() throws {
        let process = Process()
        process.executableURL = Daybook.binary
        process.arguments = ["bench", "--events", "1000"]
        process.environment = ProcessInfo.processInfo.environment.merging(["PATH": "/nonexistent"]) { $1 }
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 69)
        #expect(text.contains("kcat"))
    }
}
