import Glibc

/// A client that writes HTTP bytes itself over a POSIX socket, for what URLSession will not
/// send: two requests on one connection, oversized lines, chunked bodies cut short, silence.
/// Every read waits at most `timeoutSeconds` (a generous bound, never a measurement).
final class RawConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        var code: Int32 = 0
    }

    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    private let fd: Int32
    private var buffered: [UInt8] = []

    init(port: UInt16, host: String = "127.0.0.1", timeoutSeconds: Int = 20) throws {
        let v6 = host.contains(":")
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected: Int32
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard connected == 0 else {
            let reason = errno
            close(fd)
            throw Failure(description: "connect to \(host):\(port): errno \(reason)")
        }
    }

    deinit { close(fd) }

    /// Writes all of `bytes`; false when the server has closed its side (no SIGPIPE).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Closes this side at once.
    func shutdownBoth() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Reads more bytes into the buffer; nil at end of stream, a failure on timeout or error.
    private func fill() throws -> Int? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return nil }
        if count < 0 {
            let code = errno
            throw Failure(description: "recv: errno \(code) (nothing within the timeout?)", code: code)
        }
        buffered.append(contentsOf: chunk[..<count])
        return count
    }

    /// One response with a `Content-Length` body (what the server always sends).
    func readResponse() throws -> Response {
        let end: Int = try {
            while true {
                if let at = Self.find([13, 10, 13, 10], in: buffered) { return at }
                guard try fill() != nil else { throw Failure(description: "closed before a whole head: \(String(decoding: buffered, as: UTF8.self))") }
            }
        }()
        let head = String(decoding: buffered[..<end], as: UTF8.self)
        buffered.removeFirst(end + 4)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "status line: \(head)") }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingPrefix(" ").description)
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while buffered.count < length {
            guard try fill() != nil else { throw Failure(description: "closed inside a body") }
        }
        let body = Array(buffered[..<length])
        buffered.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Whether the server closes the connection (end of stream, or a reset) before the read
    /// timeout, discarding whatever else it sends.
    func closesByServer() -> Bool {
        while true {
            do {
                guard try fill() != nil else { return true }
            } catch {
                return (error as? Failure)?.code == ECONNRESET
            }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
