import Foundation

/// How records are attributed to Daybook sources (`watch`, `phone`, `manual`, an app's slug).
///
/// `HKWasUserEntered=1` → `manual`, always: a value typed in by hand is manual whichever app
/// took it. Then the user's overrides (`--source-map`), in the order given. Then a device
/// string with `model:Watch` →
/// `watch`, with `model:iPhone` → `phone`; anything else → a slug of the source name
/// ("Sleep Cycle" → `sleep-cycle`). Exports with anonymised names may leave the source
/// version as the only clue: `version:10.2=watch` says so.
public struct SourceMap: Sendable {
    /// What a rule matches: the record's `sourceName`, `sourceVersion`, or the device's model.
    public enum Field: String, Sendable { case name, version, model }

    public struct Rule: Equatable, Sendable {
        public var field: Field
        public var text: String
        public var source: String
    }

    public var rules: [Rule]

    public init(rules: [Rule] = []) { self.rules = rules }

    /// The syntax of one rule, for messages.
    public static let syntax = "[name:|version:|model:]TEXT=SOURCE, e.g. 'Ana’s Apple Watch=watch', 'version:10.2=watch' or 'model:iPod=phone'"

    /// Reads `[name:|version:|model:]TEXT=SOURCE` (split at the last `=`; no prefix means
    /// `name:`). SOURCE must be a non-empty id in NFC without control characters.
    public static func rule(_ spec: String) -> Result<Rule, SourceMapError> {
        guard let eq = spec.lastIndex(of: "=") else {
            return .failure(SourceMapError(message: "'\(spec)' has no '=': use \(syntax)"))
        }
        var text = String(spec[..<eq])
        let source = String(spec[spec.index(after: eq)...])
        var field = Field.name
        for f in [Field.name, .version, .model] where text.hasPrefix(f.rawValue + ":") {
            field = f
            text = String(text.dropFirst(f.rawValue.count + 1))
        }
        guard !text.isEmpty else { return .failure(SourceMapError(message: "'\(spec)' matches nothing: use \(syntax)")) }
        guard !source.isEmpty, source.trimmingCharacters(in: .whitespaces) == source,
              !source.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            return .failure(SourceMapError(message: "'\(spec)': the source after '=' must be a non-empty id without surrounding spaces or control characters"))
        }
        guard source.precomposedStringWithCanonicalMapping == source, source.utf8.elementsEqual(source.precomposedStringWithCanonicalMapping.utf8) else {
            return .failure(SourceMapError(message: "'\(spec)': the source is not in Unicode NFC; ids are compared byte for byte"))
        }
        return .success(Rule(field: field, text: text, source: source))
    }

    /// What decided a record's source: one of the map's rules (`field:text`, "version:10.2")
    /// or a built-in clue ("model:Watch").
    public enum Clue: Equatable, Sendable {
        case rule(String)
        case builtIn(String)
    }

    /// The record's source and the clue that decided it.
    func source(name: String, version: String?, device: String?, userEntered: Bool) -> (source: String, clue: Clue) {
        if userEntered { return ("manual", .builtIn("HKWasUserEntered")) }
        for r in rules {
            let hit: Bool
            switch r.field {
            case .name: hit = name == r.text
            case .version: hit = version == r.text
            case .model: hit = SourceMap.model(of: device) == r.text
            }
            if hit { return (r.source, .rule("\(r.field.rawValue):\(r.text)")) }
        }
        switch SourceMap.model(of: device) {
        case "Watch"?: return ("watch", .builtIn("model:Watch"))
        case "iPhone"?: return ("phone", .builtIn("model:iPhone"))
        default: return (SourceMap.slug(name), .builtIn("sourceName"))
        }
    }

    /// The `model:` field of a device string (`<<HKDevice: 0x…>, name:…, model:Watch, …>`).
    static func model(of device: String?) -> String? {
        guard let device else { return nil }
        // Bytes, not Foundation's range(of:): this runs for every record.
        let u = Array(device.utf8)
        let key = Array("model:".utf8)
        guard u.count >= key.count, let at = (0...(u.count - key.count)).first(where: { u[$0..<($0 + key.count)].elementsEqual(key) }) else { return nil }
        var end = at + key.count
        while end < u.count, u[end] != 44, u[end] != 62 { end += 1 } // up to ',' or '>'
        return String(decoding: u[(at + key.count)..<end], as: UTF8.self).trimmingCharacters(in: .whitespaces)
    }

    /// `Sleep Cycle` → `sleep-cycle`, `Ana’s iPhone Ärzte` → `ana-s-iphone-ärzte`: NFC,
    /// lower case, letters and digits kept, every other run one `-`; `unknown` when empty.
    static func slug(_ name: String) -> String {
        var out = ""
        var dash = false
        for ch in name.precomposedStringWithCanonicalMapping.lowercased() {
            if ch.isLetter || ch.isNumber {
                if dash, !out.isEmpty { out.append("-") }
                dash = false
                out.append(ch)
            } else {
                dash = true
            }
        }
        return out.isEmpty ? "unknown" : out.precomposedStringWithCanonicalMapping
    }
}

public struct SourceMapError: Error, Equatable, Sendable {
    public var message: String
}
