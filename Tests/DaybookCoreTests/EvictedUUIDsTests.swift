@testable import DaybookCore
import DaybookSupport
import Testing

/// `EvictedUUIDs`, the Bloom filter of uuids a cached ledger evicted: never a "no" for a
/// uuid it was given, few "maybe"s for others up to its capacity.
@Suite struct EvictedUUIDsTests {
    @Test func everyInsertedKeyIsFoundAndFewOthersAreUpToItsCapacity() {
        // 4 KiB: 512 words, 32,768 bits, capacity 32,768 × 0.118 = 3,866 keys.
        let filter = EvictedUUIDs(bytes: 4_096)
        #expect(filter.bytes == 4_096 && filter.capacity == 3_866)
        var rng = SplitMix64(seed: 26)
        // Counted once each: a key all of whose bits are set already (a repeat, or taken for
        // one) does not count, so filling takes a few more than the capacity.
        var inserted: [UInt64] = []
        while !filter.isFull {
            inserted.append(rng.next())
            filter.insert(inserted[inserted.count - 1])
        }
        #expect(filter.count == 3_866 && inserted.count >= 3_866 && inserted.count < 3_866 + 80, "\(inserted.count)")
        let again = filter.count
        filter.insert(inserted[0])
        #expect(filter.count == again, "a repeat is not counted")
        #expect(inserted.allSatisfy(filter.mayContain), "a key inserted must never be missed")
        // Keys never inserted: (1 − e^(−4 × 3,866 / 32,768))^4 ≈ 2.0 % say "maybe".
        let others = (0..<100_000).map { _ in rng.next() }
        let maybes = others.filter(filter.mayContain).count
        #expect(maybes > 1_000 && maybes < 3_000, "\(maybes) false positives in 100,000")
    }

    @Test func itsSizeIsThePowerOfTwoWordsWithinTheBytesGiven() {
        #expect(EvictedUUIDs(bytes: 0).bytes == 8)
        #expect(EvictedUUIDs(bytes: 15).bytes == 8)
        #expect(EvictedUUIDs(bytes: 16).bytes == 16)
        #expect(EvictedUUIDs(bytes: 36_864).bytes == 32_768)
        // An empty filter holds nothing.
        let empty = EvictedUUIDs(bytes: 64)
        #expect(!empty.mayContain(42) && !empty.isFull)
    }

    @Test func aUUIDsKeyDependsOnItsUser() {
        // The same uuid of two users: two keys (one user's eviction says nothing of the other's).
        let uuid = SampleUUID("4D9151CE-AFD1-479E-B494-F91528F38F3F").hash64
        #expect(EvictedUUIDs.key(uuid: uuid, user: NameHash.of("ana")) != EvictedUUIDs.key(uuid: uuid, user: NameHash.of("bo")))
    }
}
