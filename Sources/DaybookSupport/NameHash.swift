#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A fast, seeded 64-bit hash of a name's UTF-8 bytes (a user id, a uuid, a source), and
/// the table keys built on it: the projector's hot tables are keyed by names, and Swift's
/// `Hasher` (SipHash-1-3) spends ~350 instructions on a 36-byte uuid where this spends ~50.
///
///     let key = NameKey("3F2504E0-4F89-11D3-9A0C-0305E82C3301")
///     states[key] = .tombstoned        // hashed once, when the key was made
///
/// The secret comes from Swift's own per-process random hash seed, so a producer cannot
/// craft names that collide (a table of colliding keys would degrade to a list). Names
/// compare byte for byte, as the store and the event format do (ids are NFC, so two names
/// the event format accepts are equal as bytes exactly when they are equal as Strings).
///
/// Complexity: O(n) in the name's bytes, 8 bytes per step.
public enum NameHash {
    /// Two per-process random words (Swift's execution seed, unless
    /// `SWIFT_DETERMINISTIC_HASHING` is set).
    private static let secret: (UInt64, UInt64) = {
        var first = Hasher()
        first.combine(0x6461_7962_6f6f_6b31 as UInt64)
        var second = Hasher()
        second.combine(0x6461_7962_6f6f_6b32 as UInt64)
        return (UInt64(UInt(bitPattern: first.finalize())) | 1, UInt64(UInt(bitPattern: second.finalize())) | 1)
    }()

    /// The high and low words of a full 128-bit product, folded: the mixing step.
    @inline(__always)
    static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (high, low) = a.multipliedFullWidth(by: b)
        return high ^ low
    }

    /// The hash of `bytes`.
    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let (s0, s1) = secret
        let n = bytes.count
        var h = s0 ^ (UInt64(truncatingIfNeeded: n) &* 0x9E37_79B9_7F4A_7C15)
        var i = 0
        while i + 8 <= n {
            h = fold(h ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self), s1 ^ 0xa076_1d64_78bd_642f)
            i += 8
        }
        if i < n {
            var word: UInt64 = 0
            var shift: UInt64 = 0
            while i < n {
                word |= UInt64(bytes[i]) << shift
                shift += 8
                i += 1
            }
            h = fold(h ^ word, s1 ^ 0xe703_7ed1_a0b4_28db)
        }
        return fold(h, s0 ^ 0x8ebc_6af0_9c88_c6e3)
    }

    /// The hash of two words (a canonical uuid's 16 bytes): what `of` gives for 16 bytes in
    /// spirit (seeded, mixed), in a few multiplications and no loop; not equal to `of` of
    /// the words' bytes.
    @inline(__always)
    public static func of(words a: UInt64, _ b: UInt64) -> UInt64 {
        let (s0, s1) = secret
        let h = fold(s0 ^ a, s1 ^ 0xa076_1d64_78bd_642f)
        return fold(h ^ b, s0 ^ 0x8ebc_6af0_9c88_c6e3)
    }

    /// The hash of `name`'s UTF-8 bytes.
    public static func of(_ name: String) -> UInt64 {
        if let h = name.utf8.withContiguousStorageIfAvailable({ of(UnsafeRawBufferPointer($0)) }) { return h }
        var copy = name
        return copy.withUTF8 { of(UnsafeRawBufferPointer($0)) }
    }

    /// Whether two names are the same bytes (a native String's bytes are compared in place).
    /// Two Strings whose 16 bytes are the same are the same name: a small String holds its
    /// bytes in those 16, a large one points at its storage. The projector's names come from
    /// one memo (`ZoneMemo`), so most compares end there, before counting or `memcmp`.
    @inline(__always)
    public static func sameBytes(_ a: String, _ b: String) -> Bool {
        if sameRepresentation(a, b) { return true }
        return sameBytesByContent(a, b)
    }

    /// Whether the two Strings are bit for bit the same value (same small contents, or the
    /// same storage with the same count and flags). False says nothing.
    @inline(__always)
    public static func sameRepresentation(_ a: String, _ b: String) -> Bool {
        Representation.available && Representation(a) == Representation(b)
    }

    private static func sameBytesByContent(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let answer = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
        if let answer, let answer { return answer }
        return a.utf8.elementsEqual(b.utf8)
    }

    /// Whether `bytes` are `name`'s UTF-8 bytes (a message's key against its event's user).
    public static func sameBytes(_ bytes: UnsafeBufferPointer<UInt8>, _ name: String) -> Bool {
        guard bytes.count == name.utf8.count else { return false }
        if let answer = name.utf8.withContiguousStorageIfAvailable({ y in
            bytes.count == 0 || memcmp(bytes.baseAddress!, y.baseAddress!, bytes.count) == 0
        }) { return answer }
        return bytes.elementsEqual(name.utf8)
    }

    /// murmur3's 64-bit finaliser: a bijection that spreads every input bit over the word.
    /// Unseeded and fixed forever: the store's uuid index (`SamplePack.hash`) keeps its output on disk.
    @inline(__always)
    public static func finalize(_ value: UInt64) -> UInt64 {
        var h = value
        h ^= h >> 33
        h = h &* 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h = h &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }

    /// A table hash of an already mixed 64-bit `value` under a table's `seed` (what
    /// `Hashable._rawHashValue(seed:)` returns): `finalize` of the two, so two keys share a
    /// bucket only as often as chance has them.
    @inline(__always)
    public static func table(_ value: UInt64, seed: Int) -> Int {
        Int(truncatingIfNeeded: finalize(value ^ UInt64(UInt(bitPattern: seed))))
    }

    /// An integer's table hash (`table(_:seed:)` of it), without SipHash: log positions, day
    /// numbers, the store's uuid hashes. Each table's own seed goes in, so a producer that
    /// chooses its days cannot choose their buckets.
    @inline(__always)
    public static func table(int value: Int64, seed: Int) -> Int {
        table(UInt64(bitPattern: value) &* 0x9E37_79B9_7F4A_7C15, seed: seed)
    }
}

/// A name with its `NameHash`, computed once: a table key that hashes in a few instructions
/// and compares bytes.
public struct NameKey: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public let hash: UInt64

    public init(_ name: String) {
        self.name = name
        hash = NameHash.of(name)
    }

    /// A key whose hash the caller computed already: `hash` must be `NameHash.of(name)`
    /// (a key made with another hash is never found).
    public init(_ name: String, hash: UInt64) {
        self.name = name
        self.hash = hash
    }

    public static func == (a: NameKey, b: NameKey) -> Bool { a.hash == b.hash && NameHash.sameBytes(a.name, b.name) }
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    public func _rawHashValue(seed: Int) -> Int { NameHash.table(hash, seed: seed) }
    public var description: String { name }
}
