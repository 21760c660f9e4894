import DaybookHTTP
import DaybookSupport
import Foundation

/// Who may read what: the tokens file of `daybook serve --tokens`, one token per line as
/// its SHA-256 in hex and the user it may read, or `*` for a service that may read every
/// user (and `/metrics`). Blank lines and lines starting with `#` are skipped.
///
///     # printf %s "$TOKEN" | sha256sum
///     9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 ana
///     60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752 *
///
/// The file holds digests, not tokens, so reading it gives no one a secret. A presented
/// token is hashed and compared with every digest in constant time (all of them, whatever
/// matches), and neither it nor a line of the file is ever written into a message or log.
public struct AccessTokens: Sendable {
    /// What one token may read.
    public enum Scope: Sendable, Equatable {
        case user(String)
        /// `*`: every user, and the service's metrics.
        case service
    }

    struct Entry: Sendable {
        var digest: [UInt8]
        var scope: Scope
    }

    let entries: [Entry]

    /// Why a tokens file was refused; `message` names the file and the line, never the line's text.
    public struct FileError: Error, Sendable, CustomStringConvertible {
        public var path: String
        /// 1-based; nil when the file as a whole is the problem (unreadable).
        public var line: Int?
        public var message: String
        public var description: String { message }
    }

    /// Parses the text of a tokens file (`name` is how messages call it).
    public init(parsing text: String, name: String) throws(FileError) {
        var entries: [Entry] = []
        // "\r\n" is one Character: a file written on Windows splits as one written on Unix.
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let bad = { (why: String) in FileError(path: name, line: index + 1, message: "\(name) line \(index + 1): \(why)") }
            let fields = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let digest = Self.digest(fields[0]) else {
                throw bad("expected the SHA-256 of a token as 64 hex digits, then the user it may read or *; write the token's digest (printf %s \"$TOKEN\" | sha256sum), never the token itself")
            }
            // The user is the rest of the line: ids may hold spaces.
            let rest = trimmed[trimmed.index(trimmed.startIndex, offsetBy: fields[0].count)...].trimmingCharacters(in: .whitespaces)
            if rest == "*" {
                entries.append(Entry(digest: digest, scope: .service))
            } else if let problem = UserID.problem(rest) {
                throw bad("the user after the digest \(problem)")
            } else {
                entries.append(Entry(digest: digest, scope: .user(rest)))
            }
        }
        self.entries = entries
    }

    /// Reads and parses the tokens file at `path`.
    public static func load(_ path: String) throws(FileError) -> AccessTokens {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileError(path: path, line: nil, message: "\(path): cannot read the tokens file (missing, a directory, or not readable)")
        }
        guard let text = String(validating: Array(data), as: UTF8.self) else {
            throw FileError(path: path, line: nil, message: "\(path): the tokens file is not UTF-8 text")
        }
        return try AccessTokens(parsing: text, name: path)
    }

    static func digest(_ hex: Substring) -> [UInt8]? {
        let bytes = Array(hex.utf8)
        guard bytes.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let high = nibble(bytes[i]), let low = nibble(bytes[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func nibble(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: b - 48
        case 97...102: b - 87
        case 65...70: b - 55
        default: nil
        }
    }

    /// The holder of a known token: what it may read, and which line of the file it is
    /// (what per-token state, such as a rate limit, is kept under: never the token itself).
    public struct Caller: Sendable, Equatable {
        public var scope: Scope
        /// The token's entry, 0-based among the file's tokens.
        public var entry: Int
    }

    /// The scope of the token in `authorization` (an `Authorization` header's value); nil
    /// when it is missing, not `Bearer`, or unknown. Every digest is compared, in constant
    /// time, so the time taken does not tell which (or whether one) matched.
    public func scope(authorization: String?) -> Scope? { caller(authorization: authorization)?.scope }

    /// The caller whose token is in `authorization`; nil as for `scope(authorization:)`.
    public func caller(authorization: String?) -> Caller? {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let presented = SHA256.digest(parts[1].trimmingCharacters(in: .whitespaces).utf8)
        var found: Caller?
        for (index, entry) in entries.enumerated() where SHA256.constantTimeEqual(entry.digest, presented) && found == nil {
            found = Caller(scope: entry.scope, entry: index)
        }
        return found
    }

    /// Whether the caller of `route` may have it answered: nil if so, else the 401 (no or
    /// an unknown token: with `WWW-Authenticate: Bearer`) or 403 (a token of another user,
    /// or a user's token asking for `/metrics`).
    ///
    /// `/healthz` and `/readyz` need no token: probes of an orchestrator rarely carry one,
    /// and they tell only whether this process answers and keeps up, nothing of any user.
    /// `/metrics` needs a service token (`*`): request counts by route are the service's
    /// business, and Prometheus sends a bearer token with `authorization` in its scrape config.
    ///
    /// A sync (`POST /v1/users/{user}/syncs`) is the same: a user's token posts for that user
    /// only, and a service token (`*`) for any user, as a phone app's backend does for its
    /// users (each token with its own rate limit).
    public func refusal(of route: ReadRoute, authorization: String?) -> ReadError? {
        refusal(of: route, caller: caller(authorization: authorization), authorization: authorization)
    }

    /// As `refusal(of:authorization:)`, for a caller already looked up.
    public func refusal(of route: ReadRoute, caller: Caller?, authorization: String?) -> ReadError? {
        switch route {
        case .health, .ready: return nil
        case .metrics, .totals, .explain, .sync: break
        }
        guard let scope = caller?.scope else {
            return ReadError(status: 401, code: "unauthorized",
                             message: authorization == nil ? "this service needs a token: send Authorization: Bearer TOKEN" : "the token is not accepted (unknown, or not sent as Authorization: Bearer TOKEN)",
                             headers: [HTTPHeader("WWW-Authenticate", "Bearer realm=\"daybook\"")])
        }
        switch (scope, route.user) {
        case (.service, _): return nil
        case (.user(let allowed), let wanted?) where allowed == wanted: return nil
        case (.user, nil):
            return ReadError(status: 403, code: "forbidden", message: "this token reads one user's data; /metrics needs a service token (* in the tokens file)")
        case (.user, _?):
            if case .sync = route { return ReadError(status: 403, code: "forbidden", parameter: "user", message: "this token may not sync this user's data") }
            return ReadError(status: 403, code: "forbidden", parameter: "user", message: "this token may not read this user's data")
        }
    }
}
