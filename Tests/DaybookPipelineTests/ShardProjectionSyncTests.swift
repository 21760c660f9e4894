import DaybookCore
@testable import DaybookPipeline
import DaybookStore
import DaybookSupport
import DaybookTestSupport
import Testing

/// A projection gathers each (user, source) pair's samples by the numbers of their names in
/// the staged batch (`ShardProjection`'s sync runs) and merges them once per batch: the
/// shard's sync state is what merging every event's sign of life says, whatever the order
/// of the events, the batches they come in, and ties of end broken by the zone's name.
@Suite struct ShardProjectionSyncTests {
    let scratch = TemporaryDirectory()

    @Test(arguments: [UInt64(7), 8, 9])
    func theSyncStateIsTheMergeOfEveryEventsSignOfLife(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let users = ["ana", "bob", "user-with-a-long-name-0001"], sources = ["watch", "phone"]
        let zones = ["UTC", "Europe/Berlin", "America/Los_Angeles"]
        let base: Int64 = 1_714_521_600 * 1_000_000_000 // 2024-05-01T00:00:00Z
        var events: [(Event, Instant?)] = []
        for i in 0..<600 {
            let user = users[rng.below(3)], source = sources[rng.below(2)]
            // Few distinct ends and zones, so ties of end are common and decided by the zone.
            let end = Instant(nanoseconds: base + Int64(rng.below(4)) * 3_600_000_000_000)
            let delivered = rng.below(4) == 0 ? nil : Instant(nanoseconds: base + Int64(rng.below(1_000)) * 1_000_000)
            switch rng.below(10) {
            case 0:
                events.append((.sourceCheckedIn(CheckIn(user: user, source: source, at: end, metrics: rng.below(2) == 0 ? nil : [.steps])), delivered))
            case 1:
                events.append((.sampleDeleted(user: user, uuid: "u\(rng.below(i + 1))"), delivered))
            default:
                let start = Instant(nanoseconds: end.nanoseconds - 60_000_000_000)
                events.append((.sampleAdded(Sample(user: user, uuid: "u\(i)", metric: Metric.allCases[rng.below(4)], source: source,
                                                   start: start, end: end, value: 1, zone: zones[rng.below(3)])), delivered))
            }
        }
        var expected: [SyncKey: SourceSync] = [:]
        for (event, delivered) in events {
            if let life = SourceSync.signOfLife(event, deliveredAt: delivered) {
                expected[SyncKey(user: life.user, source: life.source), default: life].merge(life)
            }
        }
        let shard = try Shard(directory: scratch.path, topic: "t\(seed)", partition: 0, fingerprint: SourcePriority.builtIn.fingerprint)
        let projection = ShardProjection(shard: shard, priority: .builtIn, cacheBudgetBytes: 1 << 20)
        var position: Int64 = 0
        var rest = events[...]
        while !rest.isEmpty {
            let n = min(rest.count, 1 + rng.below(120))
            var batch = StagedBatch()
            for (event, delivered) in rest.prefix(n) {
                batch.append(event, position: position, deliveredAt: delivered)
                position += 1
            }
            rest = rest.dropFirst(n)
            _ = try projection.apply(batch, nextPosition: position)
        }
        for user in users {
            let want = expected.values.filter { $0.user == user }.sorted { $0.source < $1.source }
            #expect(try shard.syncPairs(user: user) == want, "seed \(seed), \(user)")
        }
        #expect(expected.values.contains { $0.zone != nil && $0.metrics.count > 1 && $0.lastSampleDelivered != nil })
    }
}
