/// Durations as people write them in options and configuration: `90s`, `15m`, `6h`, `7d`.
public enum DurationText {
    public static let rule = "a whole number from 1 and a unit, s, m, h or d (e.g. 90s, 15m, 6h, 7d)"

    /// Seconds of `90s`, `15m`, `6h`, `7d` (at most 100 years); nil for anything else,
    /// a number without a unit included: a threshold in the wrong unit must not pass.
    public static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }) else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let n = Int64(digits), n >= 1 else { return nil }
        let seconds = n * unit
        return seconds <= 100 * 365 * 86_400 ? seconds : nil
    }

    /// `3d 4h`, `5h 12m`, `42s`: the two largest units, for people.
    public static func describe(seconds total: Int64) -> String {
        let parts: [(Int64, String)] = [(total / 86_400, "d"), (total / 3_600 % 24, "h"), (total / 60 % 60, "m"), (total % 60, "s")]
        guard let first = parts.firstIndex(where: { $0.0 > 0 }) else { return "0s" }
        return parts[first...].prefix(2).filter { $0.0 > 0 }.map { "\($0.0)\($0.1)" }.joined(separator: " ")
    }
}
