#if canImport(Glibc)
import Glibc
#endif

/// Buffered writing to a file descriptor in which every write is checked.
///
/// Lines collect in a 64 KiB buffer and go out in one `write` per buffer, not per line. A
/// write that fails (a full disk, a closed pipe, `/dev/full`) throws instead of stopping
/// quietly, so a command whose output was lost does not report success. Standard output,
/// a command's result, goes through one of these.
public struct CheckedWriter {
    /// Bytes kept before a line makes the writer flush.
    public static let capacity = 1 << 16

    private var buffer: [UInt8] = []
    public let fd: Int32
    /// What `fd` is, for errors ("standard output", a path).
    public let name: String

    public init(fd: Int32 = 1, name: String = "standard output") {
        self.fd = fd
        self.name = name
        buffer.reserveCapacity(Self.capacity)
    }

    /// Appends `s` and a line feed; writes the buffer out once it is full.
    public mutating func line(_ s: String) throws(FileWriteError) {
        buffer.append(contentsOf: s.utf8)
        buffer.append(10)
        if buffer.count >= Self.capacity { try flush() }
    }

    /// Appends `s` as it is (no line feed).
    public mutating func text(_ s: String) throws(FileWriteError) {
        buffer.append(contentsOf: s.utf8)
        if buffer.count >= Self.capacity { try flush() }
    }

    /// Writes out everything buffered. On a failure the buffer is dropped (what follows
    /// cannot be placed after a gap) and the error says why.
    public mutating func flush() throws(FileWriteError) {
        defer { buffer.removeAll(keepingCapacity: true) }
        try Self.writeAll(buffer, to: fd, name: name)
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    public static func writeAll(_ bytes: [UInt8], to fd: Int32, name: String) throws(FileWriteError) {
        var failure: Int32 = 0
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, base + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else {
                    failure = n < 0 ? errno : EIO
                    return
                }
                offset += n
            }
        }
        if failure != 0 { throw FileWriteError(path: name, step: .write, errno: failure) }
    }
}
