/// Kafka's rule for topic names, checked before a name is used: 1 to 249 characters from
/// `a-z A-Z 0-9 . _ -`, and neither `.` nor `..` (Kafka's `Topic.validate`).
///
/// Daybook also builds shard file names from the topic, so a name that passes can never
/// point outside the data directory (`../../x` is refused for its `/`).
public enum TopicName {
    public static let maximumLength = 249

    /// Why `name` is not a valid topic name, or nil when it is one.
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name == "." || name == ".." { return "is not allowed (\".\" and \"..\" are reserved)" }
        if name.utf8.count > maximumLength { return "is \(name.utf8.count) characters long; at most \(maximumLength) are allowed" }
        if let bad = name.unicodeScalars.first(where: { !isLegal($0) }) {
            let shown = bad.value < 0x20 || (0x7F...0x9F).contains(bad.value) ? "U+" + String(bad.value, radix: 16, uppercase: true) : "'\(bad)'"
            return "contains \(shown); use only the characters a-z A-Z 0-9 . _ -"
        }
        return nil
    }

    private static func isLegal(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-": return true
        default: return false
        }
    }
}
