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
    /// The coded samples, without the pack's format byte and count.
    private(set) var body: [UInt8] = []
    private(set) var count = 0
    private var previousStart: Int64
    private var previousSeq: Int64
    private var previousText: [UInt8]

    /// An encoder of the first samples of a pack of `day`.
    init(day: Int64) {
        previousStart = day &* Instant.nanosPerDay
        previousSeq = 0
        previousText = []
    }

    /// An encoder of samples that follow those of a stored pack.
    init(after tail: SamplePack.Tail) {
        previousStart = tail.previousStart
        previousSeq = tail.previousSeq
        previousText = tail.previousText
    }

    mutating func reserve(_ samples: Int) { body.reserveCapacity(body.count + samples * 24) }

    mutating func add(_ s: PackedSample) {
        var uuid = s.uuid
        // A native String hands its UTF-8 storage over without a copy.
        uuid.withUTF8 { add(uuid: $0, s) }
    }

    /// Codes `s` with `uuid` (its uuid's UTF-8 bytes) in place of `s.uuid`.
    mutating func add(uuid: UnsafeBufferPointer<UInt8>, _ s: PackedSample) {
        let step = s.start &- previousStart
        let duration = s.end &- s.start
        let seconds = step % Instant.nanosPerSecond == 0 && duration % Instant.nanosPerSecond == 0
        let value = SamplePack.valueForm(s.value)
        let canonical = SamplePack.canonical(uuid)
        var flags: UInt8 = (seconds ? 4 : 0) | value.form << 3
        switch canonical {
        case .lower: break
        case .upper: flags |= 1
        case nil: flags |= 2
        }
        body.append(flags)
        if canonical != nil {
            SamplePack.appendUUIDBytes(uuid, &body)
        } else {
            var shared = 0
            let limit = min(uuid.count, previousText.count)
            previousText.withUnsafeBufferPointer { previous in
                while shared < limit, uuid[shared] == previous[shared] { shared += 1 }
            }
            varint(UInt64(shared))
            varint(UInt64(uuid.count - shared))
            let rest = UnsafeBufferPointer(rebasing: uuid[shared...])
            body.append(contentsOf: rest)
            previousText.removeSubrange(shared...)
            previousText.append(contentsOf: rest)
        }
        varint(UInt64(bitPattern: s.source))
        signed(seconds ? step / Instant.nanosPerSecond : step)
        signed(seconds ? duration / Instant.nanosPerSecond : duration)
        switch value.form {
        case 1: signed(value.mantissa)
        case 2:
            signed(value.mantissa)
            body.append(value.power)
        default:
            var bits = s.value.bitPattern
            for _ in 0..<8 {
                body.append(UInt8(truncatingIfNeeded: bits))
                bits >>= 8
            }
        }
        varint(UInt64(bitPattern: s.zone))
        signed(s.seq &- previousSeq)
        signed(s.version)
        previousStart = s.start
        previousSeq = s.seq
        count += 1
    }

    /// The whole pack: the format byte, the count of the stored samples and these, the stored
    /// samples' bytes (`stored` from `tail.bodyStart`; none without a tail), then these.
    func pack(after stored: [UInt8], tail: SamplePack.Tail?) -> [UInt8] {
        let old = tail.map { stored.count - $0.bodyStart } ?? 0
        var out: [UInt8] = []
        out.reserveCapacity(11 + old + body.count)
        out.append(SamplePack.format)
        SamplePack.putVarint(UInt64((tail?.count ?? 0) + count), &out)
        if let tail { out.append(contentsOf: stored[tail.bodyStart...]) }
        out.append(contentsOf: body)
        return out
    }

    // Most varints are one byte (small distances, ids, versions): that case is inlined.
    @inline(__always)
    private mutating func varint(_ value: UInt64) {
        if value < 0x80 { body.append(UInt8(truncatingIfNeeded: value)) } else { SamplePack.putVarint(value, &body) }
    }

    @inline(__always)
    private mutating func signed(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }
}
