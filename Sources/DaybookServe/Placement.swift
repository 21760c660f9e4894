import DaybookKafka

/// Where a read of one user is answered: here, by the member that owns the user's
/// partition (a redirect), or not now. Pure: the inputs are what this member knows (its
/// roles file, its URL) and what the group says; `ReadService` does the I/O around it.
///
/// | group | owner of the partition | here | stale=ok | decision |
/// |---|---|---|---|---|
/// | none (no `--group`) | – | any | any | answer here (role from the roles file) |
/// | known | this member | – | any | answer here, `owned` |
/// | known | another, with a URL | standby | yes | answer here, `standby` |
/// | known | another, with a URL | – | – | 307 to its URL |
/// | known | another, without a URL | standby | yes | answer here, `standby` |
/// | known | another, without a URL | – | – | 503: it advertises no URL |
/// | known | none (a rebalance) | standby | yes | answer here, `standby` |
/// | known | none | – | – | 503 + `Retry-After` |
public enum Placement: Sendable, Equatable {
    /// Read this member's shard; `role` is what `as_of.role` says.
    case answerHere(role: Role)
    /// 307 to `location` (the owner's URL, this path and query).
    case redirect(location: String)
    /// 503: no one can answer now; retry after `retryAfterSeconds`.
    case unavailable(reason: String, retryAfterSeconds: Int)

    public enum Role: String, Sendable, Equatable {
        /// The group gives the partition to this member.
        case owned
        /// This member follows the partition as a warm standby (it may lag).
        case standby
        /// No group is asked: the data directory answers for every user.
        case local
    }

    /// How long a client waits before asking again while the group has no owner: about
    /// one rebalance.
    public static let retryAfterSeconds = 5

    /// This member, as the group knows it.
    public struct Member: Sendable, Equatable {
        /// Its member id in the group (the roles file's `member`); nil before its projector recorded one.
        public var memberID: String?
        /// The URL it advertises (`serve --advertise`), without a trailing `/`.
        public var url: String?
        /// The partitions its data directory keeps as warm standbys.
        public var standby: Set<Int32>

        public init(memberID: String?, url: String?, standby: Set<Int32>) {
            self.memberID = memberID
            self.url = url
            self.standby = standby
        }
    }

    /// Decides for a read of `partition` asked with `target` (the raw path and query).
    ///
    /// - Parameter group: the group's assignment, nil when serve asks no group.
    public static func decide(partition: Int32, target: String, here: Member, group: GroupAssignment?, staleOK: Bool) -> Placement {
        guard let group else { return .answerHere(role: here.standby.contains(partition) ? .standby : .local) }
        let standbyAnswer = staleOK && here.standby.contains(partition)
        guard let owner = group.owner(of: partition) else {
            if standbyAnswer { return .answerHere(role: .standby) }
            return .unavailable(reason: "no member of group \(group.group) holds partition \(partition) now (a rebalance, or no projector runs): retry shortly, or send stale=ok to a member keeping it as a standby",
                                retryAfterSeconds: retryAfterSeconds)
        }
        // This member by its id, or by its URL (a member that restarted has a new id but
        // the same URL; sending it to itself would loop).
        if owner.memberID == here.memberID || (owner.url != nil && owner.url == here.url) { return .answerHere(role: .owned) }
        if standbyAnswer { return .answerHere(role: .standby) }
        guard let url = owner.url else {
            return .unavailable(reason: "partition \(partition) is held by \(owner.clientID) on \(owner.host), which advertises no URL: start its projector with --advertise URL",
                                retryAfterSeconds: retryAfterSeconds)
        }
        return .redirect(location: url + target)
    }
}
