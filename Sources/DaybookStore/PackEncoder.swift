import DaybookCore

/// Samples coded into a pack's bytes one at a time (`SamplePack`'s layout), each against the
/// state the one before it left: its start, its log position and the last text uuid.
///
/// `SamplePack.encode` runs one over a whole pack. A batch that only appends to a stored pack
/// runs one from the pack's `SamplePack.Tail`: the stored samples' bytes are kept as they are
/// and only the new ones are coded, which gives the very bytes `encode` gives for all of them
/// (the layout is sequential: a sample's bytes depend only on the state before it).
///
/// Complexity: O(1) per sample, plus the length of a text uuid.
struct PackEncoder {
    /// The coded samples are `body[..<used]` (no format byte, no count); the rest is room,
    /// so that a sample is written through one pointer instead of an append per byte.
    private var body: [UInt8] = []
    private var used = 0
    private(set) var count = 0
    private var previousStart: Int64
    private var previousSeq: Int64
    /// The last text uuid (front coding shares its bytes), kept as the String it came in.
    private var previousText: String

    /// An encoder of the first samples of a pack of `day`.
    init(day: Int64) {
        previousStart = day &* Instant.nanosPerDay
        previousSeq = 0
        previousText = ""
    }

    /// An encoder of samples that follow those of a stored pack.
    init(after tail: SamplePack.Tail) {
        previousStart = tail.previousStart
        previousSeq = tail.previousSeq
        previousText = String(decoding: tail.previousText, as: UTF8.self)
    }

    mutating func reserve(_ samples: Int) { grow(samples * 32) }

    /// The most a sample takes besides a text uuid's own bytes: flags, 2 varints of a text
    /// uuid (or 16 bytes), 6 varints of up to 10 bytes, a value of up to 11.
    private static let sampleRoom = 1 + 20 + 60 + 11

    private mutating func grow(_ bytes: Int) {
        guard body.count - used < bytes else { return }
        body.append(contentsOf: repeatElement(0, count: max(bytes, body.count)))
    }

    mutating func add(_ s: PackedSample) {
        if let canonical = s.uuid.canonical {
            code(s, canonical: canonical, text: UnsafeBufferPointer(start: nil, count: 0))
        } else {
            // A native String hands its UTF-8 storage over without a copy.
            s.uuid.withUTF8 { code(s, canonical: nil, text: $0) }
            previousText = s.uuid.text
        }
        previousStart = s.start
        previousSeq = s.seq
        count += 1
    }

    /// Codes `s`, whose uuid is `canonical` (16 bytes in two words) or else the UTF-8 `text`.
    private mutating func code(_ s: PackedSample, canonical: (high: UInt64, low: UInt64, upper: Bool)?,
                               text uuid: UnsafeBufferPointer<UInt8>) {
        let step = s.start &- previousStart
        let duration = s.end &- s.start
        let seconds = step % Instant.nanosPerSecond == 0 && duration % Instant.nanosPerSecond == 0
        let value = SamplePack.valueForm(s.value)
        var flags: UInt8 = (seconds ? 4 : 0) | value.form << 3
        switch canonical {
        case .some(let c): if c.upper { flags |= 1 }
        case nil: flags |= 2
        }
        var shared = 0
        if canonical == nil {
            previousText.withUTF8 { previous in
                let limit = min(uuid.count, previous.count)
                while shared < limit, uuid[shared] == previous[shared] { shared += 1 }
            }
        }
        grow(PackEncoder.sampleRoom + uuid.count)
        var at = used
        let previousSeq = self.previousSeq
        body.withUnsafeMutableBufferPointer { buffer in
            let out = buffer.baseAddress!
            out[at] = flags
            at += 1
            if let canonical {
                // The 16 bytes in the text's order: each word big-endian.
                UnsafeMutableRawPointer(out + at).storeBytes(of: canonical.high.bigEndian, as: UInt64.self)
                UnsafeMutableRawPointer(out + at + 8).storeBytes(of: canonical.low.bigEndian, as: UInt64.self)
                at += 16
            } else {
                PackEncoder.put(UInt64(shared), out, &at)
                PackEncoder.put(UInt64(uuid.count - shared), out, &at)
                let rest = uuid.count - shared
                if rest > 0 { (out + at).update(from: uuid.baseAddress! + shared, count: rest) }
                at += rest
            }
            PackEncoder.put(UInt64(bitPattern: s.source), out, &at)
            PackEncoder.signed(seconds ? step / Instant.nanosPerSecond : step, out, &at)
            PackEncoder.signed(seconds ? duration / Instant.nanosPerSecond : duration, out, &at)
            switch value.form {
            case 1: PackEncoder.signed(value.mantissa, out, &at)
            case 2:
                PackEncoder.signed(value.mantissa, out, &at)
                out[at] = value.power
                at += 1
            default:
                var bits = s.value.bitPattern
                for _ in 0..<8 {
                    out[at] = UInt8(truncatingIfNeeded: bits)
                    at += 1
                    bits >>= 8
                }
            }
            PackEncoder.put(UInt64(bitPattern: s.zone), out, &at)
            PackEncoder.signed(s.seq &- previousSeq, out, &at)
            PackEncoder.signed(s.version, out, &at)
        }
        used = at
    }

    /// The whole pack: the format byte, the count of the stored samples and these, the stored
    /// samples' bytes (`stored` from `tail.bodyStart`; none without a tail), then these.
    func pack(after stored: [UInt8], tail: SamplePack.Tail?) -> [UInt8] {
        let old = tail.map { stored.count - $0.bodyStart } ?? 0
        var out: [UInt8] = []
        out.reserveCapacity(11 + old + used)
        out.append(SamplePack.format)
        SamplePack.putVarint(UInt64((tail?.count ?? 0) + count), &out)
        if let tail { out.append(contentsOf: stored[tail.bodyStart...]) }
        out.append(contentsOf: body[..<used])
        return out
    }

    @inline(__always)
    private static func put(_ value: UInt64, _ out: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        var v = value
        while v >= 0x80 {
            out[at] = UInt8(truncatingIfNeeded: v) | 0x80
            at += 1
            v >>= 7
        }
        out[at] = UInt8(truncatingIfNeeded: v)
        at += 1
    }

    @inline(__always)
    private static func signed(_ value: Int64, _ out: UnsafeMutablePointer<UInt8>, _ at: inout Int) {
        put(UInt64(bitPattern: (value << 1) ^ (value >> 63)), out, &at)
    }
}
