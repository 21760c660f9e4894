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
    private var names: [String] = []
    private var values: [Value] = []
    /// The slot the next name replaces once every slot is taken.
    private var next = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The answer noted for `name`, if it is among the last few.
    /// Two passes: the same 16 bytes first (a memo's names are recognised by their storage,
    /// without counting or comparing a byte of a name that is not it), then the bytes.
    public func value(of name: String) -> Value? {
        for i in names.indices where NameHash.sameRepresentation(names[i], name) { return values[i] }
        for i in names.indices where NameHash.sameBytes(names[i], name) { return values[i] }
        return nil
    }

    /// Remembers `name`'s answer, in place of the oldest once full.
    public mutating func note(_ name: String, _ value: Value) {
        if names.count < capacity {
            names.append(name)
            values.append(value)
        } else {
            names[next] = name
            values[next] = value
            next = (next + 1) % capacity
        }
    }
}
