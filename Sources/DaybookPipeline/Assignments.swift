/// What a group member's projector owns, as the group changes it: events in (`assigned`,
/// `revoked`, from the rebalance callback), actions out (`take`, from the poll loop). No
/// I/O: the callback only records here, and the loop opens and closes the shards.
///
/// A partition revoked and given back within one poll is closed and opened again: another
/// member may have written its shard in between.
struct Assignments: Equatable {
    /// The group has given this member its share (possibly none) and not taken it back.
    private(set) var hasAssignment = false
    /// Given, not started yet (the consumer holds them paused).
    private(set) var held: Set<Int32> = []
    /// Taken away since the loop last acted; their shards may still be open.
    private(set) var released: Set<Int32> = []

    /// What the loop must do now, in this order.
    struct Actions: Equatable {
        /// Close these partitions' shards (letting go of their locks).
        var close: [Int32] = []
        /// Open these partitions' shards and start them at their offsets.
        var start: [Int32] = []
        var isEmpty: Bool { close.isEmpty && start.isEmpty }
    }

    mutating func assigned(_ partitions: some Sequence<Int32>) {
        hasAssignment = true
        held.formUnion(partitions)
    }

    mutating func revoked(_ partitions: some Sequence<Int32>) {
        hasAssignment = false
        for p in partitions {
            held.remove(p)
            released.insert(p)
        }
    }

    /// Every partition was given at once (a solo projector takes all it reads).
    mutating func took() { hasAssignment = true }

    /// Hands the pending work to the loop: what was taken away is closed, then what was
    /// given is started. Until the loop calls `started`, `held` still lists those to start.
    mutating func take() -> Actions {
        let actions = Actions(close: released.sorted(), start: held.sorted())
        released.removeAll()
        return actions
    }

    /// The loop has opened and started these.
    mutating func started(_ partitions: some Sequence<Int32>) { held.subtract(partitions) }
}
