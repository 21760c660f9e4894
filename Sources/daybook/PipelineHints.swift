import DaybookPipeline

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
