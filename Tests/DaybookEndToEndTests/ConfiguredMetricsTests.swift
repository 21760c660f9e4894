import DaybookTestSupport
import Foundation
import Testing

/// Metrics the configuration adds to the catalogue (`metrics`), through the binary: rollup,
/// publish, import, project, totals and rebuild agree on them; without the configuration
/// they are unknown, said so; a changed aggregation is refused until a rebuild.
@Suite struct ConfiguredMetricsTests {
    let scratch = TemporaryDirectory()

    static func config(caffeine aggregation: String = "sum", priority: Bool = true) -> String {
        let metrics = #"""
            {"metrics": [
              {"name": "blood_glucose", "aggregation": "discrete", "unit": "mg/dL", "other_units": {"mmol/L": 18.0182},
               "maximum_per_sample": 1000, "health_kit": ["HKQuantityTypeIdentifierBloodGlucose"]},
              {"name": "caffeine", "aggregation": "AGGREGATION", "unit": "mg", "other_units": {"g": 1000}, "maximum_per_sample": 5000}]
            """#.replacingOccurrences(of: "AGGREGATION", with: aggregation)
        let ranks = #", "priority": {"default": ["watch", "phone"], "caffeine": ["phone", "watch"]}"#
        return metrics + (priority ? ranks : "") + "}"
    }

    static func sample(_ uuid: String, _ metric: String, _ source: String, _ time: String, _ value: String, _ unit: String) -> String {
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"\#(uuid)","metric":"\#(metric)","source":"\#(source)","start":"2024-05-06T\#(time):00+02:00","end":"2024-05-06T\#(time):00+02:00","value":\#(value),"unit":"\#(unit)","zone":"Europe/Berlin"}}"#
    }

    /// Blood glucose 5.5 mmol/L at 08:00 (5.5 × 18.0182 = 99.1001 mg/dL) and 110 mg/dL at
    /// 12:00: min 99.1001, max 110, mean 104.55005, latest 110. Caffeine, every sample
    /// counting: the phone's 95 mg and the watch's 0.08 g at 09:00, 95 + 80 = 175 (as
    /// priority_sum the phone, ranked first for caffeine, keeps the moment: 95).
    static let log = [
        sample("g1", "blood_glucose", "meter", "08:00", "5.5", "mmol/L"),
        sample("g2", "blood_glucose", "meter", "12:00", "110", "mg/dL"),
        sample("c1", "caffeine", "phone", "09:00", "95", "mg"),
        sample("c2", "caffeine", "watch", "09:00", "0.08", "g"),
    ].joined(separator: "\n") + "\n"

    static let rows = """
        {"user":"ana","metric":"blood_glucose","day":"2024-05-06","min":99.1001,"max":110,"avg":104.55005,"count":2,"latest":110}
        {"user":"ana","metric":"caffeine","day":"2024-05-06","value":175}

        """

    @Test func anAddedMetricFlowsThroughEveryCommandAndItsRuleIsKeptByTheShards() throws {
        let config = try scratch.file(Self.config(), suffix: ".json")
        let events = try scratch.file(Self.log)
        let rollup = try Daybook.run(["rollup", events, "--config", config])
        #expect(rollup.status == 0, "\(rollup.stderr)")
        #expect(rollup.stdout == Self.rows)
        // Without the configuration the metrics are unknown: every line a rejection, 65.
        let bare = try Daybook.run(["rollup", events])
        #expect(bare.status == 65 && bare.stdout.isEmpty)
        #expect(bare.stderr.contains(#"line 1: sample.metric: "blood_glucose" is not a metric"#), "\(bare.stderr)")

        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, "--config", config, events]).status == 0)
        let data = scratch.newPath("data")
        let project = try Daybook.run(["project", "--brokers", broker.bootstrap, "--config", config, "--data", data, "--solo", "--until-caught-up"])
        #expect(project.status == 0, "\(project.stderr)")
        #expect(project.stderr.contains("dead letters 0"), "\(project.stderr)")
        let totals = try Daybook.run(["totals", "--data", data, "--config", config, "--format", "json"])
        #expect(totals.status == 0, "\(totals.stderr)")
        #expect(totals.stdout == Self.rows)
        // Without it, readers and writers refuse the shards, naming what they hold: 78.
        let unknown = try Daybook.run(["totals", "--data", data, "--format", "json"])
        #expect(unknown.status == 78)
        #expect(unknown.stderr.contains("is unknown to this Daybook): its blood_glucose data were made under another entry. To read or write it, give the configuration whose metrics section adds blood_glucose (--config)"), "\(unknown.stderr)")
        let bareProject = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(bareProject.status == 78 && bareProject.stderr.contains("adds blood_glucose (--config)"), "\(bareProject.stderr)")
        // A rebuild without it would turn their events into dead letters: refused.
        let bareRebuild = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", data])
        #expect(bareRebuild.status == 78, "\(bareRebuild.stderr)")
        #expect(bareRebuild.stderr.contains("holds blood_glucose data (metric 17, blood_glucose:discrete:mg/dL), a metric this catalogue lacks: rebuilt without it, its events would become dead letters"), "\(bareRebuild.stderr)")

        // Caffeine's rule changed: the shards refuse it, until a rebuild builds them under it.
        let changed = try scratch.file(Self.config(caffeine: "priority_sum"), suffix: ".json")
        let refused = try Daybook.run(["project", "--brokers", broker.bootstrap, "--config", changed, "--data", data, "--solo", "--until-caught-up"])
        #expect(refused.status == 78, "\(refused.stderr)")
        #expect(refused.stderr.contains("metric 18 was caffeine:sum:mg, is caffeine:priority_sum:mg"), "\(refused.stderr)")
        // Rebuilding one partition would leave the other under the old rule: refused.
        let partial = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--config", changed, "--data", data, "--partition", "0"])
        #expect(partial.status == 78, "\(partial.stderr)")
        #expect(partial.stderr.contains("holds data made under metric 18 caffeine:sum:mg, not caffeine:priority_sum:mg: rebuilding only partition 0 would leave the others under the old entry"), "\(partial.stderr)")
        let rebuild = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--config", changed, "--data", data])
        #expect(rebuild.status == 0, "\(rebuild.stderr)")
        let rebuilt = try Daybook.run(["totals", "--data", data, "--config", changed, "--metric", "caffeine", "--format", "json"])
        #expect(rebuilt.stdout == #"{"user":"ana","metric":"caffeine","day":"2024-05-06","value":95}"# + "\n", "\(rebuilt.stderr)")
    }

    /// Projected without the configuration, an added metric's events are dead letters; with
    /// it, `dlq replay` republishes them (their own messages, which now decode, are the writes
    /// being repaired, not newer ones in force) and the totals are the rollup's.
    @Test func deadLettersOfAnUnknownMetricAreRepairedWithTheConfiguration() throws {
        // Under the built-in priority, as the projection without the configuration was.
        let config = try scratch.file(Self.config(priority: false), suffix: ".json")
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, "--config", config, try scratch.file(Self.log)]).status == 0)
        let data = scratch.newPath("data")
        let bare = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(bare.status == 0 && bare.stderr.contains("dead letters 4"), "\(bare.stderr)")
        let replay = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", data, "--config", config])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(!replay.stderr.contains("superseded"), "\(replay.stderr)")
        let project = try Daybook.run(["project", "--brokers", broker.bootstrap, "--config", config, "--data", data, "--solo", "--until-caught-up"])
        #expect(project.status == 0, "\(project.stderr)")
        let totals = try Daybook.run(["totals", "--data", data, "--config", config, "--format", "json"])
        #expect(totals.stdout == Self.rows, "\(totals.stderr)")
    }

    /// An Apple Health type the configuration maps: imported (published with --config), and
    /// named in the summary.
    @Test func importMapsAnAddedMetricsAppleHealthType() throws {
        let config = try scratch.file(Self.config(), suffix: ".json")
        let xml = try scratch.file("""
            <?xml version="1.0" encoding="UTF-8"?>
            <HealthData locale="en_DE">
             <ExportDate value="2024-05-07 10:00:00 +0200"/>
             <Record type="HKQuantityTypeIdentifierBloodGlucose" sourceName="Meter" sourceVersion="1.0" unit="mmol/L" creationDate="2024-05-06 08:01:00 +0200" startDate="2024-05-06 08:00:00 +0200" endDate="2024-05-06 08:00:00 +0200" value="5.5"/>
             <Record type="HKQuantityTypeIdentifierBloodGlucose" sourceName="Meter" sourceVersion="1.0" unit="mg/dL" creationDate="2024-05-06 12:01:00 +0200" startDate="2024-05-06 12:00:00 +0200" endDate="2024-05-06 12:00:00 +0200" value="110"/>
            </HealthData>

            """, suffix: ".xml")
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        let imported = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin", "--brokers", broker.bootstrap, "--config", config])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("blood_glucose: 2 (meter 2)"), "\(imported.stderr)")
        let data = scratch.newPath("data")
        #expect(try Daybook.run(["project", "--brokers", broker.bootstrap, "--config", config, "--data", data, "--solo", "--until-caught-up"]).status == 0)
        let totals = try Daybook.run(["totals", "--data", data, "--config", config, "--format", "json"])
        #expect(totals.stdout == Self.rows.split(separator: "\n")[0] + "\n", "\(totals.stderr)")
        // To a file, --config brings the metrics alone (nothing is published): the same rows.
        let out = scratch.newPath("glucose") + ".jsonl"
        let written = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin", "--out", out, "--config", config])
        #expect(written.status == 0, "\(written.stderr)")
        let rollup = try Daybook.run(["rollup", out, "--config", config])
        #expect(rollup.stdout == Self.rows.split(separator: "\n")[0] + "\n", "\(rollup.stderr)")
    }

    /// The issue's refusals, through a command: 78, naming the member.
    @Test(arguments: [
        (#"{"metrics": [{"name": "steps", "aggregation": "sum", "unit": "count", "maximum_per_sample": 10}]}"#, #"metrics[0].name: "steps" is a built-in metric"#),
        (#"{"metrics": [{"name": "x", "aggregation": "average", "unit": "u", "maximum_per_sample": 10}]}"#, #"metrics[0].aggregation: "average" is not an aggregation"#),
        (#"{"metrics": [{"name": "x", "aggregation": "sum", "unit": "mg", "other_units": {"g": "1000"}, "maximum_per_sample": 10}]}"#,
         "metrics[0].other_units.g: must be a positive number from 1e-9 to 1e9, the factor that converts a value in g to mg"),
    ])
    func aWrongMetricExits78NamingIt(config: String, message: String) throws {
        let r = try Daybook.run(["rollup", try scratch.file(Self.log), "--config", try scratch.file(config, suffix: ".json")])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}
