import DaybookLog
import DaybookMetrics
import Foundation

/// The projector's metrics file (`daybook project --metrics-file`): its metrics in the Prometheus text format, for
/// node_exporter's textfile collector, rewritten atomically every `interval`, at start and
/// at exit.
///
/// A failed write never stops the projector: it warns naming the file and the reason
/// (once per distinct reason, and again when writing works again) and tries at the next
/// interval. Only the start-up write is strict: a file that cannot be written then is a
/// mistake in the command line or the deployment, refused before anything is projected.
public struct ProjectorMetrics {
    let path: String
    let topic: String
    let logger: Logger
    /// What warnings call the file (the executable: its option and path).
    let name: String
    public var interval: Duration = .seconds(5)
    /// When this process started, in seconds since 1970.
    let startTime: Double
    private var lastWrite = ContinuousClock.now
    /// The failure last warned about, so that a broken disk warns once, not every 5 s.
    private var failure: String?
    /// The per-partition figures of the last progress seen (the exit write has no other).
    private var partitions: [(partition: Int32, next: Int64, end: Int64?)] = []
    private var standbys: [(partition: Int32, next: Int64, end: Int64?)] = []

    /// Checks `path` and writes a first file (nothing applied yet, up).
    ///
    /// - Parameter name: what warnings call the file (default: its path).
    /// - Throws: `MetricsFileError` when its directory is missing or not a directory, when
    ///   `path` is a directory, or when the first write fails (permissions, read-only).
    public init(path: String, topic: String, logger: Logger, name: String? = nil) throws(MetricsFileError) {
        self.path = path
        self.topic = topic
        self.logger = logger
        self.name = name ?? path
        startTime = Date().timeIntervalSince1970
        try MetricsFile.checkDestination(path)
        try Self.text(topic: topic, statistics: ProjectorStatistics(), partitions: [], up: true, startTime: startTime).write(to: path)
        lastWrite = .now
        if !path.hasSuffix(".prom") {
            logger.warning("\(self.name): node_exporter's textfile collector reads only files named *.prom")
        }
    }

    /// Writes the file if `interval` has passed since the last write.
    public mutating func update(_ progress: ProjectorProgress) {
        partitions = progress.partitions
        standbys = progress.standbys
        guard ContinuousClock.now - lastWrite >= interval else { return }
        write(progress.statistics, up: true)
    }

    /// The last write, when the projector stops (`up` 0): the counts it ended with.
    public mutating func finish(_ statistics: ProjectorStatistics) {
        write(statistics, up: false)
    }

    private mutating func write(_ statistics: ProjectorStatistics, up: Bool) {
        lastWrite = .now
        do {
            try Self.text(topic: topic, statistics: statistics, partitions: partitions, standbys: standbys, up: up, startTime: startTime).write(to: path)
            if failure != nil {
                logger.warning("\(name): written again")
                failure = nil
            }
        } catch {
            guard failure != error.description else { return }
            failure = error.description
            logger.warning("\(error); the projector carries on, and tries again every \(interval.components.seconds) s")
        }
    }

    /// The projector's families. Counters count since this process started.
    static func text(topic: String, statistics s: ProjectorStatistics, partitions: [(partition: Int32, next: Int64, end: Int64?)],
                     standbys: [(partition: Int32, next: Int64, end: Int64?)] = [], up: Bool, startTime: Double) -> MetricsText {
        var m = MetricsText()
        let t: MetricLabels = ["topic": topic]
        m.gauge("daybook_projector_up", help: "1 while the projector runs; 0 in the file it writes when it stops.", value: up ? 1 : 0, labels: t)
        m.gauge("daybook_projector_start_time_seconds", help: "When the projector process started, in seconds since 1970 (the counters count from here).",
                value: startTime, labels: t)
        m.counter("daybook_events_applied_total", help: "Valid events applied to the shards since the projector started.", value: s.applied, labels: t)
        m.counter("daybook_dead_letters_total", help: "Invalid messages recorded as dead letters since the projector started.", value: s.deadLetters, labels: t)
        m.counter("daybook_messages_skipped_total", help: "Messages skipped because their shard had already applied them (redelivered after a seek or rebalance), since the projector started.",
                  value: s.skipped, labels: t)
        m.counter("daybook_stale_resends_total", help: "sample-added events ignored since the projector started because their uuid's sample in force has a higher version.",
                  value: s.staleResends, labels: t)
        m.counter("daybook_state_cache_hits_total", help: "(user, metric, UTC day) windows a batch needed that the state cache held, since the projector started.",
                  value: s.cacheHits, labels: t)
        m.counter("daybook_state_cache_misses_total", help: "(user, metric, UTC day) windows a batch had to read from its shard, since the projector started.",
                  value: s.cacheMisses, labels: t)
        m.counter("daybook_state_cache_evictions_total", help: "(user, metric, UTC day) windows dropped from the state cache to fit state.cache_mb, coldest first, since the projector started (their samples stay in the shard).",
                  value: s.cacheEvictions, labels: t)
        m.counter("daybook_fetcher_wakes_total", help: "Times the projector woke librdkafka's fetchers after a short poll while a partition was behind (librdkafka 2.0 otherwise looks again up to a second later), since the projector started.",
                  value: s.fetcherWakes, labels: t)
        m.counter("daybook_row_updates_total", help: "Per-day total rows (user, metric, day) recomputed since the projector started.", value: s.rowsChanged, labels: t)
        m.histogram("daybook_batch_duration_seconds", help: "Time to apply one poll's messages to their shards (partitions in parallel, one transaction each).",
                    s.batchSeconds, labels: t)
        if let ms = s.lastAppliedTimestampMilliseconds {
            m.gauge("daybook_last_applied_event_timestamp_seconds", help: "Kafka timestamp of the newest message applied since the projector started, in seconds since 1970.",
                    value: Double(ms) / 1_000, labels: t)
        }
        for p in partitions {
            m.gauge("daybook_partition_lag_messages", help: "Messages between the partition's next offset to apply and the end of its log.",
                    value: max(0, (p.end ?? p.next) - p.next), labels: ["topic": topic, "partition": String(p.partition)])
        }
        for p in partitions {
            m.gauge("daybook_partition_next_offset", help: "The partition's next offset to apply (its shard's offset).",
                    value: p.next, labels: ["topic": topic, "partition": String(p.partition)])
        }
        for p in standbys {
            m.gauge("daybook_standby_lag_messages", help: "For a warm standby shard (project --standby): messages between its next offset and the end of the partition's log.",
                    value: max(0, (p.end ?? p.next) - p.next), labels: ["topic": topic, "partition": String(p.partition)])
        }
        return m
    }
}
