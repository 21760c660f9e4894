// libFuzzer target: the input is a request-target, as a client of `daybook serve` sends it.
//
// `RequestTarget(parsing:)` must accept or refuse without trapping, for the input as a whole
// target, as a path (after `/`) and as a query (after `/?`). What it accepts must hold:
// one segment per `/` of the raw path, plus one; and the segments and items, percent-encoded
// again, parse back to themselves (and encode to the same text). What it refuses must say
// so in a bounded message. The server's own refusal (`RequestLimits.refusal`) must let
// through only targets within the limit and of visible ASCII.
@testable import DaybookHTTP

/// Every byte that is not unreserved (RFC 3986) as `%XX`, so that nothing is read as a
/// separator, a `+` or an escape when it is parsed again.
func encode(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            let hex = String(byte, radix: 16, uppercase: true)
            out += "%" + (hex.count == 1 ? "0" : "") + hex
        }
    }
    return out
}

func encode(_ target: RequestTarget) -> String {
    "/" + target.segments.map(encode).joined(separator: "/")
        + (target.items.isEmpty ? "" : "?" + target.items.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&"))
}

func check(_ text: String) {
    let parsed: RequestTarget
    do {
        parsed = try RequestTarget(parsing: text)
    } catch {
        // 80 shown characters, an ellipsis, quotes and the longest sentence: under 200.
        guard error.message.count < 200 else { fatalError("a refusal of \(text.utf8.count) bytes is worded in \(error.message.count) characters") }
        return
    }
    let bytes = Array(text.utf8)
    let pathEnd = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
    let slashes = bytes[1..<pathEnd].count { $0 == UInt8(ascii: "/") }
    guard parsed.segments.count == slashes + 1 else {
        fatalError("\(text.debugDescription): \(parsed.segments.count) segments for \(slashes) slashes")
    }
    let again = encode(parsed)
    let reparsed: RequestTarget
    do {
        reparsed = try RequestTarget(parsing: again)
    } catch {
        fatalError("\(text.debugDescription) re-encoded as \(again.debugDescription) is refused: \(error.message)")
    }
    guard reparsed == parsed else {
        fatalError("\(text.debugDescription) → \(parsed) → \(again.debugDescription) → \(reparsed)")
    }
    guard encode(reparsed) == again else { fatalError("\(again.debugDescription) does not encode to itself") }
}

let limits = RequestLimits(maxTargetBytes: 64, maxHeaderBytes: 64, maxBodyBytes: 64)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestTarget(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    check(text)
    check("/" + text)
    check("/?" + text)
    if limits.refusal(target: text, headers: [HTTPHeader("Host", "x")]) == nil {
        guard text.utf8.count <= 64, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            fatalError("\(text.debugDescription) passed the server's limits")
        }
    }
    return 0
}
