import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where lines come from: a regular file's bytes (memory-mapped, so a large log is not
/// copied), or a stream — standard input, a pipe — read in chunks with bounded memory; and
/// the one line splitter both go through (`forEachBatch`).
public enum LineInput {
    case bytes(Data)
    /// `close` is false for standard input, which stays open.
    case stream(fd: Int32, name: String, close: Bool)

    /// The UTF-8 byte order mark some editors put at the start of a file; skipped there.
    public static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Opens `path` for reading lines: `-` is standard input, a regular file is mapped
    /// (unless `mapping` is false: mapped pages count in the process's resident memory),
    /// anything else that can be read (a FIFO, /dev/stdin) is streamed.
    public static func open(_ path: String, mapping: Bool = true) throws(InputFileError) -> LineInput {
        if path == "-" { return .stream(fd: 0, name: "standard input", close: false) }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw InputFileError(path: path, errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let failure = InputFileError(path: path, errno: errno)
            Glibc.close(fd)
            throw failure
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG where !mapping:
            return .stream(fd: fd, name: path, close: true)
        case S_IFREG:
            Glibc.close(fd)
            return .bytes(try read(path))
        case S_IFDIR:
            Glibc.close(fd)
            throw InputFileError(path: path, errno: EISDIR)
        default:
            return .stream(fd: fd, name: path, close: true)
        }
    }

    /// The whole contents of a path (memory-mapped), or of standard input for `-`; for small
    /// files such as the configuration. Lines go through `open(_:)`.
    public static func read(_ path: String) throws(InputFileError) -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw InputFileError(path: path, errno: ENOENT) }
        guard !isDirectory.boolValue else { throw InputFileError(path: path, errno: EISDIR) }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw InputFileError(path: path, errno: InputFileError.errno(of: error))
        }
    }

    /// One line of input: its 1-based number and bytes (without the line break), or nil
    /// bytes for a line over the limit.
    public typealias Line = (number: Int, bytes: UnsafeBufferPointer<UInt8>?)

    /// Calls `body` with batches of non-blank lines, in order; the bytes are valid only
    /// during the call. A line longer than `maximumLineBytes` comes with nil bytes, without
    /// being kept in memory. A batch ends at `batchLines` lines, at `batchBytes` bytes, at
    /// the end of the input, or — for a stream — when no more input is ready, so that a slow
    /// producer's lines are answered as they come. A byte order mark at the very start
    /// is skipped; `\r\n` endings are accepted. Memory: one batch plus one read chunk.
    /// - Throws: `InputFileError` when a stream cannot be read; what `body` throws.
    public static func forEachBatch(_ input: LineInput, maximumLineBytes: Int, batchLines: Int = 32_768, batchBytes: Int = 4 << 20,
                                    _ body: ([Line]) throws -> Void) throws {
        switch input {
        case .bytes(let data):
            try data.withUnsafeBytes { raw in
                let all = raw.bindMemory(to: UInt8.self)
                var splitter = LineSplitter(maximumLineBytes: maximumLineBytes)
                var batch: [Line] = []
                var bytes = 0
                var start = all.starts(with: byteOrderMark) ? byteOrderMark.count : 0
                while start < all.count {
                    let end = newline(in: all, from: start) ?? all.count
                    if let line = splitter.line(all, start..<end) {
                        batch.append((line.number, line.range.map { UnsafeBufferPointer(rebasing: all[$0]) }))
                        bytes += end - start
                        if batch.count >= batchLines || bytes >= batchBytes {
                            try body(batch)
                            batch.removeAll(keepingCapacity: true)
                            bytes = 0
                        }
                    }
                    start = end + 1
                }
                if !batch.isEmpty { try body(batch) }
            }
        case .stream(let fd, let name, let closeWhenDone):
            defer { if closeWhenDone { Glibc.close(fd) } }
            var stream = LineStream(fd: fd, name: name, maximumLineBytes: maximumLineBytes)
            try stream.forEachBatch(batchLines: batchLines, batchBytes: batchBytes, body)
        }
    }

    /// The index of the first `\n` in `all` at or after `start` (memchr: this is the loop
    /// every input byte goes through).
    static func newline(in all: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start < all.count, let base = all.baseAddress, let hit = memchr(base + start, 10, all.count - start) else { return nil }
        return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }

    /// True when `all[range]` holds only spaces and tabs.
    static func isBlank(_ all: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        var k = range.lowerBound
        while k < range.upperBound {
            let c = all[k]
            if c != 32 && c != 9 { return false }
            k &+= 1
        }
        return true
    }
}

/// Numbers lines and picks the non-blank ones (shared by the mapped and streamed paths).
private struct LineSplitter {
    let maximumLineBytes: Int
    private(set) var number = 0

    init(maximumLineBytes: Int) { self.maximumLineBytes = maximumLineBytes }

    /// The line in `range` of `all` (up to, not including, its `\n`): its number and its
    /// bytes without a trailing `\r` — nil range when too long — or nil when it is blank.
    mutating func line(_ all: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> (number: Int, range: Range<Int>?)? {
        number += 1
        var end = range.upperBound
        if end > range.lowerBound, all[end - 1] == 13 { end -= 1 }
        if end - range.lowerBound > maximumLineBytes { return (number, nil) }
        guard !LineInput.isBlank(all, range.lowerBound..<end) else { return nil }
        return (number, range.lowerBound..<end)
    }

    /// Counts a line that was too long to keep.
    mutating func skippedLine() -> Int {
        number += 1
        return number
    }
}

/// Lines of a file descriptor read in chunks: the buffer holds the lines of one batch, the
/// line being read, and one chunk — never the whole input.
private struct LineStream {
    let fd: Int32
    let name: String
    let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    private var splitter: LineSplitter
    /// Complete non-blank lines waiting for the next batch (ranges into `buffer`; nil = too long).
    private var pending: [(number: Int, range: Range<Int>?)] = []
    private var pendingBytes = 0
    /// Where the line being read starts, and how far it has been searched for a `\n`.
    private var lineStart = 0
    private var scanned = 0
    /// The current line is over the limit: its bytes are dropped until its end.
    private var skipping = false
    private var atStart = true
    private var chunk = [UInt8](repeating: 0, count: 1 << 20)

    init(fd: Int32, name: String, maximumLineBytes: Int) {
        self.fd = fd
        self.name = name
        self.maximumLineBytes = maximumLineBytes
        splitter = LineSplitter(maximumLineBytes: maximumLineBytes)
    }

    mutating func forEachBatch(batchLines: Int, batchBytes: Int, _ body: ([LineInput.Line]) throws -> Void) throws {
        var finished = false
        while !finished {
            finished = try fill()
            if atStart {
                // Decide on a byte order mark once three bytes (or the whole input) are in.
                guard finished || buffer.count >= LineInput.byteOrderMark.count || buffer.contains(10) else { continue }
                atStart = false
                if buffer.starts(with: LineInput.byteOrderMark) { lineStart = LineInput.byteOrderMark.count; scanned = lineStart }
            }
            split(atEnd: finished)
            let ready = finished || pending.count >= batchLines || pendingBytes >= batchBytes || !moreIsReady()
            if ready, !pending.isEmpty {
                try buffer.withUnsafeBufferPointer { all in
                    try body(pending.map { ($0.number, $0.range.map { UnsafeBufferPointer(rebasing: all[$0]) }) })
                }
                pending.removeAll(keepingCapacity: true)
                pendingBytes = 0
            }
            if pending.isEmpty, lineStart > 0 {
                buffer.removeFirst(lineStart)
                scanned -= lineStart
                lineStart = 0
            }
        }
    }

    /// Reads one chunk onto the buffer; true at the end of the input.
    private mutating func fill() throws -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 { buffer.append(contentsOf: chunk[..<n]) }
            if n >= 0 { return n == 0 }
            guard errno == EINTR || errno == EAGAIN else {
                throw InputFileError(path: name, errno: errno)
            }
            if errno == EAGAIN { var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0); _ = poll(&p, 1, -1) }
        }
    }

    /// Moves every complete line (and, at the end, the last one) into `pending`.
    private mutating func split(atEnd: Bool) {
        buffer.withUnsafeBufferPointer { all in
            while scanned < all.count {
                guard let nl = LineInput.newline(in: all, from: scanned) else {
                    scanned = all.count
                    break
                }
                take(all, lineStart..<nl)
                lineStart = nl + 1
                scanned = lineStart
            }
            if atEnd, lineStart < all.count || skipping {
                take(all, lineStart..<all.count)
                lineStart = all.count
            }
        }
        // A line still growing past the limit: forget its bytes, remember to reject it.
        if !atEnd, buffer.count - lineStart > maximumLineBytes {
            buffer.removeSubrange(lineStart...)
            scanned = lineStart
            skipping = true
        }
    }

    private mutating func take(_ all: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        if skipping {
            skipping = false
            pending.append((splitter.skippedLine(), nil))
        } else if let line = splitter.line(all, range) {
            pending.append(line)
            pendingBytes += range.count
        }
    }

    /// True when a read would not block (data or the end of the input is waiting).
    private func moreIsReady() -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }
}

/// A file that cannot be read: its path (or "standard input") and the system's errno.
public struct InputFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var errno: Int32

    public init(path: String, errno: Int32) {
        self.path = path
        self.errno = errno
    }

    /// The system's reason ("No such file or directory", "Is a directory").
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String { errno == ENOENT ? "\(path): no such file" : "\(path): cannot be read: \(reason)" }

    /// The errno behind a Foundation file or process error (EIO when it names none).
    public static func errno(of error: any Error) -> Int32 {
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return Int32(ns.code) }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain { return Int32(underlying.code) }
        switch CocoaError.Code(rawValue: ns.code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return ENOENT
        case .fileReadNoPermission: return EACCES
        case .fileReadTooLarge: return EFBIG
        default: return EIO
        }
    }
}
