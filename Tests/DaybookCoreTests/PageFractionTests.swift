import DaybookCore
import Testing

/// `FreshnessPolicy.applyPageFractions`: one fraction for all, or per source; refusals named.
@Suite struct PageFractionTests {
    static let watch = FreshnessPolicy.Rule(threshold: .seconds(3_600), pageFraction: 0.5)
    static let policy = FreshnessPolicy(defaultRule: .init(threshold: .seconds(7_200), pageFraction: 0.25), sources: ["watch": watch])

    @Test func oneFractionForEverySourceOrOnePerSourceNamed() throws {
        var all = Self.policy
        #expect(try all.applyPageFractions("0.2") == [])
        #expect(all.defaultRule.pageFraction == 0.2 && all.sources["watch"]?.pageFraction == 0.2)
        #expect(all.sources["watch"]?.threshold == .seconds(3_600)) // thresholds stay

        var some = Self.policy
        #expect(try some.applyPageFractions("watch=0.1,phone=0.75") == ["watch", "phone"])
        #expect(some.sources["watch"] == .init(threshold: .seconds(3_600), pageFraction: 0.1))
        // phone was not listed: it gets the default rule's threshold and its own fraction.
        #expect(some.sources["phone"] == .init(threshold: .seconds(7_200), pageFraction: 0.75))
        #expect(some.defaultRule.pageFraction == 0.25)
    }

    @Test func whatIsNotAFractionIsRefusedNamingThePart() {
        for (text, kind) in [("2", .notAFraction("2")), ("1e-1", .notAFraction("1e-1")), ("watch=-0.1", .notAFraction("-0.1")),
                             ("=0.1", .notSourceAndFraction("=0.1")), ("watch=0.1,phone", .notSourceAndFraction("phone")),
                             ("watch=0.1,watch=0.2", .namedTwice("watch"))] as [(String, FreshnessPolicy.PageFractionError.Kind)] {
            var policy = Self.policy
            #expect(throws: FreshnessPolicy.PageFractionError(kind), "\(text)") { try policy.applyPageFractions(text) }
        }
        #expect("\(FreshnessPolicy.PageFractionError(.notSourceAndFraction("=0.1")))" == "'=0.1' is not SOURCE=F (e.g. watch=0.1)")
    }
}
