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
        let size = bytes.count
        var p = 0

        @inline(__always) func byte() throws -> UInt8 {
            guard p < size else { throw Damaged(reason: "a pack cut short at byte \(p)") }
            defer { p += 1 }
            return base[p]
        }
        @inline(__always) func varint() throws -> UInt64 {
            if p < size, base[p] < 0x80 {
                defer { p += 1 }
                return UInt64(base[p])
            }
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
        @inline(__always) func signed() throws -> Int64 {
            let z = try varint()
            return Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
        }
        @inline(__always) func skip(_ length: Int, _ reason: @autoclosure () -> String) throws {
            guard length >= 0, length <= size - p else { throw Damaged(reason: reason()) }
            p += length
        }

        guard try byte() == format else { throw Damaged(reason: "unknown pack format") }
        let count = try varint()
        guard count <= UInt64(size) else { throw Damaged(reason: "a count of \(count) samples in \(size) bytes") }
        var previousStart = day &* Instant.nanosPerDay
        var previousSeq: Int64 = 0
        var previousLength: UInt64 = 0
        for _ in 0..<count {
            let flags = try byte()
            switch flags & 3 {
            case 0, 1:
                let at = p
                try skip(16, "a uuid cut short at byte \(at)")
            case 2:
                let shared = try varint()
                guard shared <= previousLength else { throw Damaged(reason: "a uuid sharing \(shared) bytes with one of \(previousLength)") }
                let rest = try varint()
                try skip(Int(truncatingIfNeeded: rest), "a uuid of \(rest) bytes past the pack's end")
                previousLength = shared + rest
            default: throw Damaged(reason: "a uuid of unknown form \(flags & 3)")
            }
            let source = Int64(bitPattern: try varint())
            var step = try signed()
            var duration = try signed()
            if flags & 4 != 0 {
                step = step &* Instant.nanosPerSecond
                duration = duration &* Instant.nanosPerSecond
            }
            let value: Double
            switch flags >> 3 & 3 {
            case 0:
                guard size - p >= 8 else { throw Damaged(reason: "a pack cut short at byte \(size)") }
                var bits: UInt64 = 0
                for i in 0..<8 { bits |= UInt64(base[p + i]) << (8 * UInt64(i)) }
                p += 8
                value = Double(bitPattern: bits)
            case 1: value = Double(try signed())
            case 2:
                let mantissa = try signed()
                let power = Int(try byte())
                guard power < windowPowersOfTen.count else { throw Damaged(reason: "a decimal value over 10^\(power)") }
                value = Double(mantissa) / windowPowersOfTen[power]
            default: throw Damaged(reason: "a value of unknown form \(flags >> 3 & 3)")
            }
            let zone = Int64(bitPattern: try varint())
            previousSeq = previousSeq &+ (try signed())
            let version = try signed()
            let start = previousStart &+ step
            previousStart = start
            let end = start &+ duration
            guard start >= low, start < high, end > first || start >= first else { continue }
            out.start.append(start)
            out.end.append(end)
            out.value.append(value)
            out.version.append(version)
            out.source.append(source)
            out.zone.append(zone)
        }
        guard p == size else { throw Damaged(reason: "\(size - p) bytes after the last sample") }
    }

    /// `powersOfTen` (private to the encoder's file): the divisors of a decimal value.
    private static let windowPowersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6]
}
