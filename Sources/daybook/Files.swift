import DaybookCore
import Foundation

/// Reading inputs and writing outputs for the commands.
enum Files {
    /// The whole contents of a path (memory-mapped, so a large log is not copied), or of
    /// standard input for `-`.
    static func read(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError(code: ExitCode.noInput, message: "\(path): no such file")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw CLIError(code: ExitCode.noInput, message: "\(path): cannot be read: \(SystemError.reason(error))")
        }
    }

    /// The UTF-8 byte order mark some editors put at the start of a file; skipped there.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Calls `body(lineNumber, bytes)` for each non-blank line (1-based numbers). A byte
    /// order mark at the start of the data is skipped; anywhere else the JSON reader names it.
    static func forEachLine(_ data: Data, _ body: (Int, UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try data.withUnsafeBytes { raw in
            let all = raw.bindMemory(to: UInt8.self)
            var start = all.starts(with: byteOrderMark) ? byteOrderMark.count : 0
            var number = 0
            while start < all.count {
                let end = (UnsafeBufferPointer(rebasing: all[start...]).firstIndex(of: 10)).map { start + $0 } ?? all.count
                number += 1
                var trimmed = end
                if trimmed > start, all[trimmed - 1] == 13 { trimmed -= 1 }
                let line = UnsafeBufferPointer(rebasing: all[start..<trimmed])
                if line.contains(where: { $0 != 32 && $0 != 9 }) { try body(number, line) }
                start = end + 1
            }
        }
    }

    /// Decodes every non-blank line, on all cores, calling `body` in line order with each
    /// line's number, bytes and event (or rejection). Work goes in chunks so memory stays flat.
    static func forEachEvent(_ data: Data, _ body: (Int, UnsafeBufferPointer<UInt8>, Result<Event, EventError>) throws -> Void) rethrows {
        var lines: [(number: Int, line: UnsafeBufferPointer<UInt8>)] = []
        let chunk = 32_768
        let decoder = EventDecoder()
        func drain() throws {
            let results = UnsafeMutableBufferPointer<Result<Event, EventError>?>.allocate(capacity: lines.count)
            results.initialize(repeating: nil)
            defer { results.deinitialize(); results.deallocate() }
            let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
            nonisolated(unsafe) let snapshot = lines
            let per = (snapshot.count + workers - 1) / workers
            nonisolated(unsafe) let out = results
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                for i in (w * per)..<min(snapshot.count, (w + 1) * per) {
                    out[i] = Result { () throws(EventError) in try decoder.decode(snapshot[i].line) }
                }
            }
            for i in lines.indices { try body(lines[i].number, lines[i].line, results[i]!) }
            lines.removeAll(keepingCapacity: true)
        }
        try forEachLine(data) { number, line in
            lines.append((number, line))
            if lines.count == chunk { try drain() }
        }
        if !lines.isEmpty { try drain() }
    }
}

/// Buffered writing to standard output (one syscall per 64 KiB, not per line).
struct OutputBuffer {
    private var buffer: [UInt8] = []
    private let fd: Int32

    init(fd: Int32 = 1) {
        self.fd = fd
        buffer.reserveCapacity(1 << 16)
    }

    mutating func line(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        buffer.append(10)
        if buffer.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

func printError(_ s: String, newline: Bool = true) {
    FileHandle.standardError.write(Data((newline ? s + "\n" : s).utf8))
}
