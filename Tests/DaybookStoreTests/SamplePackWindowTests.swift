import DaybookCore
import DaybookSupport
@testable import DaybookStore
import Testing

/// The hour reads' decoder (`SamplePack.decodeWindow`) gives exactly what the pack's own
/// decoder gives of the same bytes, field for field and bit for bit, and refuses what it refuses.
@Suite struct SamplePackWindowTests {
    static let day: Int64 = 19_800

    /// `decodeFields(…, uuids: false)` filtered as the window filters: the reference.
    static func reference(_ bytes: [UInt8], low: Int64, high: Int64, first: Int64) throws -> [PackedSample] {
        var out: [PackedSample] = []
        try bytes.withUnsafeBytes { raw in
            try SamplePack.decodeFields(raw, day: day, uuids: false) { s, _ in
                if s.start >= low, s.start < high, s.end > first || s.start >= first { out.append(s) }
            }
        }
        return out
    }

    static func columns(_ bytes: [UInt8], low: Int64, high: Int64, first: Int64) throws -> [PackedSample] {
        var c = PackColumns()
        try bytes.withUnsafeBytes { try SamplePack.decodeWindow($0, day: day, low: low, high: high, first: first, into: &c) }
        return (0..<c.count).map { i in
            PackedSample(uuid: "", source: c.source[i], start: c.start[i], end: c.end[i], value: c.value[i], zone: c.zone[i], seq: 0, version: c.version[i])
        }
    }

    /// Seeded random packs of every shape (canonical and text uuids, seconds and nanoseconds,
    /// every value form, instants, negative steps, large ids), cut at random bounds.
    @Test(arguments: Array(UInt64(1)...60))
    func decodesAsTheReferenceDecoder(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed ^ 0x5A_3B1E)
        let dayStart = Self.day * Instant.nanosPerDay
        var samples: [PackedSample] = []
        for i in 0..<(1 + rng.below(300)) {
            let seconds = rng.below(3) != 0
            let unit: Int64 = seconds ? Instant.nanosPerSecond : 1
            let start = dayStart + Int64(rng.below(3 * 86_400)) * unit - Instant.nanosPerDay * (seconds ? 1 : 0)
            let end = rng.below(5) == 0 ? start : start + Int64(rng.below(7_200)) * unit
            let values: [Double] = [Double(rng.below(1_000)), Double(rng.below(100_000)) / 7, 23.7, -0.0, .nan, .infinity, 1e300, -5.5]
            let uuids = ["0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "0F8E2A1C-3B4D-4E5F-8A9B-0C1D2E3F4A5B", "user-\(i)-watch", "é-\(i)", ""]
            samples.append(PackedSample(uuid: uuids[rng.below(uuids.count)], source: Int64(rng.below(rng.below(4) == 0 ? 100_000 : 8)),
                                        start: start, end: end, value: values[rng.below(values.count)], zone: Int64(rng.below(300)),
                                        seq: Int64(rng.below(1_000_000)), version: rng.below(6) == 0 ? .max : Int64(rng.below(3))))
        }
        let bytes = SamplePack.encode(samples, day: Self.day)
        for _ in 0..<4 {
            let first = dayStart + Int64(rng.below(2 * 86_400)) * Instant.nanosPerSecond - Instant.nanosPerDay / 2
            let low = first - Int64(rng.below(3) == 0 ? 0 : rng.below(86_400)) * Instant.nanosPerSecond
            let high = first + Int64(rng.below(3 * 86_400)) * Instant.nanosPerSecond
            let expected = try Self.reference(bytes, low: low, high: high, first: first)
            let got = try Self.columns(bytes, low: low, high: high, first: first)
            #expect(got.count == expected.count, "seed \(seed)")
            for (g, e) in zip(got, expected) {
                var e = e
                e.seq = 0 // the window does not keep it
                let sameBits = g.value.bitPattern == e.value.bitPattern
                var g = g
                (g.value, e.value) = (0, 0) // NaN is not equal to itself: compared by its bits above
                #expect(g == e, "seed \(seed)")
                #expect(sameBits, "seed \(seed)")
            }
        }
        // Every sample kept when the bounds hold them all.
        #expect(try Self.columns(bytes, low: .min, high: .max, first: .min).count == samples.count)
    }

    /// A damaged pack is refused as the reference decoder refuses it, cut anywhere.
    @Test func aDamagedPackIsRefusedAsTheReferenceRefusesIt() throws {
        let dayStart = Self.day * Instant.nanosPerDay
        var samples: [PackedSample] = []
        for i in 0..<5 {
            let uuid = i % 2 == 0 ? "text-\(i)" : "0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
            let start: Int64 = dayStart + Int64(i) * 1_000
            let end: Int64 = dayStart + Int64(i) * 2_000
            let value: Double = i == 3 ? 0.25 : 1.5
            samples.append(PackedSample(uuid: uuid, source: 1, start: start, end: end, value: value, zone: 2, seq: Int64(i), version: 0))
        }
        let bytes = SamplePack.encode(samples, day: Self.day)
        for cut in 0..<bytes.count {
            let short = Array(bytes[..<cut])
            var referenceReason: String?
            var windowReason: String?
            do { _ = try Self.reference(short, low: .min, high: .max, first: .min) } catch let d as SamplePack.Damaged { referenceReason = d.reason }
            do { _ = try Self.columns(short, low: .min, high: .max, first: .min) } catch let d as SamplePack.Damaged { windowReason = d.reason }
            #expect(windowReason != nil && windowReason == referenceReason, "cut at \(cut)")
        }
        var trailing = bytes
        trailing.append(0)
        #expect(throws: SamplePack.Damaged.self) { _ = try Self.columns(trailing, low: .min, high: .max, first: .min) }
    }
}
