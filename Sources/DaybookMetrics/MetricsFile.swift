import DaybookFiles
import Glibc

/// Writes metrics files so that a reader never sees half of one.
///
/// node_exporter's textfile collector reads every `*.prom` file in its directory whenever
/// it is scraped; a file written in place could be read half-written. So the text goes to
/// `PATH.tmp-PID` beside it (not a `*.prom` name, so the collector skips it; the same
/// directory, so the rename cannot cross file systems), is flushed to disk with `fsync`,
/// and is renamed over `PATH` (`AtomicFile`): readers see the old file or the new one, whole.
public enum MetricsFile {
    /// Replaces the file at `path` with `text`, atomically; the file gets mode 0644 (less
    /// the umask) so that node_exporter, running as its own user, can read it.
    ///
    /// - Throws: `MetricsFileError` naming the path, the step and the system's reason; the
    ///   temporary file is removed, and the previous file at `path` is left as it was.
    public static func write(_ text: String, to path: String) throws(MetricsFileError) {
        do {
            try AtomicFile.write(Array(text.utf8), to: path, temporary: temporaryPath(for: path), mode: 0o644)
        } catch {
            let step: MetricsFileError.Step = switch error.step {
            case .create: .create
            case .write: .write
            case .sync: .sync
            case .rename: .rename
            }
            throw MetricsFileError(path: path, kind: .system(step: step, errno: error.errno), temporaryPath: error.temporaryPath)
        }
    }

    /// Checks, before anything is written, that `path` can name a metrics file: its
    /// directory exists and is a directory, and `path` itself is not a directory. (Whether
    /// the directory is writable shows at the first write.)
    public static func checkDestination(_ path: String) throws(MetricsFileError) {
        guard !path.isEmpty else { throw MetricsFileError(path: path, kind: .missingDirectory) }
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw MetricsFileError(path: path, kind: .isDirectory)
        }
        let directory = directory(of: path)
        guard stat(directory, &info) == 0 else { throw MetricsFileError(path: path, kind: .missingDirectory) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw MetricsFileError(path: path, kind: .notADirectory) }
    }

    /// `PATH.tmp-PID`: beside the file, unique to this process.
    public static func temporaryPath(for path: String) -> String { AtomicFile.temporaryPath(for: path) }

    /// The directory part of `path` (`.` for a bare file name).
    static func directory(of path: String) -> String { AtomicFile.directory(of: path) }
}

/// Why a metrics file could not be written.
public struct MetricsFileError: Error, Sendable, CustomStringConvertible {
    public enum Step: String, Sendable {
        case create = "creating"
        case write = "writing"
        case sync = "flushing"
        case rename = "renaming"
    }

    public enum Kind: Sendable, Equatable {
        /// The directory of the path does not exist.
        case missingDirectory
        /// What should be the directory of the path is a file.
        case notADirectory
        /// The path names a directory, not a file.
        case isDirectory
        /// A system call failed: which step, and its errno.
        case system(step: Step, errno: Int32)
    }

    /// The metrics file (not the temporary beside it).
    public var path: String
    public var kind: Kind
    /// The temporary file a system failure happened on (removed).
    public var temporaryPath: String?

    public init(path: String, kind: Kind, temporaryPath: String? = nil) {
        self.path = path
        self.kind = kind
        self.temporaryPath = temporaryPath
    }

    public var description: String {
        let directory = MetricsFile.directory(of: path)
        switch kind {
        case .missingDirectory:
            return path.isEmpty
                ? "the metrics file path is empty: name a file such as /var/lib/node_exporter/textfile/daybook.prom"
                : "\(path): directory \(directory) does not exist; create it (node_exporter's --collector.textfile.directory) or name a file in an existing one"
        case .notADirectory:
            return "\(path): \(directory) is not a directory; name a file in node_exporter's textfile directory"
        case .isDirectory:
            return "\(path) is a directory; name a file in it, such as \(path.hasSuffix("/") ? path : path + "/")daybook.prom"
        case .system(let step, let code):
            let reason = String(cString: strerror(code))
            let target = step == .rename ? "\(temporaryPath ?? path) to \(path)" : temporaryPath ?? path
            return "cannot write the metrics file \(path): \(step.rawValue) \(target): \(reason); check that \(directory) is writable by this user and its file system has space"
        }
    }
}
