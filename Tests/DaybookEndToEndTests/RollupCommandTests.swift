import DaybookTestSupport
import DaybookCore
import Foundation
import Testing

/// Runs the built `daybook` binary as a process.
struct Daybook {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["DAYBOOK_BIN"] { return URL(fileURLWithPath: path) }
        return root.appendingPathComponent(".build/debug/daybook")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], stdin: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = root
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    /// A file holding `contents`, under the test process's scratch directory (removed at
    /// exit). Tests that own a `TemporaryDirectory` should prefer its `file(_:)`.
    static func temporaryFile(_ contents: String) throws -> String {
        let path = TemporaryDirectory.processRoot + "/daybook-\(UUID().uuidString).jsonl"
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

@Suite struct RollupCommandTests {
    let scratch = TemporaryDirectory()
    static let workedExample = """
    {"type":"sample-added","user":"ana","sample":{"uuid":"w1","metric":"steps","source":"watch","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00+01:00","value":3000,"unit":"count","zone":"Europe/Berlin"}}
    {"type":"sample-added","user":"ana","sample":{"uuid":"p1","metric":"steps","source":"phone","start":"2024-03-02T09:15:00+01:00","end":"2024-03-02T10:15:00+01:00","value":5400,"unit":"count","zone":"Europe/Berlin"}}
    {"type":"sample-added","user":"ana","sample":{"uuid":"h1","metric":"heart_rate","source":"watch","start":"2024-03-02T09:15:00+01:00","end":"2024-03-02T09:15:00+01:00","value":80,"unit":"count/min","zone":"Europe/Berlin"}}
    {"type":"sample-added","user":"ana","sample":{"uuid":"h2","metric":"heart_rate","source":"phone","start":"2024-03-02T09:15:00+01:00","end":"2024-03-02T09:15:00+01:00","value":91,"unit":"count/min","zone":"Europe/Berlin"}}

    """

    @Test func rollsUpTheWorkedExample() throws {
        // 3000 + 5400 × 45/60 = 7050 steps; heart rate 80 and 91: min 80, max 91, avg 85.5, and
        // latest 91: both start at 09:15 and end there, so the uuid decides (h2 after h1).
        let r = try Daybook.run(["rollup", try scratch.file(Self.workedExample)])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        {"user":"ana","metric":"heart_rate","day":"2024-03-02","min":80,"max":91,"avg":85.5,"count":2,"latest":91}
        {"user":"ana","metric":"steps","day":"2024-03-02","value":7050}

        """)
        #expect(r.stderr.isEmpty)
    }

    @Test func readsStandardInputAndReportsRejectedLines() throws {
        let input = Self.workedExample + """
        {"type":"sample-added","user":"ana","sample":{"uuid":"x","metric":"steps","source":"watch","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00+01:00","value":-3,"unit":"count","zone":"Europe/Berlin"}}
        not json
        {"type":"sample-deleted","user":"ana","uuid":"w1"}
        """
        let r = try Daybook.run(["rollup", "-"], stdin: input)
        #expect(r.status == 65)
        // With w1 deleted: phone 5400 alone.
        #expect(r.stdout.contains(#""metric":"steps","day":"2024-03-02","value":5400}"#))
        #expect(r.stderr.contains("line 5: sample.value: -3 is negative"))
        #expect(r.stderr.contains("line 6: malformed JSON"))
        #expect(r.stderr.contains("5 lines accepted, 2 rejected"))
    }

    @Test func configurationChangesTheWinner() throws {
        // phone first: 5400 + watch 09:00–09:15 = 1500 → 6900.
        let config = try scratch.file(#"{"priority":{"default":["phone","watch"]}}"#)
        let r = try Daybook.run(["rollup", try scratch.file(Self.workedExample), "--config", config])
        #expect(r.status == 0)
        #expect(r.stdout.contains(#""value":6900}"#))
    }

    @Test func badConfigurationNamesTheField() throws {
        let config = try scratch.file(#"{"priority":{"stepz":["phone"]}}"#)
        let r = try Daybook.run(["rollup", try scratch.file(Self.workedExample), "--config=\(config)"])
        #expect(r.status == 78)
        #expect(r.stderr.contains("priority.stepz: \"stepz\" is not a metric"))
        #expect(r.stdout.isEmpty)
    }

    @Test func usageErrorsExit64AndMissingInputExits66() throws {
        let none = try Daybook.run(["rollup"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("exactly one EVENTS path"))
        let typo = try Daybook.run(["rollup", "x", "--confg", "y"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("did you mean --config"))
        let missing = try Daybook.run(["rollup", "/nonexistent/events.jsonl"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("/nonexistent/events.jsonl: no such file"))
        let unknown = try Daybook.run(["frobnicate"])
        #expect(unknown.status == 64)
    }

    @Test func helpTeaches() throws {
        let r = try Daybook.run(["rollup", "--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("USAGE: daybook rollup EVENTS [--config FILE]"))
        #expect(r.stdout.contains("EXIT CODES"))
        let top = try Daybook.run(["help"])
        #expect(top.stdout.contains("rollup") && top.stdout.contains("explain") && top.stdout.contains("bench"))
    }

    @Test func explainShowsWhoWonWhat() throws {
        let r = try Daybook.run(["explain", try scratch.file(Self.workedExample), "--user", "ana", "--metric", "steps", "--day", "2024-03-02"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("2024-03-02T09:00:00+01:00 → 2024-03-02T09:30:00+01:00  won by watch w1"))
        #expect(r.stdout.contains("beat phone p1"))
        #expect(r.stdout.contains("won by phone p1") && r.stdout.contains("→ +4050"))
        #expect(r.stdout.contains("total: 7050  (watch 3000, phone 4050)"))
        let empty = try Daybook.run(["explain", try scratch.file(Self.workedExample), "--user", "ana", "--metric", "steps", "--day", "2024-03-03"])
        #expect(empty.stdout.contains("total: no data"))
    }

    @Test func bundledExampleMatchesTheLibrary() throws {
        // The binary's wiring (reading, line numbers as positions, config) against the library.
        let r = try Daybook.run(["rollup", "examples/week.jsonl", "--config", "config/daybook.json"])
        #expect(r.status == 0, "\(r.stderr)")
        let ledger = Ledger()
        let text = try String(contentsOf: Daybook.root.appendingPathComponent("examples/week.jsonl"), encoding: .utf8)
        for (i, line) in text.split(separator: "\n").enumerated() {
            ledger.apply(try EventDecoder().decode(String(line)), at: Int64(i + 1))
        }
        #expect(r.stdout == ledger.allTotals().map { $0.jsonLine + "\n" }.joined())
        // The deleted 90,000-step typo stays deleted although it was re-sent.
        #expect(!r.stdout.contains("90000"))
    }
}

@Suite struct DeploymentFilesTests {
    /// docker-compose.yml runs the binary with files that exist and a configuration it accepts.
    @Test func composeReferencesRealFilesAndAValidConfiguration() throws {
        let compose = try String(contentsOf: Daybook.root.appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        for needed in ["./config/compose.json", "./topics", "apache/kafka", "KAFKA_PROCESS_ROLES: broker,controller", "\"project\"", "\"topics\"", "\"--ingest\""] {
            #expect(compose.contains(needed), "docker-compose.yml lacks \(needed)")
        }
        // Both shipped configurations load (the compose one names the in-network broker).
        for config in ["config/daybook.json", "config/compose.json"] {
            let r = try Daybook.run(["rollup", "examples/week.jsonl", "--config", config])
            #expect(r.status == 0, "\(config): \(r.stderr)")
        }
        #expect(try String(contentsOf: Daybook.root.appendingPathComponent("config/compose.json"), encoding: .utf8).contains("kafka:29092"))
        // KRaft refuses to format storage unless CLUSTER_ID is a Kafka Uuid: 16 bytes in
        // base64url without padding (22 characters; the last encodes 2 bits, so A, Q, g or w).
        let id = try #require(compose.firstMatch(of: /CLUSTER_ID: *"?([^"\s]*)"?/)?.1, "docker-compose.yml sets no CLUSTER_ID")
        #expect(id.wholeMatch(of: /[A-Za-z0-9_-]{21}[AQgw]/) != nil, "CLUSTER_ID \(id) is not 16 bytes in base64url (kafka-storage.sh random-uuid)")
        #expect(!id.hasPrefix("-") && id != "AAAAAAAAAAAAAAAAAAAAAA" && id != "AAAAAAAAAAAAAAAAAAAAAQ", "CLUSTER_ID \(id) is a reserved Kafka Uuid")
    }

    /// The image builds with the toolchain the tests ran on (pin both together when upgrading).
    @Test func dockerfileBuildsWithTheTestedToolchain() throws {
        let dockerfile = try String(contentsOf: Daybook.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        let tag = try #require(dockerfile.firstMatch(of: /FROM swift:(\S+) AS build/)?.1)
        #if compiler(>=6.3.1) && !compiler(>=6.3.2)
        #expect(tag == "6.3.1-bookworm", "the Dockerfile builds with swift:\(tag); the tests ran on 6.3.1")
        #else
        Issue.record("these tests ran on a toolchain other than 6.3.1: pin the Dockerfile's swift image (now \(tag)) to it, then this check")
        #endif
    }
}
