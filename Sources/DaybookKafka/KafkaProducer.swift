import DaybookLog

/// The outcome of one message: where it landed, or why it never will.
public struct DeliveryReport: Sendable {
    /// The id the caller gave to `send` (a line number, say).
    public var id: Int
    public var partition: Int32
    public var offset: Int64
    /// nil when the broker acknowledged the message.
    public var error: KafkaError?
}

/// Publishes messages to Kafka: idempotent (`acks=all`), keyed, compressed.
///
/// Every message ends in exactly one `DeliveryReport` passed to `onDelivery`: delivered,
/// or failed after librdkafka's retries (`message.timeout.ms`). When librdkafka's queue is
/// full, `send` waits (serving reports) instead of failing. Not thread-safe: use it from
/// one thread; reports are delivered on that thread during `send`, `poll` and `flush`.
public final class KafkaProducer {
    private let core: RDKafkaProducer
    private let logger: Logger
    /// Messages sent and not yet reported.
    public private(set) var inFlight = 0

    public init(connection: KafkaConnection, configuration: ProducerConfiguration = ProducerConfiguration(),
                logger: Logger, onDelivery: @escaping (DeliveryReport) -> Void) throws(KafkaError) {
        self.logger = logger
        do {
            core = try RDKafkaProducer(properties: try configuration.properties(for: connection), logger: logger)
        } catch {
            throw connection.redacting(error)
        }
        core.callbacks.onDelivery = { [unowned self] id, error, partition, offset in
            self.inFlight -= 1
            onDelivery(DeliveryReport(id: id, partition: partition, offset: offset, error: error))
        }
    }

    /// Queues one message. Blocks while the local queue is full.
    /// - Parameter timestamp: the message's CreateTime (ms since 1970); nil (default) for
    ///   now. A republished message keeps the time it was first produced this way.
    /// - Parameter id: any non-negative number; it comes back in the delivery report.
    public func send(topic: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                     headers: [(String, [UInt8])] = [], timestamp: Int64? = nil, id: Int) throws(KafkaError) {
        precondition(id >= 0, "delivery ids are non-negative")
        var waited = false
        while true {
            switch try core.produce(topic: topic, key: key, value: value, headers: headers, timestamp: timestamp, id: id) {
            case .ok:
                inFlight += 1
                return
            case .queueFull:
                if !waited { logger.debug("producer queue full; waiting for deliveries") }
                waited = true
                if let fatal = core.fatalError() { throw fatal }
                core.client.poll(milliseconds: 50)
            }
        }
    }

    /// Convenience for byte arrays.
    public func send(topic: String, key: [UInt8], value: [UInt8], headers: [(String, [UInt8])] = [], id: Int) throws(KafkaError) {
        let result: Result<Void, KafkaError> = key.withUnsafeBytes { k in
            value.withUnsafeBytes { v in Result { () throws(KafkaError) in try send(topic: topic, key: k, value: v, headers: headers, id: id) } }
        }
        try result.get()
    }

    /// Asks the cluster for its metadata once; throws if it does not answer within the
    /// timeout (unreachable, wrong address, authentication failing).
    public func checkReachable(timeoutMilliseconds: Int32) throws(KafkaError) {
        _ = try core.client.topicPartitionCounts(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Serves pending delivery reports without waiting.
    public func poll() { core.client.poll(milliseconds: 0) }

    /// Waits until every sent message has been reported (delivered or failed), serving
    /// reports meanwhile; `progress` is called about once a second with the number in flight.
    /// Returns when nothing is in flight, or throws `.timedOut` after `timeoutMilliseconds`.
    public func flush(timeoutMilliseconds: Int = Int.max, progress: (Int) -> Void = { _ in }) throws(KafkaError) {
        let start = ContinuousClock.now
        var lastProgress = start
        while inFlight > 0 {
            core.client.poll(milliseconds: 100)
            let now = ContinuousClock.now
            if now - lastProgress >= .seconds(1) {
                progress(inFlight)
                lastProgress = now
            }
            if timeoutMilliseconds != Int.max, now - start > .milliseconds(timeoutMilliseconds) {
                throw KafkaError(.timedOut, "\(inFlight) messages still unreported after \(timeoutMilliseconds) ms", isRetriable: true)
            }
        }
    }

    /// The client-level error last reported by librdkafka (for example all brokers down).
    public var lastClientError: KafkaError? { core.callbacks.lastError }
}
