/// An error from the Kafka layer: what went wrong, librdkafka's code, and whether
/// trying again can help. Descriptions never include message payloads.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// A property or value that librdkafka or Daybook rejects; fix the configuration.
        case configuration
        /// The cluster could not be reached or answered with an error.
        case broker
        /// A message could not be delivered (after librdkafka's retries).
        case delivery
        /// A topic is missing or does not match its definition.
        case topic
        /// An operation did not finish in time.
        case timedOut
        /// The client was used in a state that does not allow the call.
        case state
    }

    public var kind: Kind
    /// librdkafka's `rd_kafka_resp_err_t` value (0 when the error is Daybook's own).
    public var code: Int32
    /// The configuration property at fault, for a `.configuration` error that has one
    /// (`group.id`), so that a caller can say where it is set.
    public var property: String?
    /// librdkafka's name for the code (`_MSG_TIMED_OUT`, `NOT_LEADER_FOR_PARTITION`), or "".
    public var codeName: String
    public var message: String
    /// Trying the same operation again may succeed.
    public var isRetriable: Bool
    /// The client can no longer be used (for an idempotent producer: ordering may be lost).
    public var isFatal: Bool
    public var file: String
    public var line: Int

    public init(_ kind: Kind, _ message: String, code: Int32 = 0, codeName: String = "", property: String? = nil,
                isRetriable: Bool = false, isFatal: Bool = false, file: String = #fileID, line: Int = #line) {
        self.kind = kind
        self.property = property
        self.message = message
        self.code = code
        self.codeName = codeName
        self.isRetriable = isRetriable
        self.isFatal = isFatal
        self.file = file
        self.line = line
    }

    public var description: String {
        codeName.isEmpty ? message : "\(message) (\(codeName))"
    }
}

extension KafkaError {
    /// librdkafka's response code (`rd_kafka_resp_err_t`) as a type, so that callers test
    /// for a condition by name: `switch error.errorCode { case .messageSizeTooLarge: … }`,
    /// or `catch let e as KafkaError where e.errorCode == .messageSizeTooLarge`.
    ///
    /// The named values are librdkafka's own constants (see `RDKafka/RDKafkaCodes.swift`);
    /// any other code is still carried, by value.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public var description: String { String(rawValue) }
    }

    /// `code`, typed.
    public var errorCode: Code { Code(rawValue: code) }
}
