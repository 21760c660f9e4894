import DaybookCore
import DaybookSupport
@testable import DaybookStore
import Testing

/// The packed form of samples gives back every field exactly, whatever its shape.
@Suite struct SamplePackTests {
    static let day: Int64 = 19_800 // 2024-03-18
    static let dayStart = day * Instant.nanosPerDay

    static func decoded(_ samples: [PackedSample], day: Int64 = day) throws -> [PackedSample] {
        let bytes = SamplePack.encode(samples, day: day)
        var out: [PackedSample] = []
        try bytes.withUnsafeBytes { try SamplePack.decode($0, day: day) { out.append($0) } }
        return out
    }

    @Test func everyFieldComesBackAsItWent() throws {
        let samples = [
            // A canonical lower-case uuid, whole seconds, an integer value: the short form.
            PackedSample(uuid: "0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b", source: 1, start: Self.dayStart + 3_600 * Instant.nanosPerSecond,
                         end: Self.dayStart + 4_200 * Instant.nanosPerSecond, value: 812, zone: 2, seq: 41, version: 0),
            // Upper case, nanoseconds, a fractional value, a long span past the day, a high version.
            PackedSample(uuid: "0F8E2A1C-3B4D-4E5F-8A9B-0C1D2E3F4A5B", source: 300, start: Self.dayStart + 1,
                         end: Self.dayStart + 3 * Instant.nanosPerDay + 7, value: 0.1 + 0.2, zone: 70_000, seq: 9_000_000_000, version: .max),
            // Mixed case and other shapes stay text; −0, a huge integer, NaN bits and infinity keep their bits.
            PackedSample(uuid: "0F8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b", source: 0, start: Self.dayStart, end: Self.dayStart,
                         value: -0.0, zone: 0, seq: 0, version: 0),
            PackedSample(uuid: "walk-1", source: 0, start: Self.dayStart + Instant.nanosPerDay - 1, end: Self.dayStart + Instant.nanosPerDay - 1,
                         value: 9.1e15, zone: 0, seq: -1, version: 3),
            PackedSample(uuid: "", source: 1, start: Self.dayStart, end: Self.dayStart + 1, value: .infinity, zone: 1, seq: 1, version: 1),
            PackedSample(uuid: "é-ü-😀", source: 1, start: Self.dayStart, end: Self.dayStart - 5, value: -123_456_789, zone: 1, seq: 2, version: 1),
        ]
        let back = try Self.decoded(samples)
        #expect(back == samples)
        #expect(back[2].value.sign == .minus)
        let nan = PackedSample(uuid: "n", source: 0, start: Self.dayStart, end: Self.dayStart, value: .nan, zone: 0, seq: 0, version: 0)
        #expect(try Self.decoded([nan])[0].value.bitPattern == Double.nan.bitPattern)
        // The short form: flags 1 + uuid 16 + source 1 + start 2 (3,600 s) + duration 2 (600 s, zigzag 1,200) + value 2
        // (812, zigzag 1,624) + zone 1 + seq 1 + version 1 = 27 bytes, plus the pack's format byte and count.
        #expect(SamplePack.encode([samples[0]], day: Self.day).count == 29)
        // The 16 bytes in the text's order (shards written before `SampleUUID` read the same),
        // after the format byte, the count and the flags; decoded to the compact form, not text.
        #expect(Array(SamplePack.encode([samples[0]], day: Self.day)[3..<19])
                == [0x0f, 0x8e, 0x2a, 0x1c, 0x3b, 0x4d, 0x4e, 0x5f, 0x8a, 0x9b, 0x0c, 0x1d, 0x2e, 0x3f, 0x4a, 0x5b])
        #expect(back[0].uuid.canonical != nil && back[1].uuid.canonical?.upper == true && back[2].uuid.canonical == nil)
    }

    /// Text uuids share their front with the one before; decimals are a mantissa and a power.
    @Test func textUUIDsAndDecimalsTakeFewBytes() throws {
        let second = Instant.nanosPerSecond
        let a = PackedSample(uuid: "user-3-0-259-watch", source: 1, start: Self.dayStart + 46_800 * second,
                             end: Self.dayStart + 47_136 * second, value: 23.7, zone: 2, seq: 1_000, version: 0)
        var b = a
        b.uuid = SampleUUID("user-3-0-260-watch")
        b.start += 925 * second
        b.end += 925 * second
        b.seq = 1_003
        // a: flags 1 + shared 1 + length 1 + 18 bytes + source 1 + start 3 (46,800 s, zigzag 93,600)
        //    + duration 2 (336 s, zigzag 672) + value 3 (mantissa 237, zigzag 474: 2; power 1) + zone 1
        //    + seq 2 (1,000, zigzag 2,000) + version 1 = 34;
        // b: flags 1 + shared 1 (10: "user-3-0-2") + length 1 + 8 bytes + source 1 + start 2 (925 s later,
        //    zigzag 1,850) + duration 2 + value 3 + zone 1 + seq 1 (3 later) + version 1 = 22; pack 2 + 34 + 22 = 58.
        #expect(SamplePack.encode([a, b], day: Self.day).count == 58)
        #expect(try Self.decoded([a, b]) == [a, b])
        #expect(try Self.decoded([b, a]) == [b, a]) // out of log order, the distances are negative
        for v in [0.1, 1.23456, 70.000001, 1e-7, 123_456.75, -5.5] {
            var c = a
            c.value = v
            #expect(try Self.decoded([c])[0].value.bitPattern == v.bitPattern, "\(v)")
        }
    }

    @Test func daysBefore1970AndTheirSamplesRoundTrip() throws {
        #expect(SamplePack.day(ofStart: -1) == -1)
        #expect(SamplePack.day(ofStart: -Instant.nanosPerDay) == -1)
        #expect(SamplePack.day(ofStart: 0) == 0)
        let start = -Instant.nanosPerDay + 5 * Instant.nanosPerSecond
        let s = PackedSample(uuid: "old", source: 1, start: start, end: start + Instant.nanosPerSecond, value: 2, zone: 1, seq: 3, version: 0)
        #expect(try Self.decoded([s], day: -1) == [s])
    }

    @Test func aDamagedPackIsAnErrorNotACrash() throws {
        let s = PackedSample(uuid: "0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b", source: 1, start: Self.dayStart, end: Self.dayStart + 1,
                             value: 0.5, zone: 2, seq: 41, version: 0)
        let bytes = SamplePack.encode([s, s], day: Self.day)
        for cut in 0..<bytes.count {
            #expect(throws: SamplePack.Damaged.self) {
                try Array(bytes[..<cut]).withUnsafeBytes { try SamplePack.decode($0, day: Self.day) { _ in } }
            }
        }
        #expect(throws: SamplePack.Damaged.self) {
            try (bytes + [0]).withUnsafeBytes { try SamplePack.decode($0, day: Self.day) { _ in } }
        }
        var huge = bytes
        huge[1] = 0xff // a count far beyond the bytes
        #expect(throws: SamplePack.Damaged.self) { try huge.withUnsafeBytes { try SamplePack.decode($0, day: Self.day) { _ in } } }
    }

    @Test func theHashIsStableAcrossProcesses() {
        // Persisted in every shard: it must never change (these values pin it).
        let a = SamplePack.hash(user: "ana", uuid: "s1")
        #expect(a == -817_910_449) // FNV-1a over "ana", 0xff, "s1", the fmix64 finaliser, its halves xor-ed
        #expect(a != SamplePack.hash(user: "an", uuid: "as1"))
        #expect(a != SamplePack.hash(user: "ana", uuid: "s2"))
        // The compact form hashes its text's bytes: canonical uuids of both cases and text alike.
        for uuid in ["s1", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "é-ü"] {
            #expect(SamplePack.hash(user: "ana", uuid: SampleUUID(uuid)) == SamplePack.hash(user: "ana", uuid: uuid))
        }
    }

    @Test func fnv1aReadEightBytesAtATimeIsTheByteLoop() {
        // The byte loop the hash was written with, as the reference: every length from 0 to
        // 40 (whole words, a tail, both) and every byte value in some position.
        func reference(_ h: UInt64, _ bytes: [UInt8]) -> UInt64 {
            var h = h
            for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            return h
        }
        var random = SplitMix64(seed: 26)
        for n in 0...40 {
            for _ in 0..<8 {
                let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                let seed = random.next()
                #expect(bytes.withUnsafeBufferPointer { SamplePack.fnv1a(seed, $0) } == reference(seed, bytes), "\(n) bytes")
            }
        }
    }
}
