import DaybookTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `daybook serve --ingest` as a process beside `daybook broker`: a batch posted with curl's
/// headers through URLSession is acknowledged, projected by `daybook project` and totalled
/// by `daybook totals`; its refusals exit with their codes, and no token reaches stderr.
@Suite(.serialized) struct ServeIngestCommandTests {
    let scratch = TemporaryDirectory()

    @Test(.timeLimit(.minutes(2))) func aSyncPostedToServeIsInTheTotals() async throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let token = "ana-\(UUID().uuidString)"
        let tokens = try scratch.file("\(ServeCommandTests.digest(token)) ana\n", suffix: ".tokens")
        let serve = try ServeProcess(["--data", dir, "--listen", "127.0.0.1:0", "--tokens", tokens, "--brokers", broker.bootstrap, "--ingest"])
        #expect(serve.child.stderr.contains("taking syncs into health-samples"), "\(serve.child.stderr)")

        // ana's 2024-03-02: watch 09:00–10:00 3000; phone 09:15–10:15 5400 (90 a minute), of
        // which only 10:00–10:15 is not under the watch: 1350. 3000 + 1350 = 4350, not the naive 8400.
        let body = #"{"anchor": 1, "added": [{"uuid":"w","metric":"steps","source":"watch","start":"2024-03-02T09:00:00Z","end":"2024-03-02T10:00:00Z","value":3000,"unit":"count","zone":"UTC"},{"uuid":"p","metric":"steps","source":"phone","start":"2024-03-02T09:15:00Z","end":"2024-03-02T10:15:00Z","value":5400,"unit":"count","zone":"UTC"}]}"#
        var request = URLRequest(url: try #require(URL(string: serve.url + "/v1/users/ana/syncs")))
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.timeoutInterval = 20
        let (data, response) = try await URLSession.shared.data(for: request)
        let answer = String(decoding: data, as: UTF8.self)
        #expect((response as? HTTPURLResponse)?.statusCode == 202, "\(answer)")
        #expect(answer.hasPrefix(#"{"anchor":"1","events":2,"partition":"#) && answer.hasSuffix(#","offsets":[0,1]}"#), "\(answer)")

        let project = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(project.status == 0, "\(project.stderr)")
        let totals = try Daybook.run(["totals", "--data", dir, "--user", "ana", "--metric", "steps", "--format", "json"])
        #expect(totals.stdout == #"{"user":"ana","metric":"steps","day":"2024-03-02","value":4350}"# + "\n", "\(totals.stdout) \(totals.stderr)")

        kill(serve.child.process.processIdentifier, SIGTERM)
        #expect(serve.child.wait(seconds: 30) == 0, "\(serve.child.stderr)")
        #expect(!serve.child.stderr.contains(token), "a token was logged")
    }

    @Test(.timeLimit(.minutes(2))) func ingestRefusalsExitWithTheirCodes() throws {
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let tokens = try scratch.file("\(ServeCommandTests.digest("t")) ana\n", suffix: ".tokens")
        func serve(_ arguments: [String]) throws -> (status: Int32?, stderr: String) {
            let child = try DaybookProcess(["serve", "--data", dir, "--listen", "127.0.0.1:0"] + arguments)
            return (child.wait(seconds: 30), child.stderr)
        }
        var r = try serve(["--brokers", "127.0.0.1:1", "--ingest"])
        #expect(r.status == 64 && r.stderr.contains("--ingest without --tokens"), "\(r.stderr)")
        r = try serve(["--tokens", tokens, "--ingest"])
        #expect(r.status == 64 && r.stderr.contains("needs --brokers"), "\(r.stderr)")
        r = try serve(["--tokens", tokens, "--max-body", "4096"])
        #expect(r.status == 64 && r.stderr.contains("--max-body") && r.stderr.contains("--ingest"), "\(r.stderr)")
        r = try serve(["--tokens", tokens, "--brokers", "127.0.0.1:1", "--ingest", "--delivery-timeout", "0"])
        #expect(r.status == 64 && r.stderr.contains("--delivery-timeout"), "\(r.stderr)")
        r = try serve(["--tokens", tokens, "--brokers", "127.0.0.1:1", "--ingest", "--connect-timeout", "2"])
        #expect(r.status == 69 && r.stderr.contains("cannot reach the Kafka cluster"), "\(r.stderr)")
    }
}
