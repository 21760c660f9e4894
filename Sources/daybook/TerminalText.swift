import DaybookSupport

/// User strings made safe to show on a terminal or in a spreadsheet.
///
/// User ids, source names and uuids come from the log and may hold control characters
/// (`ESC [ 2 J` clears a screen, `ESC ] 0 ;` retitles a window, a C1 `CSI` does the same
/// on some terminals, `CR` overwrites a line). Human-readable output shows each of them
/// as an escape such as `\u{1B}`; JSON output escapes them as JSON does (`JSONWriter`).
enum TerminalText {
    /// True for C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F).
    static func isControl(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (0x7F...0x9F).contains(u.value)
    }

    /// `s` with every control character written as `\u{1B}` (hex, as Swift writes it).
    /// With `keepingNewlines`, line feeds stay (for multi-line messages of our own).
    /// Complexity: O(n); returns `s` itself when there is nothing to escape.
    static func escaped(_ s: String, keepingNewlines: Bool = false) -> String {
        guard s.unicodeScalars.contains(where: { isControl($0) && !(keepingNewlines && $0 == "\n") }) else { return s }
        var out = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            if isControl(u), !(keepingNewlines && u == "\n") {
                out.append(contentsOf: "\\u{\(String(u.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(u)
            }
        }
        return String(out)
    }

    /// Bytes from the log (a message key or payload) for a terminal: UTF-8 text escaped as
    /// `escaped(_:)` does; bytes that are not UTF-8 make every byte outside printable
    /// ASCII show as `\x{FF}` (never replaced by U+FFFD: two different keys must not look
    /// the same).
    static func escaped(bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return escaped(text) }
        var out = ""
        for b in bytes {
            if (0x20...0x7E).contains(b) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "\\x{\(String(b, radix: 16, uppercase: true))}"
            }
        }
        return out
    }

    /// One CSV text field (RFC 4180), for data from the log (user ids, source names): its
    /// bytes kept, quoted — quotes doubled — when it holds `,`, `"`, CR or LF. A field
    /// that a spreadsheet would take for a formula (starting with `=`, `+`, `-`, `@`, tab or
    /// CR, as OWASP's advice on CSV injection lists) gets a `'` in front, and so does one
    /// starting with `'`, so that reading back is exact: drop one leading `'` if there is one.
    /// Numeric columns are not text fields (a negative number stays a number).
    static func csvField(_ s: String) -> String {
        var text = s
        if let first = s.unicodeScalars.first, "=+-@\t\r'".unicodeScalars.contains(first) { text = "'" + s }
        guard text.utf8.contains(where: { $0 == 44 || $0 == 34 || $0 == 13 || $0 == 10 }) || text.utf8.first == 39 else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Source names in one CSV cell, `watch=3000;phone=4050` (with values) or `watch;phone`:
    /// in a name, `\`, `;` and `=` are written `\\`, `\;` and `\=`, so the cell parses
    /// back whatever the names hold (split at a `;` not after `\`, then at the `=`).
    static func csvList(_ items: [(name: String, value: String?)]) -> String {
        items.map { item in
            var name = ""
            for c in item.name {
                if c == "\\" || c == ";" || c == "=" { name.append("\\") }
                name.append(c)
            }
            return item.value.map { name + "=" + $0 } ?? name
        }.joined(separator: ";")
    }

    /// `s` for a table column: escaped, and cut to `limit` characters with `…` at the end
    /// (a 5,000-character user id must not pad every row; json keeps it whole).
    static func cell(_ s: String, limit: Int = 48) -> String {
        let safe = escaped(s)
        return safe.count <= limit ? safe : String(safe.prefix(limit - 1)) + "…"
    }
}
