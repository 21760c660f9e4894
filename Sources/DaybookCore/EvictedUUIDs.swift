/// The uuids a cached ledger evicted while it knew every uuid the store holds of their user
/// (`UserState.uuidsKnown`), as a Bloom filter of (user, uuid) hashes shared by the
/// ledger's users: a uuid it does not name was never evicted, so the store does not hold
/// it and needs no lookup; one it names may be (about 2 % are not, at capacity), and is
/// looked up. It never answers "no" for an inserted hash.
///
/// A set of 64-bit hashes took 16 bytes an evicted uuid, so a quarter of a partition's
/// share of the cache held a few thousand of them; past that every user's were forgotten
/// and each new uuid of theirs was looked up in the store: 3,561 instructions an event of
/// the 1M-event log over 64 partitions, every lookup answering "absent" (BENCHMARKS.md,
/// "Issue 26, thirteenth steps"). This takes ~8.5 bits a uuid.
final class EvictedUUIDs {
    /// The bits, allocated once (an array's copy-on-write checks cost ~150 instructions an
    /// insert, more than the insert).
    private let words: UnsafeMutableBufferPointer<UInt64>
    private let mask: UInt64
    /// Hashes inserted since it was made (a uuid evicted again, after a reload, once; so
    /// a little fewer than the distinct ones when some were taken for repeats).
    private(set) var count = 0
    /// How many hashes it takes before false positives pass ~2 % (4 probes, 8.5 bits each).
    let capacity: Int
    /// The most a ledger gives one (a cache of many gigabytes would otherwise write as many
    /// zeros at its first eviction): 64 MiB, ~63M uuids.
    static let largestBytes = 64 << 20

    /// A filter of at most `bytes` (a power of two of 8-byte words, at least one).
    init(bytes: Int) {
        var n = 1
        while n * 2 * 8 <= bytes { n *= 2 }
        words = .allocate(capacity: n)
        words.initialize(repeating: 0)
        mask = UInt64(n * 64 - 1)
        capacity = n * 64 * 118 / 1_000
    }

    deinit { words.deallocate() }

    var bytes: Int { words.count * 8 }
    var isFull: Bool { count >= capacity }

    /// The hash the filter keeps for `uuidHash` of the user whose `NameHash` is `userHash`.
    @inline(__always)
    static func key(uuid uuidHash: UInt64, user userHash: UInt64) -> UInt64 {
        (uuidHash ^ userHash) &* 0x9E37_79B9_7F4A_7C15
    }

    func insert(_ key: UInt64) {
        let (a, b) = (key, (key >> 32) | 1)
        var added = false
        for i in 0..<UInt64(4) {
            let bit = (a &+ i &* b) & mask
            let word = Int(bit >> 6), one: UInt64 = 1 << (bit & 63)
            if words[word] & one == 0 {
                words[word] |= one
                added = true
            }
        }
        if added { count += 1 }
    }

    func mayContain(_ key: UInt64) -> Bool {
        let (a, b) = (key, (key >> 32) | 1)
        for i in 0..<UInt64(4) {
            let bit = (a &+ i &* b) & mask
            if words[Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }
}

/// `EvictedUUIDs` that grow: a filter of `first` bytes, and once it holds its capacity a
/// further one of twice the size of the last, as long as all of them together stay within
/// `limit` (a scalable Bloom filter: a Bloom filter cannot be widened, its keys are gone). A
/// hash is in the set if any filter may contain it; false positives add up over the filters
/// (~2 % each at capacity, ~4 % for the usual two).
///
/// One filter of an eighth of the budget filled half way through the 4M-event log over 128
/// partitions (33,000 uuids a partition; 192 KiB of cache each, a 16 KiB filter for ~15,500);
/// from there every new uuid was looked up in the store, 11 % of the run's CPU. A second
/// filter of 32 KiB holds the rest (BENCHMARKS.md, "Issue 26, fourteenth steps").
final class GrowingEvictedUUIDs {
    private var filters: [EvictedUUIDs]
    /// The most all the filters together may take.
    let limit: Int

    init(first bytes: Int, limit: Int) {
        let first = EvictedUUIDs(bytes: bytes)
        filters = [first]
        self.bytes = first.bytes
        self.limit = limit
    }

    /// Bytes of all the filters.
    private(set) var bytes: Int

    /// The first filter's size.
    var firstBytes: Int { filters[0].bytes }

    /// How many filters it has.
    var layers: Int { filters.count }

    /// Adds `key`; false if it could not: the last filter is full and a further one would
    /// pass `limit` (the caller forgets the set).
    func insert(_ key: UInt64) -> Bool {
        let last = filters[filters.count - 1]
        if !last.isFull {
            last.insert(key)
            return true
        }
        if mayContain(key) { return true } // a repeat: no room needed
        let next = last.bytes * 2
        guard bytes + next <= limit else { return false }
        let filter = EvictedUUIDs(bytes: next)
        filter.insert(key)
        filters.append(filter)
        bytes += filter.bytes
        return true
    }

    func mayContain(_ key: UInt64) -> Bool {
        // The newest first: it holds the most recent evictions, the likeliest to come back.
        for filter in filters.reversed() where filter.mayContain(key) { return true }
        return false
    }
}
