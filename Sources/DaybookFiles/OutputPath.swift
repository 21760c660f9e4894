#if canImport(Glibc)
import Glibc
#endif

/// Where an `--out` path writes, decided by what it names now.
///
/// A regular file (or nothing yet) is replaced whole (`AtomicFile`). A FIFO or character
/// device (`/dev/stdout` on a pipe, `/dev/null`) is written through as a stream: renaming
/// a file over it would replace the device node or the pipe itself. A symbolic link is
/// followed deliberately: its target is replaced (or streamed to) and the link stays.
public enum OutputPath: Equatable, Sendable {
    /// Written beside this file (the link's target, for a link) and renamed over it.
    case replace(String)
    /// Opened for writing as it is and written in order; never created, truncated or renamed.
    case stream(String)

    /// What `path` names now, and so how it is written.
    /// - Throws: `OutputPathError` for a directory, a link to nothing, or a kind of file
    ///   that cannot be written as either (a block device, a socket).
    public static func resolve(_ path: String) throws(OutputPathError) -> OutputPath {
        var link = stat()
        guard lstat(path, &link) == 0 else {
            guard errno == ENOENT else { throw OutputPathError(path: path, kind: .system(errno: errno)) }
            return .replace(path)
        }
        let isLink = link.st_mode & S_IFMT == S_IFLNK
        var info = link
        if isLink, stat(path, &info) != 0 {
            throw OutputPathError(path: path, kind: errno == ENOENT ? .danglingLink : .system(errno: errno))
        }
        switch info.st_mode & S_IFMT {
        case S_IFIFO, S_IFCHR:
            return .stream(path)
        case S_IFREG:
            guard isLink else { return .replace(path) }
            guard let resolved = realpath(path, nil) else { throw OutputPathError(path: path, kind: .system(errno: errno)) }
            defer { free(resolved) }
            return .replace(String(cString: resolved))
        case S_IFDIR:
            throw OutputPathError(path: path, kind: .directory)
        default:
            throw OutputPathError(path: path, kind: .unsupported)
        }
    }
}

/// Why an `--out` path cannot be written.
public struct OutputPathError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A directory: name a file in it.
        case directory
        /// A symbolic link whose target does not exist.
        case danglingLink
        /// A block device or a socket: neither a file to replace nor a stream to write.
        case unsupported
        /// The system refused to say what it is (permissions, a loop of links): its errno.
        case system(errno: Int32)
    }

    public var path: String
    public var kind: Kind

    public init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
    }

    public var description: String {
        switch kind {
        case .directory: "\(path) is a directory; name a file"
        case .danglingLink: "\(path) is a symbolic link to a file that does not exist; name the file itself"
        case .unsupported: "\(path) is neither a regular file nor a FIFO or character device"
        case .system(let code): "\(path): \(String(cString: strerror(code)))"
        }
    }
}
