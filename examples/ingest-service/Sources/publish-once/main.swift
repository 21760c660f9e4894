import DaybookCore
import DaybookKafka
import DaybookPublish

var configuration = ProducerConfiguration()
configuration.partitioner = .murmur2Random  // the projector's kafka.partitioner
let brokers = CommandLine.arguments.dropFirst().first ?? "localhost:9092"
let publisher = try EventPublisher(connection: KafkaConnection(bootstrapServers: brokers),
                                   configuration: configuration, topic: "health-samples",
                                   connectTimeout: .seconds(10))

let walk = Sample(user: "ana", uuid: "9f1c2e4a-walk-0930", metric: .steps, source: "watch",
                  start: try Instant(rfc3339: "2026-11-30T09:30:00Z"),
                  end: try Instant(rfc3339: "2026-11-30T10:00:00Z"),
                  value: 2_400, zone: "Europe/Berlin")
do {
    // Validated first (nothing of the batch is sent if one event is invalid), then keyed by
    // "ana", sent, and waited for: one outcome per event, in order.
    let outcomes = try publisher.publish([.sampleAdded(walk), .sampleDeleted(user: "ana", uuid: "dup-0931")])
    for (event, outcome) in zip(["walk", "delete"], outcomes) {
        switch outcome {
        case .delivered(let partition, let offset): print("\(event): partition \(partition), offset \(offset ?? -1)")
        case .rejected(let error): print("\(event): refused for good: \(error)")      // .oversized
        case .undelivered(let error): print("\(event): send it again: \(error)")      // safe: same event, same totals
        }
    }
} catch {
    switch error.kind {
    case .invalidEvent: print("fix the event: \(error.eventError?.field ?? "?"): \(error)")
    case .unreachable, .notDelivered: print("try again later (retriable: \(error.isRetriable)): \(error)")
    case .oversized, .configuration, .closed: print("\(error)")
    }
}
try publisher.close()
