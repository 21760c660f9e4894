import DaybookCore
import DaybookKafka
import DaybookStore
import DaybookSupport
import Foundation

/// The projector's I/O on shards and the log: starting, opening and checking shards,
/// performing seeks, and moving to a new generation.
extension Projector {
    /// Refuses a directory whose generation was built (by a rebuild) under another priority.
    static func checkPriority(of layout: DataLayout, directory: String, configured priority: SourcePriority) throws(ProjectorError) {
        guard let built = layout.priority, !built.ranksLike(priority) else { return }
        throw ProjectorError.shard("""
            \(directory) holds a projection built under source priority \(built.fingerprint) (generation \
            \(layout.generation), by a rebuild), not \(priority.fingerprint) as configured. Project under that order, \
            or rebuild the directory under yours.
            """, .priorityMismatch, detail: .directoryPriority(directory: directory, generation: layout.generation,
                                                               built: built.fingerprint, configured: priority.fingerprint))
    }

    /// One metadata round trip first (in rounds of at most a second, so that SIGINT/SIGTERM
    /// are heard meanwhile): an unreachable cluster or a missing topic ends the run within
    /// `connectTimeout` instead of polling forever. Then the standby choice and the shards
    /// of the directory are checked against the topic, and the partitions are taken (solo)
    /// or the group joined. False when stopped meanwhile.
    func start(shouldStop: () -> Bool) throws(ProjectorError) -> Bool {
        let count: Int
        do {
            guard let n = try consumer.partitionCount(options.topic, within: options.connectTimeout, shouldStop: shouldStop) else { return false }
            count = n
        } catch {
            throw ProjectorError.kafka("\(error)", error)
        }
        partitionCount = count
        // A standby partition the topic does not have is a bad request, not a warning.
        try options.standby?.check(topic: options.topic, count: count)
        // So is a shard of a partition it does not have (rebuild, verify, diff and replay refuse it too).
        do {
            try LiveLogCheck.checkPartitions(try layout.shardPaths(), directory: options.dataDirectory, topic: options.topic, count: count)
        } catch {
            throw ProjectorError(error)
        }
        clusterID = consumer.clusterID(timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
        do {
            if solo { try takeAll(count) } else { try consumer.subscribe([options.topic], handler: self) }
        } catch let error as KafkaError {
            throw ProjectorError(kind: .kafka, message: "\(error)")
        } catch {
            workers.removeAll()
            throw ProjectorError(error)
        }
        return true
    }

    /// Opens and checks every partition read (before any shard is created), then reads them
    /// from their shards' offsets, or from a replay's start below them.
    private func takeAll(_ count: Int) throws {
        var offsets: [TopicPartition: Int64] = [:]
        let partitions = try PartitionChoice.resolve(options.partitions, topic: options.topic, count: count)
        let asked = watermarks(of: partitions)
        // Opening a shard is mostly file work (a new one is written and synced): all of them
        // at once, on `shardThreads` threads. A run starts with no worker (`finish` lets go
        // of them all). The first failure in partition order is thrown; the others' shards
        // close with their workers.
        let made = WaitingWork.map(partitions.count, threads: Self.shardThreads) { i in Result { try self.makeWorker(partitions[i]) } }
        for (partition, result) in zip(partitions, made) {
            let worker = opened(try result.get())
            let marks = try checkLog(worker.shard, asked: asked)
            workers[partition] = worker
            offsets[worker.partition] = worker.shard.nextOffset
            if let start = projection.startOffsets[partition], start < worker.shard.nextOffset {
                try Self.checkRereadStart(start, tp: worker.partition, low: marks.low)
                worker.rereadFrom = start
                offsets[worker.partition] = start
            }
        }
        machine.took()
        ownershipChanged()
        try consumer.readDirectly(offsets.keys.sorted(), startingAt: offsets)
    }

    /// As the run ends, however it ends: what is forwardable is flushed, everything closed.
    func finish() {
        if projection.forwardsDeadLetters { flushDeadLetters(timeoutMilliseconds: 5_000) }
        consumer.close()
        Self.closeInParallel(&workers)
        standby?.close()
        recordRoles(running: false)
    }

    /// Lets go of every worker, their shards closed on `shardThreads` threads. Closing a
    /// shard's last connection copies its write-ahead log into the file and syncs it: ~2 ms
    /// a shard, 65 ms for 32 one after another at the end of every run; on one thread a
    /// core (2) the start and finish of a catch-up of the reference log took 76–98 ms, on
    /// 8 threads 62–74 ms, the syncs' waits overlapping (BENCHMARKS.md, "Issue 26,
    /// thirteenth steps"). Each worker's last reference is its slot here, so it closes on
    /// the thread that empties the slot.
    static func closeInParallel(_ workers: inout [Int32: PartitionWorker]) {
        var slots: [PartitionWorker?] = Array(workers.values)
        workers.removeAll()
        slots.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let slots = buffer
            WaitingWork.run(slots.count, threads: shardThreads) { i in slots[i] = nil }
        }
    }

    /// Threads that open or close the shards of a run at once: more than the cores, since
    /// opening a new shard and closing one mostly wait for their syncs (an empty
    /// 32-partition catch-up 0.06–0.07 → 0.05 s opening on 8 threads, not one a core).
    static let shardThreads = 8

    func openWorker(_ partition: Int32) throws -> PartitionWorker {
        if let existing = workers[partition], !existing.broken { return existing }
        return opened(try makeWorker(partition))
    }

    /// The machine and the log learn of a worker just made (`makeWorker`).
    private func opened(_ worker: PartitionWorker) -> PartitionWorker {
        machine.shardOpened(worker.partition.partition)
        logger.info("partition \(worker.partition.partition): shard at offset \(worker.shard.nextOffset)")
        return worker
    }

    /// Opens (or creates) the shard of `partition` and its worker. It reads only what
    /// does not change while shards open (the options, layout, priority, cluster id and
    /// partition count), so several are made at once (`takeAll`).
    private func makeWorker(_ partition: Int32) throws -> PartitionWorker {
        // Never wait for a lock: a second projector on the same data must stop at once.
        let path = layout.path(topic: options.topic, partition: partition)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let shard = try Shard(path: path, topic: options.topic, partition: partition,
                              fingerprint: priority.fingerprint, lockTimeout: .zero)
        try checkCluster(shard)
        let worker = PartitionWorker(shard: shard, priority: priority, cacheBudgetBytes: options.cacheBytes)
        if let recomputed = try worker.projection.recomputeOlderRows() {
            // Once per shard, on the first open after an upgrade: worth saying without --verbose.
            logger.warning("partition \(partition): \(recomputed.rows) rows an older Daybook wrote recomputed from the shard's samples (\(recomputed.reason))")
        }
        worker.stopOffset = projection.stopOffsets[partition]
        worker.placement = partitionCount.map { (partitioner, $0) }
        return worker
    }

    /// Opens the shards of partitions the group gave, checks each against the log and starts
    /// them at their offsets.
    func open(_ partitions: [Int32]) throws(ProjectorError) {
        var offsets: [TopicPartition: Int64] = [:]
        let asked = watermarks(of: partitions)
        do {
            for partition in partitions {
                let worker = try openHandedOver(partition)
                try checkLog(worker.shard, asked: asked)
                workers[partition] = worker
                offsets[worker.partition] = worker.shard.nextOffset
            }
        } catch {
            throw ProjectorError(error)
        }
        machine.started(partitions)
        guard !offsets.isEmpty else { return }
        do {
            try consumer.start(offsets)
        } catch {
            throw ProjectorError(kind: .kafka, message: "starting \(offsets.keys.sorted().map(\.description).joined(separator: ", ")): \(error)")
        }
    }

    /// Opens the shard of a partition the group gave. A member of the group on the same data
    /// directory that was given it before closes it from its own poll loop, right after its
    /// rebalance callback: its lock is waited for as the machine says, then refused as any other.
    private func openHandedOver(_ partition: Int32) throws -> PartitionWorker {
        let asked = ContinuousClock.now
        while true {
            do {
                return try openWorker(partition)
            } catch let error as Shard.ShardError where error.kind == .locked {
                guard machine.shardHeld(partition, waited: .now - asked) == .retryOpen(partition) else { throw error }
                usleep(20_000)
            }
        }
    }

    /// What is owned here changed: standby shards follow, the cache is shared again among
    /// the open shards, and the roles file says so.
    func ownershipChanged() {
        followStandbys()
        shareCache()
        recordRoles()
    }

    /// One cache budget for the process: three quarters shared equally by the open shards'
    /// ledgers, a quarter for SQLite's page cache, shared by the shards a batch works on at
    /// once (one per core; a shard gives its pages back after each commit).
    func shareCache() {
        // Standby shards share the one budget with the owned ones.
        let all = Array(workers.values) + Array(standby?.workers.values ?? [:].values)
        let share = options.cacheBytes / max(1, all.count)
        let pages = options.cacheBytes / 4 / max(1, min(all.count, ProcessInfo.processInfo.activeProcessorCount))
        for worker in all {
            worker.ledger.cacheBudgetBytes = share / 4 * 3
            do {
                try worker.shard.setPageCache(kilobytes: pages / 1_024)
            } catch {
                logger.warning("partition \(worker.partition.partition): cannot size the page cache: \(error)")
            }
        }
    }

    /// Refuses a shard whose offsets belong to another cluster's log.
    private func checkCluster(_ shard: Shard) throws {
        guard let clusterID else { return }
        if let recorded = try shard.clusterID() {
            try LiveLogCheck.checkCluster(path: shard.path, recorded: recorded, reached: clusterID)
        } else {
            try shard.recordClusterID(clusterID)
        }
    }

    /// Before reading, the shard's next offset must lie inside the partition's log:
    /// `low ≤ next ≤ high`. Anything else is a gap or a different log, never skipped silently.
    @discardableResult
    func checkLog(_ shard: Shard, asked: [TopicPartition: (low: Int64, high: Int64)] = [:]) throws(ProjectorError) -> (low: Int64, high: Int64) {
        let tp = TopicPartition(options.topic, shard.partition)
        let marks: (low: Int64, high: Int64)
        if let known = asked[tp] {
            marks = known
        } else {
            do {
                marks = try consumer.watermarks(tp, timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
            } catch {
                throw ProjectorError(kind: .kafka, message: "reading the offsets of \(tp): \(error)")
            }
        }
        try Self.check(shard: shard, tp: tp, low: marks.low, high: marks.high)
        highAtStart[shard.partition] = marks.high
        return marks
    }

    /// The watermarks of these partitions, asked in one go for `checkLog`; empty when that
    /// failed (each is then asked on its own, whose error names its partition).
    func watermarks(of partitions: [Int32]) -> [TopicPartition: (low: Int64, high: Int64)] {
        guard partitions.count > 1 else { return [:] }
        do {
            return try consumer.watermarks(of: partitions.map { TopicPartition(options.topic, $0) },
                                           timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
        } catch {
            logger.info("asking the offsets of \(partitions.count) partitions at once: \(error); asking each on its own")
            return [:]
        }
    }

    /// A re-read (`ProjectionRun.replay`) cannot start before the first offset the log still holds.
    static func checkRereadStart(_ start: Int64, tp: TopicPartition, low: Int64) throws(ProjectorError) {
        guard start >= low else {
            throw ProjectorError(kind: .badRequest, message: "\(tp): offset \(start) is before the first offset the log still holds (\(low)); re-read from \(low) or later")
        }
    }

    static func check(shard: Shard, tp: TopicPartition, low: Int64, high: Int64) throws(ProjectorError) {
        try LiveLogCheck.checkOffset(path: shard.path, next: shard.nextOffset, tp: tp, low: low, high: high)
    }

    // MARK: Jumps in the offsets (the machine's `seek` and `acceptJump`)

    /// A jump is only a jump while the log still holds the offset the shard needs next:
    /// otherwise it is a gap (retention deleted what the shard needs) or another log.
    private func checkJump(_ worker: PartitionWorker) throws(ProjectorError) {
        let tp = worker.partition
        let marks: (low: Int64, high: Int64)
        do {
            marks = try consumer.watermarks(tp, timeoutMilliseconds: options.connectTimeout.wholeMilliseconds)
        } catch {
            throw ProjectorError(kind: .kafka, message: "reading the offsets of \(tp): \(error)")
        }
        try Self.check(shard: worker.shard, tp: tp, low: marks.low, high: marks.high)
    }

    func seekBack(_ partition: Int32, to next: Int64, messages: inout [Int32: [ConsumedMessage]]) throws(ProjectorError) {
        messages[partition] = nil
        guard let worker = workers[partition] else { return }
        try checkJump(worker)
        do {
            try consumer.seek([worker.partition: next])
        } catch {
            throw ProjectorError(kind: .kafka, message: "seeking \(worker.partition) back to \(next): \(error)")
        }
    }

    func acceptJump(_ partition: Int32, from next: Int64, to first: Int64) throws(ProjectorError) {
        guard let worker = workers[partition] else { return }
        try checkJump(worker)
        logger.info("\(worker.partition): offsets \(next)..<\(first) hold no messages (transaction markers or compaction)")
    }

    /// Retention deleted what the shard needs (or the log was replaced): say which, and stop.
    func outOfRange(_ partition: Int32, offset: Int64) throws(ProjectorError) {
        guard let worker = workers[partition] else { return }
        try checkLog(worker.shard)
        throw ProjectorError(kind: .logMismatch, message: "\(worker.partition): offset \(offset) is outside the log; nothing past \(worker.shard.nextOffset) was applied")
    }

    /// Asks the cluster for the topic's metadata; what to say when it did not answer, else nil.
    func probeCluster() -> String? {
        do {
            _ = try consumer.partitionCount(options.topic, timeoutMilliseconds: max(1, min(5_000, options.connectTimeout.wholeMilliseconds)))
            return nil
        } catch {
            return "the Kafka cluster stopped answering (nothing for \(options.connectTimeout), then \(error))"
        }
    }

    /// The offsets a rebuild must also reach (a live projector's, which only move forward).
    func catchUpTargets() throws(ProjectorError) -> [Int32: Int64] {
        guard let targets = projection.catchUpTargets else { return [:] }
        do {
            return try targets()
        } catch {
            throw ProjectorError(error)
        }
    }

    // MARK: Generations

    func followManifest() throws(ProjectorError) {
        do {
            try moveToNewGeneration()
        } catch {
            throw ProjectorError(error)
        }
    }

    /// Moves to the shards of a generation a rebuild swapped in: each partition whose shard
    /// moved (or whose priority changed) is closed, opened at its new place under the new
    /// generation's priority, and sought to that shard's offset. Every shard's offset is
    /// committed with its changes, so nothing is lost or applied twice across the move.
    private func moveToNewGeneration() throws {
        let new = try DataLayout.read(options.dataDirectory)
        let old = layout
        layout = new
        let newPriority = new.priority ?? priority
        let reprioritised = !newPriority.ranksLike(priority)
        if reprioritised {
            logger.warning("generation \(new.generation) swapped in: projecting under source priority \(newPriority.fingerprint) (was \(priority.fingerprint))")
            priority = newPriority
        }
        var offsets: [TopicPartition: Int64] = [:]
        for partition in workers.keys.sorted() {
            let from = old.path(topic: options.topic, partition: partition)
            guard reprioritised || new.path(topic: options.topic, partition: partition) != from else { continue }
            workers[partition] = nil // closes the old shard and lets go of its lock
            // (Its cluster is checked on opening; its offset against the log at the first
            // batch, like any jump: a watermark round trip per partition here would stall the
            // move for seconds at many partitions.)
            let worker = try openWorker(partition)
            workers[partition] = worker
            offsets[worker.partition] = worker.shard.nextOffset
            machine.switched([partition])
            logger.warning("partition \(partition): now \(worker.shard.path) at offset \(worker.shard.nextOffset) (was \(from))")
        }
        guard !offsets.isEmpty else { return }
        shareCache()
        // A seek can time out on a busy broker; the shards are already the new ones, so try
        // again rather than stop (messages fetched meanwhile are skipped or re-sought).
        var attempt = 0
        while true {
            do {
                try consumer.seek(offsets)
                return
            } catch {
                attempt += 1
                guard attempt < 10 else {
                    throw ProjectorError(kind: .kafka, message: "seeking \(offsets.keys.sorted().map(\.description).joined(separator: ", ")) to the new shards: \(error) (10 attempts over ~20 s); restart the projector: it starts each partition at its new shard's offset")
                }
                logger.warning("seeking to the new shards: \(error); retrying")
                usleep(UInt32(400_000 * min(attempt, 5)))
            }
        }
    }
}
