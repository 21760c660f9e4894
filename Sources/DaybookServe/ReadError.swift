import DaybookHTTP
import DaybookSupport

/// Why a read was not answered with data: the HTTP status, a stable code a client can
/// switch on, the parameter at fault (when one is), and words that say what is accepted.
/// Rendered as `{"error": {"code": …, "parameter": …, "message": …}}`.
///
/// A message never holds a token, and quotes at most 80 characters of what the client sent.
public struct ReadError: Error, Sendable, Equatable {
    public var status: Int
    /// `bad_parameter`, `bad_path`, `not_found`, `method_not_allowed`, `unauthorized`,
    /// `forbidden`, `not_owner`, `unavailable`, `not_implemented`, `not_ready`, `internal`; for
    /// syncs also `bad_batch`, `bad_body`, `too_large`, `unsupported_media_type`,
    /// `rate_limited` and `busy`.
    public var code: String
    public var parameter: String?
    public var message: String
    /// Headers the answer must carry (`Allow`, `WWW-Authenticate`, `Retry-After`).
    public var headers: [HTTPHeader]

    public init(status: Int, code: String, parameter: String? = nil, message: String, headers: [HTTPHeader] = []) {
        self.status = status
        self.code = code
        self.parameter = parameter
        self.message = message
        self.headers = headers
    }

    /// A 400 naming `parameter`.
    public static func badParameter(_ parameter: String, _ message: String) -> ReadError {
        ReadError(status: 400, code: "bad_parameter", parameter: parameter, message: message)
    }

    /// The JSON body.
    public var json: String {
        "{\"error\":{\"code\":\(JSONWriter.quoted(code)),\"parameter\":\(parameter.map(JSONWriter.quoted) ?? "null"),\"message\":\(JSONWriter.quoted(message))}}"
    }

    public var response: HTTPResponse { .json(status, json, headers: headers) }

    /// At most 80 characters of client input, quoted, for a message.
    static func shown(_ text: String) -> String {
        JSONWriter.quoted(text.count > 80 ? String(text.prefix(80)) + "…" : text)
    }
}
