import DaybookTestSupport
import DaybookCore
import DaybookKafka
import DaybookStore
import Foundation
import Testing

/// A `daybook` process in the background, with its stderr in a file.
final class DaybookProcess {
    let process = Process()
    let stderrPath: String

    init(_ arguments: [String], preamble: String? = nil) throws {
        stderrPath = TemporaryDirectory.processRoot + "/daybook-stderr-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        if let preamble {
            // Run through bash to set resource limits first (e.g. "ulimit -f 64; trap '' XFSZ").
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            let quoted = ([Daybook.binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
            process.arguments = ["-c", "\(preamble); exec \(quoted)"]
        } else {
            process.executableURL = Daybook.binary
            process.arguments = arguments
        }
        process.currentDirectoryURL = Daybook.root
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Waits up to `seconds` for the process to end; nil if it is still running.
    func wait(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: stderrPath)
    }
}

@Suite(.serialized) struct ProjectorTests {
    /// This test's files; shards, logs and inputs go when the test ends.
    let scratch = TemporaryDirectory()

    /// A data directory that does not exist yet, inside this test's scratch directory.
    func dataDirectory() -> String { scratch.newPath("data") }

    /// A realistic log from the bench generator (watch + phone overlaps, heart rate, deletions).
    static func log(samples: Int, users: Int, seed: Int) throws -> [String] {
        let r = try Daybook.run(["bench", "generate", "--samples", "\(samples)", "--users", "\(users)", "--seed", "\(seed)"])
        #expect(r.status == 0)
        return r.stdout.split(separator: "\n").map(String.init)
    }

    static func rollup(_ lines: [String]) throws -> [String] {
        let r = try Daybook.run(["rollup", "-"], stdin: lines.joined(separator: "\n") + "\n")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    static func totals(_ dir: String) throws -> [String] {
        let r = try Daybook.run(["totals", "--data", dir, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    func publish(_ lines: [String], to broker: BrokerProcess) throws {
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test func projectedTotalsEqualRollupByteForByte() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "4"])
        let lines = try Self.log(samples: 12_000, users: 8, seed: 11)
        try publish(lines, to: broker)
        let dir = dataDirectory()
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--group", "e2e-equal", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("applied \(lines.count)"))
        let expected = try Self.rollup(lines)
        #expect(expected.count > 100)
        #expect(try Self.totals(dir).sorted() == expected.sorted())
        // Shards are private.
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name.hasSuffix(".sqlite") {
            #expect(try FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.posixPermissions] as? Int == 0o600)
        }
        // A second run finds nothing new and changes nothing.
        let again = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--group", "e2e-equal", "--until-caught-up"])
        #expect(again.status == 0)
        #expect(again.stderr.contains("applied 0"))
        #expect(try Self.totals(dir).sorted() == expected.sorted())
        _ = broker.stop()
    }

    @Test func crashLoopLosesNothingAndCountsNothingTwice() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "4"])
        let lines = try Self.log(samples: 16_000, users: 8, seed: 12)
        let dir = dataDirectory()
        // No cache between batches: every batch reads what it needs back from the shards.
        let noCache = try scratch.file(#"{"state":{"cache_mb":0}}"#)
        // Publish in chunks from another thread while the projector is killed and restarted.
        let chunks = stride(from: 0, to: lines.count, by: 2_000).map { Array(lines[$0..<min(lines.count, $0 + 2_000)]) }
        let bootstrap = broker.bootstrap
        let publisher = Thread {
            for chunk in chunks {
                _ = try? Daybook.run(["publish", "--brokers", bootstrap, try Daybook.temporaryFile(chunk.joined(separator: "\n") + "\n")])
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        publisher.start()
        var kills = 0
        var rng = SystemRandomNumberGenerator()
        while kills < 6 {
            let p = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--config", noCache])
            Thread.sleep(forTimeInterval: Double.random(in: 0.4...1.5, using: &rng))
            p.kill9()
            kills += 1
        }
        while publisher.isExecuting || !publisher.isFinished { Thread.sleep(forTimeInterval: 0.1) }
        let final = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up", "--config", noCache])
        #expect(final.status == 0, "\(final.stderr)")
        #expect(kills >= 5)
        #expect(try Self.totals(dir).sorted() == (try Self.rollup(lines)).sorted())
        _ = broker.stop()
    }

    @Test func twoProjectorsShareTheGroupAndOneTakesOverWhenTheOtherDies() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "8"])
        let lines = try Self.log(samples: 16_000, users: 16, seed: 13)
        try publish(lines, to: broker)
        let dir = dataDirectory()
        // No cache between batches: the survivor reads what it needs back from the shards.
        let config = try scratch.file(#"{"kafka":{"consumer":{"session.timeout.ms":6000,"heartbeat.interval.ms":500}},"state":{"cache_mb":0}}"#)
        let args = ["project", "--brokers", broker.bootstrap, "--data", dir, "--group", "e2e-two", "--config", config, "--verbose"]
        let a = try DaybookProcess(args)
        let b = try DaybookProcess(args)
        // Both get partitions.
        var deadline = Date().addingTimeInterval(40)
        while Date() < deadline, !(a.stderr.contains("assigned") && b.stderr.contains("assigned")) { Thread.sleep(forTimeInterval: 0.1) }
        #expect(a.stderr.contains("assigned") && b.stderr.contains("assigned"), "a: \(a.stderr.suffix(500)) b: \(b.stderr.suffix(500))")
        b.kill9()
        // The survivor takes B's partitions and finishes the log.
        let expected = try Self.rollup(lines).sorted()
        deadline = Date().addingTimeInterval(60)
        var converged = false
        while Date() < deadline, !converged {
            Thread.sleep(forTimeInterval: 1)
            converged = try Self.totals(dir).sorted() == expected
        }
        #expect(converged, "totals never matched rollup; a: \(a.stderr.suffix(800))")
        // The takeover itself: B may have applied its partitions before it died, so the totals
        // can converge first; the survivor is given all eight once B's session expires.
        let all = (0..<8).map { "health-samples[\($0)]" }.joined(separator: ", ")
        deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !a.stderr.contains("assigned \(all)") { Thread.sleep(forTimeInterval: 0.2) }
        #expect(a.stderr.contains("assigned \(all)"), "\(a.stderr.suffix(800))")
        a.process.terminate()
        #expect(a.wait(seconds: 20) == 0)
        _ = broker.stop()
    }

    @Test func aMemberWithoutPartitionsIsCaughtUpToo() throws {
        // Two projectors, one partition: one of them owns nothing and must still finish.
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        let lines = try Self.log(samples: 2_000, users: 3, seed: 16)
        try publish(lines, to: broker)
        let dir = dataDirectory()
        let args = ["project", "--brokers", broker.bootstrap, "--data", dir, "--group", "e2e-idle", "--until-caught-up"]
        let a = try DaybookProcess(args), b = try DaybookProcess(args)
        #expect(a.wait(seconds: 60) == 0, "\(a.stderr.suffix(400))")
        #expect(b.wait(seconds: 60) == 0, "\(b.stderr.suffix(400))")
        #expect(try Self.totals(dir).sorted() == (try Self.rollup(lines)).sorted())
        _ = broker.stop()
    }

    @Test func poisonEventsGoToTheDeadLetterTableAndTopic() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        let valid = try Self.log(samples: 3_000, users: 4, seed: 14)
        let poison: [(user: String, line: String, reason: String)] = [
            ("user-0", "{not json", "malformed JSON"),
            ("user-1", #"{"type":"sample-added","user":"user-1","sample":{"uuid":"x","metric":"steps","source":"watch","start":"2024-03-25T09:00:00Z","end":"2024-03-25T08:00:00Z","value":5,"unit":"count","zone":"UTC"}}"#, "sample.end"),
            ("user-2", #"{"schema":7,"type":"sample-deleted","user":"user-2","uuid":"y"}"#, "schema"),
            ("user-3", #"{"type":"sample-deleted","user":"user-0","uuid":"z"}"#, "is not the event's user"),
        ]
        // Publish around the validator, as a buggy producer would.
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrap), logger: .silent) { _ in }
        var all: [(String, String)] = valid.map { line in
            let user = (try? EventDecoder().decode(line).user) ?? ""
            return (user, line)
        }
        for (i, p) in poison.enumerated() { all.insert((p.user, p.line), at: 100 + i * 500) }
        for (i, (user, line)) in all.enumerated() { try producer.send(topic: "health-samples", key: Array(user.utf8), value: Array(line.utf8), id: i) }
        try producer.flush(timeoutMilliseconds: 30_000)

        let dir = dataDirectory()
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--until-caught-up", "--solo"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("dead letters 4"))
        #expect(try Self.totals(dir).sorted() == (try Self.rollup(valid)).sorted())

        // The dead-letter tables hold each poison message with its reason.
        var reasons: [String] = []
        for progress in try ShardReader(directory: dir).progress() {
            let db = try Database(path: progress.path, readOnly: true)
            let rows = try db.statement("SELECT payload, reason, forwarded FROM dead_letters")
            while try rows.step() {
                reasons.append(String(decoding: rows.blob(0), as: UTF8.self) + " => " + rows.text(1))
                #expect(rows.int64(2) == 1, "not forwarded to the DLQ topic")
            }
        }
        #expect(reasons.count == 4)
        for p in poison { #expect(reasons.contains { $0.hasPrefix(p.line) && $0.contains(p.reason) }, "\(p.reason) missing in \(reasons)") }

        // And the DLQ topic has them, with the reason in a header.
        let dlq = try broker.read("health-samples.dlq", partitions: 1, count: 4)
        #expect(dlq.count == 4)
        for m in dlq {
            let reason = String(decoding: m.header("daybook.reason") ?? [], as: UTF8.self)
            #expect(!reason.isEmpty)
            #expect(poison.contains { Array($0.line.utf8) == m.value && reason.contains($0.reason) })
        }
        _ = broker.stop()
    }

    @Test func storageFailureStopsCleanlyAndARestartConverges() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        let lines = try Self.log(samples: 12_000, users: 6, seed: 15)
        try publish(lines, to: broker)
        let dir = dataDirectory()
        // A file-size limit makes SQLite's writes fail (EFBIG → SQLITE_FULL) like a full disk.
        let limited = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"],
                                         preamble: "ulimit -f 256; trap '' XFSZ")
        let status = limited.wait(seconds: 60)
        #expect(status == 74, "exit \(String(describing: status)): \(limited.stderr.suffix(600))")
        #expect(limited.stderr.contains("Fix the storage"))

        // Whatever each shard says it has applied is exactly a prefix of its partition.
        let log = try broker.read("health-samples", partitions: 2, count: lines.count)
        #expect(log.count == lines.count)
        let progress = try ShardReader(directory: dir).progress()
        let next = Dictionary(uniqueKeysWithValues: progress.map { ($0.partition, $0.nextOffset) })
        #expect(next.values.reduce(0, +) < Int64(lines.count), "the fault never happened")
        let ledger = Ledger()
        for m in log where m.offset < next[m.topicPartition.partition, default: 0] {
            ledger.apply(try EventDecoder().decode(String(decoding: m.value, as: UTF8.self)), at: m.offset)
        }
        #expect(try ShardReader(directory: dir).totals() == ledger.allTotals())

        // The fault is fixed: a restart converges to rollup.
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.totals(dir).sorted() == (try Self.rollup(lines)).sorted())
        _ = broker.stop()
    }

    @Test func totalsTableShowsNoDataInsteadOfZero() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        try publish([
            #"{"type":"sample-added","user":"ana","sample":{"uuid":"w1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00+01:00","value":3000,"unit":"count","zone":"Europe/Berlin"}}"#,
            #"{"type":"sample-added","user":"ana","sample":{"uuid":"p1","metric":"steps","source":"phone","start":"2024-03-02T09:15:00+01:00","end":"2024-03-02T10:15:00+01:00","value":5400,"unit":"count","zone":"Europe/Berlin"}}"#,
            #"{"type":"sample-added","user":"ana","sample":{"uuid":"w2","metric":"steps","source":"watch","start":"2024-03-04T09:00:00+01:00","end":"2024-03-04T09:30:00+01:00","value":100,"unit":"count","zone":"Europe/Berlin"}}"#,
        ], to: broker)
        let dir = dataDirectory()
        #expect(try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"]).status == 0)
        let table = try Daybook.run(["totals", "--data", dir, "--user", "ana", "--from", "2024-03-01", "--to", "2024-03-04"])
        #expect(table.stdout == """
        ana · steps (count)
          2024-03-01       no data
          2024-03-02          7050  watch 3000, phone 4050
          2024-03-03       no data
          2024-03-04           100  watch 100

        """)
        let csv = try Daybook.run(["totals", "--data", dir, "--format", "csv"])
        #expect(csv.stdout.contains("ana,steps,2024-03-02,7050,,,,,watch=3000;phone=4050"))
        _ = broker.stop()
    }
}
