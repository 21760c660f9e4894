import DaybookCore
import DaybookKafka

/// Why an event, or the publisher, did not do its job: what went wrong and what to do next.
/// Descriptions never include the event's health values.
public struct PublishError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The event fails the projector's validation; it was not published. Repair it.
        case invalidEvent
        /// The event is larger than the cluster accepts (the client's `message.max.bytes`
        /// or the topic's `max.message.bytes`); it was not published. Publishing it again
        /// cannot help.
        case oversized
        /// The cluster did not answer within the connect timeout; nothing was sent.
        case unreachable
        /// The event was sent and its delivery failed after the producer's retries
        /// (`message.timeout.ms`), or the producer failed while sending it. Publishing it
        /// again is safe: the same event twice changes nothing.
        case notDelivered
        /// The producer configuration is not usable; fix it.
        case configuration
        /// `close()` was called; make a new publisher.
        case closed
    }

    public var kind: Kind
    public var message: String
    /// The validation failure, for `.invalidEvent`.
    public var eventError: EventError?
    /// The Kafka layer's error, when there is one.
    public var kafkaError: KafkaError?

    public init(_ kind: Kind, _ message: String, eventError: EventError? = nil, kafkaError: KafkaError? = nil) {
        self.kind = kind
        self.message = message
        self.eventError = eventError
        self.kafkaError = kafkaError
    }

    /// Publishing the same event again may succeed (a delivery that timed out, a cluster
    /// that was down). False for invalid and oversized events.
    public var isRetriable: Bool {
        switch kind {
        case .unreachable: return true
        case .notDelivered: return kafkaError?.isFatal != true
        case .invalidEvent, .oversized, .configuration, .closed: return false
        }
    }

    public var description: String { message }

    static func invalid(_ error: EventError) -> PublishError {
        PublishError(.invalidEvent, "invalid event: \(error)", eventError: error)
    }

    static func oversized(_ error: KafkaError) -> PublishError {
        PublishError(.oversized, "the event is larger than the cluster accepts (message.max.bytes, or the topic's max.message.bytes); it was not published", kafkaError: error)
    }

    static func notDelivered(_ error: KafkaError) -> PublishError {
        error.errorCode == .messageSizeTooLarge ? oversized(error) : PublishError(.notDelivered, "not delivered: \(error)", kafkaError: error)
    }
}
