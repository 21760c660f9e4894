/// How an `HTTPServer` listens and what it bounds.
public struct HTTPServerConfiguration: Sendable {
    /// The address to bind (an IPv4 or IPv6 literal, or `localhost`). Default: loopback.
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (read it back from `HTTPServer.port`).
    public var port: UInt16 = 0
    /// Threads answering requests. Default: 2.
    public var threads: Int = 2
    /// Connections open at once; further ones are refused.
    public var connectionLimit: Int = 1024
    /// A connection idle (or a client this slow) for this long is closed. Default: 30 s.
    public var connectionTimeoutSeconds: Int = 30
    /// A request line longer than this is answered 414.
    public var maxTargetBytes: Int = 8192
    /// Request headers larger than this (together) are answered 431.
    public var maxHeaderBytes: Int = 16384
    /// A body larger than this is answered 413 without being read whole.
    public var maxBodyBytes: Int = 1 << 20

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
public final class HTTPServer: Sendable {
    /// The port it listens on (the chosen one when the configuration said 0).
    public let port: UInt16

    public init(_ configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) throws(HTTPServerError) {
        // The libmicrohttpd implementation replaces this (issue 28).
        throw HTTPServerError("the HTTP server is not built yet")
    }

    /// Stops listening, finishes or closes the open connections, and returns when no handler runs.
    public func stop() {}
}
