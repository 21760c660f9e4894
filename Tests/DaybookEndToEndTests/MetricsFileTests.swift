import DaybookCore
import DaybookKafka
import DaybookTestSupport
import Foundation
import Testing

/// `daybook project --metrics-file`: what the file says, against the summary line and the
/// published log; written while the projector runs, and never in its way.
@Suite(.serialized) struct MetricsFileTests {
    let scratch = TemporaryDirectory()

    /// The samples of a metrics file by series (`name{labels}`), and the file checked whole:
    /// every line a comment or `series value`.
    static func samples(_ text: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                Issue.record("not a sample line: \(line)")
                continue
            }
            out[String(line[..<space])] = value
        }
        return out
    }

    /// The numbers of the projector's summary line.
    static func summary(_ stderr: String) -> (applied: Int, deadLetters: Int, skipped: Int, rows: Int, batches: Int)? {
        guard let line = stderr.split(separator: "\n").last(where: { $0.hasPrefix("project: applied ") && $0.contains(" batches in ") }) else { return nil }
        let n = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        guard n.count >= 5 else { return nil }
        return (n[0], n[1], n[2], n[3], n[4])
    }

    static let poison = [
        "{not json",
        #"{"type":"sample-added","user":"user-1"}"#,
        #"{"schema":7,"type":"sample-deleted","user":"user-2","uuid":"y"}"#,
        #"{"type":"sample-added","user":"user-3","sample":{"uuid":"x","metric":"steps","source":"watch","start":"2024-03-25T09:00:00Z","end":"2024-03-25T08:00:00Z","value":5,"unit":"count","zone":"UTC"}}"#,
        "[]",
    ]

    @Test func theFileAtExitHoldsTheSummaryAndTheLogAsPublishedAndPromtoolFindsItClean() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "3"])
        defer { _ = broker.stop() }
        let valid = try ProjectorTests.log(samples: 4_000, users: 6, seed: 21)
        // Published around the validator, as a buggy producer would: the invalid lines become dead letters.
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrap), logger: .silent) { _ in }
        let messages = valid.map { (user: (try? EventDecoder().decode($0).user) ?? "", line: $0) }
            + Self.poison.enumerated().map { (user: "user-\($0.offset)", line: $0.element) }
        let publishStarted = Date()
        for (i, m) in messages.enumerated() { try producer.send(topic: "health-samples", key: Array(m.user.utf8), value: Array(m.line.utf8), id: i) }
        try producer.flush(timeoutMilliseconds: 30_000)
        let publishEnded = Date()

        let file = scratch.path + "/daybook.prom"
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", scratch.newPath("data"), "--solo", "--until-caught-up", "--metrics-file", file])
        #expect(r.status == 0, "\(r.stderr)")
        let summary = try #require(Self.summary(r.stderr), "\(r.stderr)")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let s = Self.samples(text)
        let t = #"topic="health-samples""#

        // The summary line's numbers, and the log's.
        #expect(s["daybook_events_applied_total{\(t)}"] == Double(summary.applied))
        #expect(summary.applied == valid.count)
        #expect(s["daybook_dead_letters_total{\(t)}"] == Double(summary.deadLetters))
        #expect(summary.deadLetters == Self.poison.count)
        #expect(s["daybook_messages_skipped_total{\(t)}"] == Double(summary.skipped))
        #expect(summary.skipped == 0)
        #expect(s["daybook_row_updates_total{\(t)}"] == Double(summary.rows))
        #expect(summary.rows > 0)
        // Caught up: no lag anywhere, and the offsets add up to every message published.
        var offsets = 0.0
        for p in 0..<3 {
            #expect(s["daybook_partition_lag_messages{\(t),partition=\"\(p)\"}"] == 0, "partition \(p): \(text)")
            offsets += s["daybook_partition_next_offset{\(t),partition=\"\(p)\"}"] ?? -1
        }
        #expect(offsets == Double(messages.count))
        // One observation per batch; cumulative buckets.
        let count = try #require(s["daybook_batch_duration_seconds_count{\(t)}"])
        #expect(count == Double(summary.batches) && count >= 1)
        #expect(s["daybook_batch_duration_seconds_bucket{\(t),le=\"+Inf\"}"] == count)
        let buckets = text.split(separator: "\n").filter { $0.hasPrefix("daybook_batch_duration_seconds_bucket{") }.compactMap { Self.samples(String($0)).values.first }
        #expect(buckets.count == 15 && zip(buckets, buckets.dropFirst()).allSatisfy { $0 <= $1 }, "\(buckets)")
        #expect((s["daybook_batch_duration_seconds_sum{\(t)}"] ?? -1) > 0)
        // The newest message's Kafka time lies in the publishing window (ms resolution).
        let last = try #require(s["daybook_last_applied_event_timestamp_seconds{\(t)}"], "\(text)")
        #expect(last >= (publishStarted.timeIntervalSince1970 * 1_000).rounded(.down) / 1_000, "\(last) before \(publishStarted.timeIntervalSince1970)")
        #expect(last <= publishEnded.timeIntervalSince1970, "\(last) after \(publishEnded.timeIntervalSince1970)")
        #expect(s["daybook_projector_up{\(t)}"] == 0)
        let started = try #require(s["daybook_projector_start_time_seconds{\(t)}"])
        #expect(started > publishEnded.timeIntervalSince1970 - 1 && started < Date().timeIntervalSince1970)
        // Nothing but the file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasPrefix("daybook.prom") } == ["daybook.prom"])

        let check = try Promtool.checkMetrics(text)
        #expect(check.isClean, "promtool exit \(check.status): \(check.output)\n\(text)")
    }

    @Test(.timeLimit(.minutes(2))) func aFileThatCannotBeWrittenWarnsAndTheProjectorCarriesOn() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let directory = scratch.newPath("textfile")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/daybook.prom"
        let p = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", scratch.newPath("data"), "--solo", "--metrics-file", file])
        // Written at start, before anything is read.
        var deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: file), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(Self.samples(try String(contentsOfFile: file, encoding: .utf8))[#"daybook_projector_up{topic="health-samples"}"#] == 1)

        // The directory goes away: the next writes fail, the projector warns once and goes on.
        try FileManager.default.removeItem(atPath: directory)
        let lines = try ProjectorTests.log(samples: 2_000, users: 4, seed: 22)
        let published = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(published.status == 0, "\(published.stderr)")
        let warning = "cannot write the metrics file \(file): creating \(file).tmp-\(p.process.processIdentifier): No such file or directory"
        deadline = Date().addingTimeInterval(20)
        while !p.stderr.contains(warning), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(p.stderr.contains(warning), "\(p.stderr.suffix(800))")
        #expect(p.process.isRunning)
        deadline = Date().addingTimeInterval(20)
        while !p.stderr.contains("project: \(lines.count) applied"), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(p.stderr.contains("project: \(lines.count) applied"), "\(p.stderr.suffix(800))")

        // Back: written again, and said so.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        deadline = Date().addingTimeInterval(15)
        while !FileManager.default.fileExists(atPath: file), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(Self.samples(try String(contentsOfFile: file, encoding: .utf8))[#"daybook_events_applied_total{topic="health-samples"}"#] == Double(lines.count))
        #expect(p.stderr.contains("--metrics-file \(file): written again"), "\(p.stderr.suffix(800))")
        #expect(p.stderr.components(separatedBy: warning).count == 2, "warned more than once: \(p.stderr)")

        p.process.terminate()
        #expect(p.wait(seconds: 20) == 0, "\(p.stderr.suffix(800))")
        let s = Self.samples(try String(contentsOfFile: file, encoding: .utf8))
        let summary = try #require(Self.summary(p.stderr), "\(p.stderr.suffix(800))")
        #expect(s[#"daybook_projector_up{topic="health-samples"}"#] == 0)
        #expect(s[#"daybook_events_applied_total{topic="health-samples"}"#] == Double(summary.applied))
        #expect(summary.applied == lines.count)
    }

    @Test func aMetricsFileThatCannotBeWrittenAtAllIsRefusedBeforeAnythingIsRead() throws {
        let notADirectory = try scratch.file("x", suffix: ".txt")
        let cases: [(path: String, status: Int32, text: String)] = [
            (scratch.path + "/missing/daybook.prom", 66, "--metrics-file \(scratch.path)/missing/daybook.prom: directory \(scratch.path)/missing does not exist; create it"),
            (notADirectory + "/daybook.prom", 66, "\(notADirectory) is not a directory"),
            (scratch.path, 64, "--metrics-file \(scratch.path) is a directory; name a file in it, such as \(scratch.path)/daybook.prom"),
            ("", 64, "--metrics-file is empty"),
            // procfs takes no new files, not even from root.
            ("/proc/daybook-test.prom", 74, "cannot write the metrics file /proc/daybook-test.prom: creating /proc/daybook-test.prom.tmp-"),
        ]
        for c in cases {
            let data = scratch.newPath("data")
            // No broker: the file is checked before Kafka is asked anything.
            let r = try Daybook.run(["project", "--brokers", "127.0.0.1:1", "--data", data, "--metrics-file", c.path, "--connect-timeout", "1"])
            #expect(r.status == c.status, "\(c.path): \(r.stderr)")
            #expect(r.stderr.contains(c.text), "\(c.path): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: data), "\(c.path): created --data before refusing")
        }
    }
}
