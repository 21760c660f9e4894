import DaybookCore
import DaybookFiles
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

    /// Decodes every non-blank line, on all cores, calling `body` in line order with each
    /// line's number, bytes and event (or rejection). Work goes in batches so memory stays flat.
    static func forEachEvent(_ input: Input, _ body: (Int, UnsafeBufferPointer<UInt8>, Result<Event, EventError>) throws -> Void) throws {
        let decoder = EventDecoder()
        let tooLong = EventError.lineTooLong(limit: maximumLineBytes)
        try forEachBatch(input) { lines in
            let results = UnsafeMutableBufferPointer<Result<Event, EventError>>.allocate(capacity: lines.count)
            defer { results.deallocate() }
            let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
            nonisolated(unsafe) let snapshot = lines
            let per = (snapshot.count + workers - 1) / workers
            nonisolated(unsafe) let out = results
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                for i in (w * per)..<min(snapshot.count, (w + 1) * per) {
                    guard let bytes = snapshot[i].bytes else {
                        out.initializeElement(at: i, to: .failure(tooLong))
                        continue
                    }
                    out.initializeElement(at: i, to: Result { () throws(EventError) in try decoder.decode(bytes) })
                }
            }
            defer { _ = results.deinitialize() }
            for i in lines.indices {
                try body(lines[i].number, lines[i].bytes ?? UnsafeBufferPointer(start: nil, count: 0), results[i])
            }
        }
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
