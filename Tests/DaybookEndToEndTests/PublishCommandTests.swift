import DaybookTestSupport
import DaybookKafka
import Foundation
import Testing

/// `daybook broker` running as a background process, stopped with SIGTERM.
final class BrokerProcess {
    let process = Process()
    let bootstrap: String

    init(arguments: [String] = []) throws {
        let file = TemporaryDirectory.processRoot + "/bootstrap-\(UUID().uuidString)"
        process.executableURL = Daybook.binary
        process.arguments = ["broker", "--bootstrap-file", file] + arguments
        process.currentDirectoryURL = Daybook.root
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: file), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        bootstrap = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: file)
    }

    /// Stops the broker with SIGTERM and returns its exit status (SIGKILL after 10 s).
    func stop() -> Int32 {
        process.terminate()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }

    /// Reads `partitions` partitions of `topic` from offset 0 until `count` messages arrive
    /// (or 20 s pass), with our own consumer.
    func read(_ topic: String, partitions: Int, count: Int) throws -> [ConsumedMessage] {
        let consumer = try KafkaConsumer(connection: KafkaConnection(bootstrapServers: bootstrap), configuration: ConsumerConfiguration(), logger: .silent)
        defer { consumer.close() }
        let all = (0..<Int32(partitions)).map { TopicPartition(topic, $0) }
        try consumer.assign(all, startingAt: Dictionary(uniqueKeysWithValues: all.map { ($0, Int64(0)) }))
        var out: [ConsumedMessage] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while out.count < count, ContinuousClock.now < deadline {
            for case .message(let m) in consumer.poll(maxMessages: 5_000, timeoutMilliseconds: 100) { out.append(m) }
        }
        return out
    }
}

@Suite(.serialized) struct PublishCommandTests {
    let scratch = TemporaryDirectory()

    @Test func publishesValidLinesKeyedByUserAndReportsTheRest() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "3"])
        #expect(broker.bootstrap.hasPrefix("127.0.0.1:"))
        var valid: [String] = []
        var lines: [String] = []
        for i in 0..<30 {
            let user = ["ana", "ben", "caro"][i % 3]
            let line = #"{"type":"sample-added","user":"\#(user)","sample":{"uuid":"s\#(i)","metric":"steps","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T09:30:00Z","value":\#(i),"unit":"count","zone":"UTC"},"extra":"kept"}"#
            lines.append(line)
            valid.append(line)
            if i == 10 { lines.append(#"{"type":"sample-added","user":"ana"}"#) }       // line 12
            if i == 20 { lines.append("{broken") }                                        // line 23
        }
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("line 12: sample: missing"))
        #expect(r.stderr.contains("line 23: malformed JSON"))
        #expect(r.stderr.contains("read 32, published 30, rejected 2, failed 0"))

        // Read the topic back with our own consumer.
        let got = try broker.read("health-samples", partitions: 3, count: 30).map {
            (key: String(decoding: $0.key, as: UTF8.self), value: String(decoding: $0.value, as: UTF8.self), partition: $0.topicPartition.partition)
        }
        #expect(got.count == 30)
        #expect(Set(got.map(\.value)) == Set(valid), "payloads are published unchanged")
        for g in got { #expect(g.value.contains("\"user\":\"\(g.key)\"")) }
        // Each user's events in one partition, in file order.
        for user in ["ana", "ben", "caro"] {
            let mine = got.filter { $0.key == user }
            #expect(Set(mine.map(\.partition)).count == 1)
            #expect(mine.map(\.value) == valid.filter { $0.contains("\"user\":\"\(user)\"") })
        }
        #expect(broker.stop() == 0)
    }

    /// Issue 25, item 2, for `publish`: users `bo\xFFb` and `bo\xFEb` are refused by line
    /// (a reader that replaced the bytes would publish both as `bo\u{FFFD}b`); the valid line
    /// between them is published.
    @Test func bytesThatAreNotUTF8AreRejectedNeverMergedIntoOneUser() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        func line(_ user: [UInt8], _ uuid: String) -> [UInt8] {
            Array(#"{"type":"sample-deleted","user":""#.utf8) + user + Array(#"","uuid":"\#(uuid)"}"#.utf8) + [10]
        }
        let bytes = line(Array("bo".utf8) + [0xFF] + Array("b".utf8), "x1") + line(Array("ana".utf8), "a1") + line(Array("bo".utf8) + [0xFE] + Array("b".utf8), "x2")
        let path = scratch.path + "/not-utf8.jsonl"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try Daybook.run(["publish", "--brokers", broker.bootstrap, path])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("line 1: user: not valid UTF-8: byte 0xFF"), "\(r.stderr)")
        #expect(r.stderr.contains("line 3: user: not valid UTF-8: byte 0xFE"), "\(r.stderr)")
        #expect(r.stderr.contains("read 3, published 1, rejected 2, failed 0"), "\(r.stderr)")
        let keys = try broker.read("health-samples", partitions: 2, count: 3).map { String(decoding: $0.key, as: UTF8.self) }
        #expect(keys == ["ana"], "only ana's line was published")
        #expect(broker.stop() == 0)
    }

    @Test func undeliverableLinesExit69AndAreNamed() throws {
        let config = try scratch.file(#"{"kafka":{"producer":{"message.timeout.ms":1500}}}"#)
        let events = try scratch.file("""
        {"type":"sample-deleted","user":"ana","uuid":"a"}
        {"type":"sample-deleted","user":"ben","uuid":"b"}

        """)
        // Nothing listens on port 1: publish asks for metadata first and gives up within
        // --connect-timeout, before queueing a line (it used to wait message.timeout.ms).
        let r = try Daybook.run(["publish", "--brokers", "127.0.0.1:1", "--config", config, "--connect-timeout", "2", events])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderr.contains("cannot reach the Kafka cluster at 127.0.0.1:1 within 2"), "\(r.stderr)")
        #expect(!r.stderr.contains("published"))
    }

    @Test func secretsMustComeFromTheEnvironment() throws {
        let config = try scratch.file(#"{"kafka":{"properties":{"sasl.password":"hunter2"}}}"#)
        let r = try Daybook.run(["publish", "--brokers", "127.0.0.1:1", "--config", config, "-"], stdin: "")
        #expect(r.status == 78)
        #expect(r.stderr.contains("kafka.properties.sasl.password"))
        #expect(!r.stderr.contains("hunter2"))
        let missing = try scratch.file(#"{"kafka":{"secrets":{"sasl.password":"DAYBOOK_TEST_UNSET_VARIABLE"}}}"#)
        let m = try Daybook.run(["publish", "--config", missing, "-"], stdin: "")
        #expect(m.status == 78)
        // Named by its key, not by the variable's name (which may be a secret pasted there).
        #expect(m.stderr.contains("kafka.secrets.sasl.password: the environment variable it names is not set"), "\(m.stderr)")
        #expect(!m.stderr.contains("DAYBOOK_TEST_UNSET_VARIABLE"))
    }

    @Test func publishWithoutBrokersIsAUsageError() throws {
        let r = try Daybook.run(["publish", "-"], stdin: "")
        #expect(r.status == 64)
        #expect(r.stderr.contains("needs --brokers"))
    }
}
