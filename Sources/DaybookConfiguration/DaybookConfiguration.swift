import DaybookCore
import DaybookKafka
import DaybookSupport
import Foundation

/// Everything `config/daybook.json` can say, with defaults for what it leaves out.
public struct DaybookConfiguration: Sendable {
    public var priority = SourcePriority.builtIn
    public var connection = KafkaConnection()
    public var producer = ProducerConfiguration()
    public var consumer = ConsumerConfiguration()
    /// `state.cache_mb`: memory for the projector's cache of stored samples, shared by all
    /// partitions of the process. Default 32; 0 keeps nothing between batches (slow: every
    /// batch reads its users back from the shards).
    public var cacheMegabytes = 32
    /// `state.batch_mb`: memory for decoded events waiting to be committed as their
    /// partition's batch (`ProjectorOptions.stagingBytes`), shared by all partitions of the
    /// process. Default 72: enough for 128 partitions' batches to reach their size (4,096
    /// events there, 16,384 at 32 partitions or fewer: `ProjectorOptions.minimumBatch`),
    /// the fullest committed first; more partitions need more (see
    /// `ProjectorOptions.stagingBytes`).
    public var batchMegabytes = 72
    /// `state.batch_delay_ms`: the longest a staged event waits for its partition's batch to
    /// fill (`ProjectorOptions.maximumBatchDelay`). Default 5000. A live stream does not wait
    /// for it (a batch at the partition's end commits at once); a larger value keeps the
    /// batches of a slowed run (under callgrind, 50 times slower) as large as a native run's.
    public var batchDelayMilliseconds = 5_000
    /// `freshness`: each source's silence threshold and page fraction, and the canaries.
    public var freshness = FreshnessPolicy()
    /// `metrics`: entries added to the built-in metric catalogue (`MetricsSection`), in
    /// place order after the built-in ones. `load` installs them for the process.
    public var metrics: [MetricDefinition] = []

    /// The defaults, as if from an empty file.
    public init() {}

    /// The members a configuration file may have at its top level.
    public static let sections = ["priority", "kafka", "state", "freshness", "metrics"]

    /// Reads `path` (or returns the defaults for nil; `-` is standard input). `brokers`
    /// overrides bootstrap.servers.
    ///
    /// Every member is checked, Kafka's too, so a typo fails here instead of leaving a
    /// default in force. Only callers that talk to Kafka pass `resolvingSecrets`: the
    /// others must not need the environment variables that `kafka.secrets` names.
    ///
    /// - Throws: `ConfigurationFileError`: the file cannot be read, is not JSON, or a
    ///   member is wrong (its `ConfigurationError` names the member and what it takes).
    public static func load(_ path: String?, brokers: String? = nil, resolvingSecrets: Bool = true,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationFileError) -> DaybookConfiguration {
        var config = DaybookConfiguration()
        if let path {
            let bytes = try ConfigurationFileError.read(path)
            let parsed = bytes.withUnsafeBufferPointer { all in
                let bom = all.starts(with: byteOrderMark) ? byteOrderMark.count : 0
                return Result { () throws(JSONSyntaxError) in try JSONParser.parse(UnsafeBufferPointer(rebasing: all[bom...])) }
            }
            let json: JSONValue
            switch parsed {
            case .success(let value): json = value
            case .failure(let error): throw ConfigurationFileError(path: path, kind: .notJSON(error))
            }
            do throws(ConfigurationError) {
                guard case .object(let members) = json else {
                    throw ConfigurationError(field: "(top level)", message: "must be a JSON object with the members \(sections.joined(separator: ", ")), got \(json.summary)")
                }
                for key in members.keys.sorted() where !sections.contains(key) {
                    throw ConfigurationError(field: key, message: "unknown setting; use \(sections.joined(separator: ", "))")
                }
                // The metrics first: the priority may name one of them.
                if let metrics = json["metrics"] {
                    config.metrics = try MetricsSection.read(metrics)
                    do {
                        try MetricCatalogue.install(adding: config.metrics)
                    } catch {
                        throw ConfigurationError(field: "metrics", message: error.description)
                    }
                }
                config.priority = try SourcePriority(configuration: json)
                if let kafka = json["kafka"] { try config.readKafka(kafka, environment: resolvingSecrets ? environment : nil) }
                if let state = json["state"] { try config.readState(state) }
                if let freshness = json["freshness"] { try config.readFreshness(freshness) }
            } catch {
                throw ConfigurationFileError(path: path, kind: .invalid(error))
            }
        }
        if let brokers { config.connection.bootstrapServers = brokers }
        return config
    }

    /// The UTF-8 byte order mark some editors put at the start of a file; skipped there.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Reads the `kafka` section; with a nil `environment` the secrets' variable names are
    /// checked but not looked up.
    private mutating func readKafka(_ kafka: JSONValue, environment: [String: String]?) throws(ConfigurationError) {
        guard case .object(let members) = kafka else { throw ConfigurationError(field: "kafka", message: "must be an object") }
        for (key, value) in members {
            let path = "kafka.\(key)"
            switch key {
            case "bootstrap.servers": connection.bootstrapServers = try string(value, path)
            case "client.id": connection.clientID = try string(value, path)
            case "partitioner":
                let name = try string(value, path)
                guard let partitioner = Partitioner(rawValue: name) else {
                    throw ConfigurationError(field: path, message: "\(JSONWriter.quoted(name)) is not a partitioner Daybook can check; use \(Partitioner.allCases.map(\.rawValue).joined(separator: " or ")) (the one every producer of the topic uses: murmur2_random for Java clients and Daybook's EventPublisher, consistent_random for librdkafka's default)")
                }
                producer.partitioner = partitioner
            case "properties":
                for (k, v) in try object(value, path) {
                    guard !KafkaConnection.secretProperties.contains(k) else {
                        throw ConfigurationError(field: "\(path).\(k)", message: "secrets must not be written in the file; put the name of an environment variable under kafka.secrets.\(k)")
                    }
                    connection.properties[k] = try scalar(v, "\(path).\(k)")
                }
            case "secrets":
                for (k, v) in try object(value, path) {
                    // The value names an environment variable; it may be a secret pasted here by
                    // mistake, so no message shows it.
                    guard case .string(let variable) = v else {
                        throw ConfigurationError(field: "\(path).\(k)", message: "must be a non-blank string, got \(v.summary)")
                    }
                    guard Self.isVariableName(variable) else {
                        throw ConfigurationError(field: "\(path).\(k)", message: "is not the name of an environment variable (letters, digits and _, not starting with a digit; the value is not shown, as it may be the secret itself): put the secret in an environment variable and its name here")
                    }
                    guard let environment else { continue }
                    guard let secret = environment[variable], !secret.isEmpty else {
                        throw ConfigurationError(field: "\(path).\(k)", message: "the environment variable it names is not set (or empty): export it before starting (the name is not shown here, in case it is the secret itself)")
                    }
                    connection.secrets[k] = secret
                }
            case "producer":
                for (k, v) in try object(value, path) {
                    let p = "\(path).\(k)"
                    switch k {
                    case "compression":
                        let name = try string(v, p)
                        guard let c = ProducerConfiguration.Compression(rawValue: name) else {
                            throw ConfigurationError(field: p, message: "\(JSONWriter.quoted(name)) is not a codec; use \(ProducerConfiguration.Compression.allCases.map(\.rawValue).joined(separator: ", "))")
                        }
                        producer.compression = c
                    case "linger.ms": producer.lingerMilliseconds = try integer(v, p, 0...900_000)
                    case "message.timeout.ms": producer.messageTimeoutMilliseconds = try integer(v, p, 1...Int(Int32.max))
                    case "queue.buffering.max.messages": producer.queueCapacity = try integer(v, p, 1...10_000_000)
                    case "batch.size": producer.batchBytes = try integer(v, p, 1...Int(Int32.max))
                    default: throw ConfigurationError(field: p, message: "unknown producer setting; use compression, linger.ms, message.timeout.ms, queue.buffering.max.messages, batch.size (other librdkafka properties go under kafka.properties)")
                    }
                }
            case "consumer":
                for (k, v) in try object(value, path) {
                    let p = "\(path).\(k)"
                    switch k {
                    case "group.id": consumer.groupID = try string(v, p)
                    case "group.instance.id": consumer.groupInstanceID = try string(v, p)
                    case "session.timeout.ms": consumer.sessionTimeoutMilliseconds = try integer(v, p, 1_000...3_600_000)
                    case "heartbeat.interval.ms": consumer.heartbeatIntervalMilliseconds = try integer(v, p, 100...3_600_000)
                    case "prefetch_mb": consumer.prefetchBytes = try integer(v, p, 1...65_536) << 20
                    default: throw ConfigurationError(field: p, message: "unknown consumer setting; use group.id, group.instance.id, session.timeout.ms, heartbeat.interval.ms, prefetch_mb")
                    }
                }
            default:
                throw ConfigurationError(field: path, message: "unknown setting; use bootstrap.servers, client.id, partitioner, properties, secrets, producer, consumer")
            }
        }
    }

    private mutating func readState(_ state: JSONValue) throws(ConfigurationError) {
        for (key, value) in try object(state, "state") {
            switch key {
            case "cache_mb": cacheMegabytes = try integer(value, "state.cache_mb", 0...1_048_576)
            case "batch_mb": batchMegabytes = try integer(value, "state.batch_mb", 1...1_048_576)
            case "batch_delay_ms": batchDelayMilliseconds = try integer(value, "state.batch_delay_ms", 1...86_400_000)
            default: throw ConfigurationError(field: "state.\(key)", message: "unknown setting; use cache_mb, batch_mb, batch_delay_ms")
            }
        }
    }

    /// Reads `freshness`: `default` and each of `sources` is `{"threshold": "36h" | "never",
    /// "page_fraction": 0.25}` (a source's missing member is the default's); `canaries` is a
    /// list of `{"user": U, "source": S}`.
    private mutating func readFreshness(_ section: JSONValue) throws(ConfigurationError) {
        let members = try object(section, "freshness")
        for key in members.keys.sorted() where !["default", "sources", "canaries"].contains(key) {
            throw ConfigurationError(field: "freshness.\(key)", message: "unknown setting; use default, sources, canaries")
        }
        if let d = members["default"] { freshness.defaultRule = try rule(d, "freshness.default", base: freshness.defaultRule) }
        if let sources = members["sources"] {
            for (name, value) in try object(sources, "freshness.sources") {
                if let problem = SourcePriority.nameProblem(name) {
                    throw ConfigurationError(field: "freshness.sources", message: "\(JSONWriter.quoted(name)) \(problem); write the source name exactly as the samples give it")
                }
                freshness.sources[name] = try rule(value, "freshness.sources.\(name)", base: freshness.defaultRule)
            }
        }
        if let canaries = members["canaries"] {
            guard case .array(let items) = canaries else {
                throw ConfigurationError(field: "freshness.canaries", message: "must be a list of {\"user\": U, \"source\": S}, got \(canaries.summary)")
            }
            var seen = Set<SyncKey>()
            for (i, item) in items.enumerated() {
                let path = "freshness.canaries[\(i)]"
                let o = try object(item, path)
                for key in o.keys.sorted() where key != "user" && key != "source" {
                    throw ConfigurationError(field: "\(path).\(key)", message: "unknown member; a canary is {\"user\": U, \"source\": S}")
                }
                guard let user = o["user"], let source = o["source"] else {
                    throw ConfigurationError(field: path, message: "needs both user and source: a canary is one (user, source) pair that never checks in")
                }
                let canary = SyncKey(user: try string(user, "\(path).user"), source: try string(source, "\(path).source"))
                if let problem = SourcePriority.nameProblem(canary.source) {
                    throw ConfigurationError(field: "\(path).source", message: "\(JSONWriter.quoted(canary.source)) \(problem); write the source name exactly as the samples give it")
                }
                guard seen.insert(canary).inserted else {
                    throw ConfigurationError(field: path, message: "lists \(JSONWriter.quoted(canary.user))/\(JSONWriter.quoted(canary.source)) a second time")
                }
                guard freshness.rule(for: canary.source).threshold != nil else {
                    throw ConfigurationError(field: path, message: "source \(JSONWriter.quoted(canary.source)) has threshold \"never\", so this canary could never be reported stale; give the source a threshold or the canary another source")
                }
                freshness.canaries.append(canary)
            }
        }
    }

    private func rule(_ value: JSONValue, _ path: String, base: FreshnessPolicy.Rule) throws(ConfigurationError) -> FreshnessPolicy.Rule {
        var rule = base
        for (key, v) in try object(value, path) {
            switch key {
            case "threshold":
                let text = try string(v, "\(path).threshold")
                if text == "never" {
                    rule.threshold = nil
                } else {
                    guard let seconds = DurationText.seconds(text) else {
                        throw ConfigurationError(field: "\(path).threshold", message: "\(JSONWriter.quoted(text)) is not a duration: give \(DurationText.rule), or \"never\"")
                    }
                    rule.threshold = .seconds(seconds)
                }
            case "page_fraction":
                guard case .number(let f) = v, f >= 0, f <= 1 else {
                    throw ConfigurationError(field: "\(path).page_fraction", message: "must be a number from 0 to 1 (the share of the source's users that must be stale to page), got \(v.summary)")
                }
                rule.pageFraction = f
            default:
                throw ConfigurationError(field: "\(path).\(key)", message: "unknown setting; use threshold, page_fraction")
            }
        }
        return rule
    }

    /// `SASL_PASSWORD`, `_X1`: what a shell accepts as a variable name.
    public static func isVariableName(_ s: String) -> Bool {
        guard let first = s.utf8.first, !(48...57).contains(first) else { return false }
        return s.utf8.allSatisfy { $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }

    private func string(_ v: JSONValue, _ path: String) throws(ConfigurationError) -> String {
        guard case .string(let s) = v, !s.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ConfigurationError(field: path, message: "must be a non-blank string, got \(v.summary)")
        }
        return s
    }

    private func object(_ v: JSONValue, _ path: String) throws(ConfigurationError) -> [String: JSONValue] {
        guard case .object(let o) = v else { throw ConfigurationError(field: path, message: "must be an object, got \(v.summary)") }
        return o
    }

    private func scalar(_ v: JSONValue, _ path: String) throws(ConfigurationError) -> String {
        switch v {
        case .string(let s): return s
        case .number(let d): return JSONWriter.number(d)
        case .bool(let b): return b ? "true" : "false"
        default: throw ConfigurationError(field: path, message: "must be a string, number or boolean, got \(v.summary)")
        }
    }

    private func integer(_ v: JSONValue, _ path: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard case .number(let d) = v, d == d.rounded(), d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
            throw ConfigurationError(field: path, message: "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \(v.summary)")
        }
        return Int(d)
    }
}
