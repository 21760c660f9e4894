import DaybookCore
@testable import DaybookKafka
@testable import DaybookPipeline
import DaybookStore
import DaybookTestSupport
import Dispatch
import Testing

/// A partition's worker stages what follows a batch while another thread commits that batch
/// (`take`, `commit`, `finish`): the loop polls and stages beside the commits.
@Suite struct PartitionWorkerTests {
    let scratch = TemporaryDirectory()

    static func message(_ offset: Int64, _ source: String, hour: Int, value: Int) -> ConsumedMessage {
        let event = #"{"type":"sample-added","user":"ana","sample":{"uuid":"s\#(offset)","metric":"steps","source":"\#(source)","# +
            #""start":"2024-05-01T0\#(hour):00:00Z","end":"2024-05-01T0\#(hour):30:00Z","value":\#(value),"unit":"count","zone":"UTC"}}"#
        return ConsumedMessage(topicPartition: TopicPartition("t", 0), offset: offset, key: Array("ana".utf8), value: Array(event.utf8), headers: [])
    }

    @Test func aWorkerStagesWhatFollowsABatchWhileAnotherThreadCommitsIt() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: SourcePriority.builtIn.fingerprint)
        let worker = PartitionWorker(shard: shard, priority: .builtIn, cacheBudgetBytes: 1 << 20)
        // Offsets 0–2: the watch's 100, 200, 300 steps at 01:00, 02:00, 03:00 (half an hour each);
        // 3: the phone's 1,000 over the watch's 03:00 half hour (the watch outranks it: nothing
        // counts); 4: the watch's 400 at 04:00. The day: 100 + 200 + 300 + 400 = 1,000 (the
        // naive sum is 2,000).
        let messages = [Self.message(0, "watch", hour: 1, value: 100), Self.message(1, "watch", hour: 2, value: 200),
                        Self.message(2, "watch", hour: 3, value: 300), Self.message(3, "phone", hour: 3, value: 1_000),
                        Self.message(4, "watch", hour: 4, value: 400)]
        _ = worker.stage(messages[0..<3])
        let taken = try #require(worker.take())
        // Taken: the worker reads on after the batch, which its shard does not hold yet.
        #expect(shard.nextOffset == 0 && worker.nextOffset == 3 && worker.stagedEnd == nil)
        // The poll after it redelivers offset 2 (already taken): skipped, not staged again.
        let staged = worker.stage(messages[2...])
        #expect(staged.skipped == 1 && worker.stagedCount == 2 && worker.expectedNext == 5)
        let committed = DispatchQueue.global().sync { Result { try worker.commit(taken) } }
        let first = try worker.finish(taken, committed)
        #expect(first.applied == 3 && shard.nextOffset == 3 && worker.nextOffset == 3)
        let second = try worker.commitStaged()
        #expect(second.applied == 2 && shard.nextOffset == 5)
        let rows = try ShardReader(directory: scratch.path).totals()
        #expect(rows.map(\.jsonLine) == [#"{"user":"ana","metric":"steps","day":"2024-05-01","value":1000}"#], "\(rows.map(\.jsonLine))")
    }
}
