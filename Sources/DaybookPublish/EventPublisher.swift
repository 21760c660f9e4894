import DaybookCore
import DaybookKafka
import DaybookLog

/// Publishes Daybook events to Kafka, for ingestion services and for every command that
/// publishes (`publish`, `import apple-health --brokers`, `dlq replay`, the demo).
///
/// Each event is validated with the projector's own rules before anything is sent, keyed by
/// its user and placed by the configured partitioner (`ProducerConfiguration.partitioner`,
/// config `kafka.partitioner`), so it lands in the partition — the shard — its user belongs
/// in. The producer is idempotent (`acks=all`, `enable.idempotence`): librdkafka's retries
/// never write a message twice, and an event published twice by the caller changes no
/// total (a redelivery of the version in force, Guides/Dedupe.md).
///
/// Every event sent is accounted for exactly once: `send` throws for one that is refused
/// before it is queued (`.invalidEvent`, `.oversized`); every queued one ends in one
/// `Outcome` — delivered, rejected (the broker refused its size) or undelivered — given to
/// `onOutcome` during `send`, `poll`, `flush` or `close`. `publish(_:)` sends a batch and
/// waits for it, returning its outcomes instead.
///
///     let publisher = try EventPublisher(connection: KafkaConnection(bootstrapServers: "localhost:9092"))
///     let outcomes = try publisher.publish([.sampleDeleted(user: "ana", uuid: "u1")])
///     try publisher.close()
///
/// Not thread-safe: use one publisher from one thread (or behind one lock).
public final class EventPublisher {
    /// What became of one queued event.
    public enum Outcome: Sendable {
        /// The cluster acknowledged it; `offset` is nil when the report did not say.
        case delivered(partition: Int32, offset: Int64?)
        /// The cluster refused it for good (`.oversized`); publishing it again cannot help.
        case rejected(PublishError)
        /// Not delivered after the producer's retries (`.notDelivered`); publishing it again is safe.
        case undelivered(PublishError)

        public var isDelivered: Bool {
            if case .delivered = self { return true }
            return false
        }
    }

    /// Counts of every event given to the publisher so far.
    public struct Tally: Sendable, Equatable {
        public var delivered = 0
        /// Refused: invalid, or larger than the cluster accepts.
        public var rejected = 0
        public var undelivered = 0
        /// Queued and not yet reported.
        public var inFlight = 0

        public init(delivered: Int = 0, rejected: Int = 0, undelivered: Int = 0, inFlight: Int = 0) {
            self.delivered = delivered
            self.rejected = rejected
            self.undelivered = undelivered
            self.inFlight = inFlight
        }
    }

    /// The topic events go to.
    public let topic: String
    /// The cluster, for messages (secrets redacted in its description).
    public let connection: KafkaConnection
    private let connectTimeout: Duration
    private var producer: KafkaProducer?
    private let accounts: Accounts
    private var connected = false
    private let decoder = EventDecoder()

    /// Where delivery reports go: a box the producer's callback can hold before `self` exists.
    private final class Accounts {
        var tally = Tally()
        var onOutcome: (Int, Outcome) -> Void
        /// While `publish(_:)` waits for a batch: its outcomes by index.
        var batch: [Outcome?]?
        init(_ onOutcome: @escaping (Int, Outcome) -> Void) { self.onOutcome = onOutcome }

        func report(_ r: DeliveryReport) {
            tally.inFlight -= 1
            let outcome: Outcome
            if let error = r.error {
                let e = PublishError.notDelivered(error)
                if e.kind == .oversized {
                    tally.rejected += 1
                    outcome = .rejected(e)
                } else {
                    tally.undelivered += 1
                    outcome = .undelivered(e)
                }
            } else {
                tally.delivered += 1
                outcome = .delivered(partition: r.partition, offset: r.offset >= 0 ? r.offset : nil)
            }
            if batch != nil { batch?[r.id] = outcome } else { onOutcome(r.id, outcome) }
        }
    }

    /// Makes a publisher; it connects on the first `send` (or `connect`).
    /// - Parameters:
    ///   - configuration: the producer's settings; its `partitioner` must be the one the
    ///     projector checks keys under (`kafka.partitioner`).
    ///   - topic: Default: `health-samples`.
    ///   - connectTimeout: how long the first contact may take before `.unreachable`.
    ///   - onOutcome: hears each queued event's outcome with the id given to `send`.
    /// - Throws: `.configuration` when librdkafka refuses the settings.
    public init(connection: KafkaConnection, configuration: ProducerConfiguration = ProducerConfiguration(),
                topic: String = "health-samples", connectTimeout: Duration = .seconds(30), logger: Logger = .silent,
                onOutcome: @escaping (_ id: Int, Outcome) -> Void = { _, _ in }) throws(PublishError) {
        self.topic = topic
        self.connection = connection
        self.connectTimeout = connectTimeout
        let accounts = Accounts(onOutcome)
        self.accounts = accounts
        do {
            producer = try KafkaProducer(connection: connection, configuration: configuration, logger: logger) { accounts.report($0) }
        } catch {
            throw PublishError(.configuration, "\(error)", kafkaError: error)
        }
    }

    /// Counts so far.
    public var tally: Tally { accounts.tally }

    /// Asks the cluster for its metadata once, so that a dead address fails within the
    /// connect timeout rather than after `message.timeout.ms` with every event in flight.
    /// `send` calls it the first time.
    /// - Throws: `.unreachable` (nothing was sent), `.closed`.
    public func connect() throws(PublishError) {
        guard !connected else { return }
        let producer = try open()
        do {
            try producer.checkReachable(timeoutMilliseconds: Int32(clamping: connectTimeout.components.seconds * 1_000))
        } catch {
            throw PublishError(.unreachable, "cannot reach the Kafka cluster at \(connection.bootstrapServers) within \(connectTimeout): \(error)", kafkaError: error)
        }
        connected = true
    }

    /// Validates `event` and queues it, keyed by its user. Waits while the producer's queue
    /// is full (serving delivery reports meanwhile).
    /// - Parameter id: any non-negative number; it comes back with the outcome.
    /// - Throws: `.invalidEvent` or `.oversized` (the event was not queued; counted
    ///   rejected), `.unreachable`, `.notDelivered` (the producer failed), `.closed`.
    public func send(_ event: Event, id: Int) throws(PublishError) {
        let bytes = Array(event.jsonLine.utf8)
        if let problem = validate(bytes) {
            accounts.tally.rejected += 1
            throw PublishError.invalid(problem)
        }
        try send(validatedJSON: bytes, user: event.user, id: id)
    }

    /// Convenience for byte arrays: as `send(validatedJSON:user:producedAt:id:)`.
    public func send(validatedJSON bytes: [UInt8], user: String, producedAt: Int64? = nil, id: Int) throws(PublishError) {
        let sent: Result<Void, PublishError> = bytes.withUnsafeBytes { b in
            Result { () throws(PublishError) in try send(validatedJSON: b, user: user, producedAt: producedAt, id: id) }
        }
        try sent.get()
    }

    /// Why the projector would refuse `bytes`, or nil: the publisher's validation is the
    /// projector's own decoder, so an event it accepts is one the projector applies.
    private func validate(_ bytes: [UInt8]) -> EventError? {
        if bytes.count > EventDecoder.maximumEventBytes { return .lineTooLong(limit: EventDecoder.maximumEventBytes) }
        let decoded: Result<Event, EventError> = bytes.withUnsafeBufferPointer { b in Result { () throws(EventError) in try decoder.decode(b) } }
        if case .failure(let error) = decoded { return error }
        return nil
    }

    /// Queues one event already encoded as JSON and accepted by `EventDecoder` as an event of
    /// `user` (the command line decodes its input on every core before publishing it
    /// unchanged). The bytes are published as they are.
    /// - Parameter producedAt: the message's Kafka timestamp (ms since 1970); nil (default)
    ///   for now. `dlq replay` republishes a dead letter with the time it was first produced.
    /// - Throws: as `send(_:id:)`, except `.invalidEvent`.
    public func send(validatedJSON bytes: UnsafeRawBufferPointer, user: String, producedAt: Int64? = nil, id: Int) throws(PublishError) {
        try connect()
        let producer = try open()
        var key = user
        let sent: Result<Void, KafkaError> = key.withUTF8 { k in
            Result { () throws(KafkaError) in try producer.send(topic: topic, key: UnsafeRawBufferPointer(k), value: bytes, timestamp: producedAt, id: id) }
        }
        switch sent {
        case .success:
            accounts.tally.inFlight += 1
        case .failure(let error) where error.errorCode == .messageSizeTooLarge:
            accounts.tally.rejected += 1
            throw PublishError.oversized(error)
        case .failure(let error):
            accounts.tally.undelivered += 1
            throw PublishError(.notDelivered, "not delivered: \(error)", kafkaError: error)
        }
    }

    /// Serves pending delivery reports without waiting.
    public func poll() { producer?.poll() }

    /// Waits until every queued event has its outcome; `progress` hears the number still
    /// in flight about once a second.
    /// - Throws: `.notDelivered` when reports are still missing after `timeout`.
    public func flush(timeout: Duration? = nil, progress: (Int) -> Void = { _ in }) throws(PublishError) {
        guard let producer else { return }
        do {
            try producer.flush(timeoutMilliseconds: timeout.map { Int($0.components.seconds * 1_000 + $0.components.attoseconds / 1_000_000_000_000_000) } ?? Int.max,
                               progress: progress)
        } catch {
            throw PublishError(.notDelivered, "not delivered: \(error)", kafkaError: error)
        }
    }

    /// Validates every event of `events`, then — only if all are valid — sends them and
    /// waits for every outcome: the outcomes in the order of `events`. Events queued before
    /// by `send` are flushed first (their outcomes go to `onOutcome`).
    /// - Throws: `.invalidEvent` naming the first invalid event's index (nothing of the
    ///   batch was sent); `.unreachable`, `.notDelivered` when the producer failed (the
    ///   events already sent may still be delivered: treat the batch as undelivered and
    ///   publish it again), `.closed`.
    public func publish(_ events: [Event]) throws(PublishError) -> [Outcome] {
        var lines: [(user: String, bytes: [UInt8])] = []
        lines.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            let bytes = Array(event.jsonLine.utf8)
            if let problem = validate(bytes) {
                accounts.tally.rejected += events.count
                var e = PublishError.invalid(problem)
                e.message = "event \(index) of \(events.count): \(e.message); nothing of the batch was published"
                throw e
            }
            lines.append((event.user, bytes))
        }
        return try publish(validatedLines: lines)
    }

    /// Sends lines already accepted by `EventDecoder` as events of their users (a
    /// `SyncBatch`'s), unchanged, and waits for every outcome, as `publish(_:)` does after
    /// its validation.
    /// - Throws: as `publish(_:)`, except `.invalidEvent`.
    public func publish(validatedLines lines: [(user: String, bytes: [UInt8])]) throws(PublishError) -> [Outcome] {
        try connect()
        try flush()
        accounts.batch = Array(repeating: nil, count: lines.count)
        defer { accounts.batch = nil }
        for (index, line) in lines.enumerated() {
            do {
                try send(validatedJSON: line.bytes, user: line.user, id: index)
            } catch where error.kind == .oversized {
                accounts.batch?[index] = .rejected(error)
            }
        }
        try flush()
        return (accounts.batch ?? []).map { $0 ?? .undelivered(PublishError(.notDelivered, "not delivered: no delivery report")) }
    }

    /// Waits for every outcome, then releases the producer; any later call throws `.closed`.
    public func close(timeout: Duration? = nil, progress: (Int) -> Void = { _ in }) throws(PublishError) {
        defer { producer = nil }
        try flush(timeout: timeout, progress: progress)
    }

    private func open() throws(PublishError) -> KafkaProducer {
        guard let producer else { throw PublishError(.closed, "the publisher is closed; make a new one") }
        return producer
    }
}
