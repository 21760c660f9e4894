import DaybookTestSupport
@testable import DaybookStore
@testable import DaybookCore
import Foundation
import Testing

/// Which idle connections are reused: by stamp, inode and the number kept.
@Suite struct IdleConnectionsTests {
    let a = DataLayout.Stamp(inode: 1, seconds: 10, nanoseconds: 0)
    let b = DataLayout.Stamp(inode: 2, seconds: 20, nanoseconds: 0)

    @Test func aConnectionGivenBackIsTakenAgain() {
        var idle = IdleConnections<Int>(keep: 2, stamp: a)
        #expect(idle.give(7, path: "p", inode: 5, stamp: a) == nil)
        #expect(idle.take(path: "q", inode: 5).connection == nil) // another shard's
        let taken = idle.take(path: "p", inode: 5)
        #expect(taken.connection == 7)
        #expect(taken.dropped.isEmpty)
        #expect(idle.take(path: "p", inode: 5).connection == nil) // one reader at a time
    }

    @Test func atMostKeepAreIdlePerShard() {
        var idle = IdleConnections<Int>(keep: 2, stamp: a)
        #expect(idle.give(1, path: "p", inode: 5, stamp: a) == nil)
        #expect(idle.give(2, path: "p", inode: 5, stamp: a) == nil)
        #expect(idle.give(3, path: "p", inode: 5, stamp: a) == 3) // the third is closed
        #expect(idle.give(4, path: "q", inode: 6, stamp: a) == nil)
        #expect(idle.count == 3)
    }

    @Test func aNewStampDropsEveryIdleConnectionAndRefusesOldOnes() {
        var idle = IdleConnections<Int>(keep: 2, stamp: a)
        _ = idle.give(1, path: "p", inode: 5, stamp: a)
        _ = idle.give(2, path: "q", inode: 6, stamp: a)
        #expect(idle.observe(stamp: a).isEmpty)
        #expect(idle.observe(stamp: b).sorted() == [1, 2])
        #expect(idle.count == 0)
        // Handed out under the old generation, given back after the swap: not kept.
        #expect(idle.give(3, path: "p", inode: 5, stamp: a) == 3)
        #expect(idle.give(4, path: "p", inode: 7, stamp: b) == nil)
    }

    @Test func aReplacedFileDropsItsConnections() {
        var idle = IdleConnections<Int>(keep: 2, stamp: a)
        _ = idle.give(1, path: "p", inode: 5, stamp: a)
        let taken = idle.take(path: "p", inode: 9) // moved away and created again
        #expect(taken.connection == nil)
        #expect(taken.dropped == [1])
        #expect(idle.count == 0)
    }
}

/// Pooled connections read what a fresh one would: later commits, a swapped generation, a
/// replaced file, a partition without a shard.
@Suite struct ShardConnectionsTests {
    let scratch = TemporaryDirectory()

    static func steps(_ uuid: String, hour: Int, value: Int) -> Event {
        .sampleAdded(Sample(user: "ana", uuid: uuid, metric: .steps, source: "watch",
                            start: Instant(nanoseconds: Int64(hour) * (3_600 * Instant.nanosPerSecond)),
                            end: Instant(nanoseconds: Int64(hour) * (3_600 * Instant.nanosPerSecond) + (3_600 * Instant.nanosPerSecond) / 2),
                            value: Double(value), zone: "UTC", version: 0))
    }


    func total(_ shards: ShardConnections) throws -> [Double] {
        try shards.withSnapshot(partition: 0) { snapshot in
            try snapshot.totals(ShardReader.Query(user: "ana", metric: .steps)).map { row -> Double in
                guard case .cumulative(let value, _) = row.summary else { return -1 }
                return value
            }
        }
    }

    @Test func aKeptConnectionSeesLaterCommits() throws {
        let dir = scratch.path
        let shards = ShardConnections(directory: dir)
        #expect(try shards.withSnapshot(partition: 0) { $0.nextOffset } == 0) // no shard yet
        #expect(try shards.nextOffsets().isEmpty)
        // Two samples in one batch of 3 (offsets 0 and 1): 100 + 50 = 150 at next offset 2.
        do { _ = try ShardHoursTests.project([Self.steps("a", hour: 1, value: 100), Self.steps("b", hour: 3, value: 50)], into: dir) }
        #expect(try total(shards) == [150])
        #expect(try shards.withSnapshot(partition: 0) { $0.nextOffset } == 2)
        // The same connection again, after another projector run added 25: 175 at offset 3.
        do { _ = try ShardHoursTests.project([Self.steps("a", hour: 1, value: 100), Self.steps("b", hour: 3, value: 50), Self.steps("c", hour: 5, value: 25)], into: dir) }
        #expect(try total(shards) == [175])
        #expect(try shards.nextOffsets() == [0: 3])
    }

    @Test func aSwappedGenerationIsSeenAtTheNextRead() throws {
        let dir = scratch.path
        do { _ = try ShardHoursTests.project([Self.steps("a", hour: 1, value: 100)], into: dir) }
        let shards = ShardConnections(directory: dir)
        #expect(try total(shards) == [100])
        // A rebuild's generation holds another log (40), then the manifest names it.
        try FileManager.default.createDirectory(atPath: dir + "/gen-000001", withIntermediateDirectories: true)
        do { _ = try ShardHoursTests.project([Self.steps("z", hour: 2, value: 40)], into: dir + "/gen-000001") }
        try DataLayout.writeManifest(DataLayout.manifestText(generation: 1, priority: .builtIn, shards: [:], note: "test"), in: dir)
        #expect(try total(shards) == [40])
        #expect(try shards.nextOffsets() == [0: 1])
    }

    @Test func aShardMovedAwayAndRebuiltIsReadAgain() throws {
        let dir = scratch.path
        do { _ = try ShardHoursTests.project([Self.steps("a", hour: 1, value: 100)], into: dir) }
        let shards = ShardConnections(directory: dir)
        #expect(try total(shards) == [100])
        let path = dir + "/" + Shard.fileName(topic: "health-samples", partition: 0)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        #expect(try shards.withSnapshot(partition: 0) { $0.nextOffset } == 0) // gone: empty
        do { _ = try ShardHoursTests.project([Self.steps("y", hour: 4, value: 7)], into: dir) }
        #expect(try total(shards) == [7])
    }
}
