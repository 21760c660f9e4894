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
            #expect(metric.aggregation == metric.definition.aggregation, "\(metric)")
            #expect(metric.isCumulative == (metric.aggregation != .discrete), "\(metric)")
            #expect(metric.countsEverySample == (metric.aggregation == .sum), "\(metric)")
            #expect(metric.countsTime == (metric.aggregation == .durationPriority), "\(metric)")
        }
    }
}

/// The catalogue's `priority_sum` metrics beyond the first three are events' metrics like
/// steps: deduplicated by source priority, their units converted, their days their own.
@Suite struct NewPrioritySumMetricsTests {
    @Test func aWatchAndAPhoneOverlappingOnFlightsDoNotBothCount() {
        // The watch climbs 10 flights 08:00–09:00; the phone counts 6 over 08:30–09:30. The
        // watch outranks the phone (built-in priority): it keeps 08:00–09:00 whole (10); the
        // phone keeps only 09:00–09:30, half its span: 6 × 30/60 = 3. The day: 13 (naive
        // sum 16, max 10). Steps on the same hours are a row of their own.
        let events = [
            added("w", "watch", "2024-05-06T08:00:00+02:00", "2024-05-06T09:00:00+02:00", 10, metric: .flightsClimbed),
            added("p", "phone", "2024-05-06T08:30:00+02:00", "2024-05-06T09:30:00+02:00", 6, metric: .flightsClimbed),
            added("s", "phone", "2024-05-06T08:30:00+02:00", "2024-05-06T09:30:00+02:00", 500),
        ]
        let rows = rollup(events)
        #expect(value(rows, "2024-05-06", metric: .flightsClimbed) == 13)
        #expect(value(rows, "2024-05-06") == 500)
        let naive = naiveAndMax(Array(events.prefix(2)))
        #expect(naive.sum == 16 && naive.max == 10)
    }

    @Test func basalEnergyAndCyclingDistanceConvertTheirUnitsAndSplitAtMidnight() throws {
        // 4,184 kJ of basal energy is 1,000 kcal; 12 km of cycling from 23:00 to 01:00 (Berlin)
        // is 12,000 m, half on each civil day: 6,000 + 6,000.
        let decoder = EventDecoder()
        let basal = try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"b","metric":"basal_energy","source":"watch","start":"2024-05-06T10:00:00+02:00","end":"2024-05-06T11:00:00+02:00","value":4184,"unit":"kJ","zone":"Europe/Berlin"}}"#)
        let ride = try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"c","metric":"distance_cycling","source":"phone","start":"2024-05-06T23:00:00+02:00","end":"2024-05-07T01:00:00+02:00","value":12,"unit":"km","zone":"Europe/Berlin"}}"#)
        let rows = rollup([basal, ride])
        #expect(value(rows, "2024-05-06", metric: .basalEnergy) == 1_000)
        #expect(value(rows, "2024-05-06", metric: .distanceCycling) == 6_000)
        #expect(value(rows, "2024-05-07", metric: .distanceCycling) == 6_000)
        #expect(throws: EventError.self) {
            try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"f","metric":"flights_climbed","source":"watch","start":"2024-05-06T10:00:00Z","end":"2024-05-06T11:00:00Z","value":3,"unit":"m","zone":"UTC"}}"#)
        }
    }

    @Test func everyMetricEventsCarryIsACatalogueEntryInItsPlace() {
        // Every catalogue entry, each at its place.
        #expect(Metric.allCases.map(\.index) == Array(MetricCatalogue.builtIn.indices))
        for metric in Metric.allCases {
            let i = metric.index
            #expect(metric.storageCode == i && Metric(storageCode: i) == metric)
            #expect(Metric(rawValue: MetricCatalogue.builtIn[i].name) == metric)
            #expect(metric.debugDescription == "DaybookCore.Metric.\(Metric.swiftNames[i])")
        }
        #expect(Metric.swiftNames.count == MetricCatalogue.builtIn.count)
        #expect(Metric(rawValue: "resting_heart_rate") == .restingHeartRate && Metric(storageCode: 11) == .restingHeartRate)
        #expect(Metric(rawValue: "blood_glucose") == nil && Metric(storageCode: MetricCatalogue.builtIn.count) == nil)
        #expect(Metric.sleep.index == 16 && Metric.sleep.countsTime && !Metric.sleep.countsEverySample)
    }
}
