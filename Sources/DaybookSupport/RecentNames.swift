/// The last few names a lookup table answered, each with its answer, compared before the
/// table is hashed: a stream names a handful of sources, zones or users over and over, and
/// comparing a few short strings costs less than hashing one. The oldest leaves first.
///
///     var recent = RecentNames<Int32>(capacity: 4)
///     if let id = recent.value(of: name) { return id }
///     let id = table[name]; recent.note(name, id)
///
/// Names compare byte for byte (`NameHash.sameBytes`, as `NameKey` does), not by Swift's
/// canonical equivalence: the event format's names are NFC, so the two agree on every name
/// it accepts, and a name handed out by one memo is recognised by its storage at once.
///
/// O(capacity) per call.
public struct RecentNames<Value> {
    public let capacity: Int
    /// The names, kept alive (so that no other String can take their storage while their
    /// words are compared) and compared by bytes when no slot's words match.
    @usableFromInline var names: [String] = []
    /// Each slot's name as 16 bytes (`NameHash.sameRepresentation`) and its answer, compared
    /// first: plain words, read without retaining a String per slot.
    @usableFromInline var slots: [Slot] = []

    @usableFromInline struct Slot {
        @usableFromInline var representation: Representation
        @usableFromInline var value: Value

        @inlinable init(representation: Representation, value: Value) {
            self.representation = representation
            self.value = value
        }
    }
    /// The slot the next name replaces once every slot is taken.
    @usableFromInline var next = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The answer noted for `name`, if it is among the last few.
    /// Two passes: the same 16 bytes first (a memo's names are recognised by their storage,
    /// without counting or comparing a byte of a name that is not it), then the bytes.
    /// Mutating only so that a caller's stored table is read in place: a copy of this struct
    /// for the call retained and released its arrays at every call. Inlinable,
    /// so that a caller's `Value` is specialized: the generic form looked up metadata at
    /// every call.
    @inlinable
    public mutating func value(of name: String) -> Value? {
        if Representation.available {
            let r = Representation(name)
            for i in slots.indices where slots[i].representation == r { return slots[i].value }
        }
        for i in names.indices where NameHash.sameBytes(names[i], name) {
            // The same name in another String (a later batch's memo): its storage from now on,
            // so that the names after it match by their words.
            names[i] = name
            slots[i].representation = Representation(name)
            return slots[i].value
        }
        return nil
    }

    /// Remembers `name`'s answer, in place of the oldest once full.
    @inlinable
    public mutating func note(_ name: String, _ value: Value) {
        if names.count < capacity {
            names.append(name)
            slots.append(Slot(representation: Representation(name), value: value))
        } else {
            names[next] = name
            slots[next] = Slot(representation: Representation(name), value: value)
            next = (next + 1) % capacity
        }
    }
}

/// A String's 16 bytes as two words: equal words are the same String value (the same small
/// contents, or the same storage with the same count and flags). A name noted in
/// `RecentNames` is kept alive there, so its storage cannot be reused by another String while
/// its words are compared.
@usableFromInline struct Representation: Equatable {
    @usableFromInline var a: UInt64
    @usableFromInline var b: UInt64

    /// Whether a String is two words here (64-bit platforms); elsewhere nothing is compared.
    @inlinable static var available: Bool { MemoryLayout<String>.size == 16 }

    @inlinable @inline(__always)
    init(_ name: String) {
        (a, b) = Representation.available ? unsafeBitCast(name, to: (UInt64, UInt64).self) : (0, 0)
    }
}

extension RecentNames: Sendable where Value: Sendable {}
extension RecentNames.Slot: Sendable where Value: Sendable {}
extension Representation: Sendable {}
