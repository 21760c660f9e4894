import DaybookCore
import DaybookSupport

/// The samples of one (user, metric, UTC day of their start) in one blob: the state store's
/// row (table `packs`), written once per batch that changes the day instead of a row and an
/// index entry per sample.
///
/// Layout (all integers are LEB128 varints; "signed" ones are zigzag-coded first):
///
///     pack   := 0x01 count sample{count}
///     sample := flags uuid source start duration value zone seq version
///
/// - `flags` bits 0–1, the uuid's form: 0 a canonical lower-case UUID and 1 an upper-case
///   one (16 bytes); 2 any other text, front-coded against the previous text uuid of the
///   pack (the bytes it shares with it, then the length and bytes of the rest).
/// - bit 2: `start` and `duration` count whole seconds, not nanoseconds.
/// - bits 3–4, the value's form: 0 its 8 IEEE-754 bytes (little-endian); 1 an integer
///   (signed); 2 a decimal (signed mantissa, then a byte: the power of ten it is divided by).
/// - `start` (signed) is the distance from the previous sample's start (the first: from the
///   day's start), `duration` (signed) end − start, `source` and `zone` ids in the shard's
///   `names`, `seq` (signed) the distance from the previous sample's log position, `version`
///   (signed) the producer's version. Samples are written in log order (`inPackOrder`), so
///   the distances are small.
///
/// Every field comes back exactly as it went in: a uuid of mixed case or another shape is
/// kept as text, and a value is written in a shorter form only if that form gives back its
/// very bits (−0, NaN and infinities keep all 8 bytes).
struct PackedSample: Equatable {
    /// Canonical uuids are coded from and decoded to their 16 bytes, never as text.
    var uuid: SampleUUID
    var source: Int64
    var start: Int64
    var end: Int64
    var value: Double
    var zone: Int64
    var seq: Int64
    var version: Int64
}

extension PackedSample {
    /// A sample of a uuid given as text (tests, migrations).
    init(uuid: String, source: Int64, start: Int64, end: Int64, value: Double, zone: Int64, seq: Int64, version: Int64) {
        self.init(uuid: SampleUUID(uuid), source: source, start: start, end: end, value: value, zone: zone, seq: seq, version: version)
    }
}

enum SamplePack {
    static let format: UInt8 = 1

    struct Damaged: Error {
        var reason: String
    }

    /// The UTC day a sample of this start belongs to (days before 1970 are negative).
    static func day(ofStart start: Int64) -> Int64 {
        let q = start / Instant.nanosPerDay
        return start % Instant.nanosPerDay < 0 ? q - 1 : q
    }

    /// Powers of ten a decimal value may be divided by (each exact as a Double).
    private static let powersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6]

    /// The shortest exact form of `value`: (form, mantissa, power of ten).
    static func valueForm(_ value: Double) -> (form: UInt8, mantissa: Int64, power: UInt8) {
        guard value.isFinite, !(value == 0 && value.sign == .minus) else { return (0, 0, 0) }
        for (power, scale) in powersOfTen.enumerated() {
            let scaled = (value * scale).rounded()
            guard abs(scaled) < 9.0e15 else { return (0, 0, 0) }
            let mantissa = Int64(scaled)
            if Double(mantissa) / scale == value { return (power == 0 ? 1 : 2, mantissa, UInt8(power)) }
        }
        return (0, 0, 0)
    }

    /// The pack of `samples`, written in the order given (callers give pack order, `inPackOrder`).
    static func encode(_ samples: [PackedSample], day: Int64) -> [UInt8] {
        var encoder = PackEncoder(day: day)
        encoder.reserve(samples.count)
        samples.withUnsafeBufferPointer { for i in $0.indices { encoder.add($0[i]) } }
        return encoder.pack(after: [], tail: nil)
    }

    static func encode(_ samples: some Collection<PackedSample>, day: Int64) -> [UInt8] {
        encode(Array(samples), day: day)
    }

    /// The state a pack's last sample leaves for the next one, and where its samples start:
    /// what a `PackEncoder` needs to code samples after it without the stored ones decoded.
    struct Tail {
        var count = 0
        /// The offset of the first sample's bytes (after the format byte and the count).
        var bodyStart = 0
        var previousStart: Int64
        var previousSeq: Int64 = 0
        var previousText: [UInt8] = []
        /// The last sample's log position and uuid text (nil in an empty pack), to tell
        /// whether a new sample comes after it in pack order.
        var last: (seq: Int64, uuid: [UInt8])?
    }

    /// The tail of a stored pack of `day`: every sample is read (and checked) as `decode`
    /// reads it, but no String is made.
    static func tail(_ bytes: UnsafeRawBufferPointer, day: Int64) throws -> Tail {
        var tail = Tail(previousStart: day &* Instant.nanosPerDay)
        var lastUUID: [UInt8] = []
        var lastSeq: Int64 = 0
        try walk(bytes, day: day, uuids: true) { fields, uuid, textForm in
            tail.count += 1
            tail.previousStart = fields.start
            lastSeq = fields.seq
            lastUUID.removeAll(keepingCapacity: true)
            lastUUID.append(contentsOf: uuid)
            if textForm {
                tail.previousText.removeAll(keepingCapacity: true)
                tail.previousText.append(contentsOf: uuid)
            }
        }
        tail.previousSeq = lastSeq
        if tail.count > 0 { tail.last = (lastSeq, lastUUID) }
        // The count is a varint after the format byte (`walk` checked both).
        var at = 1
        while at < bytes.count, bytes[at] >= 0x80 { at += 1 }
        tail.bodyStart = min(at + 1, bytes.count)
        return tail
    }

    /// Calls `body` with each sample of a pack of `day`, in the order they were written.
    static func decode(_ bytes: UnsafeRawBufferPointer, day: Int64, _ body: (PackedSample) throws -> Void) throws {
        try walk(bytes, day: day, uuids: true, canonicalText: false) { fields, uuid, textForm in
            // A canonical uuid is in `fields` already, as its 16 bytes (its text not written).
            guard textForm else { return try body(fields) }
            var sample = fields
            sample.uuid = SampleUUID(String(decoding: uuid, as: UTF8.self))
            try body(sample)
        }
    }

    /// Calls `body` with each sample of a pack of `day`, in the order they were written: its
    /// fields (`uuid` empty, or the canonical uuid), and its uuid's UTF-8 text in a buffer valid only during
    /// the call, so that a reader that needs few uuids as Strings (hour rows: only those of
    /// samples sharing their bounds) builds no String per sample.
    ///
    /// With `uuids` false the uuids are checked and skipped, not read: `body` gets an empty
    /// buffer (a reader that needs a few of them reads the pack again).
    static func decodeFields(_ bytes: UnsafeRawBufferPointer, day: Int64, uuids: Bool = true,
                             _ body: (PackedSample, UnsafeRawBufferPointer) throws -> Void) throws {
        try walk(bytes, day: day, uuids: uuids) { fields, uuid, _ in try body(fields, uuid) }
    }

    /// `decodeFields`, telling `body` also whether the uuid was stored as text (front-coded).
    /// With `canonicalText` false a canonical uuid's text is not written (`body` gets an
    /// empty buffer for it; `fields.uuid` has it).
    private static func walk(_ bytes: UnsafeRawBufferPointer, day: Int64, uuids: Bool, canonicalText: Bool = true,
                             _ body: (PackedSample, UnsafeRawBufferPointer, Bool) throws -> Void) throws {
        var reader = Reader(bytes: bytes)
        guard try reader.byte() == format else { throw Damaged(reason: "unknown pack format") }
        let count = try reader.varint()
        guard count <= UInt64(bytes.count) else { throw Damaged(reason: "a count of \(count) samples in \(bytes.count) bytes") }
        var previousStart = day &* Instant.nanosPerDay
        var previousSeq: Int64 = 0
        var previousText: [UInt8] = []
        var previousLength: UInt64 = 0 // of the previous text uuid, when they are skipped
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { canonical in
            for _ in 0..<count {
                let flags = try reader.byte()
                let form = flags & 3
                var compact = SampleUUID()
                switch form {
                case 0, 1:
                    if uuids {
                        let at = reader.position
                        if canonicalText {
                            try reader.uuid(upper: form == 1, into: canonical)
                        } else {
                            try reader.skip(16, orThrow: "a uuid cut short at byte \(at)")
                        }
                        compact = SampleUUID(high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)),
                                             low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self)),
                                             upper: form == 1)
                    } else {
                        let at = reader.position
                        try reader.skip(16, orThrow: "a uuid cut short at byte \(at)")
                    }
                case 2:
                    let shared = try reader.varint()
                    if uuids {
                        guard shared <= UInt64(previousText.count) else { throw Damaged(reason: "a uuid sharing \(shared) bytes with one of \(previousText.count)") }
                        previousText.removeSubrange(Int(shared)...)
                        try reader.append(Int(truncatingIfNeeded: try reader.varint()), to: &previousText)
                    } else {
                        guard shared <= previousLength else { throw Damaged(reason: "a uuid sharing \(shared) bytes with one of \(previousLength)") }
                        let rest = try reader.varint()
                        try reader.skip(Int(truncatingIfNeeded: rest), orThrow: "a uuid of \(rest) bytes past the pack's end")
                        previousLength = shared + rest
                    }
                default: throw Damaged(reason: "a uuid of unknown form \(form)")
                }
                let source = Int64(bitPattern: try reader.varint())
                var step = try reader.signed()
                var duration = try reader.signed()
                if flags & 4 != 0 {
                    step = step &* Instant.nanosPerSecond
                    duration = duration &* Instant.nanosPerSecond
                }
                let value: Double
                switch flags >> 3 & 3 {
                case 0:
                    var bits: UInt64 = 0
                    for i in 0..<8 { bits |= UInt64(try reader.byte()) << (8 * UInt64(i)) }
                    value = Double(bitPattern: bits)
                case 1: value = Double(try reader.signed())
                case 2:
                    let mantissa = try reader.signed()
                    let power = Int(try reader.byte())
                    guard power < powersOfTen.count else { throw Damaged(reason: "a decimal value over 10^\(power)") }
                    value = Double(mantissa) / powersOfTen[power]
                default: throw Damaged(reason: "a value of unknown form \(flags >> 3 & 3)")
                }
                let zone = Int64(bitPattern: try reader.varint())
                let seq = previousSeq &+ (try reader.signed())
                let version = try reader.signed()
                let start = previousStart &+ step
                previousStart = start
                previousSeq = seq
                let fields = PackedSample(uuid: compact, source: source, start: start, end: start &+ duration, value: value, zone: zone,
                                          seq: seq, version: version)
                if !uuids {
                    try body(fields, UnsafeRawBufferPointer(start: nil, count: 0), form == 2)
                } else if form == 2 {
                    try previousText.withUnsafeBytes { try body(fields, $0, true) }
                } else {
                    try body(fields, canonicalText ? UnsafeRawBufferPointer(canonical) : UnsafeRawBufferPointer(start: nil, count: 0), false)
                }
            }
        }
        guard reader.atEnd else { throw Damaged(reason: "\(bytes.count - reader.position) bytes after the last sample") }
    }

    // MARK: Uuids

    // A uuid is canonical (coded as 16 bytes and a case) exactly when `SampleUUID` keeps it
    // as 16 bytes: 8-4-4-4-12 hex digits of one case (digits alone count as lower).

    // MARK: Varints

    static func putVarint(_ value: UInt64, _ out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        var atEnd: Bool { position == bytes.count }

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw Damaged(reason: "a pack cut short at byte \(position)") }
            defer { position += 1 }
            return bytes[position]
        }

        /// The next varint. Most are one byte (small distances, ids, versions): that case is
        /// inlined, and only longer ones take the loop.
        @inline(__always)
        mutating func varint() throws -> UInt64 {
            if position < bytes.count {
                let b = bytes[position]
                if b < 0x80 {
                    position += 1
                    return UInt64(b)
                }
            }
            return try longVarint()
        }

        mutating func longVarint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte()
                guard shift < 64 else { throw Damaged(reason: "a varint longer than 10 bytes at byte \(position)") }
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

        /// Steps over `length` bytes, or throws `reason` when the pack has fewer left.
        mutating func skip(_ length: Int, orThrow reason: @autoclosure () -> String) throws {
            guard length >= 0, length <= bytes.count - position else { throw Damaged(reason: reason()) }
            position += length
        }

        mutating func append(_ length: Int, to buffer: inout [UInt8]) throws {
            guard length >= 0, length <= bytes.count - position else { throw Damaged(reason: "a uuid of \(length) bytes past the pack's end") }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[position..<(position + length)]))
            position += length
        }

        private static let lowerDigits = Array("0123456789abcdef".utf8)
        private static let upperDigits = Array("0123456789ABCDEF".utf8)

        /// Writes the next 16 bytes as a canonical uuid's 36 characters into `out`.
        mutating func uuid(upper: Bool, into out: UnsafeMutableBufferPointer<UInt8>) throws {
            guard bytes.count - position >= 16 else { throw Damaged(reason: "a uuid cut short at byte \(position)") }
            let digits = upper ? Reader.upperDigits : Reader.lowerDigits
            let start = position
            position += 16
            var o = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                let b = bytes[start + i]
                out[o] = digits[Int(b >> 4)]
                out[o + 1] = digits[Int(b & 15)]
                o += 2
            }
        }
    }

    // MARK: The uuid index

    /// A stable 32-bit hash of (user, uuid), the key of the uuid index: which packs may hold
    /// the uuid (4 bytes a row). Two uuids may share it (among a million uuids, about a hundred
    /// pairs do); a reader always checks the uuid itself in the pack, so a shared hash costs
    /// the reading of another pack, never a wrong answer.
    static func hash(user: String, uuid: SampleUUID) -> Int64 {
        // A canonical uuid's text is written on the stack: the same bytes, no String.
        uuid.withUTF8 { hash(user: user, uuidBytes: $0) }
    }

    /// `hash(user:uuid:)` of a uuid's text.
    static func hash(user: String, uuid: String) -> Int64 {
        var uuid = uuid
        return uuid.withUTF8 { hash(user: user, uuidBytes: $0) }
    }

    /// FNV-1a over the user's UTF-8 bytes, 0xff, the uuid's bytes, then a finaliser, so that
    /// uuids differing in their last characters spread over the key space. The user's bytes
    /// are read from the String's own buffer (a native String hands its storage over without
    /// a copy), without the `.utf8` view's per-byte bookkeeping.
    private static func hash(user: String, uuidBytes: UnsafeBufferPointer<UInt8>) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var user = user
        user.withUTF8 { h = fnv1a(h, $0) }
        h = (h ^ 0xff) &* 0x100_0000_01b3
        h = fnv1a(h, uuidBytes)
        h = NameHash.finalize(h)
        return Int64(Int32(truncatingIfNeeded: h ^ h >> 32))
    }

    /// FNV-1a of `bytes` from `h`, byte by byte as always, the bytes read eight at a time
    /// (a byte loop cost ~2 instructions a byte more: 36 of a uuid's text for every sample
    /// written).
    @inline(__always)
    static func fnv1a(_ h: UInt64, _ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let prime: UInt64 = 0x100_0000_01b3
        var h = h
        guard let p = bytes.baseAddress else { return h }
        let n = bytes.count
        var i = 0
        while i + 8 <= n {
            let w = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            h = (h ^ (w & 0xFF)) &* prime
            h = (h ^ (w >> 8 & 0xFF)) &* prime
            h = (h ^ (w >> 16 & 0xFF)) &* prime
            h = (h ^ (w >> 24 & 0xFF)) &* prime
            h = (h ^ (w >> 32 & 0xFF)) &* prime
            h = (h ^ (w >> 40 & 0xFF)) &* prime
            h = (h ^ (w >> 48 & 0xFF)) &* prime
            h = (h ^ (w >> 56)) &* prime
            i += 8
        }
        while i < n {
            h = (h ^ UInt64(p[i])) &* prime
            i += 1
        }
        return h
    }
}
