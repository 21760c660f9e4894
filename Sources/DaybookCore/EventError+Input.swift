import DaybookSupport

/// Rejections decided while reading a line, before its members are validated.
extension EventError {
    /// The rejection for a line the JSON reader refused: invalid UTF-8 and repeated members
    /// get their own codes and name the member; anything else is malformed JSON.
    init(syntax error: JSONSyntaxError) {
        switch error.kind {
        case .syntax:
            self.init(code: .malformedJSON, field: nil, message: "malformed JSON: \(error)")
        case .invalidUTF8:
            // Replacing the bad bytes would let two different user ids become one.
            self.init(code: .invalidUTF8, field: error.path, message: "\(error) of the line; encode text as UTF-8")
        case .duplicateKey:
            self.init(code: .duplicateKey, field: error.path,
                      message: "\(error) of the line; give each member once (readers disagree on which one counts)")
        }
    }

    /// The rejection for a line longer than `limit` bytes, which a reader refuses without
    /// keeping it in memory (an event is a few hundred bytes).
    public static func lineTooLong(limit: Int) -> EventError {
        let size = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
        return EventError(code: .malformedJSON, field: nil, message: "the line is longer than \(size) and was not read; an event is a few hundred bytes")
    }
}
