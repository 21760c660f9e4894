@testable import DaybookHTTP
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing

/// `HTTPServer` over real sockets: URLSession for ordinary requests, raw sockets for what it
/// will not send (keep-alive pairs, oversized lines, chunked bodies, silence, hang-ups).
/// Every test stops its server; reads wait at most 20 s, a bound, not a measurement.
@Suite struct HTTPServerTests {
    /// A configuration on loopback and a free port, with `change` applied.
    static func configuration(_ change: (inout HTTPServerConfiguration) -> Void = { _ in }) -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration()
        configuration.stopDrainSeconds = 2
        change(&configuration)
        return configuration
    }

    /// Echoes what the server handed over: method, target, a header and the body's length.
    static let echo: HTTPHandler = { request in
        HTTPResponse(status: 201, headers: [HTTPHeader("Content-Type", "text/plain"), HTTPHeader("X-Echo-Method", request.method),
                                            HTTPHeader("X-Echo-Target", request.target), HTTPHeader("X-Echo-Agent", request.header("x-agent") ?? "-")],
                     body: request.body)
    }

    static func fetch(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw RawConnection.Failure(description: "not HTTP") }
        return (data, http)
    }

    @Test func answersWithTheHandlersStatusHeadersAndBody() async throws {
        let server = try HTTPServer(Self.configuration(), handler: Self.echo)
        defer { server.stop() }
        #expect(server.port != 0)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/v1/users/ana%40x/totals?metric=steps&x=a+b")!)
        request.setValue("tester/1", forHTTPHeaderField: "X-Agent")
        let (data, response) = try await Self.fetch(request)
        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "X-Echo-Method") == "GET")
        #expect(response.value(forHTTPHeaderField: "X-Echo-Target") == "/v1/users/ana%40x/totals?metric=steps&x=a+b")  // as sent, not decoded
        #expect(response.value(forHTTPHeaderField: "X-Echo-Agent") == "tester/1")
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(data.isEmpty)
    }

    @Test func handsOverAPostBodyWhole() async throws {
        let server = try HTTPServer(Self.configuration(), handler: Self.echo)
        defer { server.stop() }
        // 300,000 bytes of a repeating 0...250 pattern: more than one read of the socket.
        let body = Data((0..<300_000).map { UInt8($0 % 251) })
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/v1/users/ana/syncs")!)
        request.httpMethod = "POST"
        request.httpBody = body
        let (data, response) = try await Self.fetch(request)
        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "X-Echo-Method") == "POST")
        #expect(data == body)
    }

    @Test func answersManyConcurrentRequests() async throws {
        let server = try HTTPServer(Self.configuration(), handler: { request in .text(200, request.target) })
        defer { server.stop() }
        let port = server.port
        let answers = try await withThrowingTaskGroup(of: (Int, Int, String).self) { group in
            for i in 0..<64 {
                group.addTask {
                    let (data, response) = try await Self.fetch(URLRequest(url: URL(string: "http://127.0.0.1:\(port)/n/\(i)")!))
                    return (i, response.statusCode, String(decoding: data, as: UTF8.self))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 64)
        for (i, status, text) in answers {
            #expect(status == 200 && text == "/n/\(i)")
        }
    }

    @Test func servesTwoRequestsOnOneKeepAliveConnection() throws {
        let server = try HTTPServer(Self.configuration(), handler: { request in .text(200, request.method + " " + request.target) })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        client.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try client.readResponse()
        client.send("PUT /second?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        let second = try client.readResponse()
        #expect(first.status == 200 && first.text == "GET /first")
        #expect(second.status == 200 && second.text == "PUT /second?a=1")
        #expect(first.header("Connection")?.lowercased() != "close")
    }

    @Test func handsAnyMethodToTheHandler() throws {
        let server = try HTTPServer(Self.configuration(), handler: { request in
            request.method == "GET" ? .text(200, "ok") : .json(405, #"{"error": "\#(request.method) is not allowed"}"#, headers: [HTTPHeader("Allow", "GET")])
        })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        client.send("BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try client.readResponse()
        #expect(answer.status == 405)
        #expect(answer.header("Allow") == "GET")
        #expect(answer.text == #"{"error": "BREW is not allowed"}"#)
    }

    @Test func refusesAnOverlongTargetWith414() throws {
        let calls = Atomic<Int>(0)
        let server = try HTTPServer(Self.configuration(), handler: { _ in calls.add(1, ordering: .relaxed); return .text(200, "") })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        // 1 + 8192 = 8193 bytes of target, one over the default 8192.
        client.send("GET /\(String(repeating: "a", count: 8192)) HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try client.readResponse()
        #expect(answer.status == 414)
        #expect(answer.header("Content-Type") == "application/json")
        #expect(answer.text == #"{"error": "the request target is longer than 8192 bytes"}"#)
        let handled = calls.load(ordering: .relaxed)
        #expect(handled == 0)
    }

    @Test func refusesOversizedHeadersWith431() throws {
        let server = try HTTPServer(Self.configuration(), handler: { _ in .text(200, "") })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        // "Host" + "x" + 4 = 9 and "Cookie" + 20,000 + 4 = 20,010: 20,019 over the default 16,384.
        client.send("GET / HTTP/1.1\r\nHost: x\r\nCookie: \(String(repeating: "c", count: 20_000))\r\n\r\n")
        let answer = try client.readResponse()
        #expect(answer.status == 431)
        #expect(answer.text == #"{"error": "the request headers are larger than 16384 bytes"}"#)
    }

    @Test func refusesABodyByItsContentLengthBeforeReadingIt() throws {
        let server = try HTTPServer(Self.configuration { $0.maxBodyBytes = 1000 }, handler: { _ in .text(200, "") })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        client.send("POST /v1/users/ana/syncs HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")  // no body sent at all
        let answer = try client.readResponse()
        #expect(answer.status == 413)
        #expect(answer.text == #"{"error": "the request body is larger than 1000 bytes"}"#)
        #expect(client.closesByServer())
    }

    @Test func refusesAChunkedBodyPastTheLimitAndTakesOneWithinIt() throws {
        let bodies = Mutex<[[UInt8]]>([])
        let server = try HTTPServer(Self.configuration { $0.maxBodyBytes = 1000 }, handler: { request in
            bodies.withLock { $0.append(request.body) }
            return .text(200, "\(request.body.count)")
        })
        defer { server.stop() }
        func chunked(_ sizes: [Int]) -> String {
            sizes.map { String($0, radix: 16) + "\r\n" + String(repeating: "z", count: $0) + "\r\n" }.joined() + "0\r\n\r\n"
        }
        let within = try RawConnection(port: server.port)
        within.send("POST /in HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked([400, 600]))  // 1000: at the limit
        let taken = try within.readResponse()
        #expect(taken.status == 200 && taken.text == "1000")

        let past = try RawConnection(port: server.port)
        past.send("POST /past HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked([600, 600, 600]))  // 1800
        let refused = try past.readResponse()
        #expect(refused.status == 413)
        #expect(refused.header("Connection")?.lowercased() == "close")
        #expect(bodies.withLock { $0.map(\.count) } == [1000])  // the refused body never reached the handler
    }

    @Test func closesASilentClientAfterTheTimeout() throws {
        let server = try HTTPServer(Self.configuration { $0.connectionTimeoutSeconds = 1 }, handler: { _ in .text(200, "") })
        defer { server.stop() }
        let client = try RawConnection(port: server.port, timeoutSeconds: 20)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n")  // the headers never end
        #expect(client.closesByServer())  // within 20 s, not timed further
        let idle = try RawConnection(port: server.port, timeoutSeconds: 20)
        #expect(idle.closesByServer())  // sends nothing at all
    }

    @Test func survivesAClientThatHangsUpMidBody() throws {
        let calls = Atomic<Int>(0)
        let server = try HTTPServer(Self.configuration(), handler: { _ in calls.add(1, ordering: .relaxed); return .text(200, "ok") })
        defer { server.stop() }
        for _ in 0..<20 {
            let client = try RawConnection(port: server.port)
            client.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "b", count: 10))
            client.shutdownBoth()
        }
        let after = try RawConnection(port: server.port)
        after.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try after.readResponse().text == "ok")
        let handled = calls.load(ordering: .relaxed)
        #expect(handled == 1)  // only the whole request was handled
    }

    @Test func anAsyncResponderAnswersLaterFromAnotherThreadOnce() throws {
        let seconds = Mutex<[Bool]>([])
        let server = try HTTPServer(Self.configuration(), asyncHandler: { request, responder in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
                let first = responder.respond(.json(202, #"{"accepted": "\#(request.target)"}"#))
                let second = responder.respond(.json(500, "{}"))
                seconds.withLock { $0 += [first, second] }
            }
        })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        client.send("POST /v1/users/ana/syncs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]")
        let answer = try client.readResponse()
        #expect(answer.status == 202 && answer.text == #"{"accepted": "/v1/users/ana/syncs"}"#)
        client.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")  // the connection carries on after a resume
        #expect(try client.readResponse().status == 202)
        // Recorded just after the answer went out, so perhaps after the client read it.
        #expect(Self.eventually { seconds.withLock { $0.count } == 4 })
        #expect(seconds.withLock { $0 } == [true, false, true, false])
    }

    @Test func aDroppedResponderAnswers500() throws {
        let server = try HTTPServer(Self.configuration(), asyncHandler: { _, responder in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { _ = responder }  // released there, unanswered
        })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try client.readResponse()
        #expect(answer.status == 500)
        #expect(answer.text == #"{"error": "the server dropped the request without answering it"}"#)

        let unkept = try HTTPServer(Self.configuration(), asyncHandler: { _, _ in })  // dropped before the handler returns
        defer { unkept.stop() }
        let other = try RawConnection(port: unkept.port)
        other.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try other.readResponse().status == 500)
    }

    @Test func aClientThatHangsUpWhileItsAnswerWaitsCostsNothing() throws {
        let kept = Mutex<[HTTPResponder]>([])
        let server = try HTTPServer(Self.configuration(), asyncHandler: { request, responder in
            if request.target == "/wait" { kept.withLock { $0.append(responder) } } else { responder.respond(.text(200, "ok")) }
        })
        defer { server.stop() }
        for _ in 0..<5 {
            let client = try RawConnection(port: server.port)
            client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
            while kept.withLock({ $0.isEmpty }) { usleep(1000) }
            client.shutdownBoth()
            // Answered after the client left: the write fails inside libmicrohttpd, which
            // completes the request; the responder still took the answer.
            let responder = kept.withLock { $0.removeFirst() }
            #expect(responder.respond(.text(200, "too late")))
        }
        let after = try RawConnection(port: server.port)
        after.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try after.readResponse().text == "ok")
        #expect(Self.eventually { server.inProgressForTests == 0 })  // every request completed, none leaked
    }

    @Test func stopWaitsForAHandlerInFlightAndItsAnswerIsSent() throws {
        let entered = DispatchSemaphore(value: 0)
        let finished = Atomic<Bool>(false)
        let server = try HTTPServer(Self.configuration(), handler: { _ in
            entered.signal()
            usleep(300_000)
            finished.store(true, ordering: .releasing)
            return .text(200, "finished")
        })
        let client = try RawConnection(port: server.port)
        client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        entered.wait()
        server.stop()
        let handlerDone = finished.load(ordering: .acquiring)
        #expect(handlerDone)  // stop returned after the handler did
        #expect(try client.readResponse().text == "finished")
        server.stop()  // idempotent
        #expect(throws: RawConnection.Failure.self) { try RawConnection(port: server.port) }  // nothing listens
    }

    @Test func stopAnswers503ToRequestsStillWaitingForTheirResponder() throws {
        let kept = Mutex<[HTTPResponder]>([])
        let server = try HTTPServer(Self.configuration { $0.stopDrainSeconds = 0 }, asyncHandler: { _, responder in
            kept.withLock { $0.append(responder) }
        })
        let client = try RawConnection(port: server.port)
        client.send("POST /v1/users/ana/syncs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        while kept.withLock({ $0.isEmpty }) { usleep(1000) }
        server.stop()
        let answer = try client.readResponse()
        #expect(answer.status == 503)
        #expect(answer.text == #"{"error": "the server is stopping; send the request again"}"#)
        #expect(kept.withLock { $0[0].respond(.text(200, "delivered")) } == false)  // after stop: ignored, nothing touched
    }

    @Test func portZeroPicksAFreePortAndATakenPortIsAnError() throws {
        let first = try HTTPServer(Self.configuration(), handler: { _ in .text(200, "") })
        defer { first.stop() }
        let second = try HTTPServer(Self.configuration(), handler: { _ in .text(200, "") })
        defer { second.stop() }
        #expect(first.port != 0 && second.port != 0 && first.port != second.port)
        let taken = Self.configuration { $0.port = first.port }
        #expect(throws: HTTPServerError.self) { try HTTPServer(taken, handler: { _ in .text(200, "") }) }
        #expect(throws: HTTPServerError.self) { try HTTPServer(Self.configuration { $0.host = "example.com" }, handler: { _ in .text(200, "") }) }
    }

    @Test func listensOnIPv6Loopback() throws {
        let server = try HTTPServer(Self.configuration { $0.host = "::1" }, handler: { _ in .text(200, "six") })
        defer { server.stop() }
        let client = try RawConnection(port: server.port, host: "::1")
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().text == "six")
    }

    @Test func answers500InPlaceOfAnAnswerHTTPCannotCarry() throws {
        let server = try HTTPServer(Self.configuration(), handler: { request in
            request.target == "/split" ? HTTPResponse(status: 200, headers: [HTTPHeader("X", "a\r\nSet-Cookie: b=c")]) : HTTPResponse(status: 42)
        })
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        for target in ["/split", "/status"] {
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try client.readResponse()
            #expect(answer.status == 500)
            #expect(answer.header("Set-Cookie") == nil)
        }
    }

    /// Whether `condition` holds within 20 s (polled; a bound, not a measurement).
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<2000 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
