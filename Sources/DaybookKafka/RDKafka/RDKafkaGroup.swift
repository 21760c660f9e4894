import CRdKafka
import Foundation

extension RDKafkaConsumer {
    /// This member's id in its group, as the coordinator gave it (nil before it joined).
    func memberID() -> String? {
        guard let id = rd_kafka_memberid(client.handle) else { return nil }
        defer { rd_kafka_mem_free(client.handle, id) }
        let text = String(cString: id)
        return text.isEmpty ? nil : text
    }

    /// Commits offsets to the group with `metadata` on every partition (Kafka keeps the text
    /// with the offset and returns it to `committed`); waits for the answer unless `async`.
    func commit(_ offsets: [TopicPartition: Int64], metadata: String, async: Bool) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let list = PartitionList.make(Array(offsets.keys), offsets: offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let bytes = Array(metadata.utf8)
        for i in 0..<Int(list.pointee.cnt) {
            // Freed with the list (librdkafka frees each element's metadata with free()).
            guard let copy = malloc(max(1, bytes.count)) else { continue }
            bytes.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            list.pointee.elems[i].metadata = copy
            list.pointee.elems[i].metadata_size = bytes.count
        }
        let code = rd_kafka_commit(client.handle, list, async ? 1 : 0)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "committing offsets", kind: .broker) }
    }

    /// The group's committed offset and metadata of each partition (nil where none is committed).
    func committed(_ partitions: [TopicPartition], timeoutMilliseconds: Int32) throws(KafkaError) -> [TopicPartition: (offset: Int64, metadata: String)] {
        let list = PartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let code = rd_kafka_committed(client.handle, list, timeoutMilliseconds)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(code, "reading the group's committed offsets", kind: .broker) }
        var out: [TopicPartition: (Int64, String)] = [:]
        for i in 0..<Int(list.pointee.cnt) {
            let e = list.pointee.elems[i]
            guard e.err == RD_KAFKA_RESP_ERR_NO_ERROR, e.offset >= 0 else { continue }
            let metadata = e.metadata.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: e.metadata_size), as: UTF8.self) } ?? ""
            out[TopicPartition(String(cString: e.topic), e.partition)] = (e.offset, metadata)
        }
        return out
    }
}

extension RDKafkaClient {
    /// The group as its coordinator describes it (ListGroups + DescribeGroups): its state
    /// and each member's id, client id, host and assignment bytes; nil when the cluster does
    /// not serve these requests (librdkafka's mock cluster does not).
    func describeGroup(_ group: String, timeoutMilliseconds: Int32) throws(KafkaError) -> (state: String, members: [(id: String, clientID: String, host: String, assignment: [UInt8])])? {
        var list: UnsafePointer<rd_kafka_group_list>? = nil
        let code = rd_kafka_list_groups(handle, group, &list, timeoutMilliseconds)
        if code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE { return nil }
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { throw RDKafkaClient.error(code, "describing consumer group \(group)", kind: .broker) }
        defer { rd_kafka_group_list_destroy(list) }
        for g in 0..<Int(list.pointee.group_cnt) {
            let info = list.pointee.groups[g]
            guard String(cString: info.group) == group else { continue }
            guard info.err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaClient.error(info.err, "describing consumer group \(group)", kind: .broker) }
            var members: [(String, String, String, [UInt8])] = []
            for m in 0..<Int(info.member_cnt) {
                let member = info.members[m]
                let assignment = member.member_assignment.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(member.member_assignment_size))) } ?? []
                members.append((String(cString: member.member_id), String(cString: member.client_id), String(cString: member.client_host), assignment))
            }
            return (info.state.map { String(cString: $0) } ?? "", members)
        }
        return ("Dead", []) // a group nobody has joined (or whose members all left)
    }
}
