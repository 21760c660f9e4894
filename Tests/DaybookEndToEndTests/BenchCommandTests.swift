import DaybookTestSupport
import Foundation
import Testing

/// `daybook bench` (the pipeline benchmark) as a process: a small run end to end, and the
/// ways it refuses to start.
@Suite struct BenchCommandTests {
    /// The JSON line's keys, as BENCHMARKS.md and `daybook bench --help` document them.
    static let keys = [
        "bench", "version", "events", "users", "partitions", "seed", "cores", "load_average", "log_bytes", "config",
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
    ]

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
        let r = try Daybook.run(["bench", "--events", "20000", "--partitions", "8", "--config", config])
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
        for key in Self.keys where key.hasSuffix("_per_s") || key.hasSuffix("_seconds") || key.hasSuffix("_rss_mb") || key.hasPrefix("ratio_") {
            #expect(number(key) > 0, "\(key) in \(last)")
        }
        #expect(number("data_bytes") > 0)
        #expect(number("data_bytes_per_event") > 0 && number("data_bytes_per_event") < 10_000)
        // The raw group consumer's first message comes after its group join, before its last.
        #expect(number("raw_group_first_message_seconds") <= number("raw_group_seconds"))
        // Rates are events over seconds.
        let rate = number("events") / number("project_solo_seconds")
        #expect(abs(number("project_solo_events_per_s") - rate) <= rate * 0.01)
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
