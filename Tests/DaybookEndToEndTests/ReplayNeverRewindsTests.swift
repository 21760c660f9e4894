import DaybookKafka
import DaybookTestSupport
import Foundation
import Testing

/// Issue 25, item 1, through the binary: `dlq replay` of a misrouted add that a corrected
/// one at home has replaced publishes nothing, says why, and leaves the correction in force.
@Suite(.serialized) struct ReplayNeverRewindsTests {
    let scratch = TemporaryDirectory()
    typealias S = SameEventsSameTotalsTests

    /// The split user, 2024-03-02, steps, one watch: u3 09:00–09:30 2500 from a producer on
    /// consistent_random (another partition: a dead letter), then the same uuid corrected to
    /// 1500 through `daybook publish` (home), and m1 14:00–14:30 3000 home.
    /// In produce order: 1500 + 3000 = 4500. Replaying u3's dead letter after the correction
    /// (what replay did before) gives 2500 + 3000 = 5500; the naive sum 7000; the max 3000.
    @Test(.timeLimit(.minutes(3))) func aDeadLetterOlderThanItsCorrectionIsSuperseded() throws {
        let broker = try BrokerProcess(arguments: ["--partitions", "\(S.partitions)"])
        defer { _ = broker.stop() }
        let old = S.steps("u3", 9, 2_500), corrected = S.steps("u3", 9, 1_500), other = S.steps("m1", 14, 3_000)
        try S.produce([old], partitioner: .consistentRandom, to: broker)
        let file = try scratch.file([corrected, other].joined(separator: "\n") + "\n")
        let published = try Daybook.run(["publish", "--brokers", broker.bootstrap, file])
        #expect(published.status == 0, "\(published.stderr)")
        let dir = scratch.newPath("data")
        let projected = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(projected.status == 0 && projected.stderr.contains("dead letters 1"), "\(projected.stderr)")
        #expect(try ProjectorTests.totals(dir) == (try ProjectorTests.rollup([corrected, other])))

        let dry = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", dir, "--dry-run"])
        #expect(dry.status == 0 && dry.stdout.contains("superseded: ") && dry.stdout.contains("would not be published"), "\(dry.stdout)\(dry.stderr)")
        let replay = try Daybook.run(["dlq", "replay", "--brokers", broker.bootstrap, "--data", dir])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stdout.contains("at home has the same version and was produced later (not published"), "\(replay.stdout)")
        #expect(replay.stderr.contains("published 0, skipped 0 (already replayed), superseded 1"), "\(replay.stderr)")
        let again = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(again.status == 0, "\(again.stderr)")
        // The rollup of the events in the order they were first produced: 4500.
        #expect(try ProjectorTests.totals(dir) == (try ProjectorTests.rollup([old, corrected, other])))

        let list = try Daybook.run(["dlq", "list", "--data", dir, "--all", "--format", "json"])
        #expect(list.stdout.contains(#""status":"superseded""#) && list.stdout.contains(#""superseded_by":""#), "\(list.stdout)")
        let pending = try Daybook.run(["dlq", "list", "--data", dir])
        #expect(pending.stdout.contains("no pending dead letters"), "\(pending.stdout)")
    }
}
