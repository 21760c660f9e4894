import DaybookCore
import DaybookPipeline
import DaybookStore
import DaybookSupport

extension ProjectorError.Detail {
    /// The refusal in the command line's words: the options and commands that fix it.
    var commandLineMessage: String {
        switch self {
        case .otherCluster(let path, let recorded, let reached):
            return """
                \(path) was built from the log of Kafka cluster \(recorded), but --brokers reaches cluster \(reached). \
                Its offsets mean nothing in this cluster's log, so nothing was read. Point --brokers at cluster \(recorded), \
                or project this cluster into a new --data directory.
                """
        case .partitionMissing(let directory, let topic, let partition, let path, let count):
            return """
                \(directory) has a shard of \(topic) partition \(partition) (\(path)), but the topic has \(count) \
                partition\(count == 1 ? "" : "s") in the cluster --brokers reaches: this is not the log the shards were built from \
                (another cluster, or a recreated topic). Nothing was read. Point --brokers at the cluster the shards came from, or \
                project this cluster into a new --data directory.
                """
        case .gap(let path, let tp, let next, let low):
            return """
                \(tp): the log starts at offset \(low), but \(path) needs offset \(next) next: messages \(next)..<\(low) \
                are gone (deleted by retention, or the topic was truncated), so this projection cannot be made exact and nothing \
                was applied past offset \(next). Keep the topic's whole history (retention.ms=-1, see topics/) and rebuild from \
                a complete log, or restore the shards from a backup taken at or after offset \(low).
                """
        case .aheadOfLog(let path, let tp, let next, let high):
            return """
                \(tp): the log ends at offset \(high), but \(path) has already applied offsets up to \(next - 1): \
                this is not the log the shard was built from (the topic was deleted and recreated, or --brokers names another \
                cluster). Nothing was read. Point --brokers at the cluster the shard came from, or project into a new --data directory.
                """
        case .directoryPriority(let directory, let generation, let built, let configured):
            return """
                \(directory) holds a projection built under source priority \(built) (generation \
                \(generation), by daybook rebuild), not \(configured) as configured. Put that order in --config, \
                or rebuild under yours: daybook rebuild --data \(directory) --config FILE.
                """
        case .partialRebuildPriority(let live, let wanted, let partitions):
            return """
                the live projection is under source priority \(live), not \(wanted): rebuilding only partition\(partitions.count == 1 ? "" : "s") \
                \(partitions.map(String.init).joined(separator: ", ")) would leave the others under the old order. Rebuild every \
                partition (leave out --partition) to change the order, or use the live order's --config to repair some.
                """
        }
    }
}

extension Shard.ShardError.Detail {
    /// The store's refusal in the command line's words: the options and commands that fix it.
    var commandLineMessage: String {
        switch self {
        case .held(let path, let waited):
            return "\(path): another projector holds this shard (waited \(waited)); stop it or use another --data directory"
        case .missingShard(let path, let directory):
            return """
                \(path) is missing, though \(directory)/\(DataLayout.manifestName) names it (removed by hand?): its rows cannot be \
                read. Rebuild it from the log: daybook rebuild --data \(directory) --partition P
                """
        case .notADirectory(let directory):
            return "\(directory): not a directory; give the --data directory the projector writes"
        case .generation(let directory, let parent):
            return "\(directory) is a generation of the data directory \(parent), not a data directory: give --data \(parent) (its manifest says which generation each shard is in)"
        case .comparisonDirectory(let directory, let parent):
            return "\(directory) is a temporary directory of a verify or diff in \(parent), not a data directory: give --data \(parent)"
        case .splitUser(let key, let first, let second, let directory):
            return """
                user \(JSONWriter.quoted(key.user)) has a \(key.metric.rawValue) row for \(key.day) in two shards, \(first) and \(second): \
                the user's events were published to two partitions (a producer with another partitioner than kafka.partitioner), \
                so neither row is the day's total and none is printed. Rebuild (daybook rebuild --data \(directory)): the misplaced \
                events become dead letters with code wrong_partition, and daybook dlq replay --data \(directory) republishes them \
                to the partition they belong in.
                """
        }
    }
}
