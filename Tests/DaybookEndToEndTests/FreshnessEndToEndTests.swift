import DaybookCore
import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

/// Check-ins through Kafka into the shards' sync state, `daybook stale`, canaries and
/// `unknown` days in `totals`, as processes against `daybook broker`.
@Suite(.serialized) struct FreshnessEndToEndTests {
    let scratch = TemporaryDirectory()

    static let hour: Int64 = 3_600

    /// watch 12 h, phone 24 h, anything else 36 h; page at half of a source's users; two canaries.
    static func config(watchThreshold: String = "12h") -> String {
        """
        {"freshness":{"default":{"threshold":"36h","page_fraction":0.5},
          "sources":{"watch":{"threshold":"\(watchThreshold)"},"phone":{"threshold":"24h"}},
          "canaries":[{"user":"canary-w","source":"watch"},{"user":"canary-p","source":"phone"}]}}
        """
    }

    static func checkIn(_ user: String, _ source: String, _ at: Instant, metrics: [Metric]? = nil) -> String {
        Event.sourceCheckedIn(CheckIn(user: user, source: source, at: at, metrics: metrics)).jsonLine
    }

    static func sample(_ user: String, _ uuid: String, _ source: String, _ start: Instant, minutes: Int64, _ value: Double, zone: String) -> String {
        Event.sampleAdded(Sample(user: user, uuid: uuid, metric: .steps, source: source, start: start,
                                 end: Instant(seconds: start.nanoseconds / 1_000_000_000 + minutes * 60), value: value, zone: zone)).jsonLine
    }

    func publish(_ lines: [String], to broker: BrokerProcess) throws {
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 0, "\(r.stderr)")
    }

    func project(_ broker: BrokerProcess, _ dir: String) throws {
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    static func json(_ text: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
    }

    static func names(_ list: Any?) -> [String] {
        (list as? [[String: Any]] ?? []).map { "\($0["user"] ?? "")/\($0["source"] ?? "")" }
    }

    /// Everything is published at t0: samples show their source alive then (their Kafka
    /// timestamps); check-ins carry their own `at`, in the past (a future one counts only
    /// up to its message's timestamp + 10 min). Judged at now = t0 + 2 h:
    /// - ana/watch, ana/phone: samples → silent 2 h: fresh
    /// - bob/phone: check-in only, t0−30h → silent 32 h > 24 h: STALE
    /// - bob/watch: check-in only, t0−9h → 11 h < 12 h: fresh
    /// - cai/watch: check-in t0−30h (would be stale) but a sample delivered at t0: fresh
    /// - dan/scale: check-in t0−33h → 35 h < 36 h (the default): fresh
    /// - eve/watch: check-in t0−15h → 17 h > 12 h: STALE
    /// - fut/watch: check-in "at 2199" → counts as t0 + 10 min at most: fresh now, stale at t0 + 20 h
    /// - canary-w/watch: one check-in at t0−240h; canary-p/phone: never
    /// Sources: watch 1 of 5 stale (ana, bob, cai, eve, fut), phone 1 of 2 (pages at 0.5), scale 0 of 1.
    @Test(.timeLimit(.minutes(3))) func staleListsExactlyTheSilentPairsAndARebuildAgrees() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "4"])
        defer { _ = broker.stop() }
        let t0 = Int64(Date().timeIntervalSince1970)
        let at = { (hours: Int64) in Instant(seconds: t0 + hours * Self.hour) }
        // ana's walk the day before t0 (Berlin): the watch 3,000 over 09:00–10:00, the phone
        // 2,000 over 09:30–10:30; the watch wins 09:00–10:00 and the phone keeps 10:00–10:30
        // = 1,000, so 4,000 (naive sum 5,000, max 3,000). Two days before t0: 500 watch steps.
        let berlin = ZoneRules.named("Europe/Berlin")!
        let yesterday = berlin.day(of: Instant(seconds: t0)).adding(days: -1)
        let nine = Instant(nanoseconds: berlin.bounds(of: yesterday).start.nanoseconds + 9 * Self.hour * 1_000_000_000)
        let earlier = Instant(nanoseconds: nine.nanoseconds - 2 * Instant.nanosPerDay)
        let lines = [
            Self.sample("ana", "a-w", "watch", nine, minutes: 60, 3000, zone: "Europe/Berlin"),
            Self.sample("ana", "a-p", "phone", Instant(nanoseconds: nine.nanoseconds + 1_800_000_000_000), minutes: 60, 2000, zone: "Europe/Berlin"),
            Self.sample("ana", "a-e", "watch", earlier, minutes: 10, 500, zone: "Europe/Berlin"),
            Self.checkIn("bob", "phone", at(-30), metrics: [.steps]),
            Self.checkIn("bob", "watch", at(-9)),
            Self.checkIn("cai", "watch", at(-30)),
            Self.sample("cai", "c-w", "watch", nine, minutes: 30, 1200, zone: "UTC"),
            Self.checkIn("dan", "scale", at(-33)),
            Self.checkIn("eve", "watch", at(-15)),
            Self.checkIn("fut", "watch", Instant(seconds: 7_258_032_000)), // 2199-12-31T00:00:00Z
            Self.checkIn("canary-w", "watch", at(-240)),
        ]
        try publish(lines, to: broker)
        let dir = scratch.newPath("data")
        try project(broker, dir)
        let config = try scratch.file(Self.config(), suffix: ".json")
        let now = "\(at(2))"

        let stale = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--format", "json"])
        #expect(stale.status == 1, "phone pages: \(stale.stdout) \(stale.stderr)")
        let report = try Self.json(stale.stdout)
        let listed = (report["stale"] as? [[String: Any]] ?? []).filter { $0["canary"] as? Bool == false }
        #expect(Self.names(listed) == ["bob/phone", "eve/watch"], "\(stale.stdout)")
        #expect(listed.first?["silent_seconds"] as? Int == Int(32 * Self.hour))
        #expect(report["detector_ok"] as? Bool == true)
        #expect(Self.names(report["canaries"]) == ["canary-w/watch", "canary-p/phone"])
        let sources = Dictionary(uniqueKeysWithValues: (report["sources"] as? [[String: Any]] ?? []).map { ("\($0["source"] ?? "")", $0) })
        #expect(sources["watch"]?["users"] as? Int == 5 && sources["watch"]?["stale"] as? Int == 1 && sources["watch"]?["pages"] as? Bool == false)
        #expect(sources["phone"]?["users"] as? Int == 2 && sources["phone"]?["stale"] as? Int == 1 && sources["phone"]?["pages"] as? Bool == true)
        #expect(sources["scale"]?["users"] as? Int == 1 && sources["scale"]?["stale"] as? Int == 0)
        // The check-in dated 2199 counts as of its message (+10 min at most): at t0 + 20 h fut's
        // watch is silent past 12 h like the others (ana's phone, 20 h < 24 h, is not).
        let later = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", "\(at(20))", "--format", "json"])
        #expect(Self.names((try Self.json(later.stdout)["stale"] as? [[String: Any]] ?? []).filter { $0["canary"] as? Bool == false })
                == ["bob/phone", "dan/scale", "ana/watch", "bob/watch", "cai/watch", "eve/watch", "fut/watch"], "\(later.stdout)")

        // The same figures for Prometheus, in a file promtool finds clean.
        let prom = scratch.newPath("stale") + ".prom"
        let withMetrics = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--metrics-file", prom])
        #expect(withMetrics.status == 1)
        let promText = try String(contentsOfFile: prom, encoding: .utf8)
        let series = MetricsFileTests.samples(promText)
        #expect(series[#"daybook_stale_pairs{source="phone"}"#] == 1 && series[#"daybook_source_users{source="phone"}"#] == 2)
        #expect(series[#"daybook_stale_pairs{source="watch"}"#] == 1 && series[#"daybook_source_users{source="watch"}"#] == 5)
        #expect(series[#"daybook_stale_fraction{source="phone"}"#] == 0.5 && series[#"daybook_stale_pages{source="phone"}"#] == 1)
        #expect(series[#"daybook_stale_pages{source="watch"}"#] == 0 && series[#"daybook_stale_threshold_seconds{source="watch"}"#] == 43_200)
        #expect(series["daybook_canaries"] == 2 && series["daybook_canaries_unreported"] == 0 && series["daybook_canary_check_ok"] == 1)
        #expect(series["daybook_stale_evaluation_timestamp_seconds"] == Double(t0 + 2 * Self.hour))
        let check = try Promtool.checkMetrics(promText)
        #expect(check.isClean, "\(check.output)")

        // The table says the same for people; --page-fraction moves the page line.
        let table = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now])
        #expect(table.status == 1)
        #expect(table.stdout.contains("phone   bob       1d 8h") && table.stdout.contains("canaries: all 2 reported stale"), "\(table.stdout)")
        let calmer = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--page-fraction", "phone=0.6"])
        #expect(calmer.status == 0, "\(calmer.stdout)")
        #expect(try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--page-fraction", "0.3"]).status == 1)
        let typo = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--page-fraction", "phnoe=0.9"])
        #expect(typo.status == 78 && typo.stderr.contains("--page-fraction names source 'phnoe', which freshness.sources does not list and no pair has"), "\(typo.stderr)")
        #expect(typo.stdout.isEmpty)
        // canary-p never checked in: said, since it proves less than canary-w.
        #expect(table.stderr.contains("canary canary-p/phone never checked in"), "\(table.stderr)")
        // --summary: the same verdict and canaries, no pair lines.
        let summary = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--summary", "--format", "json"])
        #expect(summary.status == 1)
        let brief = try Self.json(summary.stdout)
        #expect(Self.names(brief["stale"]) == ["canary-p/phone", "canary-w/watch"] && brief["detector_ok"] as? Bool == true, "\(summary.stdout)")
        #expect(brief["sources"] as? NSArray == report["sources"] as? NSArray)

        // A rebuild from the log gives the same sync state, pair by pair and field by field.
        let all = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--format", "json", "--all"])
        let pairs = try Self.json(all.stdout)["pairs"] as? [[String: Any]] ?? []
        #expect(pairs.count == 9, "\(all.stdout)")
        // cai's watch checked in 30 h before t0, then delivered a sample: its message's timestamp is its last sign of life.
        let cai = pairs.first { $0["user"] as? String == "cai" }
        let delivered = (cai?["last_sample_delivered"] as? String).flatMap { try? Instant(rfc3339: $0) }
        #expect(delivered.map { $0 >= Instant(seconds: t0) && $0 < Instant(seconds: t0 + 120) } == true, "\(String(describing: cai))")
        #expect(cai?["last_seen"] as? String == cai?["last_sample_delivered"] as? String && cai?["last_check_in"] as? String == "\(at(-30))")
        let rebuild = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir])
        #expect(rebuild.status == 0, "\(rebuild.stderr)")
        let again = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--format", "json", "--all"])
        #expect(again.stdout == all.stdout)
        #expect(FileManager.default.fileExists(atPath: dir + "/manifest.json"))

        // totals: ana's sources were last heard from at t0 (its day in Berlin): that day is unknown,
        // the day without a row before it is "no data", never 0.
        let today = berlin.day(of: Instant(seconds: t0))
        let totals = try Daybook.run(["totals", "--data", dir, "--user", "ana", "--metric", "steps", "--from", "\(yesterday.adding(days: -2))",
                                      "--to", "\(today.adding(days: 1))", "--format", "json"])
        #expect(totals.stdout.split(separator: "\n").map(String.init) == [
            #"{"user":"ana","metric":"steps","day":"\#(yesterday.adding(days: -2))","value":500}"#,
            #"{"user":"ana","metric":"steps","day":"\#(yesterday)","value":4000}"#,
            #"{"user":"ana","metric":"steps","day":"\#(today)","unknown":["phone","watch"]}"#,
            #"{"user":"ana","metric":"steps","day":"\#(today.adding(days: 1))","unknown":["phone","watch"]}"#,
        ], "\(totals.stdout)")
        let text = try Daybook.run(["totals", "--data", dir, "--user", "ana", "--metric", "steps", "--from", "\(yesterday.adding(days: -2))", "--to", "\(today)"])
        #expect(text.stdout.contains("  \(yesterday.adding(days: -1))       no data\n"), "\(text.stdout)")
        #expect(text.stdout.contains("  \(today)       unknown  phone silent since \(today), watch silent since \(today)"), "\(text.stdout)")

        // The negative twin: bob's phone checks in at t0; only eve is stale now, and nothing pages.
        try publish([Self.checkIn("bob", "phone", at(0))], to: broker)
        try project(broker, dir)
        let twin = try Daybook.run(["stale", "--data", dir, "--config", config, "--now", now, "--format", "json"])
        #expect(twin.status == 0, "\(twin.stdout)")
        let after = (try Self.json(twin.stdout)["stale"] as? [[String: Any]] ?? []).filter { $0["canary"] as? Bool == false }
        #expect(Self.names(after) == ["eve/watch"])

        // verify compares the sync state too: a hand-moved check-in is named, and a rebuild of its partition repairs it.
        #expect(try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir]).status == 0)
        let shard = try ShardReader(directory: dir).shardPaths().first { path in
            (try? OperatorTests.sql(path, "SELECT count(*) FROM sync_state WHERE user = 'bob'")) == "2"
        }
        let path = try #require(shard)
        _ = try OperatorTests.sql(path, "UPDATE sync_state SET last_check_in_ns = last_check_in_ns + 3600000000000 WHERE user = 'bob' AND source = 'phone'")
        let edited = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(edited.status == 1, "\(edited.stderr)")
        let verifyLines = edited.stdout.split(separator: "\n")
        #expect(verifyLines.count == 1 && verifyLines[0].hasPrefix("DIFFERS sync state bob/phone: live check-in \(at(1))"), "\(edited.stdout)")
        let partition = try #require(Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: "health-samples"))
        #expect(edited.stderr.contains("1 (user, source) sync states differ") && edited.stderr.contains("--partition \(partition)"), "\(edited.stderr)")
        #expect(try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--partition", "\(partition)"]).status == 0)
        #expect(try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir]).status == 0)
    }

    @Test(.timeLimit(.minutes(2))) func aThresholdInTheWrongUnitFailsTheCanaryCheckLoudly() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let t0 = Int64(Date().timeIntervalSince1970)
        // canary-w checked in once, 10 days before now; a watch threshold of "36d" (meant: 36h)
        // no longer finds it silent.
        try publish([Self.checkIn("canary-w", "watch", Instant(seconds: t0 - 240 * Self.hour)),
                     Self.checkIn("ana", "watch", Instant(seconds: t0 - Self.hour))], to: broker)
        let dir = scratch.newPath("data")
        try project(broker, dir)
        let now = "\(Instant(seconds: t0))"
        let right = try Daybook.run(["stale", "--data", dir, "--config", try scratch.file(Self.config(watchThreshold: "36h"), suffix: ".json"), "--now", now])
        #expect(right.status == 0, "\(right.stdout) \(right.stderr)")
        let wrong = try Daybook.run(["stale", "--data", dir, "--config", try scratch.file(Self.config(watchThreshold: "36d"), suffix: ".json"), "--now", now])
        #expect(wrong.status == 3, "\(wrong.stdout) \(wrong.stderr)")
        #expect(wrong.stderr.contains("DETECTOR BROKEN: 1 of 2 canaries not reported stale: canary-w/watch"), "\(wrong.stderr)")
        #expect(wrong.stdout.contains("canaries: 1 of 2 NOT reported stale"), "\(wrong.stdout)")
        // The metrics file is written on exit 3 too, for an alert on the canary check.
        let prom = scratch.newPath("stale") + ".prom"
        let alerting = try Daybook.run(["stale", "--data", dir, "--config", try scratch.file(Self.config(watchThreshold: "36d"), suffix: ".json"),
                                        "--now", now, "--metrics-file", prom])
        #expect(alerting.status == 3)
        let series = MetricsFileTests.samples(try String(contentsOfFile: prom, encoding: .utf8))
        #expect(series["daybook_canary_check_ok"] == 0 && series["daybook_canaries_unreported"] == 1)
        let nowhere = try Daybook.run(["stale", "--data", dir, "--now", now, "--metrics-file", dir + "/missing/stale.prom"])
        #expect(nowhere.status == 66, "\(nowhere.stderr)")
        // A bare number is no threshold at all: refused before anything is judged.
        let unitless = try Daybook.run(["stale", "--data", dir, "--config", try scratch.file(Self.config(watchThreshold: "36"), suffix: ".json")])
        #expect(unitless.status == 78 && unitless.stderr.contains("freshness.sources.watch.threshold: \"36\" is not a duration"), "\(unitless.stderr)")
        // No canaries at all: a warning that nothing proves the detector fires. (canary-w is
        // then an ordinary user, 1 of the watch's 2 stale under the built-in 36 h: it pages.)
        let none = try Daybook.run(["stale", "--data", dir, "--now", now])
        #expect(none.status == 1 && none.stderr.contains("no canaries configured"), "\(none.stderr)")
    }

    @Test func badFreshnessSettingsAndOptionsAreRefusedByName() throws {
        let dir = scratch.path
        let configs: [(String, String)] = [
            (#"{"freshness":{"sources":{"watch":{"threshold":"12 hours"}}}}"#, "freshness.sources.watch.threshold: \"12 hours\" is not a duration"),
            (#"{"freshness":{"default":{"page_fraction":1.5}}}"#, "freshness.default.page_fraction: must be a number from 0 to 1"),
            (#"{"freshness":{"default":{"treshold":"1h"}}}"#, "freshness.default.treshold: unknown setting; use threshold, page_fraction"),
            (#"{"freshness":{"canaries":[{"user":"c"}]}}"#, "freshness.canaries[0]: needs both user and source"),
            (#"{"freshness":{"canaries":[{"user":"c","source":"watch"},{"user":"c","source":"watch"}]}}"#, "freshness.canaries[1]: lists \"c\"/\"watch\" a second time"),
            (#"{"freshness":{"canary":[]}}"#, "freshness.canary: unknown setting; use default, sources, canaries"),
            (#"{"freshness":{"sources":{"manual":{"threshold":"never"}},"canaries":[{"user":"c","source":"manual"}]}}"#,
             "freshness.canaries[0]: source \"manual\" has threshold \"never\", so this canary could never be reported stale"),
        ]
        for (config, message) in configs {
            let r = try Daybook.run(["stale", "--data", dir, "--config", try scratch.file(config, suffix: ".json")])
            #expect(r.status == 78 && r.stderr.contains(message), "\(config): \(r.stderr)")
        }
        let options: [([String], Int32, String)] = [
            (["--now", "yesterday"], 64, "--now 'yesterday' is not an RFC 3339 time"),
            (["--page-fraction", "phone=2"], 64, "--page-fraction: '2' is not a number from 0 to 1"),
            (["--page-fraction", "phone"], 64, "--page-fraction: 'phone' is not a number from 0 to 1"),
            (["--page-fraction", "=0.1"], 64, "--page-fraction: '=0.1' is not SOURCE=F"),
            (["--format", "csv"], 64, "--format 'csv' is not one of table, json"),
            (["--page-fraction", "watch=0.1,watch=0.2"], 64, "--page-fraction names 'watch' twice"),
            (["--page-fraction", "0x1p-3"], 64, "--page-fraction: '0x1p-3' is not a number from 0 to 1"),
            (["--now", "9999-12-31T23:59:59Z"], 64, "--now '9999-12-31T23:59:59Z' is"),
            (["--all", "--summary"], 64, "--all and --summary ask for opposite things"),
        ]
        for (extra, status, message) in options {
            let r = try Daybook.run(["stale", "--data", dir] + extra)
            #expect(r.status == status && r.stderr.contains(message), "\(extra): \(r.stderr)")
        }
        let missing = try Daybook.run(["stale", "--data", dir + "/nope"])
        #expect(missing.status == 66 && missing.stderr.contains("no such data directory"), "\(missing.stderr)")
        // A directory without shards proves nothing, canaries included: not a green run.
        let empty = scratch.newPath("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let nothing = try Daybook.run(["stale", "--data", empty, "--config", try scratch.file(Self.config(), suffix: ".json")])
        #expect(nothing.status == 66 && nothing.stderr.contains("holds no shards: nothing to judge"), "\(nothing.stderr)")
    }
}
