import Foundation

/// A read-only bind mount through mount(8), for tests that need storage root cannot write.
public enum ReadOnlyMount {
    /// Mounts `source` read-only at `target`; false when mount(8) is not permitted here.
    public static func bind(_ source: String, at target: String) -> Bool {
        guard run(["mount", "--bind", source, target]) else { return false }
        guard run(["mount", "-o", "remount,bind,ro", target]) else {
            unmount(target)
            return false
        }
        return true
    }

    public static func unmount(_ target: String) { _ = run(["umount", target]) }

    private static func run(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
