import CZlib

/// A request body in `Content-Encoding: gzip` (RFC 1952), inflated with Debian's zlib
/// without ever holding more than `limit` bytes of output: a zip bomb (a few KiB that
/// inflate to gigabytes) stops at the first byte past the limit.
///
///     switch Gunzip.inflate(body, limit: 8 << 20) {
///     case .success(let json): …
///     case .failure(.tooLarge): answer 413
///     case .failure(.malformed(let why)): answer 400
///     }
///
/// Concatenated gzip members (as `cat a.gz b.gz` makes, and RFC 1952 allows) are inflated
/// one after the other. Complexity: O(output), in 64 KiB steps.
public enum Gunzip {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The inflated body would be larger than the limit; nothing more was inflated.
        case tooLarge(limit: Int)
        /// Not gzip, damaged, or cut short; zlib's words.
        case malformed(String)

        public var description: String {
            switch self {
            case .tooLarge(let limit): "the body inflates to more than \(limit) bytes"
            case .malformed(let why): "the body is not valid gzip: \(why)"
            }
        }
    }

    public static func inflate(_ input: [UInt8], limit: Int) -> Result<[UInt8], Failure> {
        guard !input.isEmpty else { return .failure(.malformed("the body is empty")) }
        var output: [UInt8] = []
        var stream = z_stream()
        guard daybook_inflate_init_gzip(&stream) == Z_OK else { return .failure(.malformed("zlib could not start")) }
        defer { inflateEnd(&stream) }
        let step = 64 << 10
        var chunk = [UInt8](repeating: 0, count: step)
        return input.withUnsafeBufferPointer { (source: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], Failure> in
            // zlib's next_in is not const in its declaration; it never writes through it.
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = UInt32(source.count)
            while true {
                let (code, produced) = chunk.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    let code = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (code, out.count - Int(stream.avail_out))
                }
                if output.count + produced > limit { return .failure(.tooLarge(limit: limit)) }
                output.append(contentsOf: chunk[0..<produced])
                switch code {
                case Z_OK:
                    if stream.avail_in == 0 && produced == 0 { return .failure(.malformed("it ends before its gzip trailer")) }
                case Z_STREAM_END:
                    // Another member may follow; trailing bytes that are not one are refused by it.
                    guard stream.avail_in > 0 else { return .success(output) }
                    guard inflateReset(&stream) == Z_OK else { return .failure(.malformed("zlib could not restart")) }
                case Z_BUF_ERROR:
                    // No progress possible: the input ended inside a member.
                    return .failure(.malformed("it ends before its gzip trailer"))
                default:
                    let why = stream.msg.map { String(cString: $0) } ?? "zlib error \(code)"
                    return .failure(.malformed(why))
                }
            }
        }
    }
}
