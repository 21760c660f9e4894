import DaybookCore
import Testing

/// Two configurations that rank alike are the same priority for shards and generations.
@Suite struct SourcePriorityTests {
    @Test func aPerMetricOrderThatRepeatsTheDefaultRanksAlike() {
        let builtIn = SourcePriority.builtIn
        let shipped = SourcePriority(defaultOrder: ["watch", "phone", "manual"], perMetric: [.steps: ["watch", "phone", "manual"]])
        #expect(builtIn != shipped)
        #expect(builtIn.ranksLike(shipped))
        #expect(SourcePriority.sameRanking(builtIn.fingerprint, shipped.fingerprint))
        // Another order for one metric is another ranking.
        let phoneSteps = SourcePriority(defaultOrder: ["watch", "phone", "manual"], perMetric: [.steps: ["phone", "watch", "manual"]])
        #expect(!builtIn.ranksLike(phoneSteps))
        #expect(!SourcePriority.sameRanking(builtIn.fingerprint, phoneSteps.fingerprint))
        // So is a shorter list: unlisted sources rank by name, not in the listed order.
        let short = SourcePriority(defaultOrder: ["watch", "phone"])
        #expect(!builtIn.ranksLike(short))
        #expect(!SourcePriority.sameRanking(builtIn.fingerprint, short.fingerprint))
        #expect(SourcePriority.sameRanking("not a fingerprint", "not a fingerprint"))
        #expect(!SourcePriority.sameRanking("default=a", "default=b"))
    }
}
