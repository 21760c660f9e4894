import DaybookCore
import DaybookHTTP
import DaybookKafka
import DaybookServe
import DaybookSupport
import DaybookTestSupport
import Foundation
import Testing

/// The handler over real shard files, driven without a socket: the totals JSON, every
/// refusal with its status and body, access, placement and readiness.
@Suite struct ReadServiceTests {
    static let week = "/v1/users/ana/totals?metric=steps&from=2024-03-29&to=2024-04-01"

    @Test func dayRowsAreTheShardsWithUnknownDays() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get(Self.week))
        #expect(response.status == 200)
        // 03-30: 3000 + 5400 × 15/60 = 4350 (not 8400, not 5400); 03-31: 2000; 03-29: no
        // data, so no row; the phone last seen 03-31, so 03-31 and 04-01 are unknown.
        #expect(response.text == #"{"user":"ana","metric":"steps","bucket":"day","rows":[{"day":"2024-03-30","value":4350},{"day":"2024-03-31","value":2000}],"#
            + #""unknown":[{"day":"2024-03-31","sources":[{"source":"phone","last_seen":"2024-03-31"}]},{"day":"2024-04-01","sources":[{"source":"phone","last_seen":"2024-03-31"}]}],"#
            + #""as_of":{"partition":\#(fixture.partition),"next_offset":7,"lag":null,"role":"local"}}"#)
        #expect(response.header("X-Daybook-Partition") == String(fixture.partition))
        #expect(response.header("X-Daybook-Lag") == nil) // no cluster: the log end is not known
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test func sourcesGiveEachRowsShares() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get("/v1/users/ana/totals?metric=steps&from=2024-03-30&to=2024-03-30&sources=true"))
        // The watch keeps 08:00–09:00 (3000), the phone 09:00–09:15 (1350).
        #expect(response.text.contains(#""rows":[{"day":"2024-03-30","value":4350,"sources":[{"source":"watch","value":3000},{"source":"phone","value":1350}]}]"#))
    }

    @Test func heartRateRowsAreSummaries() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get("/v1/users/ana/totals?metric=heart_rate&from=2024-03-30&to=2024-03-30"))
        // 60 at 08:30 and 90 at 08:40: min 60, max 90, avg (60 + 90) / 2 = 75, count 2, latest 90.
        #expect(response.status == 200)
        #expect(response.text.contains(#""rows":[{"day":"2024-03-30","min":60,"max":90,"avg":75,"count":2,"latest":90}]"#))
    }

    @Test func anUnknownUserIsNoRows() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get("/v1/users/nobody/totals?metric=steps&from=2024-03-29&to=2024-04-01"))
        #expect(response.status == 200)
        #expect(response.text.contains(#""user":"nobody","metric":"steps","bucket":"day","rows":[],"unknown":[]"#))
    }

    @Test func aPercentEncodedUserIsDecoded() throws {
        let fixture = try ServeFixture()
        // %61na is "ana".
        #expect(try fixture.service().handle(get("/v1/users/%61na/totals?metric=steps&from=2024-03-30&to=2024-03-30")).text.contains(#""value":4350"#))
    }

    /// The fixture's 2024-03-30 in hours (UTC): 08:00-09:00 the watch alone wins (the phone
    /// starts at 08:15 but ranks lower): 3000; 09:00-09:15 only the phone: 5400 × 15/60 = 1350.
    /// 3000 + 1350 = 4350, the day's row; 03-31's one phone hour is its 2000.
    @Test func hourRowsComeFromTheShardAndSumToTheDays() throws {
        let fixture = try ServeFixture()
        let service = try fixture.service()
        let response = service.handle(get("/v1/users/ana/totals?metric=steps&from=2024-03-30&to=2024-03-31&bucket=hour&sources=true"))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.text.contains(#""bucket":"hour","rows":[{"day":"2024-03-30","start":"2024-03-30T08:00:00+00:00","end":"2024-03-30T09:00:00+00:00","value":3000,"sources":[{"source":"watch","value":3000}]},{"day":"2024-03-30","start":"2024-03-30T09:00:00+00:00","end":"2024-03-30T10:00:00+00:00","value":1350,"sources":[{"source":"phone","value":1350}]},{"day":"2024-03-31","start":"2024-03-31T10:00:00+00:00","end":"2024-03-31T11:00:00+00:00","value":2000"#), "\(response.text)")
        // Heart rate: the two readings (60 at 08:30, 90 at 08:40) share the 08:00 hour.
        let heart = service.handle(get("/v1/users/ana/totals?metric=heart_rate&from=2024-03-30&to=2024-03-30&bucket=hour"))
        #expect(heart.text.contains(#""min":60,"max":90,"avg":75,"count":2,"latest":90"#), "\(heart.text)")
    }

    /// Explain over the shard: the watch wins 08:00-09:00 (3000), beating the phone from
    /// 08:15; the phone alone 09:00-09:15 (1350); total 4350.
    @Test func explainComesFromTheShard() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get("/v1/users/ana/days/2024-03-30/explain?metric=steps"))
        #expect(response.status == 200, "\(response.text)")
        let json = try JSONParser.parse(response.text)
        guard case .array(let pieces)? = json["pieces"] else { Issue.record("no pieces in \(response.text)"); return }
        #expect(pieces.count == 2)
        #expect(pieces.first?["winner"]?["uuid"] == .string("w1"))
        #expect(pieces.first?["contribution"] == .number(3000))
        #expect(pieces.last?["winner"]?["uuid"] == .string("p1"))
        #expect(pieces.last?["contribution"] == .number(1350))
        #expect(json["total"]?["value"] == .number(4350), "\(response.text)")
        // A day without data explains nothing, as a 200.
        let empty = try fixture.service().handle(get("/v1/users/ana/days/2024-03-20/explain?metric=steps"))
        #expect(empty.status == 200)
        #expect(empty.text.contains(#""pieces":[]"#), "\(empty.text)")
    }

    /// Each refusal: its status, its code, the parameter it names.
    @Test(arguments: [
        ("/v1/users/ana/totals?metric=blood_glucose&from=2024-03-30&to=2024-03-30", 400, "bad_parameter", "metric"),
        ("/v1/users/ana/totals?from=2024-03-30&to=2024-03-30", 400, "bad_parameter", "metric"),
        ("/v1/users/ana/totals?metric=steps&from=2024-03-30&to=2024-03-30&bucket=week", 400, "bad_parameter", "bucket"),
        ("/v1/users/ana/totals?metric=steps&from=2024-03-31&to=2024-03-30", 400, "bad_parameter", "from"),
        // 2024-01-01 to 2025-01-01 is 367 days; to 2024-12-31 is 366 and accepted below.
        ("/v1/users/ana/totals?metric=steps&from=2024-01-01&to=2025-01-01", 400, "bad_parameter", "to"),
        ("/v1/users/ana/totals?metric=steps&from=2024-02-30&to=2024-03-30", 400, "bad_parameter", "from"),
        ("/v1/users/ana/totals?metric=steps&from=+024-02-01&to=2024-03-30", 400, "bad_parameter", "from"),
        ("/v1/users/ana/totals?metric=steps&to=2024-03-30", 400, "bad_parameter", "from"),
        ("/v1/users/ana/totals?metric=steps&metric=steps&from=2024-03-30&to=2024-03-30", 400, "bad_parameter", "metric"),
        ("/v1/users/ana/totals?metric=steps&form=2024-03-30&from=2024-03-30&to=2024-03-30", 400, "bad_parameter", "form"),
        ("/v1/users/ana/totals?metric=steps&from=2024-03-30&to=2024-03-30&sources=yes", 400, "bad_parameter", "sources"),
        ("/v1/users/ana/totals?metric=steps&from=2024-03-30&to=2024-03-30&stale=yes", 400, "bad_parameter", "stale"),
        // "e" + U+0301 (combining acute) is not NFC; an empty id is no id.
        ("/v1/users/e%CC%81/totals?metric=steps&from=2024-03-30&to=2024-03-30", 400, "bad_parameter", "user"),
        ("/v1/users//totals?metric=steps&from=2024-03-30&to=2024-03-30", 400, "bad_parameter", "user"),
        ("/v1/users/ana/days/2024-13-01/explain?metric=steps", 400, "bad_parameter", "day"),
        ("/v1/users/an%zza/totals?metric=steps", 400, "bad_path", nil),
        ("/v1/users/an%00a/totals?metric=steps", 400, "bad_path", nil),
        ("/v1/users/ana", 404, "not_found", nil),
        ("/v1/users/ana/totals/extra", 404, "not_found", nil),
        ("/", 404, "not_found", nil),
    ] as [(String, Int, String, String?)])
    func refusals(target: String, status: Int, code: String, parameter: String?) throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get(target))
        #expect(response.status == status)
        let json = try JSONParser.parse(response.text)
        #expect(json["error"]?["code"] == .string(code))
        #expect(json["error"]?["parameter"] == (parameter.map(JSONValue.string) ?? .null))
        guard case .string(let message)? = json["error"]?["message"] else { Issue.record("no message"); return }
        #expect(!message.isEmpty)
    }

    @Test func aLeapYearIsTheLongestRange() throws {
        let fixture = try ServeFixture()
        #expect(try fixture.service().handle(get("/v1/users/ana/totals?metric=steps&from=2024-01-01&to=2024-12-31")).status == 200)
    }

    @Test func anotherMethodIs405WithAllow() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(HTTPRequest(method: "POST", target: Self.week))
        #expect(response.status == 405)
        #expect(response.header("Allow") == "GET")
        #expect(response.text == #"{"error":{"code":"method_not_allowed","parameter":null,"message":"\"POST\" is not allowed here; this resource answers GET"}}"#)
        // A path that is no route is 404 whatever the method.
        #expect(try fixture.service().handle(HTTPRequest(method: "DELETE", target: "/nothing")).status == 404)
    }

    @Test func healthNeedsNothing() throws {
        let fixture = try ServeFixture()
        let response = try fixture.service().handle(get("/healthz"))
        #expect(response.status == 200)
        #expect(response.text == #"{"status":"ok"}"#)
    }
}

/// `--tokens`: 401 without or with an unknown token, 403 for another user's data.
@Suite struct AccessTests {
    // SHA-256 of "ana-token" and of "svc-token" (Python's hashlib).
    static let file = """
    # ana's app
    fdb19af2cd8f3f7de8c00cbdd4c4838366cbe4fa2e7ae38ba7f5847e75ad4bb5 ana

    840f135a0cd6a2ca7c9865624d5434f90a072d562d58ec4503fc480d1b65a25d\t*
    """

    func service(_ fixture: ServeFixture) throws -> ReadService {
        let tokens = try AccessTokens(parsing: Self.file, name: "tokens")
        return try fixture.service { $0.tokens = tokens }
    }

    @Test func eachCallerGetsWhatTheirTokenAllows() throws {
        let fixture = try ServeFixture()
        let service = try service(fixture)
        let bearer = { (token: String) in [HTTPHeader("Authorization", "Bearer " + token)] }
        let missing = service.handle(get(ReadServiceTests.week))
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == "Bearer realm=\"daybook\"")
        #expect(missing.text.hasPrefix(#"{"error":{"code":"unauthorized""#))
        let unknown = service.handle(get(ReadServiceTests.week, bearer("guess")))
        #expect(unknown.status == 401)
        #expect(!unknown.text.contains("guess")) // a token is never echoed
        #expect(service.handle(get(ReadServiceTests.week, [HTTPHeader("Authorization", "Basic YW5hOg==")])).status == 401)
        #expect(service.handle(get(ReadServiceTests.week, bearer("ana-token"))).status == 200)
        let other = service.handle(get("/v1/users/bob/totals?metric=steps&from=2024-03-29&to=2024-04-01", bearer("ana-token")))
        #expect(other.status == 403)
        #expect(other.text == #"{"error":{"code":"forbidden","parameter":"user","message":"this token may not read this user's data"}}"#)
        #expect(service.handle(get("/v1/users/bob/totals?metric=steps&from=2024-03-29&to=2024-04-01", bearer("svc-token"))).status == 200)
        // Probes need no token; metrics need the service's.
        #expect(service.handle(get("/healthz")).status == 200)
        #expect(service.handle(get("/readyz")).status == 200)
        #expect(service.handle(get("/metrics")).status == 401)
        #expect(service.handle(get("/metrics", bearer("ana-token"))).status == 403)
        #expect(service.handle(get("/metrics", bearer("svc-token"))).status == 200)
    }

    @Test func aMalformedLineIsNamedNeverShown() throws {
        // Line 3 holds a raw token where its digest belongs.
        let text = "# tokens\n\nmy-secret-token ana\n"
        do {
            _ = try AccessTokens(parsing: text, name: "tokens.txt")
            Issue.record("a raw token was accepted")
        } catch {
            #expect(error.line == 3)
            #expect(error.message.hasPrefix("tokens.txt line 3: "))
            #expect(!error.message.contains("my-secret-token"))
        }
        for bad in ["fdb19af2cd8f3f7de8c00cbdd4c4838366cbe4fa2e7ae38ba7f5847e75ad4bb5", // no user
                    "fdb19af2cd8f3f7de8c00cbdd4c4838366cbe4fa2e7ae38ba7f5847e75ad4bbz ana", // not hex
                    "fdb19af2cd8f3f7de8c00cbdd4c4838366cbe4fa2e7ae38ba7f5847e75ad4bb ana"] { // 63 digits
            #expect(throws: AccessTokens.FileError.self) { try AccessTokens(parsing: bad, name: "t") }
        }
    }

    @Test func aTokenFileOfUsersWithSpacesAndCRLF() throws {
        let tokens = try AccessTokens(parsing: "fdb19af2cd8f3f7de8c00cbdd4c4838366cbe4fa2e7ae38ba7f5847e75ad4bb5  ana lopez \r\n", name: "t")
        #expect(tokens.scope(authorization: "Bearer ana-token") == .user("ana lopez"))
        #expect(tokens.scope(authorization: "bearer ana-token") == .user("ana lopez"))
        #expect(tokens.scope(authorization: "Bearer svc-token") == nil)
    }

    @Test func withoutTokensOnlyLoopbackListens() throws {
        let fixture = try ServeFixture()
        for host in ["127.0.0.1", "::1", "localhost", "127.0.0.2"] {
            #expect(throws: Never.self) { try fixture.service { $0.host = host } }
        }
        for host in ["0.0.0.0", "10.0.0.5", "::", "example.com"] {
            do {
                _ = try fixture.service { $0.host = host }
                Issue.record("\(host) without tokens was accepted")
            } catch let error as ReadServiceError {
                #expect(error.kind == .unauthenticatedListen)
                #expect(error.message.contains(host))
            }
        }
        let tokens = try AccessTokens(parsing: Self.file, name: "tokens")
        #expect(throws: Never.self) { try fixture.service { $0.host = "0.0.0.0"; $0.tokens = tokens } }
    }
}

/// Routing to the owner through the handler: 307, 503 + Retry-After, a standby with stale=ok.
@Suite struct OwnerRoutingTests {
    @Test func aReadOfAnotherMembersUserIsRedirectedThere() throws {
        let fixture = try ServeFixture(owned: [], standby: [])
        let cluster = FixedCluster(group: FixedCluster.owning([fixture.partition], by: "member-b", url: "http://node-b:8080"))
        let service = try fixture.service { $0.cluster = cluster; $0.advertisedURL = "http://node-a:8080" }
        let response = service.handle(get(ReadServiceTests.week))
        #expect(response.status == 307)
        #expect(response.header("Location") == "http://node-b:8080" + ReadServiceTests.week)
        #expect(response.header("X-Daybook-Partition") == String(fixture.partition))
        #expect(response.text.hasPrefix(#"{"error":{"code":"not_owner""#))
    }

    @Test func theOwnerAnswersWithItsLag() throws {
        let fixture = try ServeFixture()
        // The log of ana's partition ends at 10; the shard has applied 7 events: lag 3.
        let cluster = FixedCluster(group: FixedCluster.owning([fixture.partition], by: "member-a", url: "http://node-a:8080"), ends: [fixture.partition: 10])
        let response = try fixture.service { $0.cluster = cluster }.handle(get(ReadServiceTests.week))
        #expect(response.status == 200)
        #expect(response.text.hasSuffix(#""as_of":{"partition":\#(fixture.partition),"next_offset":7,"lag":3,"role":"owned"}}"#))
        #expect(response.header("X-Daybook-Lag") == "3")
    }

    @Test func noOwnerIs503WithRetryAfter() throws {
        let fixture = try ServeFixture()
        let cluster = FixedCluster(group: GroupAssignment(group: "daybook-projector", state: "PreparingRebalance", members: [], source: .coordinator))
        let response = try fixture.service { $0.cluster = cluster }.handle(get(ReadServiceTests.week))
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "5")
        #expect(response.text.hasPrefix(#"{"error":{"code":"unavailable""#))
    }

    @Test func aStandbyAnswersOnlyWithStaleOK() throws {
        let fixture = try ServeFixture(owned: [], standby: [0, 1, 2, 3])
        let cluster = FixedCluster(group: FixedCluster.owning([fixture.partition], by: "member-b", url: "http://node-b:8080"))
        let service = try fixture.service { $0.cluster = cluster }
        #expect(service.handle(get(ReadServiceTests.week)).status == 307)
        let stale = service.handle(get(ReadServiceTests.week + "&stale=ok"))
        #expect(stale.status == 200)
        #expect(stale.text.contains(#""role":"standby"}"#))
    }
}

/// The placement rule, case by case (the table in `Placement`'s comment).
@Suite struct PlacementTests {
    let here = Placement.Member(memberID: "a", url: "http://a:1", standby: [2])
    func group(_ owner: String?, url: String?) -> GroupAssignment {
        GroupAssignment(group: "g", state: nil, members: owner.map { [.init(memberID: $0, clientID: $0, host: $0, partitions: [2], url: url)] } ?? [], source: .ownerClaims)
    }

    @Test func decisions() {
        let t = "/v1/users/u/totals?x=1"
        #expect(Placement.decide(partition: 2, target: t, here: here, group: nil, staleOK: false) == .answerHere(role: .standby))
        #expect(Placement.decide(partition: 1, target: t, here: here, group: nil, staleOK: false) == .answerHere(role: .local))
        #expect(Placement.decide(partition: 2, target: t, here: here, group: group("a", url: nil), staleOK: false) == .answerHere(role: .owned))
        // A restarted member has a new id but its URL: itself, not a redirect loop.
        #expect(Placement.decide(partition: 2, target: t, here: here, group: group("a2", url: "http://a:1"), staleOK: false) == .answerHere(role: .owned))
        #expect(Placement.decide(partition: 2, target: t, here: here, group: group("b", url: "http://b:1"), staleOK: false) == .redirect(location: "http://b:1" + t))
        #expect(Placement.decide(partition: 2, target: t, here: here, group: group("b", url: "http://b:1"), staleOK: true) == .answerHere(role: .standby))
        // Not a standby of partition 1 here: stale=ok changes nothing.
        let one = GroupAssignment(group: "g", state: nil, members: [.init(memberID: "b", clientID: "b", host: "b", partitions: [1], url: "http://b:1")], source: .ownerClaims)
        #expect(Placement.decide(partition: 1, target: t, here: here, group: one, staleOK: true) == .redirect(location: "http://b:1" + t))
        guard case .unavailable(_, 5) = Placement.decide(partition: 2, target: t, here: here, group: group("b", url: nil), staleOK: false) else {
            Issue.record("an owner without a URL must be 503"); return
        }
        guard case .unavailable(_, 5) = Placement.decide(partition: 2, target: t, here: here, group: group(nil, url: nil), staleOK: false) else {
            Issue.record("no owner must be 503"); return
        }
        #expect(Placement.decide(partition: 2, target: t, here: here, group: group(nil, url: nil), staleOK: true) == .answerHere(role: .standby))
    }

    @Test func ownerClaimsCarryTheURLAndOldOnesStillParse() {
        let claim = OwnerClaim(memberID: "m", clientID: "c", host: "h", url: "http://node-b:8080")
        #expect(OwnerClaim(text: claim.text) == claim)
        #expect(OwnerClaim(text: "daybook-owner/1\tmember=m\tclient=c\thost=h") == OwnerClaim(memberID: "m", clientID: "c", host: "h"))
        #expect(OwnerClaim(text: "daybook-owner/1\tmember=m\tclient=c\thost=h")?.url == nil)
    }

    @Test func listenAndAdvertise() {
        #expect(ListenAddress("127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(ListenAddress("[::1]:80") == ListenAddress(host: "::1", port: 80))
        for bad in ["8080", "host:", ":80", "h:99999", "::1:80", "h:8a", "[::1]80"] { #expect(ListenAddress(bad) == nil, "\(bad)") }
        #expect(ListenAddress.advertiseProblem("http://node-b:8080") == nil)
        for bad in ["node-b:8080", "http://", "http:///x", "http://b:1/?q", "http://b :1"] { #expect(ListenAddress.advertiseProblem(bad) != nil, "\(bad)") }
        #expect(ListenAddress.normalized("http://b:1//") == "http://b:1")
    }
}

/// `/readyz` and `/metrics`.
@Suite struct ReadinessAndMetricsTests {
    @Test func readyUntilAnOwnedShardLagsTooFar() throws {
        let fixture = try ServeFixture()
        let owning = FixedCluster.owning([fixture.partition], by: "member-a", url: nil)
        // 7 applied of 10: lag 3 ≤ 5 is ready; of 20: lag 13 > 5 is not.
        let near = try fixture.service { $0.cluster = FixedCluster(group: owning, ends: [fixture.partition: 10]); $0.maxLag = 5 }.handle(get("/readyz"))
        #expect(near.status == 200)
        #expect(near.text == #"{"ready":true,"owned":[{"partition":\#(fixture.partition),"next_offset":7,"lag":3}]}"#)
        let far = try fixture.service { $0.cluster = FixedCluster(group: owning, ends: [fixture.partition: 20]); $0.maxLag = 5 }.handle(get("/readyz"))
        #expect(far.status == 503)
        #expect(far.text == #"{"ready":false,"reason":"partition \#(fixture.partition) is 13 behind (more than --max-lag 5)"}"#)
    }

    @Test func notReadyWithoutAWayToLocateUsers() throws {
        let scratch = TemporaryDirectory()
        let service = try ReadService(ReadServiceConfiguration(dataDirectory: scratch.path))
        let response = service.handle(get("/readyz"))
        #expect(response.status == 503)
        #expect(response.text.hasPrefix(#"{"ready":false,"reason":"no roles.json"#))
        // A read is 503 too, not a guess at the partition.
        #expect(service.handle(get(ReadServiceTests.week)).status == 503)
        // A directory that is not there cannot be read.
        let gone = try ReadService(ReadServiceConfiguration(dataDirectory: scratch.path + "/missing"))
        #expect(gone.handle(get("/readyz")).status == 503)
    }

    @Test func metricsCountRequestsAndPassPromtool() throws {
        let fixture = try ServeFixture()
        let service = try fixture.service { $0.cluster = FixedCluster(group: FixedCluster.owning([fixture.partition], by: "member-a", url: nil), ends: [fixture.partition: 10]) }
        _ = service.handle(get(ReadServiceTests.week))
        _ = service.handle(get(ReadServiceTests.week))
        _ = service.handle(get("/v1/users/ana/totals?metric=nope&from=2024-03-29&to=2024-04-01"))
        _ = service.handle(get("/no/such/path"))
        let response = service.handle(get("/metrics"))
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        let text = response.text
        #expect(text.contains(#"daybook_serve_requests_total{route="totals",code="200"} 2"#))
        #expect(text.contains(#"daybook_serve_requests_total{route="totals",code="400"} 1"#))
        #expect(text.contains(#"daybook_serve_requests_total{route="other",code="404"} 1"#))
        #expect(text.contains(#"daybook_serve_request_duration_seconds_count{route="totals"} 3"#))
        #expect(text.contains(#"daybook_serve_shard_lag_messages{partition="\#(fixture.partition)"} 3"#))
        let check = try Promtool.checkMetrics(text)
        #expect(check.isClean, "\(check.output)")
    }

    /// Many threads at once through one service: every answer is the same exact one.
    @Test func concurrentReadsAgree() async throws {
        let fixture = try ServeFixture()
        let service = try fixture.service()
        let expected = service.handle(get(ReadServiceTests.week))
        let answers = await withTaskGroup(of: HTTPResponse.self) { group in
            for _ in 0..<32 { group.addTask { service.handle(get(ReadServiceTests.week)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 32)
        #expect(answers.allSatisfy { $0 == expected })
    }
}

/// The tokens file docker-compose.yml mounts parses, and holds the demo token's digest.
@Suite struct ComposeTokensTests {
    @Test func theComposeTokensFileParses() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let tokens = try AccessTokens.load(root.appendingPathComponent("config/tokens").path)
        #expect(tokens.scope(authorization: "Bearer compose-demo-token") == .service)
    }
}
