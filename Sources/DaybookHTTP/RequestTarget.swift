/// A request-target taken apart: the path's segments and the query's items, each
/// percent-decoded (and `+` a space in the query, as forms send it), so that a router
/// matches plain strings.
///
///     let target = try RequestTarget(parsing: "/v1/users/ana%40x/totals?metric=steps")
///     target.segments   // ["v1", "users", "ana@x", "totals"]
///     target.value("metric")   // "steps"
///
/// The path is split at `/` before it is decoded, so `%2F` stays inside its segment. A
/// decoded segment or item must be valid UTF-8 and hold no NUL.
public struct RequestTarget: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The path's segments after the leading `/` (`/` alone is one empty segment).
    public var segments: [String]
    /// The query's `name=value` items in order (an item without `=` has an empty value;
    /// empty items, as in `a=1&&b=2`, are skipped).
    public var items: [Item]

    public init(segments: [String], items: [Item] = []) {
        self.segments = segments
        self.items = items
    }

    /// The first value of the query item `name`; nil when absent.
    public func value(_ name: String) -> String? { items.first { $0.name == name }?.value }

    /// Why a request-target could not be taken apart; `message` says which part.
    public enum ParseError: Error, Equatable, Sendable {
        /// The target is not an absolute path (`*`, an absolute URL, or empty).
        case notAPath(String)
        /// A `%` not followed by two hex digits, in `part` (the raw text of the segment or item).
        case badEscape(part: String)
        /// Decoded bytes that are not UTF-8 or hold a NUL, in `part`.
        case notText(part: String)

        public var message: String {
            switch self {
            case .notAPath(let target): "the request target \(Self.shown(target)) is not a path starting with '/'"
            case .badEscape(let part): "\(Self.shown(part)) has a '%' that is not followed by two hex digits"
            case .notText(let part): "\(Self.shown(part)) does not decode to UTF-8 text without NUL"
            }
        }

        /// At most 80 characters of `text`, quoted, so an error never echoes a huge input.
        static func shown(_ text: String) -> String {
            let cut = text.count > 80 ? String(text.prefix(80)) + "…" : text
            return "'" + cut + "'"
        }
    }

    public init(parsing target: String) throws(ParseError) {
        let bytes = Array(target.utf8)
        guard bytes.first == UInt8(ascii: "/") else { throw .notAPath(target) }
        let pathEnd = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        var segments: [String] = []
        for raw in bytes[1..<pathEnd].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            segments.append(try Self.decode(raw, plusIsSpace: false))
        }
        var items: [Item] = []
        if pathEnd < bytes.endIndex {
            for raw in bytes[(pathEnd + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                if let eq = raw.firstIndex(of: UInt8(ascii: "=")) {
                    items.append(Item(try Self.decode(raw[raw.startIndex..<eq], plusIsSpace: true),
                                      try Self.decode(raw[(eq + 1)...], plusIsSpace: true)))
                } else {
                    items.append(Item(try Self.decode(raw, plusIsSpace: true), ""))
                }
            }
        }
        self.init(segments: segments, items: items)
    }

    static func decode(_ raw: ArraySlice<UInt8>, plusIsSpace: Bool) throws(ParseError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        while i < raw.endIndex {
            let byte = raw[i]
            if byte == UInt8(ascii: "%") {
                guard let high = hex(raw, i + 1), let low = hex(raw, i + 2)
                else { throw .badEscape(part: String(decoding: raw, as: UTF8.self)) }
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                i += 1
            }
        }
        guard !out.contains(0), let text = String(validating: out, as: UTF8.self) else {
            throw .notText(part: String(decoding: raw, as: UTF8.self))
        }
        return text
    }

    private static func hex(_ raw: ArraySlice<UInt8>, _ at: Int) -> UInt8? {
        guard at < raw.endIndex else { return nil }
        switch raw[at] {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return raw[at] - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return raw[at] - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return raw[at] - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
