@testable import DaybookHTTP
import Testing

/// The server's decisions without a socket: which requests are refused before the handler
/// (`RequestLimits`), a body kept up to its limit (`BodyCollector`), where an answer stands
/// (`AnswerState`), and the listen address.
@Suite struct RequestLimitsTests {
    let limits = RequestLimits(maxTargetBytes: 20, maxHeaderBytes: 30, maxBodyBytes: 100)
    /// Room for the framing headers, which are longer than 30 bytes on their own.
    let roomy = RequestLimits(maxTargetBytes: 20, maxHeaderBytes: 200, maxBodyBytes: 100)

    @Test func refusesTargetsHeadersAndBodiesOverTheirLimits() {
        #expect(limits.refusal(target: "/" + String(repeating: "a", count: 19), headers: []) == nil)  // 20 bytes
        #expect(limits.refusal(target: "/" + String(repeating: "a", count: 20), headers: [])?.status == 414)  // 21
        #expect(limits.refusal(target: "/a b", headers: [])?.status == 400)
        #expect(limits.refusal(target: "/caf\u{E9}", headers: [])?.status == 400)
        #expect(limits.refusal(target: "/\u{FFFD}", headers: [])?.status == 400)
        // "Host" 4 + "x" 1 + 4 = 9, and "X-A" 3 + 14 + 4 = 21: 30 together, at the limit.
        let atLimit = [HTTPHeader("Host", "x"), HTTPHeader("X-A", String(repeating: "v", count: 14))]
        #expect(limits.refusal(target: "/", headers: atLimit) == nil)
        #expect(limits.refusal(target: "/", headers: atLimit + [HTTPHeader("B", "")])?.status == 431)  // 30 + 1 + 0 + 4
        #expect(roomy.refusal(target: "/", headers: [HTTPHeader("content-length", "100")]) == nil)
        let over = roomy.refusal(target: "/", headers: [HTTPHeader("Content-Length", "101")])
        #expect(over?.status == 413)
        #expect(over?.header("Connection") == "close")
        #expect(over.map { String(decoding: $0.body, as: UTF8.self) } == #"{"error": "the request body is larger than 100 bytes"}"#)
        #expect(roomy.refusal(target: "/", headers: [HTTPHeader("Content-Length", "99999999999999999999")])?.status == 413)
    }

    @Test func acceptsOnlyTheChunkedCodingAndJudgesItsBodyWhileItArrives() {
        #expect(roomy.refusal(target: "/", headers: [HTTPHeader("Transfer-Encoding", " Chunked ")]) == nil)
        // A chunked body's Content-Length means nothing (RFC 9112 6.3): not refused by it.
        #expect(roomy.refusal(target: "/", headers: [HTTPHeader("Transfer-Encoding", "chunked"), HTTPHeader("Content-Length", "5000")]) == nil)
        #expect(roomy.refusal(target: "/", headers: [HTTPHeader("Transfer-Encoding", "gzip, chunked")])?.status == 501)
        #expect(roomy.refusal(target: "/", headers: [HTTPHeader("Transfer-Encoding", "identity")])?.status == 501)
    }

    @Test func keepsABodyUpToItsLimitThenReadsPastItToAnswerThenCloses() {
        var body = BodyCollector(limit: 100)
        let sixty = [UInt8](repeating: 7, count: 60)
        #expect(sixty.withUnsafeBytes { body.take($0) } == .reading)
        #expect(sixty.withUnsafeBytes { body.take($0) } == .reading)  // 120: past the limit, dropped
        #expect(body.tooLarge && body.bytes.isEmpty && body.received == 120)
        // Closed once more than max(100, 65536) bytes past the limit: 100 + 65536 = 65636 is the last read.
        let rest = [UInt8](repeating: 0, count: 65636 - 120)
        #expect(rest.withUnsafeBytes { body.take($0) } == .reading)
        #expect([UInt8(1)].withUnsafeBytes { body.take($0) } == .close)

        var exact = BodyCollector(limit: 100)
        #expect([UInt8](repeating: 1, count: 100).withUnsafeBytes { exact.take($0) } == .reading)
        #expect(!exact.tooLarge && exact.bytes.count == 100)
    }

    @Test func sendsOnlyFinalStatusesAndHeadersThatCannotSplitTheResponse() {
        #expect(RequestLimits.canSend(.json(200, "{}")))
        #expect(RequestLimits.canSend(HTTPResponse(status: 599, headers: [HTTPHeader("X-Ok!", "any text, even \u{E9}")])))
        #expect(!RequestLimits.canSend(HTTPResponse(status: 101)))
        #expect(!RequestLimits.canSend(HTTPResponse(status: 600)))
        #expect(!RequestLimits.canSend(HTTPResponse(status: 200, headers: [HTTPHeader("X", "a\r\nSet-Cookie: b")])))
        #expect(!RequestLimits.canSend(HTTPResponse(status: 200, headers: [HTTPHeader("X Y", "a")])))
        #expect(!RequestLimits.canSend(HTTPResponse(status: 200, headers: [HTTPHeader("", "a")])))
        #expect(!RequestLimits.canSend(HTTPResponse(status: 200, headers: [HTTPHeader("X", "a\u{0}b")])))
        #expect(String(decoding: RequestLimits.error(400, "a \"b\" \\ \n").body, as: UTF8.self) == #"{"error": "a \"b\" \\ \u000a"}"#)
    }

    @Test func refusesConfigurationsThatCannotBeMeant() {
        var configuration = HTTPServerConfiguration()
        #expect((try? RequestLimits(configuration)) == RequestLimits(maxTargetBytes: 8192, maxHeaderBytes: 16384, maxBodyBytes: 1 << 20))
        #expect((try? RequestLimits(configuration))?.connectionMemoryBytes == 65536)  // 2 × (8192 + 16384) + 16384
        configuration.threads = 0
        #expect(throws: HTTPServerError.self) { try RequestLimits(configuration) }
        configuration = HTTPServerConfiguration()
        configuration.connectionTimeoutSeconds = 0
        #expect(throws: HTTPServerError.self) { try RequestLimits(configuration) }
        configuration = HTTPServerConfiguration()
        configuration.maxBodyBytes = -1
        #expect(throws: HTTPServerError.self) { try RequestLimits(configuration) }
    }

    @Test func takesAddressLiteralsAndLocalhostOnly() throws {
        #expect(try !BindAddress(host: "127.0.0.1", port: 80).isIPv6)
        #expect(try BindAddress(host: "localhost", port: 80) == BindAddress(host: "127.0.0.1", port: 80))
        #expect(try BindAddress(host: "::1", port: 80).isIPv6)
        #expect(try BindAddress(host: "[::1]", port: 80) == BindAddress(host: "::1", port: 80))
        #expect(try BindAddress(host: "0.0.0.0", port: 0).family == .ipv4(0))
        for bad in ["", "example.com", "127.0.0.256", "[::1", "::1%lo"] {
            #expect(throws: HTTPServerError.self) { try BindAddress(host: bad, port: 80) }
        }
    }
}

/// `AnswerState`: the first answer wins whenever it comes, a suspended request is resumed
/// exactly once, and nothing after the connection closed touches it.
@Suite struct AnswerStateTests {
    let ok = HTTPResponse.json(200, "{}")
    let late = HTTPResponse.json(202, "{}")

    @Test func anAnswerDuringTheHandlerIsQueuedWhenItReturns() {
        var state = AnswerState()
        #expect(state.answered(ok) == .keep)
        #expect(state.answered(late) == .ignore)
        #expect(state.handlerReturned() == .queue(ok))
        #expect(state.stage == .sent)
        #expect(state.answered(late) == .ignore)
    }

    @Test func aLaterAnswerResumesTheSuspendedConnectionOnce() {
        var state = AnswerState()
        #expect(state.handlerReturned() == .suspend)
        #expect(state.resumed() == nil)  // no answer yet: nothing to queue
        #expect(state.answered(late) == .resume)
        #expect(state.answered(ok) == .ignore)
        #expect(state.resumed() == late)
        #expect(state.resumed() == nil)
        #expect(state.stage == .sent)
    }

    @Test func nothingTouchesAClosedConnection() {
        var state = AnswerState()
        #expect(state.handlerReturned() == .suspend)
        state.closed()
        #expect(state.answered(ok) == .ignore)
        #expect(state.resumed() == nil)
        #expect(state.handlerReturned() == .close)
    }
}
