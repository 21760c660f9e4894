import DaybookCore

/// The export's timestamps: `2024-03-02 09:50:00 +0200`.
///
/// The instant is right; the offset is the phone's offset when the file was exported,
/// not when the sample was recorded (winter data is printed at +0200 by a phone exporting
/// in summer). It is used only to find the instant, never as the sample's zone.
enum ExportTime {
    /// The instant of `text`, or nil when it is not `YYYY-MM-DD HH:MM:SS ±hhmm`.
    static func instant(_ text: String) -> Instant? {
        let u = Array(text.utf8)
        guard u.count == 25, u[10] == 32, u[19] == 32, u[20] == 43 || u[20] == 45 else { return nil }
        // The same text in RFC 3339, read by the event format's own parser (range checks included).
        var rfc = u[0..<10] + [84] + u[11..<19]
        rfc += [u[20], u[21], u[22], 58, u[23], u[24]]
        return try? Instant(rfc3339: String(decoding: rfc, as: UTF8.self))
    }
}
