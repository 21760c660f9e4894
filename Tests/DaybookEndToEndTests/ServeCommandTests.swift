import DaybookSupport
import DaybookTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `daybook serve` as child processes beside `daybook project` members of one group on the
/// embedded broker: the owner answering, the other member's 307 to it, 503 while no member
/// owns a partition, a member taking over after `kill -9`, tokens, exit codes and SIGTERM.
/// Every row is compared with `daybook rollup` of the published log. Waits are generous
/// bounds on conditions (`OperatorTests.eventually`), never measurements; every child,
/// broker and directory goes when its test ends.
@Suite(.serialized) struct ServeCommandTests {
    let scratch = TemporaryDirectory()
    static let metrics = ["active_energy", "distance", "heart_rate", "steps"]

    // MARK: Two members

    /// Two projectors and two serves in one group over 2 partitions, each pair on its own
    /// data directory and advertising its serve's URL; returned once each projector owns one
    /// partition, caught up, and each serve answers its own users and redirects the others.
    final class TwoMembers {
        let broker: BrokerProcess
        let lines: [String]
        let rollup: [String]
        let projectors: [DaybookProcess]
        let serves: [ServeProcess]
        let dirs: [String]
        /// The partition each member's projector owns.
        let owned: [Int]
        /// Each user's partition, as `daybook locate` tells it.
        let partition: [String: Int]

        /// Everything is made in locals first: should a step throw, what was started goes
        /// with them (children killed, the broker stopped).
        init(_ scratch: TemporaryDirectory, seed: Int) throws {
            let broker = try BrokerProcess(arguments: ["--partitions", "2"])
            let lines = try ProjectorTests.log(samples: 2_000, users: 20, seed: seed)
            #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines.joined(separator: "\n") + "\n")]).status == 0)
            let rollup = try OperatorTests.rollup(lines)
            var partition: [String: Int] = [:]
            for user in ServeCommandTests.users(rollup) {
                let r = try Daybook.run(["locate", "--user", user, "--partitions", "2", "--format", "json"])
                guard case .number(let p)? = try JSONParser.parse(r.stdout)["partition"] else { throw Failure("locate \(user): \(r.stdout) \(r.stderr)") }
                partition[user] = Int(p)
            }
            #expect(Set(partition.values) == [0, 1], "the users must fall in both partitions")

            let config = try scratch.file(#"{"kafka":{"consumer":{"session.timeout.ms":3000}}}"#, suffix: ".json")
            let group = "e2e-serve-\(UUID().uuidString)"
            let ports = try ServeCommandTests.freePorts(2)
            let urls = ports.map { "http://127.0.0.1:\($0)" }
            let dirs = [scratch.newPath("a"), scratch.newPath("b")]
            let projectors = try (0..<2).map { i in
                try DaybookProcess(["project", "--brokers", broker.bootstrap, "--group", group, "--config", config, "--data", dirs[i], "--advertise", urls[i]])
            }
            // serve reads a directory its projector makes (it refuses one that is not there, 66).
            guard OperatorTests.eventually(30, { dirs.allSatisfy { FileManager.default.fileExists(atPath: $0) } }) else {
                throw Failure("the projectors made no data directories: \(projectors.map(\.stderr))")
            }
            let serves = try (0..<2).map { i in
                try ServeProcess(["--data", dirs[i], "--listen", "127.0.0.1:\(ports[i])", "--brokers", broker.bootstrap, "--group", group, "--advertise", urls[i]])
            }
            #expect(serves.map(\.port) == ports)

            // Each projector owns one partition, caught up.
            let ownedNow = { (i: Int) in OperationsCommandTests.status(dirs[i], broker).filter { $0.role == "owned" && $0.lag == 0 }.map(\.partition) }
            let settled = OperatorTests.eventually(60) { ownedNow(0).count == 1 && ownedNow(1).count == 1 && ownedNow(0) != ownedNow(1) }
            guard settled else {
                throw Failure("the group did not settle: A \(ownedNow(0)), B \(ownedNow(1)); A: \(projectors[0].stderr.suffix(800)) B: \(projectors[1].stderr.suffix(800))")
            }
            let owned = [ownedNow(0)[0], ownedNow(1)[0]]

            // Each serve's view of the group (reused for 5 s) catches up with it: one user of
            // each partition is answered by its owner and redirected by the other member.
            let probes = owned.map { p in partition.first { $0.value == p }!.key }
            let agreed = OperatorTests.eventually(30) {
                (0..<2).allSatisfy { m in
                    (0..<2).allSatisfy { p in
                        let answer = try? HTTP.get(serves[m].url + ServeCommandTests.path(probes[p], "steps", rollup), follow: false)
                        return answer?.status == (m == p ? 200 : 307)
                    }
                }
            }
            guard agreed else { throw Failure("the serves did not learn the owners: \(serves.map(\.child.stderr))") }
            (self.broker, self.lines, self.rollup, self.projectors, self.serves) = (broker, lines, rollup, projectors, serves)
            (self.dirs, self.owned, self.partition) = (dirs, owned, partition)
        }

        /// The member (0 for A, 1 for B) whose projector owns `user`'s partition.
        func owner(of user: String) -> Int { owned.firstIndex(of: partition[user]!)! }

        deinit { _ = broker.stop() }
    }

    @Test(.timeLimit(.minutes(4))) func theOtherMemberRedirectsToTheOwnerWhoseRowsEqualRollup() throws {
        let members = try TwoMembers(scratch, seed: 28)
        let users = Self.users(members.rollup)
        #expect(users.count == 20)
        for user in users {
            let owner = members.owner(of: user), other = 1 - owner
            let partition = members.partition[user]!
            let path = Self.path(user, "steps", members.rollup)
            // The owner answers its own users directly.
            let direct = try HTTP.get(members.serves[owner].url + path, follow: false)
            #expect(direct.status == 200, "\(user): \(direct.body)")
            #expect(direct.header("X-Daybook-Partition") == "\(partition)")
            // The other member sends the client to the owner's advertised URL, same path and query.
            let redirect = try HTTP.get(members.serves[other].url + path, follow: false)
            #expect(redirect.status == 307, "\(user): \(redirect.body)")
            #expect(redirect.header("Location") == members.serves[owner].url + path)
            #expect(redirect.header("X-Daybook-Partition") == "\(partition)")
            #expect(Self.errorCode(redirect.body) == "not_owner", "\(redirect.body)")
            // A client that follows it reads the owner's rows: those of rollup.
            for metric in Self.metrics {
                #expect(!Self.expectedRows(members.rollup, user: user, metric: metric).isEmpty)
                let followed = try HTTP.get(members.serves[other].url + Self.path(user, metric, members.rollup))
                #expect(followed.status == 200, "\(user) \(metric): \(followed.body)")
                #expect(Self.rows(followed.body) == Self.expectedRows(members.rollup, user: user, metric: metric), "\(user) \(metric): \(followed.body)")
                #expect(followed.body.contains(#""as_of":{"partition":\#(partition),"#) && followed.body.contains(#""lag":0,"role":"owned"}"#), "\(followed.body)")
            }
        }
    }

    @Test(.timeLimit(.minutes(4))) func afterKill9OfOneMemberTheOtherAnswersItsUsers() throws {
        let members = try TwoMembers(scratch, seed: 29)
        let users = Self.users(members.rollup)
        let lost = members.owned[1]
        let broker = members.broker, dirA = members.dirs[0], serveA = members.serves[0]
        members.projectors[1].kill9()
        members.serves[1].child.kill9()

        // A's projector takes B's partition once the group gives it (session timeout)…
        #expect(OperatorTests.eventually(60) { OperationsCommandTests.status(dirA, broker).filter { $0.role == "owned" && $0.lag == 0 }.count == 2 },
                "\(members.projectors[0].stderr.suffix(800))")
        // …and A's serve answers B's users itself once its view of the group is refreshed.
        let bUsers = users.filter { members.partition[$0] == lost }
        #expect(!bUsers.isEmpty)
        #expect(OperatorTests.eventually(30) {
            bUsers.allSatisfy { (try? HTTP.get(serveA.url + Self.path($0, "steps", members.rollup), follow: false))?.status == 200 }
        })
        for user in users {
            for metric in Self.metrics {
                let answer = try HTTP.get(serveA.url + Self.path(user, metric, members.rollup), follow: false)
                #expect(answer.status == 200, "\(user) \(metric): \(answer.body)")
                #expect(Self.rows(answer.body) == Self.expectedRows(members.rollup, user: user, metric: metric), "\(user) \(metric): \(answer.body)")
                #expect(answer.body.contains(#""role":"owned""#), "\(answer.body)")
            }
        }
        let ready = try HTTP.get(serveA.url + "/readyz")
        #expect(ready.status == 200, "\(ready.body)")
        #expect(ready.body.contains(#""partition":0,"#) && ready.body.contains(#""partition":1,"#), "\(ready.body)")
        // Stopped as an operator would: SIGTERM, exit 0.
        kill(serveA.child.process.processIdentifier, SIGTERM)
        #expect(serveA.child.wait(seconds: 30) == 0, "\(serveA.child.stderr)")
    }

    // MARK: No owner

    @Test(.timeLimit(.minutes(2))) func noOwnerInTheGroupIs503WithRetryAfter() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(RollupCommandTests.workedExample)]).status == 0)
        let dir = scratch.newPath("empty")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // A group no projector has committed in: nobody owns any partition.
        let serve = try ServeProcess(["--data", dir, "--listen", "127.0.0.1:0", "--brokers", broker.bootstrap, "--group", "e2e-nobody-\(UUID().uuidString)"])
        let answer = try HTTP.get(serve.url + "/v1/users/ana/totals?metric=steps&from=2024-03-01&to=2024-03-31")
        #expect(answer.status == 503, "\(answer.body)")
        #expect(answer.header("Retry-After").flatMap(Int.init).map { $0 > 0 } == true, "\(answer.headers)")
        #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(Self.errorCode(answer.body) == "unavailable", "\(answer.body)")
        #expect(try HTTP.get(serve.url + "/healthz").status == 200)
    }

    // MARK: Refusals and lifecycle

    @Test(.timeLimit(.minutes(2))) func refusalsExitWithTheirCodesAndSayWhy() throws {
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        func serve(_ arguments: [String]) throws -> (status: Int32?, stderr: String) {
            let child = try DaybookProcess(["serve"] + arguments)
            return (child.wait(seconds: 30), child.stderr)
        }
        // 64: off loopback without tokens, and what cannot be HOST:PORT.
        var r = try serve(["--data", dir, "--listen", "0.0.0.0:8080"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("listening on 0.0.0.0 without tokens") && r.stderr.contains("--tokens"), "\(r.stderr)")
        for bad in ["8080", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:http", "[::1]8080", ":8080"] {
            r = try serve(["--data", dir, "--listen", bad])
            #expect(r.status == 64, "\(bad): \(r.stderr)")
            #expect(r.stderr.contains("is not HOST:PORT"), "\(bad): \(r.stderr)")
        }
        r = try serve(["--data", dir])
        #expect(r.status == 64 && r.stderr.contains("--listen"), "\(r.stderr)")
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--brokers", "127.0.0.1:1"])
        #expect(r.status == 64 && r.stderr.contains("--brokers without --group"), "\(r.stderr)")
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--group", "g"])
        #expect(r.status == 64 && r.stderr.contains("needs --brokers"), "\(r.stderr)")
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--advertise", "http://127.0.0.1:1"])
        #expect(r.status == 64 && r.stderr.contains("--advertise"), "\(r.stderr)")
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--brokers", "127.0.0.1:1", "--group", "g", "--advertise", "ftp://node-b"])
        #expect(r.status == 64 && r.stderr.contains("http://"), "\(r.stderr)")
        // 66: no data directory, no tokens file.
        r = try serve(["--data", scratch.newPath("missing"), "--listen", "127.0.0.1:0"])
        #expect(r.status == 66 && r.stderr.contains("no such data directory"), "\(r.stderr)")
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--tokens", scratch.newPath("no-tokens")])
        #expect(r.status == 66 && r.stderr.contains("cannot read the tokens file"), "\(r.stderr)")
        // 78: a malformed tokens file, its line named and never shown: here someone wrote a
        // token itself instead of its digest.
        let secret = "s3cret-\(UUID().uuidString)"
        let tokens = try scratch.file("# digests of tokens\n\n\(Self.digest("fine")) ana\n\(secret) ben\n", suffix: ".tokens")
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--tokens", tokens])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("line 4"), "\(r.stderr)")
        #expect(!r.stderr.contains(secret) && !r.stderr.contains("s3cret"), "the line's text was shown")
        // 69: Kafka unreachable.
        r = try serve(["--data", dir, "--listen", "127.0.0.1:0", "--brokers", "127.0.0.1:1", "--group", "g", "--connect-timeout", "2"])
        #expect(r.status == 69 && r.stderr.contains("cannot reach the Kafka cluster"), "\(r.stderr)")
    }

    @Test(.timeLimit(.minutes(2))) func aTakenPortIs69AndSIGTERMStopsWithExit0() throws {
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let running = try ServeProcess(["--data", dir, "--listen", "127.0.0.1:0"])
        #expect(running.port != 0)
        #expect(try HTTP.get(running.url + "/healthz").status == 200)
        // Before a projector has written roles.json, a read is 503 (and says why), never 200.
        let early = try HTTP.get(running.url + "/v1/users/ana/totals?metric=steps&from=2024-03-01&to=2024-03-02")
        #expect(early.status == 503 && early.header("Retry-After") != nil, "\(early.body)")
        #expect(Self.errorCode(early.body) == "not_ready", "\(early.body)")

        let second = try DaybookProcess(["serve", "--data", dir, "--listen", "127.0.0.1:\(running.port)"])
        #expect(second.wait(seconds: 30) == 69, "\(second.stderr)")
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(running.port)"), "\(second.stderr)")
        // The address is said once, not "cannot listen on X: cannot listen on X: …".
        #expect(second.stderr.components(separatedBy: "cannot listen on").count == 2, "\(second.stderr)")

        kill(running.child.process.processIdentifier, SIGTERM)
        #expect(running.child.wait(seconds: 30) == 0, "\(running.child.stderr)")
        #expect(running.child.stderr.contains("serve: stopped"), "\(running.child.stderr)")
    }

    @Test(.timeLimit(.minutes(2))) func tokensDecideWhoReadsAndAreNeverLogged() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        let lines = RollupCommandTests.workedExample.split(separator: "\n").map(String.init)
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(RollupCommandTests.workedExample)]).status == 0)
        let dir = scratch.newPath("data")
        let project = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(project.status == 0, "\(project.stderr)")
        let rollup = try OperatorTests.rollup(lines)

        let (ana, ben, service) = ("ana-\(UUID().uuidString)", "ben-\(UUID().uuidString)", "svc-\(UUID().uuidString)")
        let tokens = try scratch.file("# test tokens\n\(Self.digest(ana)) ana\n\(Self.digest(ben)) ben\n\(Self.digest(service)) *\n", suffix: ".tokens")
        // With tokens it may listen off loopback; the client still comes over loopback.
        let serve = try ServeProcess(["--data", dir, "--listen", "0.0.0.0:0", "--tokens", tokens])
        let path = Self.path("ana", "steps", rollup)
        let url = "http://127.0.0.1:\(serve.port)"

        let none = try HTTP.get(url + path)
        #expect(none.status == 401, "\(none.body)")
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(Self.errorCode(none.body) == "unauthorized")
        let wrong = "wrong-\(UUID().uuidString)"
        let unknown = try HTTP.get(url + path, token: wrong)
        #expect(unknown.status == 401 && !unknown.body.contains(wrong), "\(unknown.body)")
        let other = try HTTP.get(url + path, token: ben)
        #expect(other.status == 403 && Self.errorCode(other.body) == "forbidden", "\(other.body)")
        #expect(!other.body.contains(ben))
        for metric in ["steps", "heart_rate"] {
            let mine = try HTTP.get(url + Self.path("ana", metric, rollup), token: ana)
            #expect(mine.status == 200, "\(mine.body)")
            #expect(Self.rows(mine.body) == Self.expectedRows(rollup, user: "ana", metric: metric), "\(mine.body)")
            #expect(mine.body.contains(#""role":"local""#), "\(mine.body)")
        }
        // 3000 + 5400 × 45/60: the worked example, not the naive 8400.
        #expect(Self.rows(try HTTP.get(url + path, token: ana).body) == #"{"day":"2024-03-02","value":7050}"#)
        #expect(try HTTP.get(url + path, token: service).status == 200)
        #expect(try HTTP.get(url + "/metrics", token: ana).status == 403)
        #expect(try HTTP.get(url + "/metrics", token: service).status == 200)
        #expect(try HTTP.get(url + "/metrics").status == 401)
        #expect(try HTTP.get(url + "/healthz").status == 200)
        #expect(try HTTP.get(url + "/readyz").status == 200)

        kill(serve.child.process.processIdentifier, SIGTERM)
        #expect(serve.child.wait(seconds: 30) == 0, "\(serve.child.stderr)")
        for token in [ana, ben, service, wrong] { #expect(!serve.child.stderr.contains(token), "a token was logged") }
    }

    // MARK: Helpers

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The users of `rollup`'s lines, sorted.
    static func users(_ rollup: [String]) -> [String] {
        Set(rollup.compactMap { line -> String? in
            guard case .string(let user)? = try? JSONParser.parse(line)["user"] else { return nil }
            return user
        }).sorted()
    }

    /// A totals path for `user` and `metric` over every day `user` has a row on in `rollup`.
    static func path(_ user: String, _ metric: String, _ rollup: [String]) -> String {
        let days = rollup.filter { $0.hasPrefix(#"{"user":"\#(user)","#) }.compactMap { line -> String? in
            guard case .string(let day)? = try? JSONParser.parse(line)["day"] else { return nil }
            return day
        }.sorted()
        return "/v1/users/\(user)/totals?metric=\(metric)&from=\(days.first ?? "2024-01-01")&to=\(days.last ?? "2024-01-01")"
    }

    /// `rollup`'s lines of `user` and `metric` as serve writes rows (without user and
    /// metric), in day order, comma-separated: the text inside `"rows":[…]`.
    static func expectedRows(_ rollup: [String], user: String, metric: String) -> String {
        let prefix = #"{"user":"\#(user)","metric":"\#(metric)","#
        return rollup.filter { $0.hasPrefix(prefix) }.sorted().map { "{" + $0.dropFirst(prefix.count) }.joined(separator: ",")
    }

    /// The text inside a totals answer's `"rows":[…]`; nil when there is none.
    static func rows(_ body: String) -> String? {
        guard let start = body.range(of: #""rows":["#), let end = body.range(of: #"],"unknown":"#, range: start.upperBound..<body.endIndex) else { return nil }
        return String(body[start.upperBound..<end.lowerBound])
    }

    /// The `error.code` of a refusal's body.
    static func errorCode(_ body: String) -> String? {
        guard case .string(let code)? = (try? JSONParser.parse(body))?["error"]?["code"] else { return nil }
        return code
    }

    /// A token's line in a tokens file: its SHA-256 in lowercase hex.
    static func digest(_ token: String) -> String {
        SHA256.digest(token.utf8).map { String(format: "%02x", $0) }.joined()
    }

    /// `count` distinct ports free on loopback now (bound to port 0 and closed: another
    /// process may take one before serve does, a rare failure that says so).
    static func freePorts(_ count: Int) throws -> [UInt16] {
        var ports: [UInt16] = []
        var sockets: [Int32] = []
        defer { sockets.forEach { _ = close($0) } }
        // All are held open until every one is picked, so they differ.
        while ports.count < count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw Failure("socket: errno \(errno)") }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { throw Failure("bind: errno \(errno)") }
            ports.append(UInt16(bigEndian: address.sin_port))
        }
        return ports
    }
}

/// `daybook serve` in the background and the port it says it listens on ("serve: listening
/// on 127.0.0.1:PORT"), so `--listen 127.0.0.1:0` works.
final class ServeProcess {
    let child: DaybookProcess
    let port: UInt16

    init(_ arguments: [String]) throws {
        let child = try DaybookProcess(["serve"] + arguments)
        var port: UInt16?
        _ = OperatorTests.eventually(30) {
            port = Self.port(in: child.stderr)
            return port != nil || !child.process.isRunning
        }
        guard let port else { throw ServeCommandTests.Failure("serve did not say where it listens: \(child.stderr)") }
        self.child = child
        self.port = port
    }

    var url: String { "http://127.0.0.1:\(port)" }

    static func port(in stderr: String) -> UInt16? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("serve: listening on ") }) else { return nil }
        let address = line.dropFirst("serve: listening on ".count).prefix { $0 != " " && $0 != ";" }
        return address.split(separator: ":").last.flatMap { UInt16($0) }
    }
}

/// A blocking HTTP GET through URLSession, following redirects or not (to see a 307
/// itself). Each waits at most 30 s, a bound, not a measurement.
enum HTTP {
    struct Answer {
        var status: Int
        /// Header names in lowercase.
        var headers: [String: String]
        var body: String
        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    static func get(_ url: String, token: String? = nil, follow: Bool = true) throws -> Answer {
        guard let target = URL(string: url) else { throw ServeCommandTests.Failure("not a URL: \(url)") }
        var request = URLRequest(url: target)
        request.timeoutInterval = 20
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let collector = Collector(follow: follow)
        let session = URLSession(configuration: .ephemeral, delegate: collector, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        task.resume()
        guard collector.done.wait(timeout: .now() + 30) == .success else {
            task.cancel()
            throw ServeCommandTests.Failure("no answer from \(url) within 30 s")
        }
        return try collector.lock.withLock {
            if let error = collector.error { throw error }
            guard let response = collector.response else { throw ServeCommandTests.Failure("no HTTP response from \(url)") }
            var headers: [String: String] = [:]
            for (name, value) in response.allHeaderFields { headers["\(name)".lowercased()] = "\(value)" }
            return Answer(status: response.statusCode, headers: headers, body: String(decoding: collector.data, as: UTF8.self))
        }
    }

    /// Collects one task's answer; refuses redirects unless `follow`.
    final class Collector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let follow: Bool
        let lock = NSLock()
        let done = DispatchSemaphore(value: 0)
        var data = Data()
        var response: HTTPURLResponse?
        var error: (any Error)?

        init(follow: Bool) { self.follow = follow }

        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
            completionHandler(follow ? request : nil)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            lock.withLock { self.data.append(data) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            lock.withLock {
                self.response = task.response as? HTTPURLResponse
                self.error = error
            }
            done.signal()
        }
    }
}
