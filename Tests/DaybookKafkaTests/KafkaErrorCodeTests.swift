@testable import DaybookKafka
import Testing

/// `KafkaError.Code`: librdkafka's codes by name, taken from its header.
@Suite struct KafkaErrorCodeTests {
    @Test func namedCodesAreLibrdkafkasValues() {
        // From rdkafka.h: RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE = 10,
        // RD_KAFKA_RESP_ERR__MSG_TIMED_OUT = -192, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART = 3.
        #expect(KafkaError.Code.messageSizeTooLarge.rawValue == 10)
        #expect(KafkaError.Code.messageTimedOut.rawValue == -192)
        #expect(KafkaError.Code.unknownTopicOrPartition.rawValue == 3)
        #expect(KafkaError.Code.noError.rawValue == 0)
    }

    @Test func anErrorsCodeMatchesByName() {
        let error = KafkaError(.delivery, "producing to t: Broker: Message size too large", code: 10, codeName: "MSG_SIZE_TOO_LARGE")
        var matched = false
        switch error.errorCode {
        case .messageSizeTooLarge: matched = true
        default: break
        }
        #expect(matched)
        #expect(error.errorCode != .messageTimedOut)
        #expect(KafkaError(.broker, "own").errorCode == .noError)
    }
}
