import DaybookKafka

/// The settings of a projector a user tunes; what a run is for, when it stops and what it
/// may forward is its `ProjectionRun`.
public struct ProjectorOptions: Sendable {
    /// Where the shards live (created if missing).
    public var dataDirectory: String
    /// Default: `health-samples`.
    public var topic = "health-samples"
    /// Where dead letters are forwarded. Default: `health-samples.dlq`.
    public var deadLetterTopic = "health-samples.dlq"
    /// Take every partition directly instead of joining the group (restart without waiting
    /// for a session timeout; shard locks still keep a second projector out). A rebuild, a
    /// shadow build and a replay always do. Default: false.
    public var solo = false
    /// Messages read per poll, decoded into each partition's staged batch at once (librdkafka's
    /// buffers go back after each poll). Default: 16384 (measured on 1M events in arrival
    /// order, 64 partitions: 236–245 MiB peak against 257–268 with 50000, ~5 % more CPU).
    public var batchSize = 16_384
    /// A partition's staged events are committed as one transaction once there are its
    /// share of `eventsInFlight` (the events of all partitions read), at least this many
    /// and at most `largestBatch`: 4,096 at 128 partitions, 8,192 at 64, 16,384 at 32 or
    /// fewer. A load and a commit cost about the same for 800 events of a shard's users as
    /// for 4,000, and in arrival order every batch reloads its users' days, so a batch
    /// is as large as memory allows: the staged events of all partitions together stay
    /// about the same (~46 MB of 88-byte events) whatever their number. A fixed 8,192 did
    /// less work per event (callgrind of a 262,482-event log over 32 partitions: 21.4k →
    /// 20.0k instructions an event; 16,384: 19.5k) but took 4M events over 128 partitions
    /// to a peak of 275–280 MiB against 225–229 (BENCHMARKS.md, "Issue 26, twelfth steps"
    /// and "thirteenth steps"). Default: 4,096.
    public var minimumBatch = 4_096
    /// The most events a partition's batch waits for (see `minimumBatch`). Default: 16,384.
    public var largestBatch = 16_384
    /// The events all partitions' batches may hold together before each is due (see
    /// `minimumBatch`). Default: 524,288 (128 partitions × 4,096).
    public var eventsInFlight = 524_288
    /// ... or once the oldest of them has waited this long. A live stream does not wait for
    /// it: a batch that reaches the partition's end commits at once; this bounds a catch-up
    /// whose end is not known yet. Default: 5 s (1 s cut the 1M arrival-order batches
    /// short: 29k cache misses against 22k, ~12 % more CPU).
    public var maximumBatchDelay: Duration = .seconds(5)
    /// ... or, the fullest first, once all partitions' staged events together take about
    /// this many bytes (decoded, not librdkafka's buffers, which go back after each poll).
    /// Default: 72 MiB. Over it the batches are staggered (`ProjectorStateMachine.due`), so
    /// a batch grows to 2 × budget / ((partitions + 1) × bytes per event). A staged event is
    /// 88 bytes of plain data (`Ledger.Staged`), its batch's names counted once each
    /// (`StagedBatch.bytes`), so 128 partitions get 2 × 75,497,472 / (129 × ~90) ≈ 13,000
    /// events, far above the minimum of 4,096, and 64 partitions reach the minimum at
    /// 64 × 4,096 × 90 ≈ 23 MiB. (The `Event` form took 136 bytes and a heap String for a
    /// long zone or a uuid that is not canonical: ~264 counted an event. 96 MiB, committed
    /// all at once, gave 128 partitions batches of ~2,900 then and a 4M-event run a peak of
    /// 315 MiB; 48 MiB with today's form moved the 4M/128 peak by less than two runs of
    /// one setting differ: BENCHMARKS.md, "Issue 26, twelfth steps".)
    public var stagingBytes = 72 << 20
    /// How long to wait for the cluster to answer at start-up before giving up. Default: 30 s.
    public var connectTimeout: Duration = .seconds(30)
    /// Memory for cached samples and SQLite pages, in bytes, shared by all partitions
    /// (config `state.cache_mb`). Default: 32 MiB.
    public var cacheBytes = 32 << 20
    /// With `solo`: only these partitions (default: all of the topic's).
    public var partitions: [Int32]?
    /// Also keep warm standby shards of these partitions while this member does not own
    /// them (`StandbyReplicas`). Default: none.
    public var standby: StandbyChoice?
    /// The URL this member's read service answers at (`daybook serve` beside it), put in
    /// its owner claims so that a reader asked for one of its users redirects there.
    /// Default: none (readers elsewhere answer 503 for its users).
    public var advertisedURL: String?

    public init(dataDirectory: String) { self.dataDirectory = dataDirectory }
}

/// The memory of a projector that grows with the log, in one account (issue 26): the state
/// cache (three quarters for the ledgers' samples, a quarter for SQLite's pages of the shards
/// a batch works on, `Projector.shareCache`), the staged events (`stagingBytes`), and
/// librdkafka's prefetch, which holds up to ~3 × its payload budget at the peak (each
/// message's op and the decompressed fetch responses: 86 MB for 32 MiB under heaptrack,
/// BENCHMARKS.md, "Issue 26: memory at 1M/64, 2M/64, 4M/128"). The process adds ~36 MiB of
/// its own (code, threads, an idle restart's peak) and malloc's fragmentation.
///
/// The account is not the peak: at 4M events over 128 partitions the peak RSS (216–232 MiB
/// by default; 256–275 before staged events were plain data) is reached when the prefetch
/// fills whole during a long commit round (jumps of 35–50 MB, half that with half the
/// prefetch), on top of staged arrays grown by doubling
/// (their spare capacity is not counted) and one malloc arena per thread (BENCHMARKS.md,
/// "Issue 26: memory at 4M/128, part 2").
public struct MemoryBudget: Equatable, Sendable {
    /// What librdkafka holds at most per byte of `ConsumerConfiguration.prefetchBytes`.
    public static let prefetchOverhead = 3

    public var ledgerBytes: Int
    public var pageBytes: Int
    public var stagingBytes: Int
    /// librdkafka's, overhead included.
    public var prefetchBytes: Int

    public init(_ options: ProjectorOptions, prefetchBytes: Int) {
        pageBytes = options.cacheBytes / 4
        ledgerBytes = options.cacheBytes - pageBytes
        stagingBytes = options.stagingBytes
        self.prefetchBytes = prefetchBytes * Self.prefetchOverhead
    }

    public var totalBytes: Int { ledgerBytes + pageBytes + stagingBytes + prefetchBytes }

    /// One line for the log, in MiB.
    public var description: String {
        "memory budget \(totalBytes >> 20) MiB: cache \(ledgerBytes >> 20) (samples) + \(pageBytes >> 20) (SQLite pages), " +
            "staged events \(stagingBytes >> 20), prefetch \(prefetchBytes >> 20) (librdkafka, ~\(Self.prefetchOverhead) × its payload budget)"
    }
}
