@testable import DaybookConfiguration
import DaybookCore
import DaybookSupport
import Testing

/// The configuration's `metrics` (`MetricsSection`): entries added to the catalogue, read
/// and checked without being installed (installing fixes the catalogue of the test process;
/// the end-to-end tests run configured metrics through the binary).
@Suite struct MetricsSectionTests {
    func json(_ text: String) throws -> JSONValue {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { try JSONParser.parse($0) }
    }

    func refusal(_ text: String) throws -> ConfigurationError? {
        do {
            _ = try MetricsSection.read(try json(text))
            return nil
        } catch let error as ConfigurationError {
            return error
        }
    }

    @Test func anEntryTakesItsUnitsBoundRuleAndTypes() throws {
        let entries = try MetricsSection.read(try json(#"""
            [{"name": "blood_glucose", "aggregation": "discrete", "unit": "mg/dL", "other_units": {"mmol/L": 18.0182},
              "maximum_per_sample": 1000, "health_kit": ["HKQuantityTypeIdentifierBloodGlucose"]},
             {"name": "caffeine", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 5000}]
            """#))
        #expect(entries.map(\.name) == ["blood_glucose", "caffeine"])
        #expect(entries[0].aggregation == .discrete && entries[0].canonicalUnit == "mg/dL" && entries[0].factor(of: "mmol/L") == 18.0182)
        #expect(entries[0].maximumPerSample == 1000 && entries[0].healthKit == ["HKQuantityTypeIdentifierBloodGlucose"])
        #expect(entries[1].aggregation == .sum && entries[1].units.map(\.name) == ["mg"] && entries[1].healthKit.isEmpty)
        // What a shard records for them, after the built-in entries.
        #expect(MetricCatalogue.record(entries) == "blood_glucose:discrete:mg/dL;caffeine:sum:mg")
    }

    /// The issue's three refusals (a collision with a built-in metric, an unknown aggregation,
    /// a unit without a factor) and the others, each naming its member.
    @Test(arguments: [
        (#"[{"name": "steps", "aggregation": "sum", "unit": "count", "maximum_per_sample": 10}]"#,
         "metrics[0].name", #""steps" is a built-in metric"#),
        (#"[{"name": "x", "aggregation": "average", "unit": "u", "maximum_per_sample": 10}]"#,
         "metrics[0].aggregation", #""average" is not an aggregation; use one of priority_sum, sum, discrete, duration_priority"#),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "other_units": {"g": null}, "maximum_per_sample": 10}]"#,
         "metrics[0].other_units.g", "must be a positive number from 1e-9 to 1e9, the factor that converts a value in g to mg, got null"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "other_units": {"g": 0}, "maximum_per_sample": 10}]"#,
         "metrics[0].other_units.g", "must be a positive number"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 10}, {"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 10}]"#,
         "metrics[1].name", #""x" is added twice"#),
        (#"[{"name": "Blood Glucose", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 10}]"#,
         "metrics[0].name", "is not a metric name"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "m g", "maximum_per_sample": 10}]"#,
         "metrics[0].unit", "is not a unit"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg"}]"#,
         "metrics[0].maximum_per_sample", "is missing"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": -1}]"#,
         "metrics[0].maximum_per_sample", "must be a positive number"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 1, "colour": "red"}]"#,
         "metrics[0].colour", "unknown member"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 1, "health_kit": ["HKQuantityTypeIdentifierStepCount"]}]"#,
         "metrics[0].health_kit[0]", "HKQuantityTypeIdentifierStepCount already imports as steps"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 1, "health_kit": ["HKCategoryTypeIdentifierMindfulSession"]}]"#,
         "metrics[0].health_kit[0]", "is not an Apple Health quantity type"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "other_units": {"g": 1e-320}, "maximum_per_sample": 10}]"#,
         "metrics[0].other_units.g", "must be a positive number from 1e-9 to 1e9"),
        (#"[{"name": "x", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 1e-320}]"#,
         "metrics[0].maximum_per_sample", "must be a positive number from 1e-6 to 1e15"),
        (#"[{"name": "default", "aggregation": "sum", "unit": "mg", "maximum_per_sample": 10}]"#,
         "metrics[0].name", "is the priority's default order"),
        (#"{"name": "x"}"#, "metrics", "must be a list"),
    ])
    func eachRefusalNamesItsMember(text: String, field: String, message: String) throws {
        let error = try refusal(text)
        #expect(error?.field == field, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test func atMostTwentyOneCanBeAdded() throws {
        let one = #"{"aggregation": "sum", "unit": "mg", "maximum_per_sample": 1, "name": "m"#
        let room = MetricCatalogue.maximumEntries - MetricCatalogue.builtIn.count
        #expect(room == 21)
        #expect(try refusal("[" + (0..<room).map { one + "\($0)\"}" }.joined(separator: ",") + "]") == nil)
        let error = try refusal("[" + (0...room).map { one + "\($0)\"}" }.joined(separator: ",") + "]")
        #expect(error?.field == "metrics" && error?.message.contains("at most 21 can be added to the 17 built in") == true, "\(String(describing: error))")
    }

    /// `install` refuses what would make a name twice or too many entries before it touches
    /// the process's catalogue.
    @Test func installRefusesADuplicateName() {
        let water = MetricDefinition(name: "water", units: [MetricUnit("mL", 1)], maximumPerSample: 1, aggregation: .sum, healthKit: [])
        #expect(throws: MetricCatalogue.InstallError.self) { try MetricCatalogue.install(adding: [water]) }
    }
}
