import DaybookCore
import DaybookFiles
import DaybookKafka
import DaybookLog
import DaybookStore
import DaybookSupport
import Foundation

/// What `daybook rebuild`, `verify` and `diff` are asked to do.
public struct RebuildRequest: Sendable {
    public var dataDirectory: String
    public var topic = "health-samples"
    /// The order to build under (`rebuild`, `diff`) or the live one (`verify`).
    public var priority: SourcePriority
    /// Only these partitions (default: all). A rebuild of some partitions keeps the
    /// priority: a projection under two orders at once would be wrong.
    public var partitions: [Int32]?
    public var cacheBytes = 32 << 20
    public var connectTimeout: Duration = .seconds(30)

    public init(dataDirectory: String, priority: SourcePriority) {
        self.dataDirectory = dataDirectory
        self.priority = priority
    }
}

/// The Kafka side of a rebuild: where the log is, and how to read it.
public struct LogAccess: Sendable {
    public var connection: KafkaConnection
    public var consumer: ConsumerConfiguration
    public var producer: ProducerConfiguration

    public init(connection: KafkaConnection, consumer: ConsumerConfiguration, producer: ProducerConfiguration) {
        self.connection = connection
        self.consumer = consumer
        self.producer = producer
    }
}

extension LogAccess {
    /// The topic's partition count, asked until `timeout` (a missing topic or an unreachable
    /// cluster fails before anything is built or cleared), once the live shards of
    /// `directory` are known to come from this cluster's log (`LiveLogCheck`).
    func checkedPartitionCount(_ topic: String, liveShardsIn directory: String, timeout: Duration, logger: Logger) throws -> Int {
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(connection: connection, configuration: self.consumer, logger: logger)
        } catch {
            throw ProjectorError.kafka("\(error)", error)
        }
        defer { consumer.close() }
        let count: Int
        do {
            count = try consumer.partitionCount(topic, within: timeout) ?? 0 // (nothing asks it to stop)
        } catch {
            throw ProjectorError.kafka("\(error)", error)
        }
        try LiveLogCheck.check(directory: directory, topic: topic, count: count, consumer: consumer, timeout: timeout)
        return count
    }
}

/// What a rebuild did.
public struct RebuildSummary: Sendable {
    /// The generation swapped in, e.g. `gen-000002`.
    public var generation: String
    /// Whether a staging left by an interrupted run was carried on.
    public var resumed: Bool
    /// Per rebuilt partition, the next offset of its new shard.
    public var offsets: [Int32: Int64]
    public var applied: Int
    public var deadLetters: Int
    public var seconds: Double
    /// What earlier rebuilds left and this one removed before building.
    public var removed: [String]
}

/// `daybook rebuild`: builds new shards from offset 0 beside the live ones, while readers
/// and a running projector keep using the live ones, and swaps them in once they have
/// caught up with the live offsets.
///
/// Staging is a generation directory the manifest does not name yet, with `rebuild.json`
/// saying what it is built for; a rerun with the same request carries on from its shards'
/// offsets, another request starts over. The swap is one rename of `manifest.json`, after
/// the staged shards are closed; a projector then moves to them (`Projector.followManifest`).
public final class Rebuilder {
    private let request: RebuildRequest
    private let access: LogAccess
    private let logger: Logger

    public init(request: RebuildRequest, access: LogAccess, logger: Logger) {
        self.request = request
        self.access = access
        self.logger = logger
    }

    static let planFile = "rebuild.json"

    private var plan: String {
        let parts = request.partitions.map { $0.sorted().map(String.init).joined(separator: ",") } ?? "all"
        return "{\"topic\": \(JSONWriter.quoted(request.topic)), \"priority\": \(JSONWriter.quoted(request.priority.fingerprint)), \"partitions\": \(JSONWriter.quoted(parts))}\n"
    }

    public func run(shouldStop: @escaping () -> Bool, progress: (ProjectorProgress) -> Void) throws -> RebuildSummary {
        let dir = request.dataDirectory
        let started = ContinuousClock.now
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = try DataLayout.read(dir) // a generation given as --data is refused before anything is written there
        let lock: Int32
        do {
            lock = try Shard.lock(dir + "/rebuild.lock", timeout: .zero)
        } catch let error as Shard.ShardError where error.kind == .locked {
            throw Shard.ShardError(.locked, "\(dir): another rebuild is running on this data directory; wait for it (or stop it: a rerun carries on where it stopped)")
        }
        defer { close(lock) }

        let layout = try DataLayout.read(dir)
        let live = try ShardReader(directory: dir).offsets(topic: request.topic)
        try checkPriority(layout: layout, live: live)
        try checkCatalogue(live: live)
        // The topic and the partitions asked for exist, before any staging is cleared.
        let count = try access.checkedPartitionCount(request.topic, liveShardsIn: dir, timeout: request.connectTimeout, logger: logger)
        _ = try PartitionChoice.resolve(request.partitions, topic: request.topic, count: count)

        // Staging: carry on with a matching one, clear the rest and earlier generations.
        let housekeeping = try Housekeeping(directory: dir, layout: layout)
        var removed: [String] = []
        var staging: String?
        for name in housekeeping.unreferencedGenerations {
            let path = dir + "/" + name
            if let number = DataLayout.generationNumber(name), number > layout.generation, staging == nil,
               (try? String(contentsOfFile: path + "/" + Self.planFile, encoding: .utf8)) == plan {
                staging = name
            } else if Housekeeping.remove(directory: path) {
                removed.append(name)
            }
        }
        removed += housekeeping.removeReplacedShards()
        let resumed = staging != nil
        let stagingName = staging ?? DataLayout.generationName(max(layout.generation, housekeeping.highestGeneration) + 1)
        let stagingPath = dir + "/" + stagingName
        if !resumed {
            try FileManager.default.createDirectory(atPath: stagingPath, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data(plan.utf8).write(to: URL(fileURLWithPath: stagingPath + "/" + Self.planFile), options: .atomic)
        }
        logger.info("\(resumed ? "carrying on with" : "building") \(stagingPath) under \(request.priority.fingerprint)")

        // Build until the staged shards reach the end of the log and the live offsets.
        var options = ProjectorOptions(dataDirectory: stagingPath)
        options.topic = request.topic
        options.partitions = request.partitions
        options.cacheBytes = request.cacheBytes
        options.connectTimeout = request.connectTimeout
        let reader = ShardReader(directory: dir)
        let topic = request.topic
        let run = ProjectionRun.rebuild { try reader.offsets(topic: topic).mapValues(\.nextOffset) }
        let summary: ProjectorSummary
        do {
            summary = try buildStaging(options, run, shouldStop: shouldStop, progress: progress)
        } catch let error as ProjectorError where error.kind == .storage {
            throw error.storageFault(in: """
                the live projection is untouched. The staged generation \(stagingPath) keeps what it wrote, and the space: rerun \
                the same command once there is room to carry on, or remove it (rm -r \(stagingPath)) to give the space back.
                """)
        }
        guard summary.caughtUp else {
            throw ProjectorError(kind: .interrupted, message: "stopped before the new shards caught up; the live projection is untouched and \(stagingPath) is kept: rerun the same command to carry on")
        }

        // The live projector has forwarded the dead letters below its offsets already, and
        // `dlq replay` may have republished some: their marks are copied, then the manifest
        // swapped, under the swap lock `dlq replay` marks under.
        let swapLock = try DataLayout.lockSwaps(dir)
        defer { close(swapLock) }
        let liveNow = try reader.offsets(topic: request.topic)
        var offsets: [Int32: Int64] = [:]
        var shards: [String: String] = [:]
        for path in try layout.shardPaths() {
            let name = (path as NSString).lastPathComponent
            shards[name] = layout.shards[name] ?? layout.currentDirectoryName
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: stagingPath).sorted() {
            guard let partition = Shard.partition(ofFile: name, topic: request.topic) else { continue }
            let shard = try Shard(path: stagingPath + "/" + name, topic: request.topic, partition: partition,
                                  fingerprint: request.priority.fingerprint, lockTimeout: .seconds(5))
            if let live = liveNow[partition] { try shard.adoptDeadLetterStatus(fromShardAt: live.path, below: live.nextOffset) }
            offsets[partition] = shard.nextOffset
            shards[name] = stagingName
        }
        let generation = DataLayout.generationNumber(stagingName) ?? layout.generation + 1
        let scope = request.partitions.map { "partitions " + $0.sorted().map(String.init).joined(separator: ", ") } ?? "all partitions"
        try DataLayout.writeManifest(DataLayout.manifestText(generation: generation, priority: request.priority, shards: shards,
                                                             note: "rebuild of \(scope), \(Self.timestamp())"), in: dir)
        unlink(stagingPath + "/" + Self.planFile)
        return RebuildSummary(generation: stagingName, resumed: resumed, offsets: offsets, applied: summary.applied,
                              deadLetters: summary.deadLetters, seconds: (ContinuousClock.now - started).inSeconds,
                              removed: removed)
    }

    /// Runs a projector into the staging directory; it is gone (its shards closed and
    /// unlocked) when this returns.
    private func buildStaging(_ options: ProjectorOptions, _ run: ProjectionRun, shouldStop: @escaping () -> Bool,
                              progress: (ProjectorProgress) -> Void) throws -> ProjectorSummary {
        let projector = try Projector(connection: access.connection, consumer: access.consumer, producer: access.producer,
                                      priority: request.priority, options: options, run: run, logger: logger)
        return try projector.run(shouldStop: shouldStop, progress: progress)
    }

    /// A rebuild of some partitions must keep the live order: the others stay as they are.
    private func checkPriority(layout: DataLayout, live: [Int32: (path: String, nextOffset: Int64, fingerprint: String?)]) throws {
        guard let partitions = request.partitions else { return }
        let wanted = request.priority.fingerprint
        let liveOrders = layout.priority.map { [$0.fingerprint] } ?? Set(live.values.compactMap(\.fingerprint)).sorted()
        guard let other = liveOrders.first(where: { !SourcePriority.sameRanking($0, wanted) }) else { return }
        throw ProjectorError.shard("""
            the live projection is under source priority \(other), not \(wanted): rebuilding only partition\(partitions.count == 1 ? "" : "s") \
            \(partitions.sorted().map(String.init).joined(separator: ", ")) would leave the others under the old order. Rebuild every \
            partition to change the order, or rebuild some under the live order to repair them.
            """, .priorityMismatch, detail: .partialRebuildPriority(live: other, wanted: wanted, partitions: partitions.sorted()))
    }

    /// The rebuild's catalogue against what the live shards hold: a metric they hold data of
    /// that it lacks would turn its events into dead letters (a configuration left out), so
    /// it is refused; a changed entry is what a rebuild is for, but only of every partition:
    /// some would leave the others' data under the old entry.
    private func checkCatalogue(live: [Int32: (path: String, nextOffset: Int64, fingerprint: String?)]) throws {
        let reader = ShardReader(directory: request.dataDirectory)
        for (_, shard) in live.sorted(by: { $0.key < $1.key }) {
            let held = try reader.heldCatalogueChanges(ofShardAt: shard.path)
            if let dropped = held.first(where: { $0.now == nil }) {
                let name = dropped.name
                throw ProjectorError.shard("""
                    the live shard \(shard.path) holds \(name) data (metric \(dropped.place), \(dropped.was)), a metric this catalogue \
                    lacks: rebuilt without it, its events would become dead letters. Give the configuration whose metrics section \
                    adds \(name) (--config).
                    """, .catalogueMismatch)
            }
            if let partitions = request.partitions, let changed = held.first {
                throw ProjectorError.shard("""
                    the live shard \(shard.path) holds data made under metric \(changed.place) \(changed.was), not \(changed.now ?? ""): \
                    rebuilding only partition\(partitions.count == 1 ? "" : "s") \(partitions.sorted().map(String.init).joined(separator: ", ")) \
                    would leave the others under the old entry. Rebuild every partition to change it, or rebuild some under the live catalogue.
                    """, .catalogueMismatch)
            }
        }
    }

    static func timestamp() -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date())
    }
}

/// Finds and removes what earlier rebuilds left: generations the manifest no longer names
/// (kept until the next rebuild, so readers that resolved the old manifest can finish), the
/// flat shards a first rebuild replaced, and temporary projections of dead processes. A
/// file whose lock someone holds (a projector that has not moved yet) is kept.
struct Housekeeping {
    let directory: String
    let layout: DataLayout
    let entries: [String]

    init(directory: String, layout: DataLayout) throws {
        self.directory = directory
        self.layout = layout
        entries = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    var highestGeneration: Int { entries.compactMap(DataLayout.generationNumber).max() ?? 0 }

    /// Generation directories the manifest does not name (staging included), and temporary
    /// projections whose process is gone.
    var unreferencedGenerations: [String] {
        let referenced = Set(layout.shards.values).union([layout.currentDirectoryName])
        return entries.filter { name in
            if DataLayout.generationNumber(name) != nil { return !referenced.contains(name) }
            if let pid = ShadowBuild.owner(ofTemporary: name) { return TemporaryName.isGone(pid) }
            return false
        }
    }

    /// Removes a directory of shards unless one of them is locked; true when removed.
    static func remove(directory path: String) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        var locks: [Int32] = []
        defer { locks.forEach { close($0) } }
        for name in names where name.hasSuffix(".sqlite") {
            guard let fd = try? Shard.lock(path + "/" + name + ".lock", timeout: .zero) else { return false }
            locks.append(fd)
        }
        return (try? FileManager.default.removeItem(atPath: path)) != nil
    }

    /// Shard files the manifest no longer names where they are: the flat shards a first
    /// rebuild replaced, and those a partial rebuild moved out of an older generation that
    /// still holds other partitions. Removed (with their WAL, shared memory and lock files)
    /// unless someone holds their lock. The current generation's files are all live (a
    /// projector creates new partitions' shards there).
    func removeReplacedShards() -> [String] {
        guard layout.generation > 0 else { return [] }
        var removed: [String] = []
        let current = layout.currentDirectoryName
        for dir in Set(layout.shards.values).union(["."]) where dir != current {
            let base = dir == "." ? directory : directory + "/" + dir
            let names = dir == "." ? entries : ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [])
            // Only shard-named files (`<topic>-NNNN.sqlite`): anything else an operator put there stays.
            for name in names where Shard.topicAndPartition(ofFile: name) != nil && layout.shards[name] != dir {
                let path = base + "/" + name
                guard let fd = try? Shard.lock(path + ".lock", timeout: .zero) else { continue }
                for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
                unlink(path + ".lock")
                close(fd)
                removed.append(dir == "." ? name : dir + "/" + name)
            }
        }
        return removed
    }
}

extension ProjectorError {
    /// A storage fault met while building beside the live shards, told with what the builder
    /// leaves behind (`situation`) instead of a projector's advice to restart.
    func storageFault(in situation: String) -> ProjectorError {
        var error = self
        let reason = message.hasSuffix(Projector.storageAdvice) ? String(message.dropLast(Projector.storageAdvice.count)) : message
        error.message = "\(reason.hasSuffix(".") ? String(reason.dropLast()) : reason); \(situation)"
        return error
    }
}
