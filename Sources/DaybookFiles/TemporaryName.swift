import Foundation

/// Temporary files and directories named after the process that made them, `PREFIX.tmp-PID`
/// (`.tmp-PID` inside a data directory for verify and diff): a run that was killed
/// (kill -9, a crash, a power cut) cannot remove its own, so the next run of the command
/// removes every one whose process is gone. Never left orphaned where nobody looks.
public enum TemporaryName {
    /// `PREFIX.tmp-PID` of this process: the name `AtomicFile` writes beside a file too.
    public static func mine(prefix: String = "") -> String { AtomicFile.temporaryPath(for: prefix) }

    /// The process that made `name`, when `name` is `PREFIX.tmp-PID`.
    public static func owner(of name: String, prefix: String = "") -> pid_t? {
        let head = prefix + ".tmp-"
        guard name.hasPrefix(head), let pid = pid_t(name.dropFirst(head.count)), pid > 0, "\(head)\(pid)" == name else { return nil }
        return pid
    }

    /// True when no process `pid` exists (its temporary files are orphans).
    public static func isGone(_ pid: pid_t) -> Bool { kill(pid, 0) != 0 && errno == ESRCH }

    /// Removes, in `directory`, every `PREFIX.tmp-PID` whose process is gone; returns their names.
    @discardableResult
    public static func removeOrphans(in directory: String, prefix: String = "") -> [String] {
        var removed: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let pid = owner(of: name, prefix: prefix), pid != getpid(), isGone(pid) else { continue }
            if (try? FileManager.default.removeItem(atPath: directory + "/" + name)) != nil { removed.append(name) }
        }
        return removed
    }
}
