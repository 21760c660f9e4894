import DaybookKafka
import DaybookStore
import Foundation

/// The projector's hooks for warm standby shards (`StandbyReplicas`), owner claims in its
/// commits and the roles file (`ProjectorRoles`).
extension Projector {
    /// The partitions owned here now: started, or given and about to start.
    var ownedPartitions: Set<Int32> { Set(workersByPartition).union(assignmentsHeld) }

    /// Opens and closes standby shards for what is owned here now.
    func followStandbys() {
        guard let standby, let count = topicPartitionCount else { return }
        if standby.follow(count: count, owned: ownedPartitions, open: openStandbyWorker) {
            resizeCaches()
            recordRoles()
        }
    }

    /// Standby shards follow a generation a rebuild swapped in: closed, and opened again at
    /// their new place.
    func followStandbysAcrossGenerations() {
        guard let standby, standbyLayoutStamp != currentLayoutStamp else { return }
        standbyLayoutStamp = currentLayoutStamp
        standby.closeAll()
        followStandbys()
    }

    /// What the warm standby shards applied since the projector started (valid during and
    /// after `run`, also after it threw); nil without `ProjectorOptions.standby`.
    public var standbyStatistics: StandbyStatistics? { standby?.statistics }

    /// Applies what the standby consumer has read (never waits).
    func applyStandbys() {
        guard let standby else { return }
        standby.applyArrived(maxMessages: batchSizeOption)
        followStandbys() // tries again those that failed, once their wait is over
    }

    /// Commits `offsets` to the group (informational) with this member's owner claim, so
    /// that who holds a partition can be read back where the cluster does not describe
    /// groups (`GroupAssignment.Source.ownerClaims`). A solo projector is no member. The
    /// claim made as partitions start is waited for (once per assignment), so that a reader
    /// sees the new owner at once; those made after each batch are not.
    func claim(_ offsets: [TopicPartition: Int64], waiting: Bool = false) {
        guard !isSolo, !offsets.isEmpty else { return }
        let claim = OwnerClaim(memberID: kafkaConsumer.memberID ?? "", clientID: clientID, host: Self.hostName)
        try? kafkaConsumer.commit(offsets, claim: claim, async: !waiting)
    }

    static let hostName = ProcessInfo.processInfo.hostName

    /// Writes the roles file when what is owned or kept standby changed (or as the run stops).
    func recordRoles(running: Bool = true) {
        guard recordsRoles, let count = topicPartitionCount else { return }
        // After the consumer closed (the file written as the run stops) the id is gone: keep the last.
        let member = isSolo ? "solo" : kafkaConsumer.memberID ?? recordedRoles?.member ?? ""
        let roles = ProjectorRoles(member: member, clientID: clientID, host: Self.hostName,
                                   pid: getpid(), running: running, updatedAt: Self.now(), topic: topicName, partitionCount: count,
                                   partitioner: partitionerName, owned: ownedPartitions.sorted(), standby: standby?.partitions ?? [])
        if !running, var last = recordedRoles {
            // As the run stops: what it owned and kept, marked stopped (those shards stay as they were).
            last.running = false
            last.updatedAt = Self.now()
            try? last.write(in: dataDirectory)
            recordedRoles = last
            return
        }
        if var last = recordedRoles {
            last.updatedAt = roles.updatedAt
            last.member = roles.member
            if last == roles { return }
        }
        do {
            try roles.write(in: dataDirectory)
            recordedRoles = roles
        } catch {
            logWarning("\(error); status and totals will not know which shards are standbys until it can be written")
        }
    }

    static func now() -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date())
    }
}
