/// `HOST:PORT` as `serve --listen` takes it (`127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080`),
/// and the URL rule of `--advertise`.
public struct ListenAddress: Sendable, Equatable {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (an IPv6 literal in brackets); nil when it is not one.
    public init?(_ text: String) {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace }), port.allSatisfy(\.isASCII),
              port.allSatisfy(\.isNumber), let number = UInt16(port) else { return nil }
        self.init(host: String(host), port: number)
    }

    /// Why `url` cannot be advertised as a member's read service (nil when it can): it must
    /// be `http://` or `https://` and a host, without white space, a query or a fragment
    /// (the request's path and query are appended to it).
    public static func advertiseProblem(_ url: String) -> String? {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { return "must start with http:// or https://" }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f }) else { return "must not hold white space or control characters" }
        guard !url.contains("?"), !url.contains("#") else { return "must not hold a query or fragment: the request's own path and query are appended" }
        let rest = url.drop { $0 != "/" }.dropFirst(2)
        guard !rest.isEmpty, rest.first != "/" else { return "names no host" }
        return nil
    }

    /// `url` without trailing slashes, so that `url + "/v1/…"` has one.
    public static func normalized(_ url: String) -> String {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}
