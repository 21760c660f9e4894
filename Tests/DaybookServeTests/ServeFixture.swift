import DaybookCore
import DaybookHTTP
import DaybookKafka
import DaybookPipeline
import DaybookServe
import DaybookStore
import DaybookTestSupport
import Foundation

/// A data directory made the projector's way: a hand-built log applied through
/// `ShardProjection` into ana's shard (of 4 partitions, murmur2), with the roles file a
/// projector writes.
///
/// 2024-03-30 (UTC), steps: the watch records 3000 from 08:00 to 09:00, the phone 5400
/// from 08:15 to 09:15. The watch outranks the phone, so it keeps 08:00–09:00 and the
/// phone wins only 09:00–09:15: 5400 × 15/60 = 1350. The day is 3000 + 1350 = 4350 (the
/// naive sum says 8400, the max 5400).
/// 2024-03-31: the phone alone, 2000 from 10:00 to 11:00: 2000.
/// Heart rate on 2024-03-30: 60 (watch) and 90 (phone): min 60, max 90, avg 75, count 2.
/// The phone last checked in on 2024-03-31 (12:00 UTC), the watch on 2024-04-02: from
/// 03-31 on, the phone's steps may still come, so 03-31 and 04-01 are unknown (phone).
struct ServeFixture {
    static let partitions = 4
    let scratch = TemporaryDirectory()
    let data: String
    let partition: Int32

    static let log = [
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"w1","metric":"steps","source":"watch","start":"2024-03-30T08:00:00Z","end":"2024-03-30T09:00:00Z","value":3000,"unit":"count","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"p1","metric":"steps","source":"phone","start":"2024-03-30T08:15:00Z","end":"2024-03-30T09:15:00Z","value":5400,"unit":"count","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"p2","metric":"steps","source":"phone","start":"2024-03-31T10:00:00Z","end":"2024-03-31T11:00:00Z","value":2000,"unit":"count","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"h1","metric":"heart_rate","source":"watch","start":"2024-03-30T08:30:00Z","end":"2024-03-30T08:30:00Z","value":60,"unit":"count/min","zone":"UTC"}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"h2","metric":"heart_rate","source":"phone","start":"2024-03-30T08:40:00Z","end":"2024-03-30T08:40:00Z","value":90,"unit":"count/min","zone":"UTC"}}"#,
        #"{"type":"source-checked-in","user":"ana","source":"phone","at":"2024-03-31T12:00:00Z","metrics":["steps"]}"#,
        #"{"type":"source-checked-in","user":"ana","source":"watch","at":"2024-04-02T00:00:00Z","metrics":["steps"]}"#,
    ]

    /// - Parameters:
    ///   - log: the event lines applied to ana's shard (default: the fixture above).
    ///   - owned, standby, running: what the roles file says.
    init(log: [String] = ServeFixture.log, owned: [Int32]? = nil, standby: [Int32] = [], running: Bool = true) throws {
        data = scratch.path + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        partition = UserLocator.locate(user: "ana", count: Self.partitions, partitioner: .murmur2Random).partition
        do {
            let shard = try Shard(directory: data, topic: "health-samples", partition: partition, fingerprint: SourcePriority.builtIn.fingerprint)
            let projection = ShardProjection(shard: shard, priority: .builtIn, cacheBudgetBytes: 1 << 20)
            let events = StagedBatch(try log.map { try EventDecoder().decode($0) })
            _ = try projection.apply(events, nextPosition: Int64(events.count))
        }
        let roles = ProjectorRoles(member: "member-a", clientID: "daybook-a", host: "node-a", pid: 1, running: running, updatedAt: "2024-04-02T00:00:00Z",
                                   topic: "health-samples", partitionCount: Self.partitions, partitioner: "murmur2_random",
                                   owned: owned ?? [partition], standby: standby)
        try roles.write(in: data)
    }

    func service(_ change: (inout ReadServiceConfiguration) -> Void = { _ in }) throws -> ReadService {
        var configuration = ReadServiceConfiguration(dataDirectory: data)
        change(&configuration)
        return try ReadService(configuration)
    }
}

/// A cluster that says what a test tells it.
struct FixedCluster: ClusterView {
    var partitionCount = ServeFixture.partitions
    var partitioner = Partitioner.murmur2Random
    var group: GroupAssignment
    var ends: [Int32: Int64] = [:]

    func assignment() throws -> GroupAssignment { group }
    func logEnd(_ partition: Int32) -> Int64? { ends[partition] }

    static func owning(_ partitions: [Int32], by member: String, url: String?) -> GroupAssignment {
        GroupAssignment(group: "daybook-projector", state: "Stable",
                        members: [.init(memberID: member, clientID: "daybook-" + member, host: "host-" + member, partitions: partitions, url: url)],
                        source: .ownerClaims)
    }
}

extension HTTPResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
}

func get(_ target: String, _ headers: [HTTPHeader] = []) -> HTTPRequest {
    HTTPRequest(method: "GET", target: target, headers: headers)
}
