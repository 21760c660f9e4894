/// How producers choose a keyed message's partition: the librdkafka `partitioner` property.
///
/// Daybook needs each user's events in one partition (one shard); the projector checks
/// every message's key against its partition under the producers' partitioner, so it must
/// know which one they use (config `kafka.partitioner`). Only the two partitioners that
/// place a key deterministically are offered; for a non-empty key each is a pure function
/// of the key's bytes and the partition count, computed here exactly as librdkafka does.
public enum Partitioner: String, Sendable, CaseIterable {
    /// Java-compatible murmur2 of the key bytes, `& 0x7fffffff`, modulo the partition
    /// count: Java clients' default, and `daybook publish`'s. (A null key: random.)
    case murmur2Random = "murmur2_random"
    /// CRC32 of the key bytes modulo the partition count: librdkafka's default, and so
    /// kcat's and most non-Java clients'. (An empty key: random.)
    case consistentRandom = "consistent_random"

    /// The default: murmur2, as Java clients and `daybook publish`.
    public static let `default` = Partitioner.murmur2Random

    /// The partition a message keyed by `key` goes to in a topic of `count` partitions.
    public func partition<Key: Collection>(ofKey key: Key, count: Int) -> Int32 where Key.Element == UInt8 {
        precondition(count > 0, "a topic has at least one partition")
        switch self {
        case .murmur2Random: return Int32(Int(Self.murmur2(key) & 0x7fff_ffff) % count)
        case .consistentRandom: return Int32(Int(Self.crc32(key)) % count)
        }
    }

    /// Kafka's murmur2 (the Java client's `Utils.murmur2`, seed 0x9747b28c), as unsigned bits.
    static func murmur2<Key: Collection>(_ key: Key) -> UInt32 where Key.Element == UInt8 {
        let m: UInt32 = 0x5bd1_e995
        let bytes = Array(key)
        let length = bytes.count
        var h: UInt32 = 0x9747_b28c ^ UInt32(truncatingIfNeeded: length)
        var i = 0
        while i + 4 <= length {
            var k = UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
            k = k &* m
            k ^= k >> 24
            k = k &* m
            h = h &* m
            h ^= k
            i += 4
        }
        let rest = length - i
        if rest >= 3 { h ^= UInt32(bytes[i + 2]) << 16 }
        if rest >= 2 { h ^= UInt32(bytes[i + 1]) << 8 }
        if rest >= 1 {
            h ^= UInt32(bytes[i])
            h = h &* m
        }
        h ^= h >> 13
        h = h &* m
        h ^= h >> 15
        return h
    }

    /// The CRC-32 of zlib and Ethernet (reflected polynomial 0xedb88320), librdkafka's `rd_crc32`.
    static func crc32<Key: Collection>(_ key: Key) -> UInt32 where Key.Element == UInt8 {
        var crc: UInt32 = 0xffff_ffff
        for byte in key { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return crc ^ 0xffff_ffff
    }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xedb8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}
