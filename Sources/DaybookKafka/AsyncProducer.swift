import DaybookLog
import Foundation
import Synchronization

/// Publishes batches of messages from any thread and hands each message's delivery report
/// to the completion given with its batch, on a poll thread of its own: what a server needs
/// that answers a request once its messages are delivered, with no thread waiting meanwhile.
///
///     let producer = try AsyncProducer(connection: connection, configuration: configuration)
///     switch try producer.send(topic: "health-samples", messages: [(key, value)]) { index, report in
///         // on the poll thread, once per message
///     } {
///     case .queued: break
///     case .queueFull(let sent), .failed(let sent, _): …   // answer "retry later"
///     }
///     producer.close(timeout: .seconds(5))
///
/// Idempotent and `acks=all`, as `KafkaProducer`. A batch is queued whole or not at all when
/// the producer's queue (`ProducerConfiguration.queueCapacity` messages) has no room for it
/// (`.queueFull(sent: 0)`): back-pressure for the caller to pass on, never an unbounded
/// buffer, and never a wait. Every message queued ends in exactly one completion call:
/// delivered, failed after librdkafka's retries (`message.timeout.ms`), or failed because
/// the producer was closed first. `close` must be called: the poll thread runs until then.
public final class AsyncProducer: @unchecked Sendable {
    // @unchecked: `core` is one librdkafka handle, whose produce and poll calls librdkafka
    // makes thread-safe; produce is called only under `waiting`'s lock, and the handle's
    // callbacks object only on the poll thread. Everything else mutable is behind a Mutex.

    /// What `send` did with a batch.
    public enum Enqueued: Sendable {
        /// Every message is queued; each will be reported.
        case queued
        /// The queue is full: the first `sent` messages were queued (and will be reported),
        /// the rest not. `sent` is 0 unless librdkafka's own byte bound was reached mid-batch.
        case queueFull(sent: Int)
        /// librdkafka refused a message (too large, a fatal producer): the first `sent` were
        /// queued (and will be reported), the rest not.
        case failed(sent: Int, KafkaError)
    }

    /// Called once per message with its index in its batch and its report (whose `id` is
    /// that index too).
    public typealias Completion = @Sendable (_ index: Int, DeliveryReport) -> Void

    /// The messages queued and not yet reported, by the id given to librdkafka.
    final class Waiting: Sendable {
        struct Entry {
            var index: Int
            var completion: Completion
        }
        struct State {
            var nextID = 0
            var entries: [Int: Entry] = [:]
            var stopping = false
        }
        let state = Mutex(State())

        func report(id: Int, error: KafkaError?, partition: Int32, offset: Int64) {
            guard let entry = state.withLock({ $0.entries.removeValue(forKey: id) }) else { return }
            entry.completion(entry.index, DeliveryReport(id: entry.index, partition: partition, offset: offset, error: error))
        }
    }

    /// The handle as the poll thread holds it: only polled there (rd_kafka_poll is thread-safe).
    private struct PollHandle: @unchecked Sendable {
        let core: RDKafkaProducer
    }

    private let core: RDKafkaProducer
    private let waiting = Waiting()
    private let stopped = DispatchSemaphore(value: 0)
    private let connection: KafkaConnection
    /// The most messages queued at once (`queue.buffering.max.messages`).
    public let capacity: Int

    /// Makes the producer and starts its poll thread.
    /// - Parameter onTick: called on the poll thread after each poll (at least every 50 ms):
    ///   where a caller checks its own deadlines. It must return soon.
    /// - Throws: `.configuration` when librdkafka refuses the settings.
    public init(connection: KafkaConnection, configuration: ProducerConfiguration = ProducerConfiguration(),
                logger: Logger = .silent, onTick: @escaping @Sendable () -> Void = {}) throws(KafkaError) {
        self.connection = connection
        do {
            core = try RDKafkaProducer(properties: try configuration.properties(for: connection), logger: logger)
        } catch {
            throw connection.redacting(error)
        }
        capacity = configuration.queueCapacity
        let waiting = self.waiting
        core.callbacks.onDelivery = { id, error, partition, offset in waiting.report(id: id, error: error, partition: partition, offset: offset) }
        let handle = PollHandle(core: core)
        let stopped = self.stopped
        let thread = Thread {
            while !waiting.state.withLock({ $0.stopping }) {
                handle.core.client.poll(milliseconds: 50)
                onTick()
            }
            stopped.signal()
        }
        thread.name = "daybook-producer-poll"
        thread.start()
    }

    /// Asks the cluster for its metadata once; throws if it does not answer within the timeout.
    public func checkReachable(timeoutMilliseconds: Int32) throws(KafkaError) {
        do {
            _ = try core.client.topicPartitionCounts(timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            throw connection.redacting(error)
        }
    }

    /// Queues every message of a batch, keyed (so placed by the configured partitioner), or
    /// none when the queue has no room for all of them. Never waits.
    /// - Parameter completion: hears each queued message's report, on the poll thread.
    public func send(topic: String, messages: [(key: [UInt8], value: [UInt8])], completion: @escaping Completion) -> Enqueued {
        waiting.state.withLock { state in
            guard !state.stopping else {
                return .failed(sent: 0, KafkaError(.state, "the producer is closed", isRetriable: true))
            }
            guard state.entries.count + messages.count <= capacity else { return .queueFull(sent: 0) }
            for (index, message) in messages.enumerated() {
                let id = state.nextID
                state.nextID = state.nextID == Int.max - 1 ? 0 : state.nextID + 1
                // Registered before librdkafka has it: its report can come at once (on the
                // poll thread, which waits for this lock).
                state.entries[id] = Waiting.Entry(index: index, completion: completion)
                let produced: Result<RDKafkaProducer.Enqueued, KafkaError> = message.key.withUnsafeBytes { k in
                    message.value.withUnsafeBytes { v in
                        Result { () throws(KafkaError) in try core.produce(topic: topic, key: k, value: v, headers: [], id: id) }
                    }
                }
                switch produced {
                case .success(.ok): continue
                case .success(.queueFull):
                    state.entries[id] = nil
                    return .queueFull(sent: index)
                case .failure(let error):
                    state.entries[id] = nil
                    return .failed(sent: index, core.fatalError() ?? error)
                }
            }
            return .queued
        }
    }

    /// Messages queued and not yet reported.
    public var queueDepth: Int { waiting.state.withLock { $0.entries.count } }

    /// Waits up to `timeout` for the messages in flight to be reported, stops the poll thread,
    /// and reports those still unreported as failed (`.state`, retriable). Later `send`s
    /// fail. A second call returns at once.
    public func close(timeout: Duration = .seconds(5)) {
        let deadline = ContinuousClock.now + timeout
        while queueDepth > 0, ContinuousClock.now < deadline { usleep(10_000) }
        let first = waiting.state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        stopped.wait()
        let left = waiting.state.withLock { state -> [Waiting.Entry] in
            defer { state.entries = [:] }
            return Array(state.entries.values)
        }
        let error = KafkaError(.state, "the producer closed before the message was reported", isRetriable: true)
        for entry in left { entry.completion(entry.index, DeliveryReport(id: entry.index, partition: -1, offset: -1, error: error)) }
    }
}
