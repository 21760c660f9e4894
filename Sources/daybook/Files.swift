import DaybookCore
import Foundation

/// Reading inputs and writing outputs for the commands.
enum Files {
    /// The whole contents of a path, or of standard input for `-`.
    static func read(_ path: String) throws -> [UInt8] {
        if path == "-" {
            return [UInt8](FileHandle.standardInput.readDataToEndOfFile())
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError(code: ExitCode.noInput, message: "\(path): no such file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError(code: ExitCode.noInput, message: "\(path): cannot be read (check its permissions)")
        }
        return [UInt8](data)
    }

    /// Calls `body(lineNumber, bytes)` for each non-blank line (1-based numbers).
    static func forEachLine(_ bytes: [UInt8], _ body: (Int, UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try bytes.withUnsafeBufferPointer { all in
            var start = 0
            var number = 0
            while start < all.count {
                var end = start
                while end < all.count, all[end] != 10 { end += 1 }
                number += 1
                var trimmed = end
                if trimmed > start, all[trimmed - 1] == 13 { trimmed -= 1 }
                let line = UnsafeBufferPointer(rebasing: all[start..<trimmed])
                if line.contains(where: { $0 != 32 && $0 != 9 }) { try body(number, line) }
                start = end + 1
            }
        }
    }

    /// The source priority from a configuration file, or the built-in order without one.
    static func priority(configPath: String?) throws -> SourcePriority {
        guard let configPath else { return .builtIn }
        let bytes = try read(configPath)
        do {
            let json = try bytes.withUnsafeBufferPointer { try JSONParser.parse($0) }
            return try SourcePriority(configuration: json)
        } catch let error as JSONSyntaxError {
            throw CLIError(code: ExitCode.config, message: "\(configPath): not valid JSON: \(error)")
        } catch let error as ConfigurationError {
            throw CLIError(code: ExitCode.config, message: "\(configPath): \(error)")
        }
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

func printError(_ s: String) {
    FileHandle.standardError.write((s + "\n").data(using: .utf8) ?? Data())
}
