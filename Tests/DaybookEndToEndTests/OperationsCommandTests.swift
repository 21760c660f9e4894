import DaybookCore
import DaybookKafka
import DaybookStore
import DaybookSupport
import DaybookTestSupport
import Foundation
import Testing

/// `daybook status` and `daybook locate` as processes: exit codes, the JSON an operator
/// pipes to jq, help, and `totals` saying it read a standby shard. (The figures themselves
/// — lag per partition, owners, standby takeover — are checked in process against the
/// embedded broker: OperationsInProcessTests.)
@Suite(.serialized) struct OperationsCommandTests {
    let scratch = TemporaryDirectory()

    @Test func statusExitCodes() throws {
        let missing = scratch.newPath("nothing-here")
        var r = try Daybook.run(["status", "--data", missing])
        #expect(r.status == 66, "\(r.stderr)")
        #expect(r.stderr.contains("no such data directory"), "\(r.stderr)")
        let empty = scratch.newPath("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        r = try Daybook.run(["status", "--data", empty, "--brokers", "127.0.0.1:1", "--connect-timeout", "2"])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderr.contains("cannot reach the Kafka cluster"), "\(r.stderr)")
        r = try Daybook.run(["status", "--data", empty, "--group", "g"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--group needs --brokers"), "\(r.stderr)")
        r = try Daybook.run(["status", "--data", empty, "--format", "yaml"])
        #expect(r.status == 64, "\(r.stderr)")
        // A bad --connect-timeout is refused even when no cluster is asked (it used to be
        // ignored, exit 0).
        r = try Daybook.run(["status", "--data", empty, "--connect-timeout", "abc"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--connect-timeout") && r.stderr.contains("'abc'"), "\(r.stderr)")
        r = try Daybook.run(["status", "--data", ""])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--data is empty"), "\(r.stderr)")
        // --standby means partitions this member does not own; --solo owns all it reads.
        r = try Daybook.run(["project", "--brokers", "127.0.0.1:1", "--data", empty, "--solo", "--standby", "all"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--standby") && r.stderr.contains("--solo"), "\(r.stderr)")
        r = try Daybook.run(["status", "--data", empty, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("{\"directory\":"), "\(r.stdout)")
    }

    @Test func statusShowsLagAgainstAProcessBroker() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        let ana = #"{"type":"sample-added","user":"ana","sample":{"uuid":"a1","metric":"steps","source":"watch","start":"2024-03-25T08:00:00Z","end":"2024-03-25T09:00:00Z","value":600,"unit":"count","zone":"UTC"}}"#
        let file = try scratch.file(ana + "\n")
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, file]).status == 0)
        let dir = scratch.newPath("data")
        #expect(try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"]).status == 0)
        // One more of ana's after the projection: lag 1 in ana's partition, 0 in the other.
        let again = ana.replacingOccurrences(of: "\"a1\"", with: "\"a2\"")
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(again + "\n")]).status == 0)
        let home = Partitioner.murmur2Random.partition(ofKey: "ana".utf8, count: 2)
        let r = try Daybook.run(["status", "--data", dir, "--brokers", broker.bootstrap, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try JSONParser.parse(r.stdout)
        guard case .array(let partitions)? = json["partitions"] else {
            Issue.record("no partitions: \(r.stdout)")
            return
        }
        #expect(partitions.count == 2)
        for p in partitions {
            guard case .number(let n)? = p["partition"] else { continue }
            let mine = Int32(n) == home
            #expect(p["next_offset"] == .number(mine ? 1 : 0))
            #expect(p["log_end_offset"] == .number(mine ? 2 : 0))
            #expect(p["lag"] == .number(mine ? 1 : 0))
            #expect(p["dead_letters_pending"] == .number(0))
            #expect(p["generation"] == .number(0))
            #expect(p["role"] == .string("owned"))
        }
        let table = try Daybook.run(["status", "--data", dir, "--brokers", broker.bootstrap])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("PARTITION  SHARD"), "\(table.stdout)")
    }

    @Test func locatePrintsTheFieldsAReadServiceUses() throws {
        let r = try Daybook.run(["locate", "--user", "ana", "--partitions", "16", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let p = Partitioner.murmur2Random.partition(ofKey: "ana".utf8, count: 16)
        let shard = Shard.fileName(topic: "health-samples", partition: p)
        #expect(r.stdout == "{\"user\":\"ana\",\"partition\":\(p),\"shard\":\"\(shard)\",\"owner\":null}\n")
        for (args, code) in [(["locate", "--user", "ana"], 64), (["locate", "--partitions", "4"], 64),
                             (["locate", "--user", "ana", "--partitions", "4", "--brokers", "localhost:9092"], 64),
                             (["locate", "--user", "ana", "--partitions", "4", "--group", "g"], 64),
                             (["locate", "--user", "ana", "--partitions", "4", "--connect-timeout", "0"], 64),
                             (["locate", "--user", "ana", "--brokers", "127.0.0.1:1", "--connect-timeout", "2"], 69)] {
            let r = try Daybook.run(args)
            #expect(r.status == Int32(code), "\(args): \(r.stderr)")
        }
        // A --config's kafka.bootstrap.servers stands in for --brokers, as --brokers' help
        // says (it used to be a usage error, 64): this one names a port nothing listens on.
        let config = scratch.newPath("unreachable.json")
        try #"{"kafka":{"bootstrap.servers":"127.0.0.1:1"}}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let viaConfig = try Daybook.run(["locate", "--user", "ana", "--config", config, "--connect-timeout", "2"])
        #expect(viaConfig.status == 69, "\(viaConfig.stderr)")
        #expect(viaConfig.stderr.contains("cannot reach the Kafka cluster"), "\(viaConfig.stderr)")
    }

    /// `--standby` naming a partition the topic does not have exits 64, naming the value
    /// and the topic's range, before anything is written: no data directory, no metrics
    /// file. (It used to warn and run on, following the others.)
    @Test func aStandbyPartitionTheTopicDoesNotHaveIsRefusedBeforeAnyWork() throws {
        let broker = try EmbeddedBroker(brokers: 1, topics: [TopicDefinition(name: "health-samples", partitions: 2, replicationFactor: 1)])
        defer { withExtendedLifetime(broker) {} }
        let dir = scratch.newPath("data")
        let metrics = scratch.path + "/standby.prom"
        let r = try Daybook.run(["project", "--brokers", broker.bootstrapServers, "--data", dir, "--group", "g-\(UUID().uuidString)",
                                 "--standby", "1,5", "--metrics-file", metrics, "--until-caught-up"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--standby 5: health-samples has no partition 5: it has 2 (0…1)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir))
        #expect(!FileManager.default.fileExists(atPath: metrics))
    }

    @Test func helpTeaches() throws {
        for (command, words) in [("status", ["lag", "dead_letters_pending", "standby", "EXIT CODES", "EXAMPLES", "DEAD LETTERS counts", "unforwarded"]),
                                 ("locate", ["partitioner", "owner", "read service", "EXIT CODES"]),
                                 ("project", ["--standby", "WARM STANDBY", "A partition the topic does not have is refused (64)"])] {
            let r = try Daybook.run(["help", command])
            #expect(r.status == 0)
            for w in words { #expect(r.stdout.contains(w), "\(command) help lacks \(w)") }
        }
        let main = try Daybook.run(["help"])
        #expect(main.stdout.contains("status") && main.stdout.contains("locate"))
    }

    @Test func totalsSaysItReadAStandbyShard() throws {
        let dir = scratch.newPath("standby")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let home = Partitioner.murmur2Random.partition(ofKey: "ana".utf8, count: 4)
        let roles = ProjectorRoles(member: "m-1", clientID: "daybook-a", host: "node-a", pid: 1, running: true, updatedAt: "2026-01-01T00:00:00Z",
                                   topic: "health-samples", partitionCount: 4, partitioner: "murmur2_random", owned: [], standby: [home])
        try roles.write(in: dir)
        var r = try Daybook.run(["totals", "--data", dir, "--user", "ana"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("partition \(home)'s shard is a warm standby"), "\(r.stderr)")
        // Another user's partition is not a standby: nothing to say.
        let other = (0..<100).map { "user-\($0)" }.first { Partitioner.murmur2Random.partition(ofKey: $0.utf8, count: 4) != home }!
        r = try Daybook.run(["totals", "--data", dir, "--user", other])
        #expect(r.status == 0)
        #expect(!r.stderr.contains("standby"), "\(r.stderr)")
    }

    /// A projector killed with -9 leaves roles.json saying "running": `status` tells it is
    /// gone when no process of this host has its pid, and believes it while one has.
    @Test func statusTellsAKilledProjectorFromARunningOne() throws {
        let dir = scratch.newPath("gone")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let host = ProcessInfo.processInfo.hostName
        for (pid, state) in [(finished.processIdentifier, "gone"), (ProcessInfo.processInfo.processIdentifier, "running")] {
            let roles = ProjectorRoles(member: "m-1", clientID: "daybook-a", host: host, pid: pid, running: true, updatedAt: "2026-01-01T00:00:00Z",
                                       topic: "health-samples", partitionCount: 2, partitioner: "murmur2_random", owned: [0, 1], standby: [])
            try roles.write(in: dir)
            let r = try Daybook.run(["status", "--data", dir, "--format", "json"])
            #expect(r.status == 0, "\(r.stderr)")
            let json = try JSONParser.parse(r.stdout)
            #expect(json["projector"]?["state"] == .string(state), "\(r.stdout)")
            #expect(json["projector"]?["pid"] == .number(Double(pid)))
            guard case .array(let warnings)? = json["warnings"] else { Issue.record("no warnings in \(r.stdout)"); continue }
            let killed = warnings.contains { if case .string(let w) = $0 { w.contains("pid \(pid)) is running, but no process on this host has that pid") } else { false } }
            #expect(killed == (state == "gone"), "\(warnings)")
            let table = try Daybook.run(["status", "--data", dir])
            #expect(table.stdout.contains("projector daybook-a on \(host) (pid \(pid)) \(state) as of 2026-01-01T00:00:00Z"), "\(table.stdout)")
        }
    }

    /// (partition, role, lag) of each partition `status --brokers` shows for `dir`; [] until it answers.
    static func status(_ dir: String, _ broker: BrokerProcess) -> [(partition: Int, role: String?, lag: Double?)] {
        guard let r = try? Daybook.run(["status", "--data", dir, "--brokers", broker.bootstrap, "--format", "json"]), r.status == 0,
              let json = try? JSONParser.parse(r.stdout), case .array(let partitions)? = json["partitions"] else { return [] }
        return partitions.compactMap { p in
            guard case .number(let n)? = p["partition"] else { return nil }
            let role: String? = if case .string(let s)? = p["role"] { s } else { nil }
            let lag: Double? = if case .number(let l)? = p["lag"] { l } else { nil }
            return (Int(n), role, lag)
        }
    }

    /// Two `project` processes in one group, A with `--standby all`: A's metrics file shows
    /// its standby's lag, B is killed with -9, A takes B's partition from the standby's
    /// offset, and A's totals equal `daybook rollup` of the log.
    @Test(.timeLimit(.minutes(3))) func aStandbyTakesOverAfterKill9AndItsLagIsInTheMetricsFile() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let lines = try ProjectorTests.log(samples: 2_000, users: 20, seed: 5)
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")]).status == 0)
        let config = try scratch.file(#"{"kafka":{"consumer":{"session.timeout.ms":3000}}}"#, suffix: ".json")
        let group = "e2e-standby-\(UUID().uuidString)"
        let (dirA, dirB) = (scratch.newPath("a"), scratch.newPath("b"))
        let common = ["project", "--brokers", broker.bootstrap, "--group", group, "--config", config]
        let b = try DaybookProcess(common + ["--data", dirB])
        #expect(OperatorTests.eventually(30) { Self.status(dirB, broker).filter { $0.role == "owned" && $0.lag == 0 }.count == 2 })
        let metrics = scratch.path + "/a.prom"
        let a = try DaybookProcess(common + ["--data", dirA, "--standby", "all", "--metrics-file", metrics, "--verbose"])
        // The group gives each one partition; A follows the other as a standby, caught up.
        #expect(OperatorTests.eventually(40) {
            let s = Self.status(dirA, broker)
            return s.filter { $0.role == "owned" && $0.lag == 0 }.count == 1 && s.filter { $0.role == "standby" && $0.lag == 0 }.count == 1
        })
        let standby = try #require(Self.status(dirA, broker).first { $0.role == "standby" }?.partition)
        let t = #"topic="health-samples""#
        #expect(OperatorTests.eventually(15) {
            let text = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
            return MetricsFileTests.samples(text)["daybook_standby_lag_messages{\(t),partition=\"\(standby)\"}"] == 0
                && MetricsFileTests.samples(text)["daybook_partition_lag_messages{\(t),partition=\"\(1 - standby)\"}"] == 0
        })
        let check = try Promtool.checkMetrics(try String(contentsOfFile: metrics, encoding: .utf8))
        #expect(check.isClean, "\(check.output)")

        b.kill9()
        #expect(OperatorTests.eventually(60) { Self.status(dirA, broker).filter { $0.role == "owned" && $0.lag == 0 }.count == 2 }, "\(a.stderr)")
        // The taken partition's shard opened where the standby had it, not at 0.
        let opened = a.stderr.split(separator: "\n").filter { $0.contains("partition \(standby): shard at offset") }
        #expect(opened.last.map { !$0.hasSuffix("shard at offset 0") } ?? false, "\(opened)")
        #expect(try ProjectorTests.totals(dirA).sorted() == OperatorTests.rollup(lines))
        kill(a.process.processIdentifier, SIGTERM)
        #expect(a.wait(seconds: 30) == 0, "\(a.stderr)")
        // Its summary says what its standby shards applied (how many depends on the group's timing).
        #expect(a.stderr.contains("; standby shards: applied "), "\(a.stderr)")
    }
}
