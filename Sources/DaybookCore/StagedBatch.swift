import DaybookSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Ledger {
    /// An event of a staged batch as a projection holds it, with its log position and Kafka
    /// timestamp (`ShardProjection.apply`). Plain data: the user, source, zone (and a uuid
    /// that is not a canonical UUID) are numbers into the batch's `StagedBatch.names`, so
    /// that copying, moving or freeing an event touches no reference count, and a ledger
    /// resolves each name once per batch (`Ledger.BatchContext`) instead of hashing or
    /// comparing it at every event. Read one through its batch: `StagedBatch.sample(at:)`
    /// and `event(at:)` give the Strings back.
    ///
    /// 88 bytes (the `Event` form with its Strings took 136, and a heap String more for a
    /// long zone or a uuid that is not canonical): the staging budget counts it, so a
    /// smaller form gives larger batches from the same memory.
    public struct Staged: Sendable, BitwiseCopyable {
        /// Which event it is.
        public enum Kind: UInt8, Sendable, BitwiseCopyable {
            case added, deleted, checkedIn
        }
        public var kind: Kind
        /// `added`: the sample's metric (a placeholder otherwise).
        public var metric: Metric
        /// How `uuidHigh` and `uuidLow` hold the uuid (`added` and `deleted`).
        var uuidForm: UUIDForm
        /// Whether `deliveredAtNanoseconds` holds a delivery time.
        var delivered: Bool
        /// The user's name in the batch's `names` (every kind).
        public var user: Int32
        /// The source's name in `names` (`added`, `checkedIn`; -1 otherwise).
        public var source: Int32
        /// The zone's name in `names` (`added`; -1 otherwise).
        public var zone: Int32
        /// `checkedIn`: the metrics the source said it syncs, as an index into the batch's
        /// metric lists (-1: not said).
        var checkInMetrics: Int32
        /// A canonical uuid's 16 bytes (`SampleUUID`), or in `uuidLow` the name of a uuid text.
        var uuidHigh: UInt64
        var uuidLow: UInt64
        /// `added`: the sample's start; `checkedIn`: its time.
        public var start: Instant
        public var end: Instant
        public var value: Double
        public var version: Int64
        public var position: Int64
        var deliveredAtNanoseconds: Int64

        /// The Kafka timestamp of its message (nil from a file).
        public var deliveredAt: Instant? {
            delivered ? Instant(nanoseconds: deliveredAtNanoseconds) : nil
        }

        /// An `added` event at `position` with nothing else set yet (no names: -1).
        static func blank(position: Int64, deliveredAt: Instant?) -> Staged {
            let zero = Instant(nanoseconds: 0)
            return Staged(kind: .added, metric: .steps, uuidForm: .none, delivered: deliveredAt != nil,
                          user: -1, source: -1, zone: -1, checkInMetrics: -1, uuidHigh: 0, uuidLow: 0,
                          start: zero, end: zero, value: 0, version: 0, position: position,
                          deliveredAtNanoseconds: deliveredAt?.nanoseconds ?? 0)
        }

        enum UUIDForm: UInt8, BitwiseCopyable {
            case none, lower, upper, text
        }
    }
}

/// A batch of staged events and the names they use, each name once (`Ledger.Staged`).
///
///     var batch = StagedBatch()
///     batch.append(event, position: 41, deliveredAt: nil)
///     batch.sample(at: 0).user    // the event's user again
///
/// Names are compared byte for byte (`NameKey`, as the ledger keys users), and the last few
/// are remembered, so a batch of a few users' syncs hashes each name about once.
/// Not thread-safe: one stager fills a batch, then one projection applies it.
public struct StagedBatch: Sendable {
    public private(set) var events: [Ledger.Staged] = []
    /// The users, sources, zones and uuid texts the events name, each once.
    public private(set) var names: [String] = []
    /// The metric lists of the batch's check-ins (`Ledger.Staged.checkInMetrics`).
    private var metricLists: [[Metric]] = []
    /// Every name's UTF-8 bytes, one after another, and where each lies: names are matched
    /// against these (a line's bytes need no String to be found).
    private var text: [UInt8] = []
    private var spans: [Span] = []
    /// Name by `NameHash` of its bytes (the first name of a hash; another one with the same
    /// hash, never seen in practice, is found by a scan).
    private var byHash: [HashKey: Int32] = [:]
    /// The last sixteen names found, by their first eight bytes and length: a partition's
    /// events name a few users, sources and zones over and over (eight were too few for six
    /// users, their sources and zones interleaved).
    private var recent: [Recent] = []
    private var nextRecent = 0
    /// Heap bytes of the names and metric lists the batch holds (its events take
    /// `MemoryLayout<Ledger.Staged>.stride` each besides).
    public private(set) var nameBytes = 0

    public init() {}

    /// The batch of `events` at `positions` 0, 1, 2, … (tests, in-memory callers).
    public init(_ events: some Sequence<Event>) {
        for (i, event) in events.enumerated() { append(event, position: Int64(i)) }
    }

    public var count: Int { events.count }
    public var isEmpty: Bool { events.isEmpty }
    /// Bytes the batch takes: its events' slots and its names.
    public var bytes: Int { events.count * MemoryLayout<Ledger.Staged>.stride + nameBytes }

    public mutating func reserveCapacity(_ n: Int) { events.reserveCapacity(n) }

    /// Adds `event` at log position `position`.
    /// - Returns: the name of its user.
    @discardableResult
    public mutating func append(_ event: borrowing Event, position: Int64, deliveredAt: Instant? = nil) -> Int32 {
        var staged = Ledger.Staged.blank(position: position, deliveredAt: deliveredAt)
        switch event {
        case .sampleAdded(let sample):
            staged.metric = sample.metric
            staged.user = id(of: sample.user)
            staged.source = id(of: sample.source)
            staged.zone = id(of: sample.zone)
            setUUID(sample.compactUUID, of: &staged)
            staged.start = sample.start
            staged.end = sample.end
            staged.value = sample.value
            staged.version = sample.version
        case .sampleDeleted(let user, let uuid):
            staged.kind = .deleted
            staged.user = id(of: user)
            setUUID(SampleUUID(uuid), of: &staged)
        case .sourceCheckedIn(let c):
            staged.kind = .checkedIn
            staged.user = id(of: c.user)
            staged.source = id(of: c.source)
            staged.start = c.at
            staged.end = c.at
            if let metrics = c.metrics {
                staged.checkInMetrics = Int32(metricLists.count)
                metricLists.append(metrics)
                nameBytes += 32 + metrics.count
            }
        }
        events.append(staged)
        return staged.user
    }

    /// Takes the last event out again (a stager that found it misplaced); its names stay.
    public mutating func removeLast() { events.removeLast() }

    /// Empties the batch, names and all.
    public mutating func removeAll() {
        events = []
        names = []
        metricLists = []
        text = []
        spans = []
        byHash = [:]
        recent = []
        nextRecent = 0
        nameBytes = 0
    }

    /// Name `id` of the batch.
    @inline(__always)
    public func name(_ id: Int32) -> String { names[Int(id)] }

    /// Whether name `id`'s UTF-8 bytes are `bytes` (a message's key against its user).
    public func name(_ id: Int32, is bytes: UnsafeBufferPointer<UInt8>) -> Bool { same(bytes, Int(id)) }

    /// The uuid of event `i` (`added` or `deleted`).
    public func uuid(at i: Int) -> SampleUUID { uuid(of: events[i]) }

    func uuid(of e: Ledger.Staged) -> SampleUUID {
        switch e.uuidForm {
        case .lower: return SampleUUID(form: .lower(e.uuidHigh, e.uuidLow))
        case .upper: return SampleUUID(form: .upper(e.uuidHigh, e.uuidLow))
        case .text: return SampleUUID(form: .text(names[Int(e.uuidLow)]))
        case .none: return SampleUUID()
        }
    }

    /// Event `i` as a sample: `added`, the sample; `deleted`, its user and uuid; `checkedIn`,
    /// its user, source and time (`start`). The other fields are placeholders.
    public func sample(at i: Int) -> Sample {
        let e = events[i]
        return Sample(user: names[Int(e.user)], uuid: uuid(of: e), metric: e.metric,
                      source: e.source < 0 ? "" : names[Int(e.source)], start: e.start, end: e.end, value: e.value,
                      zone: e.zone < 0 ? "" : names[Int(e.zone)], version: e.version)
    }

    /// Event `i` as the log had it.
    public func event(at i: Int) -> Event {
        let e = events[i]
        switch e.kind {
        case .added: return .sampleAdded(sample(at: i))
        case .deleted: return .sampleDeleted(user: names[Int(e.user)], uuid: uuid(of: e).text)
        case .checkedIn:
            return .sourceCheckedIn(CheckIn(user: names[Int(e.user)], source: names[Int(e.source)], at: e.start,
                                            metrics: e.checkInMetrics < 0 ? nil : metricLists[Int(e.checkInMetrics)]))
        }
    }

    private mutating func setUUID(_ uuid: SampleUUID, of staged: inout Ledger.Staged) {
        switch uuid.form {
        case .lower(let high, let low):
            staged.uuidForm = .lower
            (staged.uuidHigh, staged.uuidLow) = (high, low)
        case .upper(let high, let low):
            staged.uuidForm = .upper
            (staged.uuidHigh, staged.uuidLow) = (high, low)
        case .text(let text):
            staged.uuidForm = .text
            staged.uuidLow = UInt64(id(of: text))
        }
    }

    /// Adds the event of a line the fast reader parsed (`FastEventReader.parse`), its names
    /// numbered from the line's bytes; nil (nothing added) when a name that is not ASCII is
    /// not acceptable (the general path then names the fault).
    /// - Returns: the name of its user.
    mutating func append(_ parsed: FastEventReader.Parsed, position: Int64, deliveredAt: Instant?) -> Int32? {
        var staged = Ledger.Staged.blank(position: position, deliveredAt: deliveredAt)
        switch parsed {
        case .added(let user, let sample):
            guard let u = id(of: user), let source = id(of: sample.source), let zone = id(of: sample.zone),
                  setUUID(sample.uuid, of: &staged) else { return nil }
            staged.user = u
            staged.source = source
            staged.zone = zone
            staged.metric = sample.metric
            staged.start = sample.start
            staged.end = sample.end
            staged.value = sample.value
            staged.version = sample.version
        case .deleted(let user, let uuid):
            guard let u = id(of: user), setUUID(uuid, of: &staged) else { return nil }
            staged.kind = .deleted
            staged.user = u
        }
        events.append(staged)
        return staged.user
    }

    /// A uuid's text into `staged`: a canonical UUID as its 16 bytes, any other as a name.
    private mutating func setUUID(_ text: FastEventReader.Text, of staged: inout Ledger.Staged) -> Bool {
        if let canonical = SampleUUID(canonical: text.bytes) {
            setUUID(canonical, of: &staged)
            return true
        }
        guard let id = id(of: text) else { return false }
        staged.uuidForm = .text
        staged.uuidLow = UInt64(id)
        return true
    }

    /// The number of a name read from a line: ASCII by its bytes; anything else only if it
    /// is a name the event format accepts (`FastEventReader.id`), else nil.
    private mutating func id(of text: FastEventReader.Text) -> Int32? {
        if text.ascii { return id(of: text.bytes) { String(decoding: $0, as: UTF8.self) } }
        guard let name = FastEventReader.id(text) else { return nil }
        return id(of: name)
    }

    /// The number of `name` in `names`, added if new.
    private mutating func id(of name: String) -> Int32 {
        var utf8 = name
        return utf8.withUTF8 { bytes in id(of: bytes) { _ in name } }
    }

    /// The number of the name of these UTF-8 bytes, added (as `make` makes its String) if new.
    private mutating func id(of bytes: UnsafeBufferPointer<UInt8>, make: (UnsafeBufferPointer<UInt8>) -> String) -> Int32 {
        let count = bytes.count
        var head: UInt64 = 0
        if count >= 8 {
            head = UnsafeRawBufferPointer(bytes).loadUnaligned(as: UInt64.self)
        } else {
            for k in 0..<count { head |= UInt64(bytes[k]) << (8 * UInt64(k)) }
        }
        for r in recent where r.head == head && Int(r.count) == count {
            if count <= 8 || same(bytes, Int(r.id)) { return r.id }
        }
        let hash = NameHash.of(UnsafeRawBufferPointer(bytes))
        var id: Int32
        if let known = byHash[HashKey(hash)], same(bytes, Int(known)) {
            id = known
        } else if let other = spans.indices.first(where: { same(bytes, $0) }) {
            id = Int32(other) // another name with the same hash as a first one
        } else {
            id = Int32(names.count)
            names.append(make(bytes))
            spans.append(Span(offset: text.count, count: count))
            text.append(contentsOf: bytes)
            if byHash[HashKey(hash)] == nil { byHash[HashKey(hash)] = id }
            // Its String's slot, its heap storage when too long to be inline, its bytes and span.
            nameBytes += 16 + (count > 15 ? (count + 32 + 15) & ~15 : 0) + count + 16 + 32
        }
        let r = Recent(head: head, count: Int32(count), id: id)
        if recent.count < 16 {
            recent.append(r)
        } else {
            recent[nextRecent] = r
            nextRecent = (nextRecent + 1) & 15
        }
        return id
    }

    /// Whether name `id`'s bytes are `bytes`.
    @inline(__always)
    private func same(_ bytes: UnsafeBufferPointer<UInt8>, _ id: Int) -> Bool {
        let span = spans[id]
        guard span.count == bytes.count else { return false }
        guard let base = bytes.baseAddress else { return true }
        return text.withUnsafeBufferPointer { all in all.baseAddress.map { memcmp($0 + span.offset, base, span.count) == 0 } ?? false }
    }

    private struct Span {
        var offset: Int
        var count: Int
    }

    private struct Recent {
        var head: UInt64
        var count: Int32
        var id: Int32
    }

    /// A `NameHash`, already mixed: hashed without SipHash.
    private struct HashKey: Hashable {
        var value: UInt64
        init(_ value: UInt64) { self.value = value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
        func _rawHashValue(seed: Int) -> Int { NameHash.table(value, seed: seed) }
    }
}
