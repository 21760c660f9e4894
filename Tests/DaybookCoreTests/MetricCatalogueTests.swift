@testable import DaybookCore
import Testing

/// The built-in metric catalogue (issue 30): every metric it names, with units that convert,
/// bounds that hold, and the aggregation each one's rows follow; the four metrics events
/// carry today take their units and bounds from it unchanged.
@Suite struct MetricCatalogueTests {
    @Test func itNamesEveryMetricOfTheEventFormatOnce() {
        let names = MetricCatalogue.builtIn.map(\.name)
        #expect(names == ["steps", "active_energy", "distance", "heart_rate", "distance_cycling", "basal_energy", "flights_climbed",
                          "exercise_time", "stand_time", "water", "dietary_energy", "resting_heart_rate", "heart_rate_variability",
                          "body_mass", "oxygen_saturation", "respiratory_rate", "sleep"])
        #expect(Set(names).count == names.count)
        let types = MetricCatalogue.builtIn.flatMap(\.healthKit)
        #expect(Set(types).count == types.count, "an Apple Health type imports as one metric")
    }

    @Test func everyUnitConvertsAndEveryBoundHolds() {
        for m in MetricCatalogue.builtIn {
            #expect(m.units[0].factor == 1 && m.canonicalUnit == m.units[0].name, "\(m.name)")
            #expect(m.units.allSatisfy { $0.factor.isFinite && $0.factor > 0 }, "\(m.name)")
            #expect(Set(m.units.map(\.name)).count == m.units.count, "\(m.name)")
            #expect(m.maximumPerSample.isFinite && m.maximumPerSample > 0, "\(m.name)")
        }
        // By hand: a US fluid ounce is 29.5735295625 mL, a pound 0.45359237 kg, 90 s 1.5 min.
        #expect(MetricCatalogue.definition(named: "water")?.factor(of: "fl_oz_us") == 29.5735295625)
        #expect(MetricCatalogue.definition(named: "body_mass")?.factor(of: "lb") == 0.45359237)
        #expect(MetricCatalogue.definition(named: "exercise_time").map { 90 * ($0.factor(of: "s") ?? 0) } == 1.5)
        #expect(MetricCatalogue.definition(named: "water")?.factor(of: "cup") == nil)
    }

    @Test func eachMetricAggregatesAsTheAnchorsDo() {
        func aggregation(_ name: String) -> Aggregation? { MetricCatalogue.definition(named: name)?.aggregation }
        // Health Connect's priority aggregation: deduplicated by source.
        for name in ["steps", "distance", "distance_cycling", "active_energy", "basal_energy", "flights_climbed"] {
            #expect(aggregation(name) == .prioritySum, "\(name)")
        }
        // Plain sums: two apps logging two glasses drank two.
        #expect(aggregation("water") == .sum && aggregation("dietary_energy") == .sum)
        // Time covered, deduplicated: two overlapping sessions count once.
        for name in ["exercise_time", "stand_time", "sleep"] { #expect(aggregation(name) == .durationPriority, "\(name)") }
        for name in ["heart_rate", "resting_heart_rate", "heart_rate_variability", "body_mass", "oxygen_saturation", "respiratory_rate"] {
            #expect(aggregation(name) == .discrete, "\(name)")
        }
        #expect(Aggregation.allCases.map(\.rawValue) == ["priority_sum", "sum", "discrete", "duration_priority"])
    }

    @Test func theFourMetricsOfTodayKeepTheirUnitsBoundsAndRules() {
        // The values `Metric` held before the catalogue, written out.
        #expect(Metric.steps.units.map(\.unit) == ["count"] && Metric.steps.maximumPerSample == 2_000_000)
        #expect(Metric.activeEnergy.units.map(\.unit) == ["kcal", "Cal", "kJ"] && Metric.activeEnergy.units[2].factor == 1 / 4.184)
        #expect(Metric.activeEnergy.maximumPerSample == 100_000 && Metric.activeEnergy.canonicalUnit == "kcal")
        #expect(Metric.distance.units.map(\.factor) == [1, 1_000, 1_609.344] && Metric.distance.maximumPerSample == 5_000_000)
        #expect(Metric.heartRate.units.map(\.unit) == ["count/min"] && Metric.heartRate.maximumPerSample == 400)
        for metric in Metric.allCases {
            #expect(metric.definition.name == metric.rawValue)
            #expect(metric.isCumulative == (metric.definition.aggregation == .prioritySum), "\(metric)")
        }
    }
}
