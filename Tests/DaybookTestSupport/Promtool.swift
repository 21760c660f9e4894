import Foundation

/// Prometheus's `promtool check metrics`, the reference check of the text exposition
/// format and of the naming conventions (`_total` on counters, base units).
///
/// `scripts/setup` puts promtool at `.build/tools/promtool` (extracted from Debian's
/// `prometheus` package); `PROMTOOL` names another one. A missing promtool is an error,
/// not a reason to skip: the tests that need it fail and say how to get it.
public enum Promtool {
    public struct Missing: Error, CustomStringConvertible {
        public var description: String {
            "promtool not found (not in PROMTOOL, at \(Promtool.root.path)/.build/tools/promtool, or on PATH): run scripts/setup (it extracts promtool from Debian's prometheus package into .build/tools), or set PROMTOOL to one"
        }
    }

    public struct Check: Sendable {
        /// 0 clean; 1 a parse error; 3 lint problems (promtool 2.42).
        public var status: Int32
        /// What promtool said (it writes its findings to standard error).
        public var output: String
        public var isClean: Bool { status == 0 && output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var candidates: [String] {
        var paths: [String] = []
        if let given = ProcessInfo.processInfo.environment["PROMTOOL"], !given.isEmpty { paths.append(given) }
        paths.append(root.appendingPathComponent(".build/tools/promtool").path)
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            paths.append(directory + "/promtool")
        }
        return paths
    }

    /// The promtool to run.
    public static func path() throws -> String {
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { throw Missing() }
        return found
    }

    /// `promtool check metrics < text`.
    public static func checkMetrics(_ text: String) throws -> Check {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path())
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // The text is small (a metrics file); promtool reads it all before it answers.
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Check(status: process.terminationStatus, output: String(decoding: said, as: UTF8.self))
    }
}
