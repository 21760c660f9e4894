import DaybookKafka
import Foundation
import Synchronization
import Testing

/// `AsyncProducer` against the mock cluster over TCP: each message's report reaches its
/// batch's completion once, a batch that does not fit the queue is refused whole, and
/// closing reports what is still unreported as failed. Waits are bounds on conditions,
/// never measurements.
@Suite(.serialized) struct AsyncProducerTests {
    static let topic = "health-samples"

    /// The reports heard so far, by index.
    final class Heard: Sendable {
        let reports = Mutex<[Int: DeliveryReport]>([:])
        let calls = Atomic<Int>(0)

        func hear(_ index: Int, _ report: DeliveryReport) {
            calls.add(1, ordering: .relaxed)
            reports.withLock { $0[index] = report }
        }

        /// Waits until `count` reports came, or 30 s passed.
        func wait(for count: Int) -> [Int: DeliveryReport] {
            let deadline = ContinuousClock.now + .seconds(30)
            while reports.withLock({ $0.count }) < count, ContinuousClock.now < deadline { usleep(5_000) }
            return reports.withLock { $0 }
        }
    }

    static func broker() throws -> EmbeddedBroker {
        try EmbeddedBroker(topics: [TopicDefinition(name: topic, partitions: 3, replicationFactor: 1)])
    }

    static func messages(_ count: Int, user: String = "ana") -> [(key: [UInt8], value: [UInt8])] {
        (0..<count).map { (Array(user.utf8), Array("\(user):\($0)".utf8)) }
    }

    @Test func everyMessageIsReportedOnceToItsBatch() throws {
        let broker = try Self.broker()
        let producer = try AsyncProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers))
        defer { producer.close() }
        try producer.checkReachable(timeoutMilliseconds: 10_000)
        let first = Heard(), second = Heard()
        guard case .queued = producer.send(topic: Self.topic, messages: Self.messages(3), completion: first.hear) else { Issue.record("not queued"); return }
        guard case .queued = producer.send(topic: Self.topic, messages: Self.messages(2), completion: second.hear) else { Issue.record("not queued"); return }
        let a = first.wait(for: 3), b = second.wait(for: 2)
        // One key, one partition, in order: the first batch at 0-2, the second at 3-4.
        let partition = Partitioner.murmur2Random.partition(ofKey: Array("ana".utf8), count: 3)
        #expect(a.keys.sorted() == [0, 1, 2] && b.keys.sorted() == [0, 1])
        #expect(a.values.allSatisfy { $0.error == nil && $0.partition == partition })
        #expect(a.sorted { $0.key < $1.key }.map(\.value.offset) == [0, 1, 2])
        #expect(b.sorted { $0.key < $1.key }.map(\.value.offset) == [3, 4])
        #expect(first.calls.load(ordering: .relaxed) == 3 && second.calls.load(ordering: .relaxed) == 2)
        #expect(producer.queueDepth == 0)
    }

    @Test func aBatchThatDoesNotFitTheQueueIsRefusedWhole() throws {
        let broker = try Self.broker()
        var configuration = ProducerConfiguration()
        configuration.queueCapacity = 4
        let producer = try AsyncProducer(connection: KafkaConnection(bootstrapServers: broker.bootstrapServers), configuration: configuration)
        defer { producer.close() }
        // The broker down: what is queued stays queued, so the room left is known.
        try broker.setBrokerDown(1)
        let held = Heard()
        guard case .queued = producer.send(topic: Self.topic, messages: Self.messages(3), completion: held.hear) else { Issue.record("not queued"); return }
        #expect(producer.queueDepth == 3)
        let refused = Heard()
        guard case .queueFull(sent: 0) = producer.send(topic: Self.topic, messages: Self.messages(2), completion: refused.hear) else {
            Issue.record("a batch of 2 was taken with room for 1")
            return
        }
        #expect(producer.queueDepth == 3)
        guard case .queued = producer.send(topic: Self.topic, messages: Self.messages(1), completion: held.hear) else { Issue.record("1 did not fit"); return }
        // Closed with the broker still down: the 4 are reported failed (retriable), once each;
        // the refused batch hears nothing.
        producer.close(timeout: .zero)
        #expect(held.wait(for: 3).values.allSatisfy { $0.error?.isRetriable == true })
        #expect(held.calls.load(ordering: .relaxed) == 4)
        #expect(refused.calls.load(ordering: .relaxed) == 0)
        guard case .failed(sent: 0, _) = producer.send(topic: Self.topic, messages: Self.messages(1), completion: refused.hear) else {
            Issue.record("a closed producer took a batch")
            return
        }
    }
}
