import Foundation

/// A private directory for one run's temporary files (rollup's temporary store, import's
/// staging, the bench's work directory): `$TMPDIR/daybook-UID/PREFIX.tmp-PID`, removed by
/// `remove()`. A run killed before it could remove its own (kill -9) leaves it there, and
/// the next run with the same prefix removes every one whose process is gone
/// (`TemporaryName`, as verify does for its `.tmp-PID` in the data directory).
public struct ScratchDirectory: Sendable {
    public let path: String

    /// Creates the directory; throws `ScratchDirectoryError` when `$TMPDIR/daybook-UID`
    /// cannot be made, is not this user's own, or has no room for it.
    public init(prefix: String) throws(ScratchDirectoryError) {
        let base = FileManager.default.temporaryDirectory.path + "/daybook-\(getuid())"
        func failure(_ reason: String) -> ScratchDirectoryError { ScratchDirectoryError(base: base, reason: reason) }
        if mkdir(base, 0o700) != 0, errno != EEXIST { throw failure(String(cString: strerror(errno))) }
        // Shared /tmp: the directory must be this user's own, not one someone else made for us.
        var info = stat()
        guard lstat(base, &info) == 0 else { throw failure(String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw failure("it is not a directory of this user's, with access for no one else; remove it")
        }
        TemporaryName.removeOrphans(in: base, prefix: prefix)
        let path = base + "/" + TemporaryName.mine(prefix: prefix)
        try? FileManager.default.removeItem(atPath: path) // a killed run's that had this process id
        guard mkdir(path, 0o700) == 0 else { throw failure(String(cString: strerror(errno))) }
        self.path = path
    }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A scratch directory that could not be made in `base` ($TMPDIR/daybook-UID), and why.
public struct ScratchDirectoryError: Error, Sendable, Equatable, CustomStringConvertible {
    public var base: String
    public var reason: String

    public var description: String {
        "cannot create a temporary directory in \(base): \(reason) (set TMPDIR to a directory of yours with space)"
    }
}
