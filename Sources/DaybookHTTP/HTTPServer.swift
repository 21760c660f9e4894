import CMicroHTTPD
import Glibc
import Synchronization

/// How an `HTTPServer` listens and what it bounds.
public struct HTTPServerConfiguration: Sendable {
    /// The address to bind (an IPv4 or IPv6 literal, or `localhost`). Default: loopback.
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (read it back from `HTTPServer.port`).
    public var port: UInt16 = 0
    /// Threads answering requests (each polls its own connections). Default: 2.
    public var threads: Int = 2
    /// Connections open at once; further ones are closed as they are accepted. Default: 1024.
    public var connectionLimit: Int = 1024
    /// A connection on which nothing arrives or leaves for this long (idle, or a client that
    /// stopped sending mid-request) is closed. A client that trickles a byte at a time is
    /// bounded by `connectionLimit`, not by this. Default: 30 s.
    public var connectionTimeoutSeconds: Int = 30
    /// A request-target longer than this is answered 414. Default: 8 KiB.
    public var maxTargetBytes: Int = 8192
    /// Request headers larger than this (together: names, values, `: ` and line ends) are
    /// answered 431. Default: 16 KiB.
    public var maxHeaderBytes: Int = 16384
    /// A body larger than this is answered 413 without being kept: at once from its
    /// `Content-Length`, or once a chunked body ends. Default: 1 MiB.
    public var maxBodyBytes: Int = 1 << 20
    /// How long `stop()` waits for the requests in progress to be answered before it answers
    /// those still waiting for an `HTTPResponder` 503 and closes every connection. Default: 5 s.
    public var stopDrainSeconds: Int = 5

    public init() {}
}

/// Why a server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An HTTP/1.1 server (keep-alive, a thread pool, the limits of its configuration) that
/// hands each whole request to `handler` and sends back what it answers.
///
///     let server = try HTTPServer(configuration) { request in .json(200, "{}") }
///     print(server.port)
///     server.stop()
///
/// Built over Debian's libmicrohttpd with its internal threads (epoll where the system has
/// it). Any method reaches the handler (its router answers 405). The server answers by
/// itself: 414, 431, 413, 400 for a target that is not visible ASCII and 501 for a transfer
/// coding other than chunked (`RequestLimits`), each with a JSON body `{"error": "..."}`;
/// and, without a JSON body, libmicrohttpd answers requests it cannot parse (400) and the
/// rare request that fills a connection's memory before the limits are judged (414, 431).
/// Nothing is logged: libmicrohttpd's messages are off, so no header or token reaches stderr.
public final class HTTPServer: Sendable {
    /// The port it listens on (the chosen one when the configuration said 0).
    public let port: UInt16

    private let running: Mutex<Running?>
    private let core: ServerCore
    private let drainSeconds: Int

    /// The daemon and the retained core its callbacks reach. The daemon is used only under
    /// `running`'s lock, by `stop()`.
    private struct Running: @unchecked Sendable {
        let daemon: OpaquePointer
        let core: Unmanaged<ServerCore>
    }

    /// A server that answers each request with what `handler` returns, on the thread that
    /// read the request.
    public convenience init(_ configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) throws(HTTPServerError) {
        try self.init(configuration, asyncHandler: { request, responder in responder.respond(handler(request)) })
    }

    /// A server that hands each request and an `HTTPResponder` to `asyncHandler`, which
    /// answers through the responder now or later, from any thread.
    /// - Throws: `HTTPServerError` for a configuration value out of range, a host that is not
    ///   an address, or an address it cannot listen on.
    public init(_ configuration: HTTPServerConfiguration, asyncHandler: @escaping HTTPAsyncHandler) throws(HTTPServerError) {
        let limits = try RequestLimits(configuration)
        let address = try BindAddress(host: configuration.host, port: configuration.port)
        let core = ServerCore(limits: limits, handler: asyncHandler)
        let retained = Unmanaged.passRetained(core)
        // No MHD_USE_ERROR_LOG: libmicrohttpd's messages can quote requests.
        var flags = MHD_USE_AUTO_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        errno = 0
        let daemon = address.withSockaddr { socketAddress in
            daybook_mhd_start(
                flags, socketAddress, UInt32(configuration.threads), UInt32(configuration.connectionLimit),
                UInt32(configuration.connectionTimeoutSeconds), limits.connectionMemoryBytes,
                { cls, connection, _, method, _, upload, uploadSize, context in
                    guard let cls, let connection, let uploadSize, let exchange = context?.pointee else { return .NO }
                    return Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
                        .access(connection, Unmanaged<Exchange>.fromOpaque(exchange).takeUnretainedValue(),
                                method: method, upload: upload, uploadSize: uploadSize)
                },
                { cls, _, context, _ in
                    guard let cls, let context, let exchange = context.pointee else { return }
                    context.pointee = nil
                    Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
                        .end(Unmanaged<Exchange>.fromOpaque(exchange).takeRetainedValue())
                },
                { cls, uri, _ in
                    guard let cls else { return nil }
                    let exchange = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().begin(uri)
                    return Unmanaged.passRetained(exchange).toOpaque()
                },
                retained.toOpaque())
        }
        let reason = errno
        let shown = "\(address.isIPv6 ? "[\(configuration.host)]" : configuration.host):\(configuration.port)"
        guard let daemon else {
            retained.release()
            let why = reason == 0 ? "" : ": " + String(cString: strerror(reason))
            throw HTTPServerError("cannot listen on \(shown)\(why); choose another port, or a host that is an address of this machine")
        }
        let bound = daybook_mhd_bound_port(daemon)
        guard bound != 0 else {
            MHD_stop_daemon(daemon)
            retained.release()
            throw HTTPServerError("listening on \(shown), libmicrohttpd did not say which port it bound")
        }
        self.port = bound
        self.core = core
        self.drainSeconds = configuration.stopDrainSeconds
        self.running = Mutex(Running(daemon: daemon, core: retained))
    }

    /// Stops listening, finishes or closes the open connections, and returns when no handler runs.
    ///
    /// New connections are refused at once, and requests that arrive from now on are
    /// answered 503 (`Connection: close`). The requests in progress get up to
    /// `stopDrainSeconds` to be answered; those still waiting for their `HTTPResponder` are
    /// then answered 503 (a later `respond` is ignored), which gets up to a second more to be
    /// sent, and every connection is closed.
    /// Idempotent; a second caller returns once the first has stopped the server. Not to be
    /// called from a handler, whose thread this waits for.
    public func stop() {
        running.withLock { running in
            guard let current = running else { return }
            running = nil
            let listener = MHD_quiesce_daemon(current.daemon)
            core.beginStopping()
            core.waitUntilNoneInProgress(seconds: drainSeconds)
            core.answerWaiting(RequestLimits.stopping)
            // The 503s go out once their connections resume, on libmicrohttpd's threads:
            // a moment for that before MHD_stop_daemon closes every connection.
            core.waitUntilNoneInProgress(seconds: 1)
            // Joins libmicrohttpd's threads: no handler runs once it returns. It closes the
            // connections but not a quiesced listener, whose socket is ours from then on.
            MHD_stop_daemon(current.daemon)
            if listener >= 0 { close(listener) }
            current.core.release()
        }
    }

    deinit { stop() }

    /// Requests libmicrohttpd has not completed, for the tests' leak checks.
    var inProgressForTests: Int { core.inProgress.load(ordering: .acquiring) }
}

/// One request from its line until libmicrohttpd is done with it, owned by the connection's
/// thread (libmicrohttpd keeps a connection on one thread): the raw target, the request
/// once its headers are in, the body as it arrives, and its answer once it is dispatched.
final class Exchange {
    let target: String
    var request: HTTPRequest?
    var body: BodyCollector
    var pending: PendingAnswer?

    init(target: String, bodyLimit: Int) {
        self.target = target
        self.body = BodyCollector(limit: bodyLimit)
    }
}

/// What libmicrohttpd's callbacks reach through their closure pointer: the handler, the
/// limits, the requests in progress and those dispatched and not yet completed.
final class ServerCore: Sendable {
    let limits: RequestLimits
    let handler: HTTPAsyncHandler
    /// Requests whose line has arrived and that libmicrohttpd has not completed.
    let inProgress = Atomic<Int>(0)
    private let registry = Mutex(Registry())

    private struct Registry {
        var stopping = false
        var dispatched: [ObjectIdentifier: PendingAnswer] = [:]
    }

    init(limits: RequestLimits, handler: @escaping HTTPAsyncHandler) {
        self.limits = limits
        self.handler = handler
    }

    /// The URI log callback: the request line is in, the target not yet taken apart by
    /// libmicrohttpd. Non-ASCII bytes become U+FFFD, which `RequestLimits` refuses.
    func begin(_ uri: UnsafePointer<CChar>?) -> Exchange {
        inProgress.add(1, ordering: .relaxed)
        let target = uri.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } ?? ""
        return Exchange(target: target, bodyLimit: limits.maxBodyBytes)
    }

    /// The access handler. libmicrohttpd calls it once the headers are in, then with each
    /// piece of body, then with none once the body ended, and again after a resume.
    func access(_ connection: OpaquePointer, _ exchange: Exchange, method: UnsafePointer<CChar>?,
                upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>) -> MHD_Result {
        if let pending = exchange.pending {
            guard let response = pending.resumed() else { return .NO }
            return queue(connection, response)
        }
        guard var request = exchange.request else {
            let headers = Self.headers(of: connection)
            if let refusal = limits.refusal(target: exchange.target, headers: headers) {
                // Queued before the body: libmicrohttpd closes the connection after it
                // rather than read a body it was not asked to.
                return queue(connection, refusal)
            }
            exchange.request = HTTPRequest(method: method.map { String(cString: $0) } ?? "", target: exchange.target, headers: headers)
            return .YES
        }
        if uploadSize.pointee > 0 {
            let verdict = exchange.body.take(UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee))
            uploadSize.pointee = 0
            return verdict == .reading ? .YES : .NO
        }
        if exchange.body.tooLarge { return queue(connection, limits.bodyTooLarge) }
        request.body = exchange.body.bytes
        exchange.body = BodyCollector(limit: 0)
        guard let pending = dispatch(connection) else { return queue(connection, RequestLimits.stopping) }
        exchange.pending = pending
        do {
            // The server's reference to the responder ends here, so a handler that keeps
            // none has dropped it (500) by the time the state is asked.
            let responder = HTTPResponder(pending)
            handler(request, responder)
        }
        switch pending.handlerReturned() {
        case .queue(let response): return queue(connection, response)
        case .suspend: return .YES
        case .close: return .NO
        }
    }

    /// The completion callback: the request was answered, or its connection closed (by the
    /// client, a timeout or the server stopping).
    func end(_ exchange: Exchange) {
        if let pending = exchange.pending {
            pending.closed()
            _ = registry.withLock { $0.dispatched.removeValue(forKey: ObjectIdentifier(pending)) }
        }
        inProgress.subtract(1, ordering: .releasing)
    }

    private func dispatch(_ connection: OpaquePointer) -> PendingAnswer? {
        registry.withLock { registry in
            guard !registry.stopping else { return nil }
            let pending = PendingAnswer(connection)
            registry.dispatched[ObjectIdentifier(pending)] = pending
            return pending
        }
    }

    func beginStopping() { registry.withLock { $0.stopping = true } }

    /// Returns once no request is in progress, or after `seconds`. Polled, not signalled:
    /// stopping is rare, and a few milliseconds are nothing beside the wait they bound.
    func waitUntilNoneInProgress(seconds: Int) {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while inProgress.load(ordering: .acquiring) > 0, ContinuousClock.now < deadline {
            usleep(5_000)
        }
    }

    /// Answers every dispatched request that has no answer yet. Once stopping, nothing is
    /// dispatched any more, so none is left suspended for MHD_stop_daemon (which would abort).
    func answerWaiting(_ response: HTTPResponse) {
        // Copied first: a respond takes the answer's lock and then libmicrohttpd's, and
        // libmicrohttpd's completion callback takes the registry's.
        let dispatched = registry.withLock { Array($0.dispatched.values) }
        for pending in dispatched { pending.respond(response) }
    }

    private func queue(_ connection: OpaquePointer, _ response: HTTPResponse) -> MHD_Result {
        let sent = RequestLimits.canSend(response) ? response : RequestLimits.unsendable
        guard let made = Self.make(sent) ?? Self.make(RequestLimits.unsendable) else { return .NO }
        defer { MHD_destroy_response(made) }
        return MHD_queue_response(connection, UInt32(sent.status), made)
    }

    /// A libmicrohttpd response holding a copy of the body. A handler's `Content-Length` is
    /// left out: libmicrohttpd sends the body's own.
    private static func make(_ response: HTTPResponse) -> OpaquePointer? {
        let made = response.body.withUnsafeBytes { body in
            MHD_create_response_from_buffer(body.count, UnsafeMutableRawPointer(mutating: body.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let made else { return nil }
        for header in response.headers where header.name.lowercased() != "content-length" {
            guard MHD_add_response_header(made, header.name, header.value) == .YES else {
                MHD_destroy_response(made)
                return nil
            }
        }
        return made
    }

    /// The request's headers in their order (names as sent; libmicrohttpd keeps the bytes).
    private static func headers(of connection: OpaquePointer) -> [HTTPHeader] {
        var headers: [HTTPHeader] = []
        withUnsafeMutablePointer(to: &headers) { list in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { cls, _, key, keySize, value, valueSize in
                guard let cls else { return .NO }
                cls.assumingMemoryBound(to: [HTTPHeader].self).pointee
                    .append(HTTPHeader(text(key, keySize), text(value, valueSize)))
                return .YES
            }, list)
        }
        return headers
    }
}

/// `count` bytes at `start` as text (invalid UTF-8 repaired); empty for NULL.
private func text(_ start: UnsafePointer<CChar>?, _ count: Int) -> String {
    guard let start else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
}
