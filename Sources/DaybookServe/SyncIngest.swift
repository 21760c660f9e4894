import DaybookHTTP
import DaybookKafka
import DaybookLog
import DaybookMetrics
import DaybookPublish
import DaybookSupport
import Foundation
import Synchronization

/// How a `SyncIngest` publishes and what it bounds.
public struct SyncIngestConfiguration: Sendable {
    /// The cluster batches are published to.
    public var connection: KafkaConnection
    /// The producer's settings (idempotent, `acks=all` whatever is set here); its
    /// `partitioner` must be the projector's, its `queueCapacity` bounds the events waiting
    /// for delivery (a batch that does not fit is answered 429). `messageTimeoutMilliseconds`
    /// is replaced by `deliveryTimeout`.
    public var producer = ProducerConfiguration()
    /// Default: `health-samples`.
    public var topic = "health-samples"
    /// The largest body, after gzip is inflated. Default: 8 MiB.
    public var maxBodyBytes = 8 << 20
    /// How long a batch may wait for its delivery reports before it is answered 503 (also
    /// librdkafka's `message.timeout.ms`, so that an undelivered event stops being retried
    /// about then). Default: 10 s.
    public var deliveryTimeout: Duration = .seconds(10)
    /// Each token's allowance: `ratePerSecond` batches a second on average, `burst` at once.
    /// Defaults: 50 and 100.
    public var ratePerSecond: Double = 50
    public var burst = 100
    /// `Retry-After` of a 429 for a full queue and of a 503. Default: 2 s.
    public var retryAfterSeconds = 2
    /// Where failures go (never a token, never a health value). Default: silent.
    public var logger: Logger = .silent

    public init(connection: KafkaConnection) { self.connection = connection }
}

/// Why a `SyncIngest` cannot start.
public struct SyncIngestError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// librdkafka refused the producer's settings.
        case configuration
        /// The cluster did not answer in time.
        case unreachable
    }
    public var kind: Kind
    public var message: String
    public var kafkaError: KafkaError?
    public var description: String { message }
}

/// Phones' sync batches over HTTP into Kafka (issue 29): the answer to
/// `POST /v1/users/{user}/syncs`, given once every event of the batch is delivered.
///
///     POST /v1/users/ana/syncs
///     Content-Type: application/json            (Content-Encoding: gzip accepted)
///     {"anchor": 17, "added": [sample, …], "deleted": ["uuid", …]}
///
///     202 {"anchor":"17","events":3,"partition":1,"offsets":[40,42]}
///
/// The batch is decoded and checked whole by `SyncBatch` (nothing published unless every
/// event is valid: 400 naming the field as the phone sent it), then queued whole to an
/// idempotent `acks=all` producer (`AsyncProducer`), and the request waits — suspended in
/// the server, no thread held — until the producer's poll thread has every event's report:
/// 202 when all were delivered, 503 with `Retry-After` at the first failure or when
/// `deliveryTimeout` passes. A 503 acknowledges nothing; some events may be in the log
/// anyway, and sending the batch again is safe (the projector counts an event sent twice
/// once). Before that: 415 for another content type or coding, 413 past `maxBodyBytes`
/// (inflated within the limit, never beyond), 429 with `Retry-After` when the caller's
/// token bucket is empty or the producer's queue has no room for the batch.
///
/// Who may post is the read service's business (`AccessTokens`): `ReadService` hands each
/// authorized sync here with its caller. `close()` (which `ReadService.stop()` calls) must
/// end it.
public final class SyncIngest: Sendable {
    public let configuration: SyncIngestConfiguration
    private let producer: AsyncProducer
    private let pending: PendingBatches
    private let buckets = Mutex<[Int: TokenBucket]>([:])
    let metrics = SyncMetrics()
    private let maximumMessageBytes: Int

    /// The batches waiting for their reports, by number, and the clock their deadlines are on.
    final class PendingBatches: Sendable {
        struct Entry {
            var wait: BatchWait
            var anchor: String
            var arrived: ContinuousClock.Instant
            var respond: @Sendable (HTTPResponse) -> Void
        }
        let entries = Mutex<(next: Int, waiting: [Int: Entry])>((0, [:]))
        let origin = ContinuousClock.now
        let retryAfterSeconds: Int
        let metrics: SyncMetrics
        let logger: Logger

        init(retryAfterSeconds: Int, metrics: SyncMetrics, logger: Logger) {
            self.retryAfterSeconds = retryAfterSeconds
            self.metrics = metrics
            self.logger = logger
        }

        var now: Double { (ContinuousClock.now - origin).seconds }

        /// Registers a batch and returns its number.
        func add(_ entry: Entry) -> Int {
            entries.withLock { state in
                let id = state.next
                state.next += 1
                state.waiting[id] = entry
                return id
            }
        }

        /// Applies `decide` to batch `id` and answers it if that decides it (outside the lock).
        func update(_ id: Int, _ decide: (inout BatchWait) -> BatchWait.Action) {
            let decided = entries.withLock { state -> (Entry, BatchWait.Action)? in
                guard var entry = state.waiting[id] else { return nil }
                let action = decide(&entry.wait)
                if action == .wait {
                    state.waiting[id] = entry
                    return nil
                }
                state.waiting[id] = nil
                return (entry, action)
            }
            if let (entry, action) = decided { answer(entry, action) }
        }

        /// Fails every batch past its deadline (the producer's poll thread calls it).
        func tick() {
            let now = now
            let expired = entries.withLock { state -> [(Entry, BatchWait.Action)] in
                var out: [(Entry, BatchWait.Action)] = []
                for (id, var entry) in state.waiting {
                    let action = entry.wait.tick(now: now)
                    if action != .wait {
                        state.waiting[id] = nil
                        out.append((entry, action))
                    }
                }
                return out
            }
            for (entry, action) in expired { answer(entry, action) }
        }

        /// Forgets batch `id` without answering it (its caller answers).
        func remove(_ id: Int) { _ = entries.withLock { $0.waiting.removeValue(forKey: id) } }

        private func answer(_ entry: Entry, _ action: BatchWait.Action) {
            switch action {
            case .wait:
                return
            case .accept(let partition, let first, let last):
                let seconds = (ContinuousClock.now - entry.arrived).seconds
                metrics.record(.accepted, events: entry.wait.events, ackSeconds: seconds)
                entry.respond(SyncIngest.accepted(anchor: entry.anchor, events: entry.wait.events, partition: partition, first: first, last: last))
            case .fail(let reason):
                metrics.record(.undelivered, events: entry.wait.events)
                logger.warning("sync batch not acknowledged: \(reason)")
                entry.respond(SyncIngest.undelivered(retryAfterSeconds: retryAfterSeconds))
            }
        }
    }

    /// Makes the producer (it connects in the background; `connect` checks the cluster).
    /// - Throws: `.configuration` when librdkafka refuses the settings.
    public init(_ configuration: SyncIngestConfiguration) throws(SyncIngestError) {
        self.configuration = configuration
        var producerConfiguration = configuration.producer
        producerConfiguration.messageTimeoutMilliseconds = max(1, Int(configuration.deliveryTimeout.wholeMilliseconds))
        let pending = PendingBatches(retryAfterSeconds: configuration.retryAfterSeconds, metrics: metrics, logger: configuration.logger)
        self.pending = pending
        maximumMessageBytes = SyncBatch.maximumMessageBytes(for: configuration.connection)
        do {
            producer = try AsyncProducer(connection: configuration.connection, configuration: producerConfiguration,
                                         logger: configuration.logger, onTick: { pending.tick() })
        } catch {
            throw SyncIngestError(kind: .configuration, message: "the sync producer's settings: \(error)", kafkaError: error)
        }
    }

    /// Asks the cluster for its metadata once.
    /// - Throws: `.unreachable` when it does not answer within `timeout`.
    public func connect(timeout: Duration) throws(SyncIngestError) {
        do {
            try producer.checkReachable(timeoutMilliseconds: Int32(clamping: timeout.components.seconds * 1_000))
        } catch {
            throw SyncIngestError(kind: .unreachable, message: "cannot reach the Kafka cluster at \(configuration.connection.bootstrapServers) within \(timeout): \(error)", kafkaError: error)
        }
    }

    /// Answers one sync of `user` by `caller` (already authorized) through `respond`, now or
    /// from the producer's poll thread; never blocks on the cluster.
    public func handle(_ request: HTTPRequest, user: String, caller: AccessTokens.Caller, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let arrived = ContinuousClock.now
        let decision = buckets.withLock { buckets in
            var bucket = buckets[caller.entry] ?? TokenBucket(perSecond: configuration.ratePerSecond, burst: configuration.burst, now: pending.now)
            defer { buckets[caller.entry] = bucket }
            return bucket.take(now: pending.now)
        }
        if case .refused(let seconds) = decision {
            metrics.record(.rateLimited, events: 0)
            return respond(ReadError(status: 429, code: "rate_limited",
                                     message: "this token has sent more than \(Self.rateText(configuration.ratePerSecond)) batches a second (\(configuration.burst) at once); send it again after Retry-After",
                                     headers: [HTTPHeader("Retry-After", String(seconds))]).response)
        }
        let encoding: SyncBodyEncoding
        do {
            encoding = try SyncBodyEncoding(contentType: request.header("Content-Type"), contentEncoding: request.header("Content-Encoding"))
        } catch {
            metrics.record(.unsupported, events: 0)
            return respond(error.response)
        }
        var body = request.body
        let limit = configuration.maxBodyBytes
        if body.count > limit { return respond(tooLarge()) }
        if encoding == .gzip {
            switch Gunzip.inflate(body, limit: limit) {
            case .success(let inflated): body = inflated
            case .failure(.tooLarge): return respond(tooLarge())
            case .failure(let failure):
                metrics.record(.rejected, events: 0)
                return respond(ReadError(status: 400, code: "bad_body", message: "\(failure); nothing of the batch was published").response)
            }
        }
        let decoded = body.withUnsafeBufferPointer { SyncBatch.decode($0, user: user, maximumMessageBytes: maximumMessageBytes) }
        let batch: SyncBatch
        switch decoded {
        case .success(let b): batch = b
        case .failure(let rejection):
            metrics.record(.rejected, events: 0)
            var refusal = ReadError(status: 400, code: "bad_batch", parameter: rejection.field, message: rejection.description)
            if !rejection.description.contains("nothing of the batch") { refusal.message += "; nothing of the batch was published" }
            return respond(refusal.response)
        }
        guard !batch.events.isEmpty else {
            metrics.record(.accepted, events: 0, ackSeconds: (ContinuousClock.now - arrived).seconds)
            return respond(Self.accepted(anchor: batch.anchor, events: 0, partition: nil, first: nil, last: nil))
        }
        let waiting = pending
        let deadline = waiting.now + configuration.deliveryTimeout.seconds
        let id = waiting.add(.init(wait: BatchWait(events: batch.events.count, deadline: deadline), anchor: batch.anchor, arrived: arrived, respond: respond))
        let key = Array(batch.user.utf8)
        let enqueued = producer.send(topic: configuration.topic, messages: batch.lines.map { (key, $0) }) { _, report in
            waiting.update(id) { $0.report(partition: report.partition, offset: report.offset, error: report.error) }
        }
        switch enqueued {
        case .queued:
            return
        case .queueFull(let sent):
            pending.remove(id)
            metrics.record(.queueFull, events: batch.events.count)
            respond(ReadError(status: 429, code: "busy",
                              message: "the service has too many events waiting for the cluster to take this batch now (\(sent == 0 ? "nothing of it was sent" : "it is not acknowledged")); send it again after Retry-After",
                              headers: [HTTPHeader("Retry-After", String(configuration.retryAfterSeconds))]).response)
        case .failed(_, let error):
            pending.remove(id)
            metrics.record(.undelivered, events: batch.events.count)
            if error.isFatal {
                // An idempotent producer that failed for good takes no more events: only a new
                // one (a restart of the service) can.
                configuration.logger.error("the sync producer failed for good and takes no more batches; restart the service: \(error)")
            } else {
                configuration.logger.warning("sync batch not queued: \(error)")
            }
            respond(Self.undelivered(retryAfterSeconds: configuration.retryAfterSeconds))
        }
    }

    static func rateText(_ rate: Double) -> String {
        rate == rate.rounded() && abs(rate) < 1e15 ? String(Int64(rate)) : String(rate)
    }

    private func tooLarge() -> HTTPResponse {
        metrics.record(.tooLarge, events: 0)
        return ReadError(status: 413, code: "too_large", message: "the body is larger than \(configuration.maxBodyBytes) bytes (after gzip is inflated); split the batch").response
    }

    /// The 202: `offsets` null unless every event's offset is known, `partition` null for an
    /// empty batch.
    static func accepted(anchor: String, events: Int, partition: Int32?, first: Int64?, last: Int64?) -> HTTPResponse {
        let offsets = first.flatMap { f in last.map { "[\(f),\($0)]" } } ?? "null"
        return .json(202, "{\"anchor\":\(JSONWriter.quoted(anchor)),\"events\":\(events),\"partition\":\(partition.map(String.init) ?? "null"),\"offsets\":\(offsets)}")
    }

    static func undelivered(retryAfterSeconds: Int) -> HTTPResponse {
        ReadError(status: 503, code: "unavailable",
                  message: "the batch could not be delivered to the cluster in time; nothing of it is acknowledged: send the same batch again after Retry-After (an event sent twice counts once)",
                  headers: [HTTPHeader("Retry-After", String(retryAfterSeconds))]).response
    }

    /// Adds the sync series to a `/metrics` text.
    func renderMetrics(into text: inout MetricsText) {
        metrics.render(into: &text, queueDepth: producer.queueDepth, queueCapacity: producer.capacity)
    }

    /// Waits up to `timeout` for the batches in flight, then closes the producer: batches
    /// still waiting are answered 503.
    public func close(timeout: Duration = .seconds(5)) {
        producer.close(timeout: timeout)
    }
}
