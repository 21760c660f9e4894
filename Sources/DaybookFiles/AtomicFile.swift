#if canImport(Glibc)
import Glibc
#endif

/// Files replaced whole or not at all: a reader sees the old contents or the new ones,
/// never half of either, and a crash or power cut leaves one of the two.
///
/// The bytes go to a temporary file beside the destination (the same directory, so the
/// rename cannot cross file systems), are flushed to disk with `fsync`, the temporary is
/// renamed over the destination, and the directory is flushed so that the rename itself
/// survives a power cut. On any failure the temporary is removed and the destination is
/// left as it was. The metrics file, the data directory's manifest, `import --out` and the
/// broker's bootstrap file are all written this way.
public enum AtomicFile {
    /// `PATH.tmp-PID`: beside the file, unique to this process.
    public static func temporaryPath(for path: String) -> String { "\(path).tmp-\(getpid())" }

    /// Replaces the file at `path` with `bytes`, atomically.
    ///
    /// - Parameters:
    ///   - temporary: the file written first (default `temporaryPath(for:)`); it must be in
    ///     the same directory as `path`.
    ///   - mode: the new file's permissions, less the umask.
    /// - Throws: `FileWriteError` naming the step and the system's reason.
    public static func write(_ bytes: [UInt8], to path: String, temporary: String? = nil, mode: mode_t = 0o644) throws(FileWriteError) {
        let temporary = temporary ?? temporaryPath(for: path)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileWriteError(path: path, temporaryPath: temporary, step: .create, errno: errno) }
        do {
            try CheckedWriter.writeAll(bytes, to: fd, name: path)
        } catch {
            close(fd)
            unlink(temporary)
            throw FileWriteError(path: path, temporaryPath: temporary, step: .write, errno: error.errno)
        }
        try commit(fd: fd, temporary: temporary, to: path)
    }

    /// Finishes a temporary file written through `fd`: flushes it to disk, closes `fd`,
    /// renames `temporary` over `path` and flushes the directory. `fd` is closed and, on a
    /// failure, `temporary` removed, whatever happens.
    public static func commit(fd: Int32, temporary: String, to path: String) throws(FileWriteError) {
        var failure: FileWriteError?
        if fsync(fd) != 0 { failure = FileWriteError(path: path, temporaryPath: temporary, step: .sync, errno: errno) }
        if close(fd) != 0, failure == nil { failure = FileWriteError(path: path, temporaryPath: temporary, step: .write, errno: errno) }
        if failure == nil, rename(temporary, path) != 0 {
            failure = FileWriteError(path: path, temporaryPath: temporary, step: .rename, errno: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        // The rename is done; a directory that cannot be flushed (some file systems refuse
        // fsync on a directory) leaves it to the next sync of the file system.
        let dfd = open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    /// The directory part of `path` (`.` for a bare file name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let head = path[..<slash]
        return head.isEmpty ? "/" : String(head)
    }
}

/// Why a file could not be written: which file, at which step, and the system's errno.
public struct FileWriteError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Step: String, Sendable {
        case create = "creating"
        case write = "writing"
        case sync = "flushing"
        case rename = "renaming"
    }

    /// The file meant (not the temporary beside it), or a stream's name ("standard output").
    public var path: String
    /// The temporary file the failure happened on (removed), when there was one.
    public var temporaryPath: String?
    public var step: Step
    public var errno: Int32

    public init(path: String, temporaryPath: String? = nil, step: Step, errno: Int32) {
        self.path = path
        self.temporaryPath = temporaryPath
        self.step = step
        self.errno = errno
    }

    /// The system's reason ("No space left on device", "Broken pipe").
    public var reason: String { String(cString: strerror(errno)) }

    /// True when the reader went away (a closed pipe): nothing more can be written there.
    public var isClosedPipe: Bool { errno == EPIPE }

    public var description: String {
        guard let temporaryPath else { return "\(path): \(step.rawValue) failed: \(reason)" }
        let target = step == .rename ? "\(temporaryPath) to \(path)" : temporaryPath
        return "\(path): \(step.rawValue) \(target) failed: \(reason)"
    }
}
