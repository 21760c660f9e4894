/// One header line of a request or a response.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request as the server hands it to a handler: the method, the request-target exactly as
/// the client sent it (not decoded: `RequestTarget(parsing:)` decodes it), the headers in
/// their order, and the whole body.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The raw request-target: path, then `?` and the query when there is one.
    public var target: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(method: String, target: String, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The first header named `name`, compared without regard to ASCII case; nil when absent.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// What a handler answers: a status, headers, and a body sent whole.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body (`text`, already valid JSON) with its content type.
    public static func json(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: Array(text.utf8))
    }

    /// A plain-text body with its content type (`type`, by default UTF-8 text).
    public static func text(_ status: Int, _ text: String, type: String = "text/plain; charset=utf-8", headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", type)] + headers, body: Array(text.utf8))
    }

    /// The first header named `name`, without regard to ASCII case.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Answers one request. Called on one of the server's threads, possibly on several at once.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse
