import DaybookKafka
import DaybookStore
import Foundation

/// The projector's hooks for warm standby shards (`StandbyReplicas`), owner claims in its
/// commits and the roles file (`ProjectorRoles`).
extension Projector {
    /// The partitions owned here now: started, or given and about to start.
    var ownedPartitions: Set<Int32> { machine.owned(open: workers.keys) }

    /// Opens and closes standby shards for what is owned here now.
    func followStandbys() {
        guard let standby, let count = partitionCount else { return }
        if standby.follow(count: count, owned: ownedPartitions, open: openStandbyWorker) {
            shareCache()
            recordRoles()
        }
    }

    /// Opens a standby shard as an owned one is opened, and checks it against the log.
    private func openStandbyWorker(_ partition: Int32) throws -> PartitionWorker {
        let worker = try openWorker(partition)
        try checkLog(worker.shard)
        return worker
    }

    /// Standby shards follow a generation a rebuild swapped in: closed, and opened again at
    /// their new place.
    func followStandbysAcrossGenerations() {
        guard let standby, standbyLayoutStamp != layout.stamp else { return }
        standbyLayoutStamp = layout.stamp
        standby.closeAll()
        followStandbys()
    }

    /// What the warm standby shards applied since the projector started (valid during and
    /// after `run`, also after it threw); nil without `ProjectorOptions.standby`.
    public var standbyStatistics: StandbyStatistics? { standby?.statistics }

    /// Applies what the standby consumer has read (never waits).
    func applyStandbys() {
        guard let standby else { return }
        standby.applyArrived(maxMessages: options.batchSize)
        followStandbys() // tries again those that failed, once their wait is over
    }

    /// Commits the shards' offsets of `partitions` to the group (informational) with this
    /// member's owner claim, so that who holds a partition can be read back where the
    /// cluster does not describe groups (`GroupAssignment.Source.ownerClaims`). A solo
    /// projector is no member. The claim made as partitions start is waited for (once per
    /// assignment), so that a reader sees the new owner at once; those made after each batch are not.
    func claim(_ partitions: [Int32], waiting: Bool) {
        let offsets = Dictionary(uniqueKeysWithValues: partitions.compactMap { p in
            workers[p].map { (TopicPartition(options.topic, p), $0.shard.nextOffset) }
        })
        guard !solo, !offsets.isEmpty else { return }
        let claim = OwnerClaim(memberID: consumer.memberID ?? "", clientID: clientID, host: Self.hostName, url: options.advertisedURL)
        try? consumer.commit(offsets, claim: claim, async: !waiting)
    }

    static let hostName = ProcessInfo.processInfo.hostName

    /// Writes the roles file when what is owned or kept standby changed (or as the run stops).
    func recordRoles(running: Bool = true) {
        guard projection.recordsRoles, let count = partitionCount else { return }
        // After the consumer closed (the file written as the run stops) the id is gone: keep the last.
        let member = solo ? "solo" : consumer.memberID ?? recordedRoles?.member ?? ""
        let roles = ProjectorRoles(member: member, clientID: clientID, host: Self.hostName,
                                   pid: getpid(), running: running, updatedAt: Self.now(), topic: options.topic, partitionCount: count,
                                   partitioner: partitioner.rawValue, owned: ownedPartitions.sorted(), standby: standby?.partitions ?? [])
        if !running, var last = recordedRoles {
            // As the run stops: what it owned and kept, marked stopped (those shards stay as they were).
            last.running = false
            last.updatedAt = Self.now()
            try? last.write(in: options.dataDirectory)
            recordedRoles = last
            return
        }
        if var last = recordedRoles {
            last.updatedAt = roles.updatedAt
            last.member = roles.member
            if last == roles { return }
        }
        do {
            try roles.write(in: options.dataDirectory)
            recordedRoles = roles
        } catch {
            logger.warning("\(error); status and totals will not know which shards are standbys until it can be written")
        }
    }

    static func now() -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date())
    }
}
