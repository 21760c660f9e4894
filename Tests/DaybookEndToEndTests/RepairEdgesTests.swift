import DaybookTestSupport
import Foundation
import Testing

/// Issue 25's edges of the command line, each reproduced first: an export destroyed
/// through standard input, `--out` onto links and FIFOs, a bad librdkafka property, replay
/// under a running projector, and the messages that said too little or too much.
@Suite struct RepairEdgesTests {
    let scratch = TemporaryDirectory()

    // MARK: 7. A property librdkafka refuses is a configuration error everywhere

    @Test func aBogusKafkaPropertyExits78FromEveryCommandThatTalksToKafka() throws {
        let config = try scratch.file(#"{"kafka":{"properties":{"bogus.property":"1"}}}"#, suffix: ".json")
        let data = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        // No broker is needed: librdkafka refuses the property before it connects.
        let kafka = ["--brokers", "127.0.0.1:1", "--config", config, "--connect-timeout", "2"]
        let commands: [[String]] = [
            ["status", "--data", data], ["locate", "--user", "ana"], ["rebuild", "--data", data],
            ["verify", "--data", data], ["diff", "--data", data], ["replay", "--data", data, "--from-offset", "0"],
            ["project", "--data", data, "--solo", "--until-caught-up"],
        ]
        for command in commands {
            let r = try Daybook.run(command + kafka)
            #expect(r.status == 78, "\(command[0]): \(r.stderr)")
            #expect(r.stderr.contains(#"bogus.property: No such configuration property: "bogus.property""#), "\(command[0]): \(r.stderr)")
        }
    }

    // MARK: 5. import --out onto standard input's file

    /// A one-record export.
    static let tinyExport = """
    <?xml version="1.0" encoding="UTF-8"?>
    <HealthData locale="en_US">
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Health" sourceVersion="17.2" unit="count" creationDate="2024-01-10 21:40:00 +0200" startDate="2024-01-10 13:00:00 +0200" endDate="2024-01-10 14:00:00 +0200" value="300"/>
    </HealthData>

    """

    /// Runs the binary with standard input read from the file at `stdin` (as `< FILE` does).
    static func run(_ arguments: [String], stdinFile: String) throws -> Daybook.Result {
        let process = Process()
        process.executableURL = Daybook.binary
        process.arguments = arguments
        process.currentDirectoryURL = Daybook.root
        let out = Pipe(), err = Pipe()
        let input = try #require(FileHandle(forReadingAtPath: stdinFile))
        defer { try? input.close() }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Daybook.Result(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    @Test func importOutOntoStandardInputsFileIsRefusedAndTheExportSurvives() throws {
        let export = try scratch.file(Self.tinyExport, suffix: ".xml")
        let link = scratch.newPath("link") + ".xml"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: export)
        for out in [export, link] {
            let r = try Self.run(["import", "apple-health", "-", "--user", "ana", "--zone", "Europe/Berlin", "--out", out], stdinFile: export)
            #expect(r.status == 64, "\(r.stderr)")
            #expect(r.stderr.contains("is the export being imported (standard input): writing it would replace the export; give --out another file"), "\(r.stderr)")
            #expect(try String(contentsOfFile: export, encoding: .utf8) == Self.tinyExport)
        }
        // Another file is written as before.
        let events = scratch.newPath("events") + ".jsonl"
        let r = try Self.run(["import", "apple-health", "-", "--user", "ana", "--zone", "Europe/Berlin", "--out", events], stdinFile: export)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try String(contentsOfFile: events, encoding: .utf8).contains(#""value":300"#))
    }

    // MARK: 9. project refuses a shard of a partition the topic lacks

    @Test func projectRefusesAShardOfAPartitionTheTopicDoesNotHave() throws {
        let (broker, data) = try RoughEdgesTests.projected(partitions: 2, in: scratch)
        defer { _ = broker.stop() }
        // A shard of partition 5 (a topic recreated with fewer partitions, or another cluster's directory).
        try FileManager.default.copyItem(atPath: data + "/health-samples-0000.sqlite", toPath: data + "/health-samples-0005.sqlite")
        for mode in [["--solo"], ["--group", "edges-partition"]] {
            let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--until-caught-up"] + mode)
            #expect(r.status == 76, "\(mode): \(r.stderr)")
            #expect(r.stderr.contains("has a shard of health-samples partition 5") && r.stderr.contains("but the topic has 2 partitions"), "\(mode): \(r.stderr)")
        }
    }

    // MARK: 12. Messages

    @Test(arguments: [
        (#"{"priority":{"default":["watch"]},"priority":{"default":["phone"]}}"#, "priority is given twice (at byte 35); give each setting once"),
        (#"{"kafka":{"properties":{"a":"1","a":"2"}}}"#, "kafka.properties.a is given twice (at byte 33); give each setting once"),
    ])
    func aDuplicateConfigurationKeyIsNamed(config: String, message: String) throws {
        let r = try Daybook.run(["rollup", try scratch.file(RoughEdgesTests.oneSample), "--config", try scratch.file(config, suffix: ".json")])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test func projectingUnderAnotherPriorityThanARebuildsGivesItsAdviceOnce() throws {
        let (broker, data) = try RoughEdgesTests.projected(in: scratch)
        defer { _ = broker.stop() }
        let phoneFirst = try scratch.file(#"{"priority":{"default":["phone","watch"]}}"#, suffix: ".json")
        let rebuild = try Daybook.run(["rebuild", "--brokers", broker.bootstrap, "--data", data, "--config", phoneFirst])
        #expect(rebuild.status == 0, "\(rebuild.stderr)")
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("Put that order in --config, or rebuild under yours: daybook rebuild --data \(data) --config FILE."), "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "--config FILE").count == 2, "the advice once: \(r.stderr)")
    }

    // MARK: 6. --out onto a FIFO or a symlink

    static func fileType(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
    }

    @Test func importOutWritesThroughAFIFOAndFollowsASymlinkKeepingIt() throws {
        let export = try scratch.file(Self.tinyExport, suffix: ".xml")
        let expected = try Daybook.run(["import", "apple-health", export, "--user", "ana", "--zone", "Europe/Berlin"])
        #expect(expected.status == 0 && expected.stdout.contains(#""value":300"#), "\(expected.stderr)")

        // A FIFO: read by this test (opened first, without blocking; one event fits its buffer).
        let fifo = scratch.newPath("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        let r = try Daybook.run(["import", "apple-health", export, "--user", "ana", "--zone", "Europe/Berlin", "--out", fifo])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.fileType(fifo) == S_IFIFO, "the FIFO was replaced by a file")
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = read(reader, &buffer, buffer.count)
        #expect(n > 0 && String(decoding: buffer[..<max(n, 0)], as: UTF8.self) == expected.stdout)

        // A symlink: its target is replaced, the link stays (for import and generate alike).
        let target = try scratch.file("old\n")
        let link = scratch.newPath("link") + ".jsonl"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let linked = try Daybook.run(["import", "apple-health", export, "--user", "ana", "--zone", "Europe/Berlin", "--out", link])
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(Self.fileType(link) == S_IFLNK, "the link was replaced by a file")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == expected.stdout)
        let generated = try Daybook.run(["import", "generate", "--megabytes", "1", "--days", "2", "--out", link])
        #expect(generated.status == 0, "\(generated.stderr)")
        let regenerated = try String(contentsOfFile: target, encoding: .utf8)
        #expect(Self.fileType(link) == S_IFLNK && regenerated.hasPrefix("<?xml"))

        // A link to nothing, or a directory: refused, nothing written.
        let dangling = scratch.newPath("dangling")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: scratch.newPath("nothing"))
        for (out, message) in [(dangling, "is a symbolic link to a file that does not exist"), (scratch.path, "is a directory; name a file")] {
            let refused = try Daybook.run(["import", "apple-health", export, "--user", "ana", "--zone", "Europe/Berlin", "--out", out])
            #expect(refused.status == 64, "\(refused.stderr)")
            #expect(refused.stderr.contains(message), "\(refused.stderr)")
        }
    }

    // MARK: 10. Shards on read-only media

    /// A projected directory served through a read-only bind mount (root ignores chmod, so
    /// the mount is what makes the storage really read-only).
    @Test func theReadingCommandsReadShardsOnAReadOnlyMount() throws {
        let (broker, data) = try RoughEdgesTests.projected(in: scratch)
        defer { _ = broker.stop() }
        let mounted = scratch.newPath("snapshot")
        try FileManager.default.createDirectory(atPath: mounted, withIntermediateDirectories: true)
        guard ReadOnlyMount.bind(data, at: mounted) else {
            print("RepairEdgesTests: mount --bind -o ro is not available here; skipped (ReadOnlyMediaTests covers the rule)")
            return
        }
        defer { ReadOnlyMount.unmount(mounted) }
        let totals = try Daybook.run(["totals", "--data", mounted, "--format", "json"])
        #expect(totals.status == 0, "\(totals.stderr)")
        #expect(totals.stdout.contains(#""value":3000"#), "\(totals.stdout)")
        for command in [["status", "--data", mounted], ["dlq", "list", "--data", mounted], ["stale", "--data", mounted, "--all"]] {
            let r = try Daybook.run(command)
            #expect(r.status == 0, "\(command[0]): \(r.stderr)")
            #expect(!r.stderr.contains("unable to open database file"), "\(command[0]): \(r.stderr)")
        }
    }

    @Test func rebuildAndVerifyOnAFullDiskSayWhatTheyLeaveAndHowToFreeIt() throws {
        let (broker, data) = try RoughEdgesTests.projected(in: scratch)
        defer { _ = broker.stop() }
        // A file-size limit makes SQLite's writes fail (EFBIG → SQLITE_FULL) like a full disk:
        // 32 KiB (bash counts 1,024-byte blocks), below what a new shard writes (its
        // template, 19 pages of 2 KiB) and above every other file the commands write.
        let full = "ulimit -f 32; trap '' XFSZ"
        let rebuild = try DaybookProcess(["rebuild", "--brokers", broker.bootstrap, "--data", data], preamble: full)
        #expect(rebuild.wait(seconds: 60) == 74, "\(rebuild.stderr)")
        #expect(rebuild.stderr.contains("the live projection is untouched. The staged generation \(data)/gen-000001 keeps what it wrote"), "\(rebuild.stderr)")
        #expect(rebuild.stderr.contains("or remove it (rm -r \(data)/gen-000001) to give the space back"), "\(rebuild.stderr)")
        #expect(!rebuild.stderr.contains("then restart"), "a projector's advice: \(rebuild.stderr)")
        let verify = try DaybookProcess(["verify", "--brokers", broker.bootstrap, "--data", data], preamble: full)
        #expect(verify.wait(seconds: 60) == 74, "\(verify.stderr)")
        #expect(verify.stderr.contains("nothing live was changed, and the temporary projection \(data)/.tmp-"), "\(verify.stderr)")
        #expect(!verify.stderr.contains("then restart"), "a projector's advice: \(verify.stderr)")
    }
}
