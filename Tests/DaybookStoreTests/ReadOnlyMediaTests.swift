import DaybookTestSupport
@testable import DaybookStore
import Foundation
import Testing

/// A cleanly closed shard on read-only media (a snapshot, a backup) is readable: a WAL
/// database there cannot get the -shm file a reader needs, so it is opened immutable.
@Suite(.serialized) struct ReadOnlyMediaTests {
    let scratch = TemporaryDirectory()

    @Test func onlyACleanlyClosedDatabaseInAnUnwritableDirectoryOpensImmutable() {
        #expect(Database.readsImmutable(directoryWritable: false, walExists: false, shmExists: false))
        // Writable: a writer may come; a -wal or -shm: a writer may be there, or was killed.
        #expect(!Database.readsImmutable(directoryWritable: true, walExists: false, shmExists: false))
        #expect(!Database.readsImmutable(directoryWritable: false, walExists: true, shmExists: false))
        #expect(!Database.readsImmutable(directoryWritable: false, walExists: false, shmExists: true))
    }

    @Test func theImmutableURIEscapesWhatAURIWouldMisread() {
        #expect(Database.immutableURI("/srv/backup/health-samples-0000.sqlite") == "file:/srv/backup/health-samples-0000.sqlite?immutable=1")
        #expect(Database.immutableURI("/a b/50%?#x/é") == "file:/a%20b/50%25%3F%23x/%C3%A9?immutable=1")
    }

    /// A shard written, closed, and then read through a read-only bind mount of its
    /// directory: what `chmod` cannot show when the tests run as root (root writes anyway).
    @Test func aShardOnAReadOnlyMountIsRead() throws {
        let source = scratch.path + "/source", mounted = scratch.path + "/mounted"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mounted, withIntermediateDirectories: true)
        do {
            let db = try Database(path: source + "/t.sqlite")
            try db.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (42)")
        } // closed: SQLite removes -wal and -shm
        guard ReadOnlyMount.bind(source, at: mounted) else {
            // Without mount (an unprivileged container) the open is still tested by the rule above.
            print("ReadOnlyMediaTests: mount --bind -o ro is not available here; skipped the mounted read")
            return
        }
        defer { ReadOnlyMount.unmount(mounted) }
        #expect(access(mounted, W_OK) != 0, "the mount is writable")
        #expect(Database.opensImmutable(mounted + "/t.sqlite"))
        let db = try Database(path: mounted + "/t.sqlite", readOnly: true)
        #expect(try db.statement("SELECT x FROM t").firstRow({ $0.int64(0) }) == 42)
    }
}
