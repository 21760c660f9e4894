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

    @Test func aGrowingSetAddsAFilterTwiceTheSizeOfTheLastUntilItsLimit() {
        // First 4 KiB (capacity 3,866), then 8 KiB (7,733): 12 KiB within a limit of 20 KiB;
        // a third of 16 KiB would make 28 KiB, so the 11,600th key or so is refused.
        let set = GrowingEvictedUUIDs(first: 4_096, limit: 20_480)
        #expect(set.bytes == 4_096 && set.layers == 1 && set.firstBytes == 4_096)
        var rng = SplitMix64(seed: 30)
        var inserted: [UInt64] = []
        var refused: UInt64?
        while refused == nil, inserted.count < 20_000 {
            let key = rng.next()
            if set.insert(key) { inserted.append(key) } else { refused = key }
        }
        #expect(refused != nil && set.layers == 2 && set.bytes == 12_288, "\(set.layers) filters, \(set.bytes) bytes")
        // Counted once each, as in one filter: a little more than the two capacities.
        #expect(inserted.count >= 3_866 + 7_733 && inserted.count < 3_866 + 7_733 + 240, "\(inserted.count)")
        #expect(inserted.allSatisfy(set.mayContain), "a key inserted must never be missed, in any filter")
        #expect(set.insert(inserted[0]), "a repeat needs no room")
        // Keys never inserted: each full filter says "maybe" for ~2 %, so ~4 % in all.
        let maybes = (0..<100_000).map { _ in rng.next() }.filter(set.mayContain).count
        #expect(maybes > 2_500 && maybes < 5_500, "\(maybes) false positives in 100,000")
    }

    @Test func aGrowingSetWhoseLimitIsItsFirstFilterNeverGrows() {
        let set = GrowingEvictedUUIDs(first: 64, limit: 64)
        var rng = SplitMix64(seed: 31)
        var accepted = 0
        while set.insert(rng.next()) { accepted += 1 }
        // 64 bytes: 512 bits, capacity 60.
        #expect(accepted >= 60 && accepted < 70 && set.layers == 1 && set.bytes == 64, "\(accepted)")
    }

    @Test func aUUIDsKeyDependsOnItsUser() {
        // The same uuid of two users: two keys (one user's eviction says nothing of the other's).
        let uuid = SampleUUID("4D9151CE-AFD1-479E-B494-F91528F38F3F").hash64
        #expect(EvictedUUIDs.key(uuid: uuid, user: NameHash.of("ana")) != EvictedUUIDs.key(uuid: uuid, user: NameHash.of("bo")))
    }
}
