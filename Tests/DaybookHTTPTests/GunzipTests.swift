import DaybookHTTP
import DaybookTestSupport
import Foundation
import Testing

/// Gzip bodies inflated by Debian's zlib within a limit: byte for byte what `gzip` packed,
/// concatenated members, a bomb stopped at the limit, and damaged input refused.
@Suite struct GunzipTests {
    static func gzip(_ data: [UInt8]) throws -> [UInt8] { try Gzip.pack(data) }

    @Test func inflatesWhatGzipPackedAndConcatenatedMembers() throws {
        let text = Array(#"{"anchor": 17, "added": [], "deleted": ["u1"]}"#.utf8)
        #expect(try Gunzip.inflate(Self.gzip(text), limit: 1_000).get() == text)
        // Larger than one 64 KiB step, and incompressible enough to take several.
        var random = SystemRandomNumberGenerator()
        let big = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        #expect(try Gunzip.inflate(Self.gzip(big), limit: 300_000).get() == big)
        let two = try Self.gzip(Array("ab".utf8)) + Self.gzip(Array("cd".utf8))
        #expect(try Gunzip.inflate(two, limit: 10).get() == Array("abcd".utf8))
    }

    @Test func stopsAtTheLimitWhateverTheBodyInflatesTo() throws {
        // 64 MiB of zeros pack to about 64 KiB: inflated whole it would take 64 MiB.
        let bomb = try Self.gzip([UInt8](repeating: 0, count: 64 << 20))
        #expect(bomb.count < 100_000)
        #expect(Gunzip.inflate(bomb, limit: 1 << 20) == .failure(.tooLarge(limit: 1 << 20)))
        // At the limit exactly it is whole; one byte more is not.
        let exact = try Self.gzip([UInt8](repeating: 7, count: 1_000))
        #expect(try Gunzip.inflate(exact, limit: 1_000).get().count == 1_000)
        #expect(Gunzip.inflate(exact, limit: 999) == .failure(.tooLarge(limit: 999)))
    }

    @Test func refusesWhatIsNotWholeGzip() throws {
        let packed = try Self.gzip(Array("hello, daybook".utf8))
        for damaged in [[], Array("hello".utf8), Array(packed.dropLast(4)), Array(packed.prefix(12)), packed + [1, 2, 3]] {
            guard case .failure(.malformed) = Gunzip.inflate(damaged, limit: 1_000) else {
                Issue.record("accepted \(damaged.count) damaged bytes")
                continue
            }
        }
        var flipped = packed
        flipped[flipped.count - 6] ^= 0xFF   // the CRC-32 of the trailer
        guard case .failure(.malformed) = Gunzip.inflate(flipped, limit: 1_000) else { Issue.record("a wrong CRC accepted"); return }
    }
}
