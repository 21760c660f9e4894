import Glibc

/// The address a server binds: an IPv4 or IPv6 literal (brackets allowed, as in URLs) or
/// `localhost`, which is 127.0.0.1 (one answer, not whatever the resolver lists first).
/// No name lookup: a host name that is not `localhost` is refused.
struct BindAddress: Sendable, Equatable {
    enum Family: Sendable, Equatable {
        case ipv4(in_addr_t)
        case ipv6([UInt8])
    }

    var family: Family
    var port: UInt16

    init(host: String, port: UInt16) throws(HTTPServerError) {
        self.port = port
        var text = host
        if text == "localhost" { text = "127.0.0.1" }
        if text.hasPrefix("["), text.hasSuffix("]"), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            family = .ipv4(v4.s_addr)
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            family = .ipv6(withUnsafeBytes(of: v6) { Array($0) })
        } else {
            throw HTTPServerError("the host '\(host.prefix(80))' is not an IPv4 or IPv6 address or localhost; give an address of this machine, such as 127.0.0.1 or ::")
        }
    }

    var isIPv6: Bool { if case .ipv6 = family { true } else { false } }

    /// `body` with the address as a `sockaddr_in` or `sockaddr_in6`.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        switch family {
        case .ipv4(let address):
            var socket = sockaddr_in()
            socket.sin_family = sa_family_t(AF_INET)
            socket.sin_port = port.bigEndian
            socket.sin_addr = in_addr(s_addr: address)
            return withUnsafePointer(to: &socket) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        case .ipv6(let bytes):
            var socket = sockaddr_in6()
            socket.sin6_family = sa_family_t(AF_INET6)
            socket.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &socket.sin6_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &socket) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
    }
}
