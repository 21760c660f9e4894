import DaybookCore
import DaybookFiles
import DaybookPublish
import DaybookStore
import Foundation

/// Reading inputs for the commands: DaybookFiles' `LineInput` (mapped files, streams, one
/// line splitter) with events' line limit, and events decoded on all cores.
enum Files {
    typealias Input = LineInput

    /// A line longer than this is rejected without being kept in memory. An event is a few
    /// hundred bytes; Kafka's default limit for a message is 1 MB.
    static let maximumLineBytes = EventDecoder.maximumEventBytes

    /// `LineInput.open`: `-` is standard input, a regular file is mapped unless `mapping`
    /// is false, anything else readable is streamed.
    static func input(_ path: String, mapping: Bool = true) throws(InputFileError) -> Input {
        try LineInput.open(path, mapping: mapping)
    }

    /// The whole contents of a path (memory-mapped), or of standard input for `-`.
    static func read(_ path: String) throws(InputFileError) -> Data { try LineInput.read(path) }

    /// `LineInput.forEachBatch` with events' line limit.
    static func forEachBatch(_ input: Input, _ body: ([LineInput.Line]) throws -> Void) throws {
        try LineInput.forEachBatch(input, maximumLineBytes: maximumLineBytes, body)
    }

    /// `EventLines.forEach`: every non-blank line decoded on all cores, in line order.
    static func forEachEvent(_ input: Input, _ body: (Int, UnsafeBufferPointer<UInt8>, Result<Event, EventError>) throws -> Void) throws {
        try EventLines.forEach(input, body)
    }
}

/// Buffered writing to standard output (one syscall per 64 KiB, not per line), every
/// write checked. `line` never throws, so rendering code stays simple; the first failed
/// write is kept, nothing more is written, and `flush()` throws it: a command whose output
/// was lost (a full disk, a closed pipe) exits 74, never 0.
struct OutputBuffer {
    private var writer: CheckedWriter
    private var failure: FileWriteError?

    init(fd: Int32 = 1) {
        writer = CheckedWriter(fd: fd, name: fd == 1 ? "standard output" : "file descriptor \(fd)")
    }

    mutating func line(_ s: String) {
        guard failure == nil else { return }
        do { try writer.line(s) } catch { failure = error }
    }

    /// Writes out what is buffered; throws the first write that failed, now or before.
    mutating func flush() throws(FileWriteError) {
        if failure == nil {
            do { try writer.flush() } catch { failure = error }
        }
        if let failure { throw failure }
    }
}

func printError(_ s: String, newline: Bool = true) {
    FileHandle.standardError.write(Data((newline ? s + "\n" : s).utf8))
}
