/// SHA-256 (FIPS 180-4, section 6.2): the digest `daybook serve` stores of each access
/// token, so that its tokens file holds no secret. Linux has no CryptoKit and the package
/// takes no dependency for one function.
///
///     SHA256.hex(Array("abc".utf8))   // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
///
/// Complexity: O(n) in the message length; memory is one 64-byte block and the state.
public struct SHA256: Sendable {
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    private var block: [UInt8] = []
    /// 64-byte blocks compressed so far.
    private var compressed: UInt64 = 0

    public init() { block.reserveCapacity(64) }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            block.append(byte)
            if block.count == 64 {
                compress()
                block.removeAll(keepingCapacity: true)
            }
        }
    }

    /// The 32-byte digest of everything added (the hasher can be used no further).
    public consuming func finish() -> [UInt8] {
        // The padding ends with the message's length in bits, big-endian.
        let bits = messageBytes &* 8
        block.append(0x80)
        if block.count > 56 {
            while block.count < 64 { block.append(0) }
            compress()
            block.removeAll(keepingCapacity: true)
        }
        while block.count < 56 { block.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { block.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        compress()
        return state.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32($0))) } }
    }

    /// The digest of `bytes`.
    public static func digest(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finish()
    }

    /// The digest of `bytes` in lowercase hex (64 characters), as `sha256sum` prints it.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in digest(bytes) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of the message so far: the blocks compressed and the bytes waiting in `block`.
    private var messageBytes: UInt64 { compressed &* 64 &+ UInt64(block.count) }

    private mutating func compress() {
        var w = [UInt32](repeating: 0, count: 64)
        for t in 0..<16 {
            w[t] = UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16 | UInt32(block[4 * t + 2]) << 8 | UInt32(block[4 * t + 3])
        }
        for t in 16..<64 {
            let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
            let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }
        var a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7]
        for t in 0..<64 {
            let t1 = h &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ Self.k[t] &+ w[t]
            let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
            h = g; g = f; f = e; e = d &+ t1
            d = c; c = b; b = a; a = t1 &+ t2
        }
        for (i, v) in [a, b, c, d, e, f, g, h].enumerated() { state[i] = state[i] &+ v }
        compressed &+= 1
    }

    private func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }

    /// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

extension SHA256 {
    /// Whether `a` and `b` are equal, in time that depends only on their lengths (not on
    /// where they first differ), so that comparing a secret's digest tells a caller nothing.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
