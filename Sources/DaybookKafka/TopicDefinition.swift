import Foundation

/// A topic as described in `topics/*.json`:
/// `{"name":"health-samples","partitions":8,"replication_factor":3,"configs":{"retention.ms":"-1"}}`.
public struct TopicDefinition: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    public var configs: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int, configs: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.configs = configs
    }

    /// Reads every `*.json` topic definition in `directory` (files ending in
    /// `.schema.json` are event schemas, not topics, and are skipped), sorted by name.
    public static func load(directory: String) throws(KafkaError) -> [TopicDefinition] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw KafkaError(.topic, "\(directory): cannot list topic definitions (\(error.localizedDescription))")
        }
        var out: [TopicDefinition] = []
        for file in names.sorted() where file.hasSuffix(".json") && !file.hasSuffix(".schema.json") {
            out.append(try parse(path: directory + "/" + file))
        }
        guard !out.isEmpty else { throw KafkaError(.topic, "\(directory): no topic definitions (*.json)") }
        return out.sorted { $0.name < $1.name }
    }

    /// The definitions Daybook ships in `topics/`, for running without that folder.
    public static let builtIn = [
        TopicDefinition(name: "health-samples", partitions: 8, replicationFactor: 3,
                        configs: ["retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete", "min.insync.replicas": "2"]),
        TopicDefinition(name: "health-samples.dlq", partitions: 1, replicationFactor: 3,
                        configs: ["retention.ms": "2592000000", "cleanup.policy": "delete", "min.insync.replicas": "2"]),
    ]

    static func parse(path: String) throws(KafkaError) -> TopicDefinition {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw KafkaError(.topic, "\(path): not a JSON object")
        }
        guard let name = object["name"] as? String, !name.isEmpty else {
            throw KafkaError(.topic, "\(path): name: missing or empty")
        }
        guard let partitions = object["partitions"] as? Int, partitions >= 1 else {
            throw KafkaError(.topic, "\(path): partitions: must be a whole number ≥ 1")
        }
        guard let replication = object["replication_factor"] as? Int, replication >= 1 else {
            throw KafkaError(.topic, "\(path): replication_factor: must be a whole number ≥ 1")
        }
        var configs: [String: String] = [:]
        if let raw = object["configs"] {
            guard let dict = raw as? [String: Any] else { throw KafkaError(.topic, "\(path): configs: must be an object") }
            for (k, v) in dict {
                guard let s = v as? String else { throw KafkaError(.topic, "\(path): configs.\(k): must be a string") }
                configs[k] = s
            }
        }
        return TopicDefinition(name: name, partitions: partitions, replicationFactor: replication, configs: configs)
    }
}

/// One partition of one topic.
public struct TopicPartition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(_ topic: String, _ partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public static func < (a: TopicPartition, b: TopicPartition) -> Bool {
        a.topic != b.topic ? a.topic < b.topic : a.partition < b.partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}
