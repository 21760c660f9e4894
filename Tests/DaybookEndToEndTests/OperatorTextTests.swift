@testable import DaybookPipeline
import DaybookTestSupport
import Foundation
import Testing
@testable import daybook

/// What `project` and `status` print for people, checked in process: the standby part of
/// project's summary, and status's DEAD LETTERS column.
@Suite struct OperatorTextTests {
    let scratch = TemporaryDirectory()

    /// With --standby the summary says what the standby shards applied; without, nothing.
    @Test func projectsSummaryTellsWhatItsStandbyShardsApplied() {
        var summary = ProjectorSummary()
        summary.statistics.applied = 30
        summary.caughtUp = true
        let without = ProjectCommand.summaryLine(summary, standby: nil)
        #expect(!without.contains("standby"), "\(without)")
        #expect(without.hasPrefix("project: applied 30, dead letters 0,") && without.hasSuffix("; caught up"), "\(without)")
        // --standby given, nothing arrived for its shards: still said, as 0.
        #expect(ProjectCommand.summaryLine(summary, standby: StandbyStatistics()).contains("; standby shards: applied 0, dead letters 0 "))
        let with = ProjectCommand.summaryLine(summary, standby: StandbyStatistics(applied: 15, deadLetters: 2))
        #expect(with.hasSuffix("; standby shards: applied 15, dead letters 2 (recorded there; the owners forward them); caught up"), "\(with)")
    }

    /// DEAD LETTERS is the shard's count, and how many of them are not forwarded yet
    /// (it was "DLQ PENDING" over "0/3", which said neither).
    @Test func statusSaysWhatItsDeadLetterColumnCounts() throws {
        #expect(StatusCommand.deadLetters(0, unforwarded: 0) == "0")
        #expect(StatusCommand.deadLetters(3, unforwarded: 0) == "3")
        #expect(StatusCommand.deadLetters(3, unforwarded: 1) == "3, 1 unforwarded")
        let empty = scratch.newPath("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let table = StatusCommand.table(try ProjectionStatus.read(directory: empty))
        let header = try #require(table.split(separator: "\n").dropFirst().first)
        #expect(header.contains("  DEAD LETTERS  ") && !table.contains("PENDING"), "\(table)")
    }
}
