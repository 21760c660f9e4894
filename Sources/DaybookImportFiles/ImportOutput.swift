import DaybookFiles
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where an import's event lines go, chosen before the export is read.
public enum ImportDestination: Equatable, Sendable {
    case standardOutput
    /// A regular file (a link's target), replaced once the whole export was read.
    case file(String)
    /// A FIFO or character device, written as standard output is.
    case stream(String)
    /// A private staging file, to be published once the whole export was read.
    case staging

    /// The destination `out` names for the export read from `input` (`-`: standard input):
    /// a regular file replaced whole (a symlink's target, the link kept), a FIFO or character
    /// device written through.
    ///
    /// - Throws: `ImportDestinationError`: `.isTheInput` when `out` is the export itself
    ///   (through a symlink or a hard link too; with `-`, standard input's file), else what
    ///   `OutputPath.resolve` refuses (a directory, a link to nothing, a block device).
    public static func output(_ out: String, input: String) throws(ImportDestinationError) -> ImportDestination {
        // Standard input may be the export too (`- --out e.xml < e.xml`): compared by descriptor.
        if input == "-" ? sameFile(out, descriptor: 0) : sameFile(out, input) {
            throw ImportDestinationError(out: out, kind: .isTheInput)
        }
        return try output(out)
    }

    /// The destination `out` names, with no input to compare it with (`import generate`).
    public static func output(_ out: String) throws(ImportDestinationError) -> ImportDestination {
        do {
            switch try OutputPath.resolve(out) {
            case .replace(let file): return .file(file)
            case .stream(let path): return .stream(path)
            }
        } catch {
            throw ImportDestinationError(out: out, kind: .path(error))
        }
    }

    /// True when both paths name one existing file (through symlinks, or hard links).
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var x = stat(), y = stat()
        guard stat(a, &x) == 0, stat(b, &y) == 0 else { return false }
        return x.st_dev == y.st_dev && x.st_ino == y.st_ino
    }

    /// True when `path` names the regular file `descriptor` reads (standard input's file; a
    /// terminal, pipe or /dev/null read and written at once loses nothing).
    static func sameFile(_ path: String, descriptor: Int32) -> Bool {
        var x = stat(), y = stat()
        guard stat(path, &x) == 0, fstat(descriptor, &y) == 0, (y.st_mode & S_IFMT) == S_IFREG else { return false }
        return x.st_dev == y.st_dev && x.st_ino == y.st_ino
    }
}

/// An `--out` that cannot take an import's lines, and why.
public struct ImportDestinationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// `out` is the export being imported: writing it would replace the export.
        case isTheInput
        /// What `OutputPath.resolve` refused (its `.system` kind: the system would not say).
        case path(OutputPathError)
    }

    public var out: String
    public var kind: Kind

    public var description: String {
        switch kind {
        case .isTheInput: "\(out) is the export being imported"
        case .path(let error): error.description
        }
    }
}

/// An import's event lines on their way to an `ImportDestination`, through a
/// `CheckedWriter` (a full disk is an error, not a silently short file). A file is written
/// as `OUT.tmp-PID` beside it and renamed over it by `commit`; staging lives in a
/// `ScratchDirectory` of its own. Whatever was not committed is removed by `discard`.
public final class LineSink {
    public let fd: Int32
    public let path: String
    /// Set while the file is a temporary one that `commit` renames (removed by `discard`).
    public private(set) var temporaryPath: String?
    private var writer: CheckedWriter
    private let scratch: ScratchDirectory?

    public convenience init(fd: Int32, path: String) {
        self.init(fd: fd, path: path, temporary: false, scratch: nil)
    }

    private init(fd: Int32, path: String, temporary: Bool, scratch: ScratchDirectory?) {
        self.fd = fd
        self.path = path
        self.scratch = scratch
        temporaryPath = temporary ? path : nil
        writer = CheckedWriter(fd: fd, name: path)
    }

    /// Opens the sink for `destination`: standard output, a temporary file beside the file,
    /// the FIFO or device itself, or `events.jsonl` in a new scratch directory
    /// `$TMPDIR/daybook-UID/daybook-import.tmp-PID` (staging left by killed runs is removed).
    ///
    /// - Throws: `LineSinkError` when the file cannot be created; `ScratchDirectoryError`.
    public static func open(_ destination: ImportDestination) throws -> LineSink {
        switch destination {
        case .standardOutput: return LineSink(fd: 1, path: "standard output")
        case .file(let out): return try temporary(beside: out)
        case .stream(let out): return try stream(out)
        case .staging:
            let scratch = try ScratchDirectory(prefix: "daybook-import")
            let path = scratch.path + "/events.jsonl"
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let error = LineSinkError(path: path, errno: errno)
                scratch.remove()
                throw error
            }
            return LineSink(fd: fd, path: path, temporary: false, scratch: scratch)
        }
    }

    /// A FIFO or character device at `path`, opened for writing as it is (never created).
    static func stream(_ path: String) throws(LineSinkError) -> LineSink {
        let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LineSinkError(path: path, errno: errno) }
        return LineSink(fd: fd, path: path)
    }

    /// A new file `DESTINATION.tmp-PID` in `destination`'s directory, renamed over it by
    /// `commit`. Such files left by killed runs (kill -9) are removed first.
    static func temporary(beside destination: String) throws(LineSinkError) -> LineSink {
        let url = URL(fileURLWithPath: destination)
        let directory = url.deletingLastPathComponent().path, base = url.lastPathComponent
        TemporaryName.removeOrphans(in: directory, prefix: base)
        let path = directory + "/" + TemporaryName.mine(prefix: base)
        unlink(path) // a killed run's that had this process id
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LineSinkError(path: destination, errno: errno) }
        fchmod(fd, 0o644)
        return LineSink(fd: fd, path: path, temporary: true, scratch: nil)
    }

    public func write(_ line: String, newline: Bool = true) throws(LineSinkError) {
        do {
            if newline { try writer.line(line) } else { try writer.text(line) }
        } catch {
            throw LineSinkError(path: path, errno: error.errno)
        }
    }

    public func flush() throws(LineSinkError) {
        do {
            try writer.flush()
        } catch {
            throw LineSinkError(path: path, errno: error.errno)
        }
    }

    public func close() throws(LineSinkError) {
        try flush()
        if fd > 2 { Glibc.close(fd) }
    }

    /// Flushes, syncs and renames the temporary file over `destination`.
    public func commit(to destination: String) throws(LineSinkError) {
        try flush()
        temporaryPath = nil // closed and renamed, or removed, by commit
        do {
            try AtomicFile.commit(fd: fd, temporary: path, to: destination)
        } catch {
            throw LineSinkError(path: destination, errno: error.errno)
        }
    }

    /// Removes what was not committed: the temporary file beside `--out`, the staging
    /// directory (its file published or not).
    public func discard() {
        if let temporaryPath { unlink(temporaryPath) }
        temporaryPath = nil
        scratch?.remove()
    }
}

/// A line sink's file that cannot be created or written, and the system's reason.
public struct LineSinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file meant (`--out`, not its temporary), or the staging file.
    public var path: String
    public var errno: Int32

    /// The system's reason ("No space left on device").
    public var reason: String { String(cString: strerror(errno)) }
    public var description: String { "\(path): cannot be written: \(reason)" }
}
