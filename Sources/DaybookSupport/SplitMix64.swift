/// SplitMix64: a tiny, fast, repeatable random number generator (the same sequence for a
/// seed on every machine): synthetic logs and exports for benchmarks, and the tests.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0 ..< n (n > 0), slightly biased for huge n: fine for synthetic data.
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
