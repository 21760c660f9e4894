import DaybookPipeline
import DaybookTestSupport
import Foundation
import Testing
@testable import daybook

/// What the operator commands print for people, checked in process: status's DEAD LETTERS column.
@Suite struct OperatorTextTests {
    let scratch = TemporaryDirectory()

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
