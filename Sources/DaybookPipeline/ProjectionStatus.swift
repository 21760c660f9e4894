import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookStore
import Foundation

/// What a data directory's projection looks like now, per partition, and with a cluster
/// how far behind the log each shard is: what an operator asks before opening SQLite files
/// by hand (`ProjectionStatus.read`).
public struct ProjectionStatus: Sendable {
    public struct Partition: Sendable, Equatable {
        public var partition: Int32
        /// The shard file readers of the directory use; nil when the directory has none.
        public var shard: String?
        /// The generation the shard belongs to (0: a flat directory).
        public var generation: Int
        public var nextOffset: Int64
        /// With a cluster: the end of the partition's log (its next offset to be written).
        public var logEndOffset: Int64?
        /// `logEndOffset - nextOffset`: events published and not yet in the shard; nil
        /// without a cluster, and for a shard not from the log reached (another cluster's,
        /// or one ahead of the log's end: a warning says which).
        public var lag: Int64?
        public var deadLetters: Int
        /// Dead letters recorded in this shard and not forwarded to the dead-letter topic
        /// from it (a standby's are forwarded by the partition's owner).
        public var deadLettersPending: Int
        /// When the shard last committed a batch (UTC).
        public var lastCommit: String?
        /// With a cluster: whether the shard's recorded cluster is the one reached (nil when
        /// it records none yet).
        public var clusterMatches: Bool?
        /// Whether the shard's priority is the manifest's (nil in a flat directory: each
        /// shard records its own).
        public var priorityMatches: Bool?
        /// The cluster the shard's offsets refer to, as it records it.
        public var clusterID: String?
        /// What the directory's projector last said it does with the partition: `owned`,
        /// `standby`, or nil (not recorded; no projector with roles has run here).
        public var role: String?
        /// With a group: the member holding the partition now.
        public var owner: GroupAssignment.Member?
    }

    public var directory: String
    public var topic: String
    public var generation: Int
    /// The directory's roles file, if a projector wrote one (`ProjectorRoles`).
    public var roles: ProjectorRoles?
    /// True when the roles file says its projector is running, was written on this host,
    /// and no process has its pid: a projector killed with -9 (or crashed) never records
    /// that it stopped. False when that cannot be told (written on another host).
    public var projectorGone = false
    /// With a group: who holds which partitions.
    public var group: GroupAssignment?
    public var partitions: [Partition]
    /// Things an operator should act on, in this library's words.
    public var warnings: [String]

    /// Whether `roles` records a running projector of this host whose process is not there.
    /// (A pid used again by another process counts as running: never a false "gone".)
    static func isGone(_ roles: ProjectorRoles) -> Bool {
        guard roles.running, roles.pid > 0, roles.host == Projector.hostName else { return false }
        return kill(roles.pid, 0) != 0 && errno == ESRCH
    }

    /// Reads `directory`'s shards of `topic`; with `access`, asks the cluster for each
    /// partition's log end (and lists the topic's partitions that have no shard here);
    /// with `withGroup` too, asks who in `access.consumer.groupID` holds each partition.
    ///
    /// - Throws: `ShardError` `.missingDirectory` when `directory` is not there, `.notAShard`
    ///   for a file that is not a shard (a damaged roles file is a warning); `ProjectorError` `.kafka` when the cluster does not
    ///   answer within `timeout` or the topic is missing.
    public static func read(directory: String, topic: String = "health-samples", access: LogAccess? = nil, withGroup: Bool = false,
                            timeout: Duration = .seconds(30), logger: Logger = .silent) throws -> ProjectionStatus {
        let layout = try DataLayout.read(directory)
        let reader = ShardReader(directory: directory)
        var byPartition: [Int32: Partition] = [:]
        for path in try layout.shardPaths() {
            guard let partition = Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: topic),
                  FileManager.default.fileExists(atPath: path) else { continue }
            let state = try reader.state(ofShardAt: path)
            let folder = ((path as NSString).deletingLastPathComponent as NSString).lastPathComponent
            byPartition[partition] = Partition(
                partition: partition, shard: path, generation: DataLayout.generationNumber(folder) ?? 0, nextOffset: state.nextOffset,
                deadLetters: state.deadLetters, deadLettersPending: state.deadLettersPending, lastCommit: state.lastCommit,
                clusterMatches: nil, priorityMatches: layout.priority.map { state.fingerprint == $0.fingerprint },
                clusterID: state.clusterID)
        }
        // The roles file only says what the projector last did: damaged, it costs the ROLE
        // column and a warning, not the shards' figures (as `totals` reads on without it).
        var warnings: [String] = []
        let roles: ProjectorRoles?
        do {
            roles = try ProjectorRoles.read(directory)
        } catch {
            roles = nil
            warnings.append("\(error)")
        }
        var status = ProjectionStatus(directory: directory, topic: topic, generation: layout.generation, roles: roles, group: nil,
                                      partitions: [], warnings: warnings)
        if let roles, Self.isGone(roles) {
            status.projectorGone = true
            status.warnings.append("\(ProjectorRoles.fileName) says projector \(roles.clientID) (pid \(roles.pid)) is running, but no process on this host has that pid: it was killed or crashed at some time after \(roles.updatedAt). Its partitions move to another member once its session times out; start a projector on \(directory) to go on from its shards")
        }
        for p in roles?.owned ?? [] { byPartition[p]?.role = "owned" }
        for p in roles?.standby ?? [] { byPartition[p]?.role = "standby" }

        if let access {
            let (consumer, count) = try access.consumer(counting: topic, timeout: timeout, logger: logger)
            defer { consumer.close() }
            let cluster = consumer.clusterID(timeoutMilliseconds: timeout.wholeMilliseconds)
            for p in 0..<Int32(count) where byPartition[p] == nil {
                byPartition[p] = Partition(partition: p, shard: nil, generation: layout.generation, nextOffset: 0, deadLetters: 0, deadLettersPending: 0)
            }
            for p in byPartition.keys.sorted() {
                guard var entry = byPartition[p] else { continue }
                if let recorded = entry.clusterID, let cluster { entry.clusterMatches = recorded == cluster }
                if entry.clusterMatches == false {
                    status.warnings.append("partition \(p): \(entry.shard ?? "its shard") was built from the log of cluster \(entry.clusterID ?? "?"), not the cluster reached (\(cluster ?? "?")): its offsets and lag mean nothing here")
                }
                guard p < count else {
                    status.warnings.append("partition \(p): the topic has \(count) partition\(count == 1 ? "" : "s") in the cluster reached, so \(entry.shard ?? "this shard") is not from this log (another cluster, or a recreated topic)")
                    byPartition[p] = entry
                    continue
                }
                do {
                    let marks = try consumer.watermarks(TopicPartition(topic, p), timeoutMilliseconds: timeout.wholeMilliseconds)
                    entry.logEndOffset = marks.high
                    // A shard of another log has no lag behind this one: a difference of
                    // unrelated offsets (negative when the shard is ahead) would read as one.
                    if entry.clusterMatches != false && entry.nextOffset <= marks.high { entry.lag = marks.high - entry.nextOffset }
                    if entry.nextOffset > marks.high {
                        status.warnings.append("partition \(p): \(entry.shard ?? "the shard") has applied offsets up to \(entry.nextOffset - 1), but the log ends at \(marks.high): it is not the log the shard was built from")
                    } else if entry.nextOffset < marks.low {
                        status.warnings.append("partition \(p): the log starts at offset \(marks.low), but \(entry.shard ?? "the shard") needs offset \(entry.nextOffset) next: messages are gone, this shard cannot be made exact; rebuild it from a complete log")
                    }
                } catch {
                    throw ProjectorError.kafka("reading the offsets of \(TopicPartition(topic, p)): \(error)", error)
                }
                byPartition[p] = entry
            }
            if withGroup {
                let group: GroupAssignment
                do {
                    group = try consumer.groupAssignment(topic: topic, count: count, timeoutMilliseconds: timeout.wholeMilliseconds)
                } catch {
                    throw ProjectorError.kafka("describing consumer group \(consumer.groupID): \(error)", error)
                }
                status.group = group
                for p in byPartition.keys { byPartition[p]?.owner = group.owner(of: p) }
                // This directory's member: the one its projector recorded, when the group knows it.
                let here = roles.flatMap { r in group.members.first { $0.memberID == r.member } }
                // A running projector's recorded ownership the group no longer agrees with: its
                // shard here stops following the partition (a stopped or gone one's is expected).
                if let roles, roles.running, !status.projectorGone {
                    for p in roles.owned {
                        guard let owner = group.owner(of: p), owner.memberID != roles.member else { continue }
                        status.warnings.append("partition \(p) is recorded as owned here (\(ProjectorRoles.fileName), by \(roles.clientID) on \(roles.host)), but the group gives it to \(owner.clientID) on \(owner.host) (member \(owner.memberID)): this directory's shard of it may fall behind. If the projector here is still running it will be told at its next rebalance; otherwise read the partition from the owner's directory")
                    }
                }
                for p in (here?.partitions ?? []) {
                    guard let entry = byPartition[p], entry.nextOffset == 0, (entry.logEndOffset ?? 0) > 0 else { continue }
                    status.warnings.append("partition \(p) is owned by this directory's member (\(here?.clientID ?? "?") on \(here?.host ?? "?")), but its shard here starts from offset 0: it is being rebuilt from the whole log (\(entry.logEndOffset ?? 0) events) and reads of its users are behind until then. Keep a warm standby of it on the members that may take it over")
                }
            }
        }
        status.partitions = byPartition.keys.sorted().compactMap { byPartition[$0] }
        for entry in status.partitions where entry.priorityMatches == false {
            status.warnings.append("partition \(entry.partition): \(entry.shard ?? "the shard") records another source priority than the manifest's: rebuild it")
        }
        return status
    }
}

extension ProjectionStatus {
    /// The warm standby shards (`ProjectorRoles.standby`) a read of `directory` touches: the
    /// one holding `user` if it is a standby, else (no user) every standby; empty when no
    /// projector recorded roles there. Such a shard follows the log but may lag it: its
    /// partition's owner is elsewhere (`UserLocator`).
    public static func standbyShards(in directory: String, user: String?) throws -> [Int32] {
        guard let roles = try ProjectorRoles.read(directory), !roles.standby.isEmpty else { return [] }
        guard let user else { return roles.standby }
        guard let partitioner = Partitioner(rawValue: roles.partitioner), roles.partitionCount > 0 else { return roles.standby }
        let home = partitioner.partition(ofKey: user.utf8, count: roles.partitionCount)
        return roles.standby.contains(home) ? [home] : []
    }
}

extension LogAccess {
    /// A consumer of this log that does not join its group, and `topic`'s partition count
    /// (asked until `timeout`). Throws `ProjectorError` `.kafka` when the cluster does not
    /// answer or the topic is missing.
    func consumer(counting topic: String, timeout: Duration, logger: Logger) throws -> (consumer: KafkaConsumer, count: Int) {
        do {
            let consumer = try KafkaConsumer(connection: connection, configuration: self.consumer, logger: logger)
            return (consumer, try consumer.partitionCount(topic, within: timeout) ?? 0)
        } catch {
            throw ProjectorError.kafka("\(error)", error)
        }
    }
}
