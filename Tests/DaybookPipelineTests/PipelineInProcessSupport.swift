import DaybookCore
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

/// An embedded cluster (librdkafka's mock, over TCP) holding the projector's two topics,
/// and a scratch directory for shard files; both go when the value does.
final class PipelineRig {
    static let topic = "health-samples"
    let broker: EmbeddedBroker
    let scratch = TemporaryDirectory()
    let partitions: Int
    private var nextID = 0

    init(partitions: Int = 2) throws {
        self.partitions = partitions
        broker = try EmbeddedBroker(topics: [
            TopicDefinition(name: Self.topic, partitions: partitions, replicationFactor: 1),
            TopicDefinition(name: "health-samples.dlq", partitions: 1, replicationFactor: 1),
        ])
    }

    var connection: KafkaConnection { KafkaConnection(bootstrapServers: broker.bootstrapServers) }

    /// Consumer settings with a group of this test's own, and rebalances that take half as
    /// long as by default. The mock cluster waits `session.timeout.ms` − 1 s for members to
    /// join each rebalance, and a round can be lost: when the leader's SyncGroup reaches it
    /// before a follower's, it answers the follower "rebalance in progress" (a FIXME in
    /// librdkafka's `rdkafka_mock_cgrp.c`, up to 2.0.2 and master), whose rejoin starts
    /// another round. On a loaded machine 4 such rounds in a row were seen (one CI failure).
    func consumer(group: String = "in-process-\(UUID().uuidString)") -> ConsumerConfiguration {
        var c = ConsumerConfiguration()
        c.groupID = group
        c.sessionTimeoutMilliseconds = 6_000
        c.heartbeatIntervalMilliseconds = 500
        return c
    }

    func access() -> LogAccess { LogAccess(connection: connection, consumer: consumer(), producer: ProducerConfiguration()) }

    /// A data directory that does not exist yet.
    func dataDirectory() -> String { scratch.newPath("data") }

    /// Publishes each event as its log line, keyed by user (the producers' partitioner), and
    /// waits until every one is delivered.
    func publish(_ events: [Event]) throws {
        try publishRaw(events.map { (key: $0.user, value: $0.jsonLine) })
    }

    /// Publishes raw values (a malformed event, say) keyed by `key`.
    func publishRaw(_ messages: [(key: String, value: String)]) throws {
        var failed: [KafkaError] = []
        let producer = try KafkaProducer(connection: connection, logger: .silent) { report in
            if let error = report.error { failed.append(error) }
        }
        for m in messages {
            try producer.send(topic: Self.topic, key: Array(m.key.utf8), value: Array(m.value.utf8), id: nextID)
            nextID += 1
        }
        try producer.flush(timeoutMilliseconds: 30_000)
        #expect(failed.isEmpty, "not delivered: \(failed)")
    }

    /// Runs a solo projector into `dir` until it has caught up with the log.
    @discardableResult
    func project(into dir: String, priority: SourcePriority = .builtIn, run: ProjectionRun = .live(untilCaughtUp: true),
                 _ configure: (inout ProjectorOptions) -> Void = { _ in }) throws -> ProjectorSummary {
        var options = ProjectorOptions(dataDirectory: dir)
        options.solo = true
        options.connectTimeout = .seconds(10)
        configure(&options)
        let projector = try Projector(connection: connection, consumer: consumer(), producer: ProducerConfiguration(),
                                      priority: priority, options: options, run: run, logger: .silent)
        let summary = try projector.run(shouldStop: { false }, progress: { _ in })
        #expect(summary.caughtUp)
        return summary
    }

    /// Every row readers of `dir` see, in (user, metric, day) order.
    static func rows(_ dir: String) throws -> [DayTotal] { try ShardReader(directory: dir).totals() }

    /// The in-memory rollup of the same events (what `daybook rollup` prints), in the same order.
    static func rollup(_ events: [Event], priority: SourcePriority = .builtIn) -> [DayTotal] {
        let ledger = Ledger(priority: priority)
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        return ledger.allTotals().sorted { $0.key < $1.key }
    }

    /// Runs SQL on a shard file, as an operator editing it by hand would.
    static func edit(_ path: String, _ sql: String) throws {
        let db = try Database(path: path, create: false)
        try db.execute(sql)
    }

    /// The shard file of `partition` that readers of `dir` see.
    static func shard(_ dir: String, partition: Int32) throws -> String {
        try DataLayout.read(dir).path(topic: topic, partition: partition)
    }
}

/// The fixture shared by these tests: overlapping sources, a corrected version arriving
/// before the one it replaces, and a deletion, for two users.
enum Fixture {
    static let watchFirst = SourcePriority.builtIn  // watch, phone, manual
    static let phoneFirst = SourcePriority(defaultOrder: ["phone", "watch", "manual"])

    static func sample(_ user: String, _ uuid: String, _ source: String, _ start: String, _ end: String,
                       _ value: Double, version: Int64 = 0) throws -> Event {
        .sampleAdded(Sample(user: user, uuid: uuid, metric: .steps, source: source,
                            start: try Instant(rfc3339: start), end: try Instant(rfc3339: end),
                            value: value, zone: "UTC", version: version))
    }

    /// ana, 2024-03-25 (steps):
    ///   watch 08:00–09:00 600 (10/min), phone 08:30–09:30 300 (5/min)
    ///   watch first: 600 + phone's 09:00–09:30 (150) = 750   phone first: 300 + watch's 08:00–08:30 (300) = 600
    ///   (naive sum 900, max 600)
    /// ben, 2024-03-25 (steps):
    ///   watch 10:00–11:00 at version 2 is 800; its version 1 (1000) arrives after it and is older
    ///   phone 10:00–12:00 1200 (10/min)
    ///   watch first: 800 + phone's 11:00–12:00 (600) = 1400   phone first: 1200 (it covers the watch)
    ///   (naive sum 800 + 1200 = 2000, or 3000 counting both versions; max 1200)
    /// ben, 2024-03-26: a manual 500 that is then deleted: no row (an empty day is no row).
    static func events() throws -> [Event] {
        [
            try sample("ana", "a-w", "watch", "2024-03-25T08:00:00Z", "2024-03-25T09:00:00Z", 600),
            try sample("ben", "b-w", "watch", "2024-03-25T10:00:00Z", "2024-03-25T11:00:00Z", 800, version: 2),
            try sample("ana", "a-p", "phone", "2024-03-25T08:30:00Z", "2024-03-25T09:30:00Z", 300),
            try sample("ben", "b-p", "phone", "2024-03-25T10:00:00Z", "2024-03-25T12:00:00Z", 1200),
            try sample("ben", "b-w", "watch", "2024-03-25T10:00:00Z", "2024-03-25T11:00:00Z", 1000, version: 1),
            try sample("ben", "b-m", "manual", "2024-03-26T07:00:00Z", "2024-03-26T08:00:00Z", 500),
            .sampleDeleted(user: "ben", uuid: "b-m"),
            .sourceCheckedIn(CheckIn(user: "ana", source: "watch", at: try Instant(rfc3339: "2024-03-25T20:00:00Z"))),
        ]
    }

    static let day = CivilDay(year: 2024, month: 3, day: 25)

    /// The cumulative value of a user's steps on 2024-03-25 among `rows`, nil without a row.
    static func steps(_ rows: [DayTotal], _ user: String, day: CivilDay = Fixture.day) -> Double? {
        guard let row = rows.first(where: { $0.key == DayKey(user: user, metric: .steps, day: day) }),
              case .cumulative(let v, _) = row.summary else { return nil }
        return (v * 1e6).rounded() / 1e6
    }
}
