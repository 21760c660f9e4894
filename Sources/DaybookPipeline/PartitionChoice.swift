/// The partitions a request names, checked against the topic: the one place that refuses
/// a partition the topic does not have (projector, rebuild, verify, diff, replay).
public enum PartitionChoice {
    /// `chosen` (sorted as given), or every partition of a topic of `count` when nil.
    /// - Throws: `ProjectorError` `.badRequest`, with `partition` set, for the first chosen
    ///   partition outside `0..<count`.
    public static func resolve(_ chosen: [Int32]?, topic: String, count: Int) throws(ProjectorError) -> [Int32] {
        let all = Array(0..<Int32(count))
        for p in chosen ?? [] where !(0..<Int32(count)).contains(p) {
            throw ProjectorError.noSuchPartition(p, message: "\(topic) has no partition \(p): it has \(count) (0…\(count - 1))")
        }
        return chosen ?? all
    }
}
