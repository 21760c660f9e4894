/// The bounds a server puts on one request, and the answers it gives when one is crossed.
/// Pure: the server asks it once the headers are in and once per piece of body.
///
///     let limits = try RequestLimits(HTTPServerConfiguration())
///     limits.refusal(target: "/v1/x", headers: [HTTPHeader("Content-Length", "5000000")])?.status   // 413
struct RequestLimits: Sendable, Equatable {
    var maxTargetBytes: Int
    var maxHeaderBytes: Int
    var maxBodyBytes: Int

    init(maxTargetBytes: Int, maxHeaderBytes: Int, maxBodyBytes: Int) {
        self.maxTargetBytes = maxTargetBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }

    /// The configuration's limits, refused when one cannot be meant (or does not fit the C
    /// types libmicrohttpd takes).
    init(_ configuration: HTTPServerConfiguration) throws(HTTPServerError) {
        func check(_ value: Int, _ name: String, _ range: ClosedRange<Int>) throws(HTTPServerError) {
            guard range.contains(value) else {
                throw HTTPServerError("\(name) is \(value); it must be between \(range.lowerBound) and \(range.upperBound)")
            }
        }
        try check(configuration.threads, "threads", 1...256)
        try check(configuration.connectionLimit, "connectionLimit", 1...1_000_000)
        try check(configuration.connectionTimeoutSeconds, "connectionTimeoutSeconds", 1...86_400)
        try check(configuration.stopDrainSeconds, "stopDrainSeconds", 0...3_600)
        try check(configuration.maxTargetBytes, "maxTargetBytes", 1...(1 << 20))
        try check(configuration.maxHeaderBytes, "maxHeaderBytes", 1...(1 << 20))
        try check(configuration.maxBodyBytes, "maxBodyBytes", 0...(1 << 30))
        self.init(maxTargetBytes: configuration.maxTargetBytes, maxHeaderBytes: configuration.maxHeaderBytes,
                  maxBodyBytes: configuration.maxBodyBytes)
    }

    /// libmicrohttpd's memory pool per connection, which holds the request line, the headers
    /// (and a record per header and query item), the body being read and the response's
    /// headers. Twice the target and header limits plus 16 KiB, so that our own 414 and 431
    /// (with their JSON bodies) come before the pool runs out; only a request that fills
    /// the pool anyway (thousands of tiny headers or query items) gets libmicrohttpd's own
    /// answer. Defaults: 64 KiB, touched only as far as a request uses it.
    var connectionMemoryBytes: Int { 2 * (maxTargetBytes + maxHeaderBytes) + 16384 }

    /// The answer to a request whose line and headers are in, when it must not reach the
    /// handler; nil when it may.
    ///
    /// Headers count together as they are sent: each name and value, plus 4 bytes for `: `
    /// and the line end. A `Content-Length` over the body limit is refused before the body
    /// is read. A transfer coding other than `chunked` is refused: its body would end only
    /// when the connection does.
    func refusal(target: String, headers: [HTTPHeader]) -> HTTPResponse? {
        if target.utf8.count > maxTargetBytes {
            return Self.error(414, "the request target is longer than \(maxTargetBytes) bytes")
        }
        if !target.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            return Self.error(400, "the request target holds bytes that are not visible ASCII; percent-encode them")
        }
        let headerBytes = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        if headerBytes > maxHeaderBytes {
            return Self.error(431, "the request headers are larger than \(maxHeaderBytes) bytes")
        }
        if let coding = headers.first(where: { $0.name.lowercased() == "transfer-encoding" })?.value {
            guard Self.trimmed(coding).lowercased() == "chunked" else {
                return Self.error(501, "only the chunked transfer coding is accepted", close: true)
            }
        } else if let length = headers.first(where: { $0.name.lowercased() == "content-length" })?.value {
            // libmicrohttpd has already refused a length that is not digits or overflows 64 bits.
            guard let bytes = UInt64(Self.trimmed(length)), bytes <= UInt64(maxBodyBytes) else { return bodyTooLarge }
        }
        return nil
    }

    /// 413, and the connection closed after it: the rest of the body is not read.
    var bodyTooLarge: HTTPResponse {
        Self.error(413, "the request body is larger than \(maxBodyBytes) bytes", close: true)
    }

    /// A small JSON error answer, `{"error": "..."}`; `close` asks the client to open a new
    /// connection for its next request.
    static func error(_ status: Int, _ message: String, close: Bool = false) -> HTTPResponse {
        var escaped = ""
        for scalar in message.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case _ where scalar.value < 0x20: escaped += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return .json(status, "{\"error\": \"\(escaped)\"}", headers: close ? [HTTPHeader("Connection", "close")] : [])
    }

    /// What the server answers in place of a handler's answer that HTTP cannot carry.
    static let unsendable = error(500, "the handler answered a status or header that HTTP cannot carry")
    /// What a request gets when its `HTTPResponder` is dropped without answering.
    static let dropped = error(500, "the server dropped the request without answering it")
    /// What a request gets when it arrives, or is still unanswered, while the server stops.
    static let stopping = error(503, "the server is stopping; send the request again", close: true)

    /// Whether libmicrohttpd can send `response` as it is: a final status (200 to 599), and
    /// header names that are tokens and values without line breaks or NUL. A handler's
    /// `Content-Length` is not sent (the server counts the body itself), so it is not judged.
    static func canSend(_ response: HTTPResponse) -> Bool {
        guard (200...599).contains(response.status) else { return false }
        return response.headers.allSatisfy { header in
            !header.name.isEmpty && header.name.utf8.allSatisfy(isTokenByte)
                && !header.value.utf8.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D }
        }
    }

    /// RFC 9110's `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    private static func trimmed(_ text: String) -> String {
        var part = Substring(text)
        while part.first == " " || part.first == "\t" { part.removeFirst() }
        while part.last == " " || part.last == "\t" { part.removeLast() }
        return String(part)
    }
}

/// A request's body as it arrives in pieces, kept up to the limit.
///
/// Past the limit the rest is read and dropped, so that the client (a chunked upload, whose
/// length is not known before) can still be answered 413; libmicrohttpd 0.9.75 can answer
/// only before the body or after its end. Past the limit plus as much again (at least
/// 64 KiB) the connection is closed without an answer: a client that goes on sending is not
/// owed one.
struct BodyCollector: Sendable {
    let limit: Int
    private(set) var bytes: [UInt8] = []
    /// Every byte received, kept or not.
    private(set) var received = 0

    init(limit: Int) { self.limit = limit }

    enum Verdict: Equatable, Sendable {
        /// Within the limit (or past it but within the bytes read to answer 413): go on.
        case reading
        /// Past the limit and the bytes read to answer 413: close the connection.
        case close
    }

    var tooLarge: Bool { received > limit }

    mutating func take(_ piece: UnsafeRawBufferPointer) -> Verdict {
        received += piece.count
        if received <= limit {
            bytes.append(contentsOf: piece)
            return .reading
        }
        bytes = []
        return received - limit > max(limit, 65536) ? .close : .reading
    }
}
