import DaybookKafka
@testable import DaybookPipeline
import Testing

/// The projector's memory in one account (issue 26), computed by hand.
@Suite struct MemoryBudgetTests {
    @Test func theDefaultsAddUpTo152MiB() {
        let budget = MemoryBudget(ProjectorOptions(dataDirectory: "/unused"), prefetchBytes: ConsumerConfiguration().prefetchBytes)
        // cache 32 MiB: a quarter, 8 MiB, SQLite pages; 24 MiB samples.
        #expect(budget.pageBytes == 8 << 20)
        #expect(budget.ledgerBytes == 24 << 20)
        // staged events 72 MiB; prefetch 16 MiB × 3 = 48 MiB.
        #expect(budget.stagingBytes == 72 << 20)
        #expect(budget.prefetchBytes == 48 << 20)
        // 24 + 8 + 72 + 48 = 152 MiB = 159,383,552 bytes.
        #expect(budget.totalBytes == 159_383_552)
        #expect(budget.description.hasPrefix("memory budget 152 MiB: cache 24 (samples) + 8 (SQLite pages), staged events 72, prefetch 48"))
    }

    @Test func aCacheThatIsNoMultipleOfFourGivesTheRemainderToTheSamples() {
        var options = ProjectorOptions(dataDirectory: "/unused")
        options.cacheBytes = 10
        options.stagingBytes = 7
        let budget = MemoryBudget(options, prefetchBytes: 5)
        // 10 / 4 = 2 for pages, 10 − 2 = 8 for samples; 5 × 3 = 15: 8 + 2 + 7 + 15 = 32.
        #expect(budget.pageBytes == 2)
        #expect(budget.ledgerBytes == 8)
        #expect(budget.prefetchBytes == 15)
        #expect(budget.totalBytes == 32)
    }
}
