import Foundation

/// Bytes packed by the system's `gzip` (a packer independent of the code under test).
public enum Gzip {
    public struct Failed: Error, CustomStringConvertible {
        public var status: Int32
        public var description: String { "gzip exited \(status)" }
    }

    public static func pack(_ data: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-c", "-n"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // Written from another thread: a large input would fill the pipe while gzip's output waits.
        let writer = input.fileHandleForWriting
        let bytes = Data(data)
        DispatchQueue.global().async {
            writer.write(bytes)
            try? writer.close()
        }
        let packed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failed(status: process.terminationStatus) }
        return Array(packed)
    }
}
