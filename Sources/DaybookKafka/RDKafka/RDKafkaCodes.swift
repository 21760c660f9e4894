import CRdKafka

// The librdkafka response codes Daybook's callers act on, named from librdkafka's header so
// that no number is written out anywhere else.
extension KafkaError.Code {
    /// No error.
    public static let noError = KafkaError.Code(RD_KAFKA_RESP_ERR_NO_ERROR)
    /// The message is larger than the client's `message.max.bytes` (from `send`) or than
    /// the topic accepts (`max.message.bytes`, in a delivery report). Not retriable.
    public static let messageSizeTooLarge = KafkaError.Code(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
    /// A message was not delivered within `message.timeout.ms`.
    public static let messageTimedOut = KafkaError.Code(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
    /// The topic or partition does not exist on the cluster.
    public static let unknownTopicOrPartition = KafkaError.Code(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    /// The topic is not known to the client (not in the cluster's metadata).
    public static let unknownTopic = KafkaError.Code(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
    /// Every broker the client knows is down.
    public static let allBrokersDown = KafkaError.Code(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
    /// The client hit an unrecoverable error (for an idempotent producer: ordering lost).
    public static let fatal = KafkaError.Code(RD_KAFKA_RESP_ERR__FATAL)

    init(_ code: rd_kafka_resp_err_t) { self.init(rawValue: code.rawValue) }
}
