import DaybookTestSupport
import DaybookCore
import DaybookStore
import Foundation
import Testing

/// `rebuild`, `verify` and `diff` as operators run them: processes against `daybook broker`.
@Suite(.serialized) struct OperatorTests {
    let scratch = TemporaryDirectory()

    /// The generated logs have watch and phone samples over the same walks, so putting the
    /// phone first changes most step, energy and distance totals (checked below: a fixture
    /// whose totals did not change would prove nothing).
    static let phoneFirst = #"{"priority":{"default":["phone","watch","manual"]}}"#

    static func rollup(_ lines: [String], config: String? = nil) throws -> [String] {
        let r = try Daybook.run(["rollup"] + (config.map { ["--config", $0] } ?? []) + ["-"], stdin: lines.joined(separator: "\n") + "\n")
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout.split(separator: "\n").map(String.init).sorted()
    }

    static func totals(_ dir: String) throws -> [String] {
        try ProjectorTests.totals(dir).sorted()
    }

    /// `totals --format json` sorted, or nil if it failed (for polling before the data exists).
    static func poll(_ dir: String) -> [String]? {
        guard let r = try? Daybook.run(["totals", "--data", dir, "--format", "json"]), r.status == 0 else { return nil }
        return r.stdout.split(separator: "\n").map(String.init).sorted()
    }

    func publish(_ lines: [String], to broker: BrokerProcess) throws {
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 0, "\(r.stderr)")
    }

    /// Runs `statement` on an SQLite file (as a person with the sqlite3 module would) and
    /// returns its rows, one line each, columns separated by spaces.
    static func sql(_ path: String, _ statement: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nfor r in c.execute(sys.argv[2]).fetchall(): print(*r)\nc.commit()", path, statement]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A broker with a generated log published, and (with `project`) projected into a new
    /// data directory by `project --solo --until-caught-up`.
    func projectedLog(partitions: Int, samples: Int, users: Int, seed: Int, project: Bool = true) throws -> (broker: BrokerProcess, lines: [String], dir: String) {
        let broker = try BrokerProcess(arguments: ["--partitions", String(partitions)])
        let lines = try ProjectorTests.log(samples: samples, users: users, seed: seed)
        try publish(lines, to: broker)
        let dir = scratch.newPath("data")
        if project {
            let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        return (broker, lines, dir)
    }

    /// Polls until `check` holds or `seconds` pass.
    static func eventually(_ seconds: Double, _ check: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try check() { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return try check()
    }

    @Test(.timeLimit(.minutes(4)), arguments: [["--solo"], ["--group", "operators-rebuild"]])
    func aRebuildUnderANewOrderSwapsAtomicallyUnderARunningProjector(mode: [String]) throws {
        let (broker, lines, dir) = try projectedLog(partitions: 4, samples: 12_000, users: 8, seed: 31, project: false)
        let newConfig = try scratch.file(Self.phoneFirst)
        let old = try Self.rollup(lines)
        let new = try Self.rollup(lines, config: newConfig)
        #expect(Set(old).subtracting(new).count > 20, "the new order must change many rows")

        let projector = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dir, "--verbose"] + mode)
        #expect(Self.eventually(60) { Self.poll(dir) == old }, "\(projector.stderr.suffix(500))")

        // Readers poll all the while: each answer is the whole old or the whole new projection.
        final class Polls: @unchecked Sendable {
            let lock = NSLock()
            var answers: [[String]] = []
            var stop = false
        }
        let polls = Polls()
        let poller = Thread {
            while !polls.lock.withLock({ polls.stop }) {
                let answer = Self.poll(dir) ?? ["(failed)"]
                polls.lock.withLock { polls.answers.append(answer) }
            }
        }
        poller.start()
        Thread.sleep(forTimeInterval: 0.3)
        let rebuild = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--config", newConfig])
        #expect(rebuild.status == 0, "\(rebuild.stderr)")
        #expect(rebuild.stderr.contains("swapped in"))
        Thread.sleep(forTimeInterval: 0.5)
        polls.lock.withLock { polls.stop = true }
        while !poller.isFinished { Thread.sleep(forTimeInterval: 0.05) }
        let answers = polls.lock.withLock { polls.answers }
        #expect(answers.count >= 4)
        #expect(answers.allSatisfy { $0 == old || $0 == new }, "a poll answered neither projection")
        #expect(answers.first == old)
        #expect(answers.last == new)

        // The running projector moved to the new shards and applies new events there, under the new order.
        #expect(Self.eventually(20) { projector.stderr.contains("swapped in: projecting under source priority default=phone>watch>manual") },
                "\(projector.stderr.suffix(800))")
        let more = try ProjectorTests.log(samples: 3_000, users: 5, seed: 32).map { $0.replacingOccurrences(of: "\"user\":\"", with: "\"user\":\"late-") }
        try publish(more, to: broker)
        let all = try Self.rollup(lines + more, config: newConfig)
        #expect(Self.eventually(60) { Self.poll(dir) == all }, "the projector did not apply new events to the new shards: \(projector.stderr.suffix(800))")
        projector.process.terminate()
        #expect(projector.wait(seconds: 20) == 0)

        // The data directory is now under the new order: a projector with the old one is refused.
        let stale = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(stale.status == 78)
        #expect(stale.stderr.contains("daybook rebuild"))
        let current = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up", "--config", newConfig])
        #expect(current.status == 0, "\(current.stderr)")
        #expect(current.stderr.contains("applied 0"))
        _ = broker.stop()
    }

    /// The offsets the staged shards of generation 1 have committed so far, summed (0 while
    /// none has committed or a file is not readable yet).
    static func stagedOffsets(_ dir: String, partitions: Int) -> Int64 {
        (0..<partitions).reduce(0) { sum, partition in
            let path = dir + "/gen-000001/health-samples-" + String(format: "%04d", partition) + ".sqlite"
            guard FileManager.default.fileExists(atPath: path), let db = try? Database(path: path, readOnly: true),
                  let rows = try? db.statement("SELECT coalesce(sum(next_offset), 0) FROM progress"), (try? rows.step()) == true
            else { return sum }
            return sum + rows.int64(0)
        }
    }

    @Test(.timeLimit(.minutes(4))) func aRebuildKilledMidWayLeavesTheLiveProjectionAndARerunFinishes() throws {
        let (broker, lines, dir) = try projectedLog(partitions: 4, samples: 12_000, users: 16, seed: 33)
        let old = try Self.rollup(lines)
        #expect(try Self.totals(dir) == old)

        // No cache between batches. The rebuild is frozen (SIGSTOP) as soon as a staged shard
        // has committed part of the log, and killed there: half-built whatever the machine's
        // speed, which a log big enough to outrun a 0.3 s sleep (60,000 samples) only made likely.
        let newConfig = try scratch.file(#"{"priority":{"default":["phone","watch","manual"]},"state":{"cache_mb":0}}"#)
        let rebuild = try DaybookProcess(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--config", newConfig])
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, rebuild.process.isRunning, Self.stagedOffsets(dir, partitions: 4) == 0 { usleep(2_000) }
        kill(rebuild.process.processIdentifier, SIGSTOP)
        #expect(rebuild.process.isRunning, "the rebuild finished before it could be stopped: make the log bigger")
        let built = Self.stagedOffsets(dir, partitions: 4)
        #expect(built > 0 && built < Int64(lines.count), "staged \(built) of \(lines.count): not half-built")
        rebuild.kill9()
        #expect(!FileManager.default.fileExists(atPath: dir + "/" + DataLayout.manifestName))
        #expect(try Self.totals(dir) == old)

        let new = try Self.rollup(lines, config: newConfig)
        let rerun = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--config", newConfig])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(rerun.stderr.contains("carried on from an interrupted run"))
        #expect(try Self.totals(dir) == new)
        let verify = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(verify.status == 0, "\(verify.stderr)")

        // The next rebuild removes the generation the manifest left behind.
        #expect(FileManager.default.fileExists(atPath: dir + "/health-samples-0000.sqlite"))
        #expect(FileManager.default.createFile(atPath: dir + "/notes.sqlite", contents: Data("an operator's own file".utf8)))
        let again = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--config", newConfig])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/health-samples-0000.sqlite"))
        #expect(FileManager.default.fileExists(atPath: dir + "/notes.sqlite"), "housekeeping removes only shard files")
        #expect(try Self.totals(dir) == new)
        _ = broker.stop()
    }

    @Test(.timeLimit(.minutes(3))) func verifyNamesAHandEditedRowAndPassesAgainAfterAReplayOrARebuild() throws {
        let (broker, lines, dir) = try projectedLog(partitions: 2, samples: 4_000, users: 4, seed: 34)
        let healthy = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(healthy.status == 0, "\(healthy.stderr)")
        #expect(healthy.stderr.contains("identical"))

        // Someone edits a row by hand.
        let shard = try DataLayout.read(dir).path(topic: "health-samples", partition: 1)
        let row = try Self.sql(shard, "SELECT user || '/' || metric || '/' || day || ' ' || value FROM totals WHERE metric = 'steps' ORDER BY day LIMIT 1")
        let parts = row.split(separator: " ")
        let key = parts[0].split(separator: "/").map(String.init)
        _ = try Self.sql(shard, "UPDATE totals SET value = value + 1000 WHERE user = '\(key[0])' AND metric = 'steps' AND day = '\(key[2])'")
        let damaged = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(damaged.status == 1)
        let edited = DayTotal.format((Double(parts[1]) ?? 0) + 1000)
        #expect(damaged.stdout.contains("DIFFERS \(parts[0]): live \(edited)"), "\(damaged.stdout)")
        #expect(damaged.stdout.split(separator: "\n").count == 1)
        #expect(damaged.stderr.contains("--partition 1"))

        // Repaired by re-reading the partition from offset 0 (projector stopped)…
        let replay = try Daybook.run(["replay", "--brokers", broker.bootstrap, "--data", dir, "--from-offset", "0", "--partition", "1"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let replayed = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(replayed.status == 0, "\(replayed.stdout)\(replayed.stderr)")

        // …or by rebuilding it.
        _ = try Self.sql(shard, "UPDATE totals SET value = value + 1000 WHERE user = '\(key[0])' AND metric = 'steps' AND day = '\(key[2])'")
        #expect(try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir]).status == 1)
        let rebuild = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--partition", "1"])
        #expect(rebuild.status == 0, "\(rebuild.stderr)")
        let repaired = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(try Self.totals(dir) == (try Self.rollup(lines)))
        // A partial rebuild cannot change the order: the other partitions would keep the old one.
        let mixed = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir, "--partition", "0", "--config", try scratch.file(Self.phoneFirst)])
        #expect(mixed.status == 78)
        _ = broker.stop()
    }

    @Test(.timeLimit(.minutes(3))) func verifyBesideABusyProjectorComparesAtOneOffsetAndFindsNothing() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "3"])
        let lines = try ProjectorTests.log(samples: 24_000, users: 12, seed: 36)
        let first = lines.count / 3
        try publish(Array(lines[..<first]), to: broker)
        let dir = scratch.newPath("data")
        let projector = try DaybookProcess(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo"])
        // The rest arrives while verify runs: the live shards move under it.
        let bootstrap = broker.bootstrap
        let rest = Array(lines[first...])
        let publisher = Thread {
            for start in stride(from: 0, to: rest.count, by: 500) {
                _ = try? Daybook.run(["publish", "--brokers", bootstrap, try Daybook.temporaryFile(rest[start..<min(rest.count, start + 500)].joined(separator: "\n") + "\n")])
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        #expect(Self.eventually(30) { Self.poll(dir)?.isEmpty == false })
        publisher.start()
        var verified = 0
        while !publisher.isFinished {
            let r = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
            #expect(r.status == 0, "\(r.stdout.prefix(600))\(r.stderr)")
            verified += 1
        }
        #expect(verified >= 2)
        #expect(Self.eventually(60) { Self.poll(dir) == (try? Self.rollup(lines)) }, "\(projector.stderr.suffix(500))")
        projector.process.terminate()
        #expect(projector.wait(seconds: 20) == 0)
        _ = broker.stop()
    }

    @Test(.timeLimit(.minutes(3))) func misdirectedOperatorCommandsAreRefusedAndAMissingShardIsADifference() throws {
        let (broker, lines, dir) = try projectedLog(partitions: 2, samples: 3_000, users: 4, seed: 37, project: false)
        #expect(try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"]).status == 0)
        #expect(try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir]).status == 0)

        // A generation is not a data directory: a rebuild there would remove live shards.
        let inside = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir + "/gen-000001"])
        #expect(inside.status == 66)
        #expect(inside.stderr.contains("give --data \(dir)"), "\(inside.stderr)")
        // A typo does not start a new projection.
        let typo = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", dir + "-typo"])
        #expect(typo.status == 66)
        #expect(!FileManager.default.fileExists(atPath: dir + "-typo"))
        #expect(try Self.totals(dir) == (try Self.rollup(lines)))

        // A shard that went missing is every row it held, not "identical".
        let shard = try DataLayout.read(dir).path(topic: "health-samples", partition: 0)
        let held = try Self.sql(shard, "SELECT count(*) FROM totals")
        let pairs = try Self.sql(shard, "SELECT count(*) FROM sync_state")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: shard + suffix) }
        let missing = try Daybook.run(["verify", "--brokers", broker.bootstrap, "--data", dir])
        #expect(missing.status == 1, "\(missing.stderr)")
        let differs = missing.stdout.split(separator: "\n")
        #expect(String(differs.filter { !$0.hasPrefix("DIFFERS sync state ") }.count) == held)
        #expect(String(differs.filter { $0.hasPrefix("DIFFERS sync state ") && $0.contains(": live no state · rebuilt check-in") }.count) == pairs)
        #expect(missing.stdout.contains("live no row"))

        // A manifest naming a generation that is not there is damage, named.
        let manifest = dir + "/" + DataLayout.manifestName
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try text.replacingOccurrences(of: "gen-000001", with: "gen-000009").write(toFile: manifest, atomically: true, encoding: .utf8)
        let damaged = try Daybook.run(["totals", "--data", dir])
        #expect(damaged.status == 65)
        #expect(damaged.stderr.contains("manifest.json") && damaged.stderr.contains("gen-000009"), "\(damaged.stderr)")
        _ = broker.stop()
    }

    @Test(.timeLimit(.minutes(3))) func diffListsExactlyTheRowsWhoseRollupsDifferBetweenTheOrders() throws {
        let (broker, lines, dir) = try projectedLog(partitions: 3, samples: 6_000, users: 6, seed: 35)
        let newConfig = try scratch.file(Self.phoneFirst)

        // The rows of the two rollups, by key, without per-source shares.
        func rows(_ jsonLines: [String]) throws -> [String: String] {
            var out: [String: String] = [:]
            for line in jsonLines {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let key = "\(object["user"] ?? "")/\(object["metric"] ?? "")/\(object["day"] ?? "")"
                out[key] = line
            }
            return out
        }
        let old = try rows(try Self.rollup(lines))
        let new = try rows(try Self.rollup(lines, config: newConfig))
        let expected = Set(Set(old.keys).union(new.keys).filter { old[$0] != new[$0] })
        #expect(expected.count > 10)
        #expect(expected.count < old.count, "some rows (heart rate, single-source days) must stay")

        let before = try Self.totals(dir)
        let diff = try Daybook.run(["diff", "--brokers", broker.bootstrap, "--data", dir, "--config", newConfig, "--format", "json"])
        #expect(diff.status == 0, "\(diff.stderr)")
        var listed = Set<String>()
        for line in diff.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let key = "\(object["user"] ?? "")/\(object["metric"] ?? "")/\(object["day"] ?? "")"
            listed.insert(key)
            // Its figures are the two rollups' values.
            let newLine = try #require(new[key])
            let newValue = try #require(try JSONSerialization.jsonObject(with: Data(newLine.utf8)) as? [String: Any])["value"] as? NSNumber
            #expect((object["rebuilt"] as? NSNumber)?.doubleValue == newValue?.doubleValue, "\(line)")
        }
        #expect(listed == expected)
        #expect(diff.stderr.contains("\(expected.count) of"))
        // Nothing live was touched, and no temporary directory is left behind.
        #expect(try Self.totals(dir) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).allSatisfy { !$0.hasPrefix(".tmp-") })

        let csv = try Daybook.run(["diff", "--brokers", broker.bootstrap, "--data", dir, "--config", newConfig, "--format", "csv"])
        #expect(csv.stdout.split(separator: "\n").count == expected.count + 1)
        let missing = try Daybook.run(["diff", "--brokers", broker.bootstrap, "--data", dir])
        #expect(missing.status == 64)
        _ = broker.stop()
    }
}
