/// Where the cluster is and how to talk to it.
public struct KafkaConnection: Sendable, CustomStringConvertible {
    /// Comma-separated `host:port` list. Default: `localhost:9092`.
    public var bootstrapServers: String
    /// Sent to brokers for their logs and quotas. Default: `daybook`.
    public var clientID: String
    /// Raw librdkafka properties passed through as they are (security.protocol, sasl.mechanism,
    /// ssl.ca.location, …). Secrets do not belong here: see `secrets`.
    public var properties: [String: String]
    /// Secret properties (sasl.password, ssl.key.password, …) resolved from the environment.
    /// Never printed: `description` shows their names only.
    public var secrets: [String: String]

    public init(bootstrapServers: String = "localhost:9092", clientID: String = "daybook",
                properties: [String: String] = [:], secrets: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.properties = properties
        self.secrets = secrets
    }

    /// Why a `bootstrap.servers` list is malformed, or nil when each entry is a
    /// `[scheme://]host[:port]` (host a name, an IPv4 address or a bracketed IPv6 address).
    /// Checked before connecting: librdkafka would otherwise retry a bad name forever.
    public static func problem(bootstrapServers list: String) -> String? {
        guard !list.trimmingWhitespace.isEmpty else { return "is empty; give host:port[,host:port…], e.g. localhost:9092" }
        for raw in list.split(separator: ",", omittingEmptySubsequences: false) {
            var entry = Substring(raw.trimmingWhitespace)
            guard !entry.isEmpty else { return "has an empty entry; separate host:port pairs with single commas" }
            if let scheme = entry.range(of: "://") { entry = entry[scheme.upperBound...] }
            var host = entry
            var port: Substring?
            if entry.hasPrefix("[") {
                guard let close = entry.firstIndex(of: "]") else { return "'\(raw)' opens an IPv6 address with [ but never closes it" }
                host = entry[entry.index(after: entry.startIndex)..<close]
                let rest = entry[entry.index(after: close)...]
                if !rest.isEmpty {
                    guard rest.hasPrefix(":") else { return "'\(raw)' has text after the IPv6 address; expected [address]:port" }
                    port = rest.dropFirst()
                }
                guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                    return "'\(raw)' is not an IPv6 address in brackets"
                }
            } else {
                if let colon = entry.lastIndex(of: ":") {
                    host = entry[..<colon]
                    port = entry[entry.index(after: colon)...]
                }
                guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }) else {
                    return "'\(raw)' is not host:port (a host name may hold letters, digits, '.', '-' and '_')"
                }
            }
            if let port {
                guard let n = Int(port), (1...65_535).contains(n) else { return "'\(raw)' has port '\(port)'; a port is a number from 1 to 65535" }
            }
        }
        return nil
    }

    /// Property names that must come from the environment, never from a file.
    public static let secretProperties: Set<String> = [
        "sasl.password", "ssl.key.password", "ssl.keystore.password", "sasl.oauthbearer.client.secret",
        "ssl.key.pem", "sasl.oauthbearer.config",
    ]

    /// `error` with every secret value replaced by `<redacted>`: librdkafka quotes a value it
    /// rejects ("Invalid value \"…\" for configuration property"), a secret's too.
    public func redacting(_ error: KafkaError) -> KafkaError {
        var error = error
        for value in secrets.values where !value.isEmpty {
            error.message = error.message.replacingOccurrences(of: value, with: "<redacted>")
        }
        return error
    }

    public var description: String {
        let hidden = secrets.keys.sorted().map { "\($0)=<redacted>" }
        return "bootstrap.servers=\(bootstrapServers) client.id=\(clientID)" + (hidden.isEmpty ? "" : " " + hidden.joined(separator: " "))
    }
}

/// Settings of `KafkaProducer`. Each field maps to one librdkafka property.
public struct ProducerConfiguration: Sendable {
    public enum Compression: String, Sendable, CaseIterable { case none, gzip, snappy, lz4, zstd }

    /// `compression.codec`. Default: `lz4`.
    public var compression: Compression = .lz4
    /// `linger.ms`: how long to wait to fill a batch. Default: 5.
    public var lingerMilliseconds: Int = 5
    /// `message.timeout.ms`: how long librdkafka retries a message before it reports it failed.
    /// Default: 300000 (5 minutes).
    public var messageTimeoutMilliseconds: Int = 300_000
    /// `queue.buffering.max.messages`: messages in flight before `send` waits. Default: 100000.
    public var queueCapacity: Int = 100_000
    /// `batch.size` in bytes. Default: 1000000.
    public var batchBytes: Int = 1_000_000
    /// `partitioner`: how every producer of the topic places a key (config
    /// `kafka.partitioner`); the projector checks each message's partition under it.
    /// Default: `murmur2_random`.
    public var partitioner: Partitioner = .default

    public init() {}

    /// Properties Daybook relies on; a passthrough property may not change them.
    var locked: [String: String] {
        ["enable.idempotence": "true", "acks": "all", "partitioner": partitioner.rawValue]
    }

    /// The librdkafka property map: defaults, then the connection's passthrough, then the
    /// locked properties. Throws if a passthrough property tries to change a locked one.
    public func properties(for connection: KafkaConnection) throws(KafkaError) -> [String: String] {
        var p = try baseProperties(connection)
        p["compression.codec"] = compression.rawValue
        p["linger.ms"] = String(lingerMilliseconds)
        p["message.timeout.ms"] = String(messageTimeoutMilliseconds)
        p["queue.buffering.max.messages"] = String(queueCapacity)
        p["batch.size"] = String(batchBytes)
        return try merge(p, connection, locked: locked)
    }
}

/// Settings of `KafkaConsumer`.
public struct ConsumerConfiguration: Sendable {
    /// `group.id`. Default: `daybook-projector`.
    public var groupID: String = "daybook-projector"
    /// `group.instance.id` for static membership (a restarted member gets its partitions
    /// back without a rebalance). Default: none.
    public var groupInstanceID: String? = nil
    /// `session.timeout.ms`: how long a silent member keeps its partitions. Default: 10000.
    public var sessionTimeoutMilliseconds: Int = 10_000
    /// `heartbeat.interval.ms`. Default: 1000.
    public var heartbeatIntervalMilliseconds: Int = 1_000
    /// Memory for prefetched messages, in bytes, for all partitions together. Default: 16 MiB
    /// (librdkafka holds ~2.7× it at the peak: each message's op and the decompressed fetch
    /// responses; 32 MiB kept 1M events over 128 partitions at 251 MiB peak RSS, 16 at 189,
    /// BENCHMARKS.md, "Issue 26: memory at 1M/64, 2M/64, 4M/128").
    ///
    /// Not less: librdkafka before 2.2 (Debian 12 ships 2.0.2) stops fetching for about a
    /// second once this queue is full (its `fetch.queue.backoff.ms` came in 2.2, issue 2879),
    /// so the budget must hold what the projector drains in a second. 8 MiB ran dry: 1M
    /// events over 64 partitions took 34–41 % more CPU and 30–59 % more wall time, three
    /// runs alternated with 16, for 33–51 MiB less peak RSS (BENCHMARKS.md, "Issue 26:
    /// memory at 4M/128, part 2").
    ///
    /// Daybook reads every partition through one queue (the group's consumer queue, or one
    /// queue that the directly read partitions forward to), and librdkafka then applies
    /// `queued.max.messages.kbytes` to that one queue, not per partition, so the whole
    /// budget goes to it (BENCHMARKS.md, "Figures behind choices in the code").
    public var prefetchBytes: Int = 16 << 20

    public init() {}

    /// Offsets live with the data (in SQLite), so Kafka must never commit or store them by
    /// itself, and must never move a position that fell outside the log (retention deleted
    /// it, or this is another cluster): that is reported as `offsetOutOfRange` instead.
    static let locked: [String: String] = [
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "auto.offset.reset": "error",
        // --until-caught-up needs the end of each partition reported.
        "enable.partition.eof": "true",
        // Eager rebalancing: the projector holds every newly assigned partition until its
        // shard is open and checked (incremental protocols assign differently).
        "partition.assignment.strategy": "range,roundrobin",
    ]

    public func properties(for connection: KafkaConnection) throws(KafkaError) -> [String: String] {
        var p = try baseProperties(connection)
        p["group.id"] = groupID
        if let groupInstanceID { p["group.instance.id"] = groupInstanceID }
        p["session.timeout.ms"] = String(sessionTimeoutMilliseconds)
        p["heartbeat.interval.ms"] = String(heartbeatIntervalMilliseconds)
        // The byte limit decides (it has priority over queued.min.messages). A fetch may
        // overshoot it by the fetch responses in flight (one per broker, decompressed), so a
        // response is capped at a 16th of it: less memory, as fast (BENCHMARKS.md, "Figures
        // behind choices in the code"). librdkafka accepts at most 2097151 KiB (just under 2 GiB).
        p["queued.max.messages.kbytes"] = String(min(2_097_151, max(1_024, prefetchBytes / 1_024)))
        p["queued.min.messages"] = "1000000"
        p["fetch.max.bytes"] = String(max(1 << 20, min(52_428_800, prefetchBytes / 16)))
        // How long a broker may hold a fetch that has nothing (librdkafka: 500 ms). 100 ms
        // answers the end of a partition sooner (a --until-caught-up restart is faster) for
        // at most 10 empty fetches a second per broker while idle. kafka.properties can set it.
        p["fetch.wait.max.ms"] = "100"
        return try merge(p, connection, locked: ConsumerConfiguration.locked)
    }
}

private func baseProperties(_ connection: KafkaConnection) throws(KafkaError) -> [String: String] {
    for key in connection.properties.keys where KafkaConnection.secretProperties.contains(key) {
        throw KafkaError(.configuration, "\(key) must not be written in a configuration file; name an environment variable for it under \"secrets\"")
    }
    return [
        "bootstrap.servers": connection.bootstrapServers,
        "client.id": connection.clientID,
        "log.connection.close": "false",
    ]
}

private func merge(_ defaults: [String: String], _ connection: KafkaConnection, locked: [String: String]) throws(KafkaError) -> [String: String] {
    var p = defaults
    for (key, value) in connection.properties {
        if let required = locked[key], required != value {
            throw KafkaError(.configuration, "\(key)=\(value) is not allowed: Daybook needs \(key)=\(required)")
        }
        p[key] = value
    }
    for (key, value) in locked { p[key] = value }
    for (key, value) in connection.secrets { p[key] = value }
    return p
}

extension StringProtocol {
    var trimmingWhitespace: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
