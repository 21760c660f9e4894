import DaybookCore
#if canImport(Glibc)
import DaybookSupport
import Glibc
#endif

/// Why a configuration file could not be used: it cannot be read, it is not JSON, or one of
/// its members is wrong.
///
/// The description names the file and, for a wrong member, the member and what it takes;
/// it never shows a value read from the environment.
public struct ConfigurationFileError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// No file at the path.
        case missing
        /// The path exists but cannot be read (a directory, no permission): the system's errno.
        case unreadable(errno: Int32)
        /// The bytes are not JSON text.
        case notJSON(JSONSyntaxError)
        /// A member is unknown or holds a value it cannot take.
        case invalid(ConfigurationError)
    }

    /// The file as it was named (`-` for standard input).
    public var path: String
    public var kind: Kind

    public init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
    }

    /// True when the file itself could not be read (nothing about its contents is known).
    public var isUnreadable: Bool {
        switch kind {
        case .missing, .unreadable: true
        case .notJSON, .invalid: false
        }
    }

    public var description: String {
        switch kind {
        case .missing: "\(path): no such file"
        case .unreadable(let code): "\(path): cannot be read: \(String(cString: strerror(code)))"
        case .notJSON(let error) where error.kind == .duplicateKey:
            // Named by its member path: the one that would have counted is not obvious.
            "\(path): \(error.path ?? "a key") is given twice (at byte \(error.offset + 1)); give each setting once"
        case .notJSON(let error): "\(path): not valid JSON: \(error)"
        case .invalid(let error): "\(path): \(error)"
        }
    }

    /// The whole contents of `path` (standard input for `-`). A configuration file is a
    /// few kilobytes: it is read, not mapped.
    static func read(_ path: String) throws(ConfigurationFileError) -> [UInt8] {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ConfigurationFileError(path: path, kind: errno == ENOENT ? .missing : .unreadable(errno: errno))
        }
        defer { if fd != 0 { close(fd) } }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw ConfigurationFileError(path: path, kind: .unreadable(errno: EISDIR))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return bytes }
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigurationFileError(path: path, kind: .unreadable(errno: errno))
            }
            bytes.append(contentsOf: chunk[..<n])
        }
    }
}
