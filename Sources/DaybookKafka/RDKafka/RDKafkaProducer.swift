import CRdKafka
import DaybookLog

/// The librdkafka side of `KafkaProducer`.
final class RDKafkaProducer {
    let client: RDKafkaClient

    init(properties: [String: String], logger: Logger) throws(KafkaError) {
        let callbacks = ClientCallbacks(logger: logger)
        client = try RDKafkaClient(type: RD_KAFKA_PRODUCER, properties: properties, callbacks: callbacks) { conf in
            rd_kafka_conf_set_dr_msg_cb(conf) { _, message, opaque in
                guard let message, let opaque else { return }
                let callbacks = Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue()
                let m = message.pointee
                let id = Int(bitPattern: m._private) - 1
                let error = m.err == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : RDKafkaClient.error(m.err, "delivery", kind: .delivery)
                callbacks.onDelivery?(id, error, m.partition, m.offset)
            }
        }
    }

    var callbacks: ClientCallbacks { client.callbacks }

    enum Enqueued { case ok, queueFull }

    /// Hands one message to librdkafka (copied). Headers are (name, value) pairs; a
    /// `timestamp` (ms since 1970) of nil is the time it is produced.
    func produce(topic: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                 headers: [(String, [UInt8])], timestamp: Int64? = nil, id: Int) throws(KafkaError) -> Enqueued {
        var headerList: OpaquePointer? = nil
        if !headers.isEmpty {
            headerList = rd_kafka_headers_new(headers.count)
            for (name, bytes) in headers {
                _ = bytes.withUnsafeBytes { rd_kafka_header_add(headerList, name, -1, $0.baseAddress, $0.count) }
            }
        }
        let code = daybook_produce(client.handle, topic, key.baseAddress, key.count, value.baseAddress, value.count,
                                   UnsafeMutableRawPointer(bitPattern: id + 1), headerList, max(0, timestamp ?? 0))
        if code == RD_KAFKA_RESP_ERR_NO_ERROR { return .ok }
        if let headerList { rd_kafka_headers_destroy(headerList) }
        if code == RD_KAFKA_RESP_ERR__QUEUE_FULL { return .queueFull }
        throw RDKafkaClient.error(code, "producing to \(topic)", kind: .delivery)
    }

    /// Messages handed over but not yet reported (plus librdkafka's own requests).
    var outstanding: Int32 { rd_kafka_outq_len(client.handle) }

    /// The fatal error of an idempotent producer, if it has one.
    func fatalError() -> KafkaError? {
        var buffer = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(client.handle, &buffer, buffer.count)
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        var error = RDKafkaClient.error(code, text(of: buffer), kind: .delivery)
        error.isFatal = true
        return error
    }
}
