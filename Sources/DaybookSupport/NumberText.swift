/// Numbers and columns as people read them in progress lines, tables and summaries.
public enum NumberText {
    /// 1234567 → "1,234,567".
    public static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// 14200.4 → "14,200": rounded to a whole number, then grouped.
    public static func grouped(_ v: Double) -> String { grouped(Int(v.rounded())) }

    /// `s` with spaces in front up to `width` characters (a right-aligned table column);
    /// `s` itself when it is as wide already.
    public static func rightAligned(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }

    /// `s` with spaces after it up to `width` characters (a left-aligned table column).
    public static func leftAligned(_ s: String, _ width: Int) -> String {
        s + String(repeating: " ", count: max(0, width - s.count))
    }
}
