import Foundation

/// A directory for one test, removed with everything in it when its owner goes away.
///
/// Hold one as a stored property of a suite: Swift Testing makes a suite instance per test
/// and releases it when the test ends, so each test gets a fresh directory and leaves
/// nothing behind (GRDB's per-test directory, removed in tearDown). Every such directory
/// lives under `TemporaryDirectory.processRoot`, which is removed when the test process
/// exits, so files made by static helpers, or by a test that fails half-way, go too.
public final class TemporaryDirectory {
    public let path: String

    public init() {
        path = TemporaryDirectory.processRoot + "/" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A new file in this directory holding `contents`.
    public func file(_ contents: String, suffix: String = ".jsonl") throws -> String {
        let file = path + "/" + UUID().uuidString + suffix
        try contents.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// A path in this directory that does not exist yet (for a data directory, a bootstrap file…).
    public func newPath(_ prefix: String = "item") -> String {
        path + "/" + prefix + "-" + UUID().uuidString
    }

    /// One directory per test process under the system's temporary directory, removed at exit.
    public static let processRoot: String = {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("daybook-tests-\(getpid())-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        atexit { TemporaryDirectory.removeProcessRoot() }
        return root
    }()

    private static func removeProcessRoot() {
        try? FileManager.default.removeItem(atPath: processRoot)
    }
}
