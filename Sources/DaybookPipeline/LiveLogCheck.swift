import DaybookKafka
import DaybookStore
import Foundation

/// Whether the cluster `--brokers` reaches holds the log a data directory's live shards
/// were built from: the checks `project` makes on each shard it opens, made on every live
/// shard before `rebuild`, `verify`, `diff` or `replay` reads anything (`--dry-run` too),
/// so that each refuses another cluster's or a shorter log at once (exit 76) instead of
/// building from it, waiting for offsets it will never reach, or mixing two clusters'
/// shards in one manifest.
public enum LiveLogCheck {
    /// Refuses (`ProjectorError.logMismatch`) when a live shard of `topic` in `directory`
    /// records another cluster than `consumer`'s, is of a partition the topic does not have
    /// (`count` partitions), or needs an offset outside its partition's log.
    public static func check(directory: String, topic: String, count: Int, consumer: KafkaConsumer, timeout: Duration) throws {
        let reader = ShardReader(directory: directory)
        var shards: [(partition: Int32, path: String, nextOffset: Int64, clusterID: String?)] = []
        for path in try reader.shardPaths() {
            guard let partition = Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: topic),
                  FileManager.default.fileExists(atPath: path) else { continue }
            let snapshot = try reader.snapshot(ofShardAt: path)
            shards.append((partition, path, snapshot.nextOffset, snapshot.clusterID))
            snapshot.end()
        }
        guard !shards.isEmpty else { return }
        let cluster = consumer.clusterID(timeoutMilliseconds: timeout.wholeMilliseconds)
        for shard in shards {
            try checkCluster(path: shard.path, recorded: shard.clusterID, reached: cluster)
        }
        try checkPartitions(shards.map(\.path), directory: directory, topic: topic, count: count)
        for shard in shards {
            let tp = TopicPartition(topic, shard.partition)
            let marks: (low: Int64, high: Int64)
            do {
                marks = try consumer.watermarks(tp, timeoutMilliseconds: timeout.wholeMilliseconds)
            } catch {
                throw ProjectorError(kind: .kafka, message: "reading the offsets of \(tp): \(error)")
            }
            try checkOffset(path: shard.path, next: shard.nextOffset, tp: tp, low: marks.low, high: marks.high)
        }
    }

    /// Refuses (`ProjectorError.logMismatch`) a shard among `paths` (the shard files of
    /// `directory`) of a partition `topic`, of `count` partitions, does not have.
    static func checkPartitions(_ paths: [String], directory: String, topic: String, count: Int) throws(ProjectorError) {
        for path in paths {
            guard let partition = Shard.partition(ofFile: (path as NSString).lastPathComponent, topic: topic),
                  !(0..<Int32(count)).contains(partition), FileManager.default.fileExists(atPath: path) else { continue }
            throw ProjectorError(kind: .logMismatch, message: """
                \(directory) has a shard of \(topic) partition \(partition) (\(path)), but the topic has \(count) \
                partition\(count == 1 ? "" : "s") in the cluster reached: this is not the log the shards were built from \
                (another cluster, or a recreated topic). Nothing was read. Connect to the cluster the shards came from, or \
                project this cluster into a new data directory.
                """, detail: .partitionMissing(directory: directory, topic: topic, partition: partition, path: path, count: count))
        }
    }

    /// A shard whose recorded cluster is not the one reached holds offsets that mean nothing
    /// in this log. (A shard that records none is older than the check: it is let through.)
    static func checkCluster(path: String, recorded: String?, reached: String?) throws(ProjectorError) {
        guard let recorded, let reached, recorded != reached else { return }
        throw ProjectorError(kind: .logMismatch, message: """
            \(path) was built from the log of Kafka cluster \(recorded), but the consumer reaches cluster \(reached). \
            Its offsets mean nothing in this cluster's log, so nothing was read. Connect to cluster \(recorded), \
            or project this cluster into a new data directory.
            """, detail: .otherCluster(path: path, recorded: recorded, reached: reached))
    }

    /// A shard's next offset must lie inside its partition's log: `low ≤ next ≤ high`.
    static func checkOffset(path: String, next: Int64, tp: TopicPartition, low: Int64, high: Int64) throws(ProjectorError) {
        if next < low {
            throw ProjectorError(kind: .logMismatch, message: """
                \(tp): the log starts at offset \(low), but \(path) needs offset \(next) next: messages \(next)..<\(low) \
                are gone (deleted by retention, or the topic was truncated), so this projection cannot be made exact and nothing \
                was applied past offset \(next). Keep the topic's whole history (retention.ms=-1) and rebuild from \
                a complete log, or restore the shards from a backup taken at or after offset \(low).
                """, detail: .gap(path: path, tp: tp, next: next, low: low))
        }
        if next > high {
            throw ProjectorError(kind: .logMismatch, message: """
                \(tp): the log ends at offset \(high), but \(path) has already applied offsets up to \(next - 1): \
                this is not the log the shard was built from (the topic was deleted and recreated, or the consumer reaches \
                another cluster). Nothing was read. Connect to the cluster the shard came from, or project into a new data directory.
                """, detail: .aheadOfLog(path: path, tp: tp, next: next, high: high))
        }
    }
}
