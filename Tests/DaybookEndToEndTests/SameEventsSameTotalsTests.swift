import DaybookTestSupport
import DaybookKafka
import DaybookStore
import Foundation
import Testing

/// Issue 17, "Same events, same totals": a user lives in one partition, and the operator
/// commands refuse a log that is not the live shards' own, at once.
@Suite(.serialized) struct SameEventsSameTotalsTests {
    let scratch = TemporaryDirectory()

    static let partitions = 4

    /// A user whose key librdkafka's default partitioner (consistent_random) and murmur2
    /// (Java clients, `daybook publish`) put in different partitions of the topic.
    static let splitUser: (user: String, murmur2: Int32, consistent: Int32) = {
        for i in 0... {
            let user = "user-\(i)"
            let m = Partitioner.murmur2Random.partition(ofKey: user.utf8, count: partitions)
            let c = Partitioner.consistentRandom.partition(ofKey: user.utf8, count: partitions)
            if m != c { return (user, m, c) }
        }
        fatalError("unreachable")
    }()

    static func steps(_ uuid: String, _ hour: Int, _ value: Int, user: String = splitUser.user, day: String = "2024-03-02") -> String {
        let start = String(format: "%@T%02d:00:00Z", day, hour), end = String(format: "%@T%02d:30:00Z", day, hour)
        return #"{"type":"sample-added","user":"\#(user)","sample":{"uuid":"\#(uuid)","metric":"steps","source":"watch","start":"\#(start)","end":"\#(end)","value":\#(value),"unit":"count","zone":"UTC"}}"#
    }

    /// 4,000 steps from a producer on librdkafka's default partitioner, 3,000 from
    /// `daybook publish`: one day, one user, 7,000 in the rollup of the log.
    static let consistentLines = [steps("c1", 9, 2_500), steps("c2", 10, 1_500)]
    static let murmurLines = [steps("m1", 14, 3_000)]

    /// Publishes `lines` keyed by their user through a producer on `partitioner`.
    static func produce(_ lines: [String], user: String = splitUser.user, partitioner: Partitioner, to broker: BrokerProcess) throws {
        var configuration = ProducerConfiguration()
        configuration.partitioner = partitioner
        var failed = 0
        let producer = try KafkaProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrap), configuration: configuration, logger: .silent) { r in
            if r.error != nil { failed += 1 }
        }
        for (i, line) in lines.enumerated() { try producer.send(topic: "health-samples", key: Array(user.utf8), value: Array(line.utf8), id: i) }
        try producer.flush(timeoutMilliseconds: 30_000)
        #expect(failed == 0)
    }

    func publish(_ lines: [String], to broker: BrokerProcess) throws {
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 0, "\(r.stderr)")
    }

    func project(_ broker: BrokerProcess, _ dir: String, _ extra: [String] = []) throws -> Daybook.Result {
        try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"] + extra)
    }

    func config(partitioner: String) throws -> String {
        try scratch.file(#"{"kafka": {"partitioner": "\#(partitioner)"}}"#, suffix: ".json")
    }

    // MARK: A user lives in one partition

    @Test(.timeLimit(.minutes(3))) func anEventInTheWrongPartitionIsADeadLetterAndDLQReplayTakesItHome() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "\(Self.partitions)"])
        defer { _ = broker.stop() }
        let (user, home, away) = Self.splitUser
        try Self.produce(Self.consistentLines, partitioner: .consistentRandom, to: broker)
        try publish(Self.murmurLines, to: broker)
        let dir = scratch.newPath("data")
        let first = try project(broker, dir)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("applied 1, ") && first.stderr.contains("dead letters 2"), "\(first.stderr)")
        // Only what sits where it belongs counts; nothing of the user is in the other shard.
        #expect(try ProjectorTests.totals(dir) == (try ProjectorTests.rollup(Self.murmurLines)))
        let list = try Daybook.run(["dlq", "list", "--data", dir, "--format", "json"])
        #expect(list.status == 0, "\(list.stderr)")
        let letters = list.stdout.split(separator: "\n")
        #expect(letters.count == 2, "\(list.stdout)")
        for letter in letters {
            #expect(letter.contains(#""code":"wrong_partition""#) && letter.contains(#""partition":\#(away),"#), "\(letter)")
            #expect(letter.contains("user \\\"\(user)\\\" belongs in partition \(home) of health-samples under murmur2_random (4 partitions), but this event sits in partition \(away)"), "\(letter)")
        }

        // dlq replay republishes them keyed by user under the producers' partitioner: home.
        let replay = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", dir])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stdout.split(separator: "\n").filter { $0.contains(" replayed as \(home):") }.count == 2, "\(replay.stdout)")
        let second = try project(broker, dir)
        #expect(second.stderr.contains("applied 2, ") && second.stderr.contains("dead letters 0"), "\(second.stderr)")
        let expected = try ProjectorTests.rollup(Self.consistentLines + Self.murmurLines)
        #expect(expected == [#"{"user":"\#(user)","metric":"steps","day":"2024-03-02","value":7000}"#])
        #expect(try ProjectorTests.totals(dir) == expected)
    }

    @Test(.timeLimit(.minutes(3))) func kafkaPartitionerNamesTheProducersPartitioner() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "\(Self.partitions)"])
        defer { _ = broker.stop() }
        let lines = Self.consistentLines + (0..<40).map { Self.steps("u\($0)", 8, 100 + $0, user: "user-\($0)") }
        for line in lines {
            let user = String(line.split(separator: "\"")[7])
            try Self.produce([line], user: user, partitioner: .consistentRandom, to: broker)
        }
        let dir = scratch.newPath("data")
        let r = try project(broker, dir, ["--config", try config(partitioner: "consistent_random")])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("applied \(lines.count), ") && r.stderr.contains("dead letters 0"), "\(r.stderr)")
        #expect(try ProjectorTests.totals(dir) == (try ProjectorTests.rollup(lines)))

        // A partitioner Daybook cannot check is a configuration error, naming the two it can.
        let bad = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", scratch.newPath("other"), "--solo", "--until-caught-up",
                                   "--config", try config(partitioner: "random")])
        #expect(bad.status == 78, "\(bad.stderr)")
        #expect(bad.stderr.contains("kafka.partitioner") && bad.stderr.contains("murmur2_random or consistent_random"), "\(bad.stderr)")
    }

    @Test(.timeLimit(.minutes(3))) func totalsRefusesADayFoundInTwoShardsNamingBoth() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "\(Self.partitions)"])
        defer { _ = broker.stop() }
        let (user, home, away) = Self.splitUser
        // The projector ran under consistent_random while that producer wrote, then under
        // the default while `daybook publish` wrote: the user's day is in two shards.
        try Self.produce(Self.consistentLines, partitioner: .consistentRandom, to: broker)
        let dir = scratch.newPath("data")
        #expect(try project(broker, dir, ["--config", try config(partitioner: "consistent_random")]).status == 0)
        try publish(Self.murmurLines, to: broker)
        let r = try project(broker, dir)
        #expect(r.status == 0 && r.stderr.contains("applied 1, "), "\(r.stderr)")

        let layout = try DataLayout.read(dir)
        let a = layout.path(topic: "health-samples", partition: min(home, away))
        let b = layout.path(topic: "health-samples", partition: max(home, away))
        for format in ["table", "json", "csv"] {
            let totals = try Daybook.run(["totals", "--data", dir, "--format", format])
            #expect(totals.status == 65, "\(format): \(totals.stdout)")
            #expect(totals.stdout.isEmpty, "\(format): \(totals.stdout)")
            #expect(totals.stderr.contains("user \"\(user)\" has a steps row for 2024-03-02 in two shards, \(a) and \(b)"), "\(totals.stderr)")
        }
        let help = try Daybook.run(["totals", "--help"])
        #expect(help.stdout.contains("65") && help.stdout.contains("two shards"), "\(help.stdout)")
    }

    // MARK: Operator commands check the log first

    static let liveLines = (0..<40).map { steps("l\($0)", 8 + $0 % 10, 100 + $0, user: "user-\($0 % 8)") }

    /// Four partitions projected from one cluster; a second cluster with `otherPartitions`.
    func twoClusters(otherPartitions: Int, otherLines: [String]) throws -> (live: BrokerProcess, other: BrokerProcess, dir: String) {
        let live = try BrokerProcess(arguments: ["--partitions", "\(Self.partitions)"])
        try publish(Self.liveLines, to: live)
        let dir = scratch.newPath("data")
        let r = try project(live, dir)
        #expect(r.status == 0, "\(r.stderr)")
        let other = try BrokerProcess(arguments: ["--partitions", "\(otherPartitions)"])
        if !otherLines.isEmpty { try publish(otherLines, to: other) }
        return (live, other, dir)
    }

    static func manifest(_ dir: String) -> String? { try? String(contentsOfFile: dir + "/" + DataLayout.manifestName, encoding: .utf8) }

    @Test(.timeLimit(.minutes(3))) func rebuildVerifyDiffAndReplayRefuseAnotherClusterAt76() throws {
        // Another cluster whose log is longer and holds the same events (each twice): the
        // offsets fit and a comparison would find nothing; only the cluster id tells.
        let (live, cluster, dir) = try twoClusters(otherPartitions: Self.partitions, otherLines: Self.liveLines + Self.liveLines)
        defer { _ = live.stop(); _ = cluster.stop() }
        let before = Self.manifest(dir)
        let totals = try ProjectorTests.totals(dir)
        for command in [["rebuild", "--partition", "0"], ["rebuild"], ["verify"], ["diff", "--config", try scratch.file(#"{"priority": {"default": ["phone", "watch", "manual"]}}"#, suffix: ".json")], ["replay", "--from-offset", "0", "--dry-run"], ["replay", "--from-offset", "0"]] {
            let r = try HardeningTests.runWithin(60, [command[0], "--brokers", cluster.bootstrap, "--data", dir] + command.dropFirst())
            #expect(r.status == 76, "\(command): \(r.stderr)")
            #expect(r.stderr.contains("was built from the log of Kafka cluster mockCluster"), "\(command): \(r.stderr)")
            #expect(Self.manifest(dir) == before, "\(command) changed the manifest")
        }
        #expect(try ProjectorTests.totals(dir) == totals)
    }

    @Test(.timeLimit(.minutes(3))) func aLogEndingBeforeTheLiveOffsetsIs76AtOnceNotAWait() throws {
        // A shard that records no cluster (older than the check, or a cluster that reports
        // none): the offsets and the partition count still give another log away.
        let (live, shorter, dir) = try twoClusters(otherPartitions: Self.partitions, otherLines: [Self.steps("s1", 9, 5, user: "user-1")])
        defer { _ = live.stop(); _ = shorter.stop() }
        let layout = try DataLayout.read(dir)
        for p in 0..<Int32(Self.partitions) {
            let path = layout.path(topic: "health-samples", partition: p)
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let forget = Process()
            forget.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            forget.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"delete from meta where key='cluster_id'\"); c.commit()", path]
            try forget.run()
            forget.waitUntilExit()
        }
        let before = Self.manifest(dir)
        for command in [["rebuild"], ["rebuild"], ["verify"], ["diff", "--config", try scratch.file(#"{"priority": {"default": ["phone", "watch", "manual"]}}"#, suffix: ".json")], ["replay", "--from-offset", "0", "--dry-run"]] {
            let r = try HardeningTests.runWithin(30, [command[0], "--brokers", shorter.bootstrap, "--data", dir] + command.dropFirst())
            #expect(r.status == 76, "\(command): \(r.stderr)")
            #expect(r.seconds < 15, "\(command) took \(r.seconds) s")
            #expect(r.stderr.contains(", but ") && r.stderr.contains("has already applied offsets up to"), "\(command): \(r.stderr)")
            #expect(Self.manifest(dir) == before, "\(command) changed the manifest")
        }
        // Fewer partitions than the live shards: refused too, naming the partition.
        let fewer = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = fewer.stop() }
        for command in ["rebuild", "verify", "replay"] {
            let r = try HardeningTests.runWithin(30, [command, "--brokers", fewer.bootstrap, "--data", dir] + (command == "replay" ? ["--from-offset", "0", "--dry-run"] : []))
            #expect(r.status == 76, "\(command): \(r.stderr)")
            #expect(r.stderr.contains("but the topic has 1 partition in the cluster --brokers reaches"), "\(command): \(r.stderr)")
            #expect(Self.manifest(dir) == before)
        }
    }
}
