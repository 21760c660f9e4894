/// Which member of a consumer group holds which partitions of a topic: what a read service
/// routes by, and what `status` shows.
public struct GroupAssignment: Sendable, Equatable {
    /// Where the answer came from.
    public enum Source: String, Sendable {
        /// The group's coordinator (DescribeGroups): the assignment in force now.
        case coordinator
        /// The owner claims projectors write with their commits (`OwnerClaim`), read back
        /// from the group's committed offsets: each partition's member is the last one that
        /// started it. Used when the cluster does not describe groups (librdkafka's mock
        /// cluster); a member that died keeps its claims until another member starts them.
        case ownerClaims = "owner_claims"
    }

    public struct Member: Sendable, Equatable {
        public var memberID: String
        public var clientID: String
        public var host: String
        /// The partitions of the topic asked about that it holds, sorted.
        public var partitions: [Int32]
        /// The URL its read service answers at, as its owner claim advertises it
        /// (`OwnerClaim.url`); nil when it advertises none.
        public var url: String?

        public init(memberID: String, clientID: String, host: String, partitions: [Int32], url: String? = nil) {
            self.memberID = memberID
            self.clientID = clientID
            self.host = host
            self.partitions = partitions
            self.url = url
        }
    }

    public var group: String
    /// The coordinator's state of the group (Stable, PreparingRebalance, Empty…); nil from claims.
    public var state: String?
    public var members: [Member]
    public var source: Source

    public init(group: String, state: String?, members: [Member], source: Source) {
        self.group = group
        self.state = state
        self.members = members
        self.source = source
    }

    /// The member holding `partition`, nil when none does.
    public func owner(of partition: Int32) -> Member? { members.first { $0.partitions.contains(partition) } }

    /// The partitions of `topic` in a consumer-protocol assignment (Kafka's
    /// ConsumerProtocolAssignment: int16 version, then [topic string, [int32 partition]],
    /// then user data), nil when the bytes are not one.
    public static func partitions(inAssignment bytes: [UInt8], topic: String) -> [Int32]? {
        var reader = BigEndianReader(bytes)
        guard bytes.count >= 6, reader.int16() != nil, let topics = reader.int32(), topics >= 0 else { return bytes.isEmpty ? [] : nil }
        var out: [Int32] = []
        for _ in 0..<topics {
            guard let length = reader.int16(), length >= 0, let name = reader.bytes(Int(length)),
                  let count = reader.int32(), count >= 0 else { return nil }
            for _ in 0..<count {
                guard let p = reader.int32() else { return nil }
                if String(decoding: name, as: UTF8.self) == topic { out.append(p) }
            }
        }
        return out.sorted()
    }

    private struct BigEndianReader {
        let bytes: [UInt8]
        var at = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        mutating func bytes(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, at + n <= bytes.count else { return nil }
            defer { at += n }
            return bytes[at..<at + n]
        }
        mutating func int16() -> Int16? { bytes(2).map { Int16(bitPattern: UInt16($0.first!) << 8 | UInt16($0.last!)) } }
        mutating func int32() -> Int32? {
            bytes(4).map { b in Int32(bitPattern: b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) }
        }
    }
}

/// What a projector that owns a partition says about itself in the metadata of the offsets
/// it commits (informational commits: the truth is the shard's offset), so that who owns a
/// partition can be read back from the group where the cluster does not describe groups.
public struct OwnerClaim: Sendable, Equatable {
    public var memberID: String
    public var clientID: String
    public var host: String
    /// Where the member's read service answers (`daybook project --advertise`, as Kafka
    /// Streams' `application.server`): readers of another member redirect there.
    public var url: String?

    public init(memberID: String, clientID: String, host: String, url: String? = nil) {
        self.memberID = memberID
        self.clientID = clientID
        self.host = host
        self.url = url
    }

    static let prefix = "daybook-owner/1"

    /// `daybook-owner/1`, then tab-separated `member=`, `client=`, `host=` and, when there
    /// is one, `url=` (tabs and newlines in a value become spaces). A field is added, not
    /// the version changed: a reader of claims without `url=` reads these too.
    public var text: String {
        let clean = { (s: String) in String(s.map { $0 == "\t" || $0 == "\n" ? " " : $0 }) }
        var fields = [Self.prefix, "member=" + clean(memberID), "client=" + clean(clientID), "host=" + clean(host)]
        if let url { fields.append("url=" + clean(url)) }
        return fields.joined(separator: "\t")
    }

    /// The claim in commit metadata; nil for metadata that is not one (another tool's commit).
    public init?(text: String) {
        let fields = text.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.first == Substring(Self.prefix) else { return nil }
        var values: [String: String] = [:]
        for field in fields.dropFirst() {
            guard let eq = field.firstIndex(of: "=") else { return nil }
            values[String(field[..<eq])] = String(field[field.index(after: eq)...])
        }
        guard let member = values["member"], let client = values["client"], let host = values["host"] else { return nil }
        self.init(memberID: member, clientID: client, host: host, url: values["url"].flatMap { $0.isEmpty ? nil : $0 })
    }
}

extension KafkaConsumer {
    /// This member's id in its group, once it has joined (nil before, and when reading directly).
    public var memberID: String? { core.memberID() }

    /// Commits offsets to the group with `claim` as their metadata (informational only);
    /// waits for the coordinator's answer unless `async`.
    public func commit(_ offsets: [TopicPartition: Int64], claim: OwnerClaim, async: Bool = true) throws(KafkaError) {
        try core.commit(offsets, metadata: claim.text, async: async)
    }

    /// Who in this consumer's group (`ConsumerConfiguration.groupID`; this consumer need not
    /// have joined it) holds which of `topic`'s `count` partitions: the coordinator's
    /// description, or where the cluster does not serve it, the owners' claims in the
    /// group's committed offsets (`GroupAssignment.Source`).
    public func groupAssignment(topic: String, count: Int, timeoutMilliseconds: Int32 = 10_000) throws(KafkaError) -> GroupAssignment {
        let partitions = (0..<Int32(count)).map { TopicPartition(topic, $0) }
        if let described = try core.client.describeGroup(groupID, timeoutMilliseconds: timeoutMilliseconds) {
            // The coordinator knows no URLs: they come from the members' claims, by member id
            // (best effort: without them a reader answers 503 instead of redirecting).
            var urls: [String: String] = [:]
            for claim in ((try? core.committed(partitions, timeoutMilliseconds: timeoutMilliseconds)) ?? [:]).values.compactMap({ OwnerClaim(text: $0.metadata) }) {
                if let url = claim.url { urls[claim.memberID] = url }
            }
            let members = described.members.map { m in
                GroupAssignment.Member(memberID: m.id, clientID: m.clientID, host: m.host,
                                       partitions: GroupAssignment.partitions(inAssignment: m.assignment, topic: topic) ?? [], url: urls[m.id])
            }
            return GroupAssignment(group: groupID, state: described.state, members: members.sorted { $0.memberID < $1.memberID }, source: .coordinator)
        }
        let committed = try core.committed(partitions, timeoutMilliseconds: timeoutMilliseconds)
        var members: [String: GroupAssignment.Member] = [:]
        for tp in partitions {
            guard let claim = committed[tp].flatMap({ OwnerClaim(text: $0.metadata) }) else { continue }
            members[claim.memberID, default: .init(memberID: claim.memberID, clientID: claim.clientID, host: claim.host, partitions: [], url: claim.url)]
                .partitions.append(tp.partition)
        }
        return GroupAssignment(group: groupID, state: nil, members: members.values.sorted { $0.memberID < $1.memberID }, source: .ownerClaims)
    }
}
