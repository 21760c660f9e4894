// libFuzzer target: the input is a timestamp text.
//
// `Instant(rfc3339:)` must accept or reject without trapping. An accepted instant is
// formatted back in UTC and at a few whole-minute offsets; each text must parse back to
// the same instant (or be refused as out of range, never as malformed). The same text is
// also read by `CivilDay(_:)` (the YYYY-MM-DD of --from/--to), which must round-trip too.
import DaybookCore

/// Whole-minute offsets, including the extremes real zones use (-12:00, +14:00) and halves.
let offsets = [0, -12 * 3600, -(9 * 3600 + 30 * 60), 5 * 3600 + 45 * 60, 14 * 3600]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInstant(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let instant = try? Instant(rfc3339: text) {
        for offset in offsets {
            let formatted = offset == 0 ? instant.description : instant.format(offsetSeconds: offset)
            do {
                let back = try Instant(rfc3339: formatted)
                guard back == instant else {
                    fatalError("\(text) → \(instant.nanoseconds) ns → \(formatted) → \(back.nanoseconds) ns")
                }
            } catch {
                guard error.reason.contains("out of range") else {
                    fatalError("\(text) → \(instant.nanoseconds) ns formats as \(formatted), which is refused: \(error.reason)")
                }
            }
        }
    }
    if let day = CivilDay(text) {
        guard CivilDay(day.description) == day else { fatalError("\(text) → day \(day.number) → \(day) does not parse back") }
        _ = day.adding(days: 1).description
    }
    return 0
}
