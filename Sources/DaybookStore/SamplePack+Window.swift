import DaybookCore

/// The fields an hour read takes from packs, as parallel arrays (one element per sample):
/// what `SamplePack.decodeWindow` fills, without a `PackedSample` or a closure call per sample.
struct PackColumns {
    var start: [Int64] = []
    var end: [Int64] = []
    var value: [Double] = []
    var version: [Int64] = []
    /// The shard's name ids (`names`).
    var source: [Int64] = []
    var zone: [Int64] = []

    var count: Int { start.count }

    mutating func reserve(_ n: Int) {
        start.reserveCapacity(n)
        end.reserveCapacity(n)
        value.reserveCapacity(n)
        version.reserveCapacity(n)
        source.reserveCapacity(n)
        zone.reserveCapacity(n)
    }
}

extension SamplePack {
    /// Appends to `out` the samples of a pack of `day` (the bytes `decodeFields` reads, in the
    /// same order) whose start lies in `[low, high)` and that overlap `[first, high)` (an
    /// interval ending after `first`, an instant at or after it): exactly the fields
    /// `decodeFields(…, uuids: false)` gives of those samples. Uuids are checked and skipped,
    /// seq is read and dropped. Throws `Damaged` where `decodeFields` does.
    static func decodeWindow(_ bytes: UnsafeRawBufferPointer, day: Int64, low: Int64, high: Int64, first: Int64,
                             into out: inout PackColumns) throws {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count > 0 else {
            throw Damaged(reason: "a pack cut short at byte 0")
        }
        var reader = WindowReader(base: base, size: bytes.count)
        guard try reader.byte() == format else { throw Damaged(reason: "unknown pack format") }
        let count = try reader.varint()
        guard count <= UInt64(reader.size) else { throw Damaged(reason: "a count of \(count) samples in \(reader.size) bytes") }
        // Room for every sample of the pack, written in place, then what the bounds left out
        // cut off again: six appends per sample cost more than the decoding itself.
        let old = out.count
        let room = Int(count)
        // The arrays taken out of `out` (each still uniquely held) and put back at the end.
        var (s0, s1, s2, s3, s4, s5) = (out.start, out.end, out.value, out.version, out.source, out.zone)
        out = PackColumns()
        s0.append(contentsOf: repeatElement(0, count: room))
        s1.append(contentsOf: repeatElement(0, count: room))
        s2.append(contentsOf: repeatElement(0, count: room))
        s3.append(contentsOf: repeatElement(0, count: room))
        s4.append(contentsOf: repeatElement(0, count: room))
        s5.append(contentsOf: repeatElement(0, count: room))
        var written = old
        var failure: Damaged?
        s0.withUnsafeMutableBufferPointer { starts in
            s1.withUnsafeMutableBufferPointer { ends in
                s2.withUnsafeMutableBufferPointer { values in
                    s3.withUnsafeMutableBufferPointer { versions in
                        s4.withUnsafeMutableBufferPointer { sources in
                            s5.withUnsafeMutableBufferPointer { zones in
                                // The cursor and the count as locals of this closure: captured from outside,
                                // every step of `r.p` was a load and a store through memory.
                                var r = reader
                                var kept = written
                                defer {
                                    reader = r
                                    written = kept
                                }
                                do {
                                    var previousStart = day &* Instant.nanosPerDay
                                    var previousLength: UInt64 = 0
                                    for _ in 0..<count {
                                        let flags = try r.byte()
                                        switch flags & 3 {
                                        case 0, 1:
                                            let at = r.p
                                            try r.skip(16, "a uuid cut short at byte \(at)")
                                        case 2:
                                            let shared = try r.varint()
                                            guard shared <= previousLength else { throw Damaged(reason: "a uuid sharing \(shared) bytes with one of \(previousLength)") }
                                            let rest = try r.varint()
                                            try r.skip(Int(truncatingIfNeeded: rest), "a uuid of \(rest) bytes past the pack's end")
                                            previousLength = shared + rest
                                        default: throw Damaged(reason: "a uuid of unknown form \(flags & 3)")
                                        }
                                        let source = Int64(bitPattern: try r.varint())
                                        var step = try r.signed()
                                        var duration = try r.signed()
                                        if flags & 4 != 0 {
                                            step = step &* Instant.nanosPerSecond
                                            duration = duration &* Instant.nanosPerSecond
                                        }
                                        let value: Double
                                        switch flags >> 3 & 3 {
                                        case 0:
                                            guard r.size - r.p >= 8 else { throw Damaged(reason: "a pack cut short at byte \(r.size)") }
                                            var bits: UInt64 = 0
                                            for i in 0..<8 { bits |= UInt64(r.base[r.p + i]) << (8 * UInt64(i)) }
                                            r.p += 8
                                            value = Double(bitPattern: bits)
                                        case 1: value = Double(try r.signed())
                                        case 2:
                                            let mantissa = try r.signed()
                                            let power = Int(try r.byte())
                                            guard power < 7 else { throw Damaged(reason: "a decimal value over 10^\(power)") }
                                            value = Double(mantissa) / windowPowersOfTen[power]
                                        default: throw Damaged(reason: "a value of unknown form \(flags >> 3 & 3)")
                                        }
                                        let zone = Int64(bitPattern: try r.varint())
                                        _ = try r.varint() // seq: hours never read it
                                        let version = try r.signed()
                                        let start = previousStart &+ step
                                        previousStart = start
                                        let end = start &+ duration
                                        guard start >= low, start < high, end > first || start >= first else { continue }
                                        starts[kept] = start
                                        ends[kept] = end
                                        values[kept] = value
                                        versions[kept] = version
                                        sources[kept] = source
                                        zones[kept] = zone
                                        kept += 1
                                    }
                                } catch {
                                    failure = error as? Damaged ?? Damaged(reason: "\(error)")
                                }
                            }
                        }
                    }
                }
            }
        }
        let unused = old + room - written
        s0.removeLast(unused)
        s1.removeLast(unused)
        s2.removeLast(unused)
        s3.removeLast(unused)
        s4.removeLast(unused)
        s5.removeLast(unused)
        out = PackColumns(start: s0, end: s1, value: s2, version: s3, source: s4, zone: s5)
        if let failure { throw failure }
        guard reader.p == reader.size else { throw Damaged(reason: "\(reader.size - reader.p) bytes after the last sample") }
    }

    /// A cursor over a pack's bytes for `decodeWindow`: a varint with room for its longest
    /// form ahead is read without a bounds check per byte.
    private struct WindowReader {
        let base: UnsafePointer<UInt8>
        let size: Int
        var p = 0

        @inline(__always)
        mutating func byte() throws -> UInt8 {
            guard p < size else { throw Damaged(reason: "a pack cut short at byte \(p)") }
            defer { p += 1 }
            return base[p]
        }

        @inline(__always)
        mutating func varint() throws -> UInt64 {
            if size - p >= 10 {
                var b = UInt64(base[p])
                if b < 0x80 {
                    p += 1
                    return b
                }
                var result = b & 0x7f
                var shift: UInt64 = 7
                var q = p + 1
                while q < p + 10 {
                    b = UInt64(base[q])
                    result |= (b & 0x7f) << shift
                    q += 1
                    if b < 0x80 {
                        p = q
                        return result
                    }
                    shift += 7
                }
            }
            return try checkedVarint()
        }

        /// The checked loop, also for the last bytes of a pack (the messages `decodeFields` gives).
        mutating func checkedVarint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte()
                guard shift < 64 else { throw Damaged(reason: "a varint longer than 10 bytes at byte \(p)") }
                result |= UInt64(b & 0x7f) << shift
                if b < 0x80 { return result }
                shift += 7
            }
        }

        @inline(__always)
        mutating func signed() throws -> Int64 {
            let z = try varint()
            return Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
        }

        @inline(__always)
        mutating func skip(_ length: Int, _ reason: @autoclosure () -> String) throws {
            guard length >= 0, length <= size - p else { throw Damaged(reason: reason()) }
            p += length
        }
    }

    /// `powersOfTen` (private to the encoder's file): the divisors of a decimal value.
    private static let windowPowersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6]
}
