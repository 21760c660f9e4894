import DaybookCore
@testable import DaybookImport
import Testing

/// The catalogue's types that need more than the record's own value and unit: oxygen
/// saturation, written as a fraction of 1, and sleep, a category whose value names a state.
@Suite struct CatalogueTypesTests {
    /// An export of `records` (each one `<Record …/>` or `<Record …>…</Record>`).
    static func export(_ records: [String]) -> String {
        "<HealthData locale=\"de_DE\">\n" + records.map { " " + $0 + "\n" }.joined() + "</HealthData>\n"
    }

    static func oxygen(_ value: String, unit: String = "%", at time: String = "2024-07-15 07:30:00 +0200") -> String {
        #"<Record type="HKQuantityTypeIdentifierOxygenSaturation" sourceName="Ana’s Apple Watch" sourceVersion="10.2" device="&lt;&lt;HKDevice: 0x281e00580&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch&gt;" unit="\#(unit)" creationDate="\#(time)" startDate="\#(time)" endDate="\#(time)" value="\#(value)"/>"#
    }

    // MARK: Oxygen saturation

    @Test func oxygenSaturationFractionsBecomePercent() throws {
        let r = try importExport(CatalogueTypesTests.export([
            CatalogueTypesTests.oxygen("0.97"),
            // 0.57 × 100 in binary is 56.99999999999999: the decimal is scaled, not the double.
            CatalogueTypesTests.oxygen("0.57", at: "2024-07-15 07:31:00 +0200"),
            CatalogueTypesTests.oxygen("9.8e-1", at: "2024-07-15 07:32:00 +0200"),
            CatalogueTypesTests.oxygen("1", at: "2024-07-15 07:33:00 +0200"),
        ]))
        #expect(r.error == nil)
        #expect(r.summary.rejectedCount == 0, "\(r.summary.rejected)")
        #expect(r.samples.map(\.value) == [97, 57, 98, 100])
        #expect(r.samples.allSatisfy { $0.metric == .oxygenSaturation })
        #expect(r.lines[0].contains(#""metric":"oxygen_saturation","source":"watch","start":"2024-07-15T07:30:00+02:00","end":"2024-07-15T07:30:00+02:00","value":97,"unit":"%""#), "\(r.lines[0])")
        // min 57, max 100, mean (97 + 57 + 98 + 100) / 4 = 352 / 4 = 88; latest 100, the 07:33 reading.
        #expect(rollup(r.samples)["oxygen_saturation 2024-07-15"] == .discrete(min: 57, max: 100, average: 88, count: 4, latest: 100))
        #expect(r.summary.render(destination: "written").contains("\n  oxygen_saturation: 4 (watch 4)\n"))
    }

    /// A value already in 0–100 is 100 times too large once scaled, and is refused, named,
    /// rather than written as 9,700 % or guessed at.
    @Test func oxygenSaturationInPercentIsRejectedNotGuessed() throws {
        let r = try importExport(CatalogueTypesTests.export([CatalogueTypesTests.oxygen("97")]))
        #expect(r.lines.isEmpty)
        #expect(r.summary.rejected.mapValues(\.count) == ["implausible_value": 1])
        #expect(r.summary.rejected["implausible_value"]?.firstMessage == #"value "97" % would be 9700 %: exports write oxygen_saturation as a fraction of 1 (0.97 is 97 %)"#, "\(r.summary.rejected)")
    }

    /// The uuid hashes the record as written (0.97), so it is the uuid any importer of the
    /// record's fields computes, and does not change with the scaling.
    @Test func oxygenSaturationUUIDIsOfTheRecordsOwnValue() throws {
        let scaled = try importExport(CatalogueTypesTests.export([CatalogueTypesTests.oxygen("0.97")])).samples
        let other = try importExport(CatalogueTypesTests.export([CatalogueTypesTests.oxygen("0.970")])).samples
        #expect(scaled.count == 1 && other.count == 1)
        #expect(scaled.map(\.uuid) == other.map(\.uuid)) // the same number, written differently
    }

    @Test func hundredfoldIsTheDecimalTimes100() {
        #expect(AppleHealthImporter.hundredfold("0.97") == 97)
        #expect(AppleHealthImporter.hundredfold("0.57") == 57)
        #expect(0.57 * 100 != 57) // why it reads the decimal
        #expect(AppleHealthImporter.hundredfold("0.955") == 95.5)
        #expect(AppleHealthImporter.hundredfold("9.7E-1") == 97)
        #expect(AppleHealthImporter.hundredfold("1e+0") == 100)
        #expect(AppleHealthImporter.hundredfold("0") == 0)
        #expect(AppleHealthImporter.hundredfold("1e99999999999999999999") == nil) // not a finite number
        #expect(AppleHealthImporter.hundredfold("abc") == nil)
        #expect(AppleHealthImporter.hundredfold("") == nil)
    }

    // MARK: Sleep

    static func sleep(_ value: String, _ start: String, _ end: String, source: String = "Ana&#8217;s Apple Watch",
                      device: String? = "&lt;&lt;HKDevice: 0x281e00e00&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch&gt;",
                      metadata: [(String, String)] = []) -> String {
        let value = value.hasPrefix("HK") ? value : "HKCategoryValueSleepAnalysis" + value
        let head = #"<Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="\#(source)" sourceVersion="10.2""#
            + (device.map { #" device="\#($0)""# } ?? "")
            + #" creationDate="2024-07-15 07:05:00 +0200" startDate="\#(start) +0200" endDate="\#(end) +0200" value="\#(value)""#
        guard !metadata.isEmpty else { return head + "/>" }
        return head + ">" + metadata.map { #"<MetadataEntry key="\#($0.0)" value="\#($0.1)"/>"# }.joined() + "</Record>"
    }

    /// One night as an Apple Watch records it (iOS 16 and later), in Berlin in summer (+02:00).
    static let night = [
        sleep("InBed", "2024-07-14 22:30:00", "2024-07-15 07:00:00"),
        sleep("AsleepCore", "2024-07-14 23:00:00", "2024-07-15 02:00:00"),
        sleep("Awake", "2024-07-15 02:00:00", "2024-07-15 02:10:00"),
        sleep("AsleepDeep", "2024-07-15 02:10:00", "2024-07-15 03:00:00"),
        sleep("AsleepREM", "2024-07-15 03:00:00", "2024-07-15 06:30:00"),
    ]

    @Test func aNightImportsItsAsleepRecordsAndCountsTheRest() throws {
        let r = try importExport(CatalogueTypesTests.export(CatalogueTypesTests.night))
        #expect(r.error == nil)
        #expect(r.summary.rejectedCount == 0, "\(r.summary.rejected)")
        // Core 23:00–02:00 = 180 min, Deep 02:10–03:00 = 50, REM 03:00–06:30 = 210.
        #expect(r.samples.map(\.metric) == [.sleep, .sleep, .sleep])
        #expect(r.samples.map(\.value) == [180, 50, 210])
        #expect(r.samples.map(\.source) == ["watch", "watch", "watch"])
        #expect(r.lines[0].contains(#""metric":"sleep","source":"watch","start":"2024-07-14T23:00:00+02:00","end":"2024-07-15T02:00:00+02:00","value":180,"unit":"min","zone":"Europe/Berlin""#), "\(r.lines[0])")
        #expect(r.summary.uncountedValues == ["HKCategoryTypeIdentifierSleepAnalysis": ["HKCategoryValueSleepAnalysisInBed": 1, "HKCategoryValueSleepAnalysisAwake": 1]])
        #expect(r.summary.otherTypes.isEmpty)

        // Minutes per civil day in Berlin: the 14th has Core's 23:00–24:00 = 60; the 15th
        // Core's 00:00–02:00 = 120, Deep 50 and REM 210: 120 + 50 + 210 = 380. In bed
        // (8 h 30 = 510 min) and awake (10 min) count nowhere: 60 + 380 = 440 = 510 − 30
        // (22:30–23:00) − 10 (awake) − 30 (06:30–07:00).
        let rows = rollup(r.samples)
        #expect(cumulative(rows["sleep 2024-07-14"]) == 60)
        #expect(cumulative(rows["sleep 2024-07-15"]) == 380)
        #expect(rows.count == 2)

        let text = r.summary.render(destination: "written")
        #expect(text.hasPrefix("5 records read: 3 events written, 0 of other types skipped, 2 of other values skipped, 0 rejected\n"), "\(text)")
        #expect(text.contains("\n  sleep: 3 (watch 3)\n"), "\(text)")
        // Ties by count are named in order.
        #expect(text.contains("\nskipped, HKCategoryTypeIdentifierSleepAnalysis values that are not sleep (2): Awake 1, InBed 1\n"), "\(text)")
        #expect(!text.contains("not imported yet"), "\(text)")
    }

    /// Sleep is deduplicated by source priority like exercise minutes: an app's record over
    /// the same night counts only where the watch has none, here the watch's awake 10 minutes.
    @Test func overlappingSleepCountsOnce() throws {
        let app = CatalogueTypesTests.sleep("AsleepUnspecified", "2024-07-14 23:30:00", "2024-07-15 06:00:00", source: "AutoSleep", device: nil)
        let r = try importExport(CatalogueTypesTests.export(CatalogueTypesTests.night + [app]))
        #expect(r.samples.map(\.source) == ["watch", "watch", "watch", "autosleep"])
        #expect(r.samples.last?.value == 390) // 23:30–06:00
        let rows = rollup(r.samples)
        #expect(cumulative(rows["sleep 2024-07-14"]) == 60)      // the watch's 23:00–24:00 covers the app's 23:30–24:00
        #expect(cumulative(rows["sleep 2024-07-15"]) == 390)     // 380 + the app's 02:00–02:10; not 380 + 360
    }

    /// Records written before iOS 16 say only `Asleep`; `InBed` came from the phone's bedtime.
    @Test func preiOS16AsleepIsSleep() throws {
        let r = try importExport(CatalogueTypesTests.export([
            CatalogueTypesTests.sleep("InBed", "2024-07-14 23:00:00", "2024-07-15 07:00:00", source: "Ana’s iPhone", device: nil),
            CatalogueTypesTests.sleep("Asleep", "2024-07-14 23:20:00", "2024-07-15 06:50:00"),
        ]))
        #expect(r.samples.map(\.value) == [450]) // 23:20–06:50 = 7 h 30
        let rows = rollup(r.samples)
        #expect(cumulative(rows["sleep 2024-07-14"]) == 40)  // 23:20–24:00
        #expect(cumulative(rows["sleep 2024-07-15"]) == 410) // 00:00–06:50
        #expect(r.summary.uncountedValues == ["HKCategoryTypeIdentifierSleepAnalysis": ["HKCategoryValueSleepAnalysisInBed": 1]])
    }

    @Test func anUnknownSleepValueIsRejectedByName() throws {
        let r = try importExport(CatalogueTypesTests.export([
            CatalogueTypesTests.sleep("AsleepLight", "2024-07-15 01:00:00", "2024-07-15 02:00:00"),
            CatalogueTypesTests.sleep("2", "2024-07-15 02:00:00", "2024-07-15 03:00:00"),
        ]))
        #expect(r.lines.isEmpty)
        #expect(r.summary.uncountedValues.isEmpty)
        #expect(r.summary.rejected.mapValues(\.count) == ["unknown_category_value": 2])
        let message = try #require(r.summary.rejected["unknown_category_value"]?.firstMessage)
        #expect(message.hasPrefix(#"value "HKCategoryValueSleepAnalysisAsleepLight" is not a value of HKCategoryTypeIdentifierSleepAnalysis Daybook knows (HKCategoryValueSleepAnalysisAsleep, "#), "\(message)")
        let text = r.summary.render(destination: "written")
        #expect(text.contains("rejected, unknown_category_value: 2 (first at line 2: value \"HKCategoryValueSleepAnalysisAsleepLight\" is not a value"), "\(text)")
    }

    /// A category record has no unit attribute and is not rejected for it; the rest of the
    /// rules hold as for any record.
    @Test func sleepRecordsFollowTheOtherRules() throws {
        let r = try importExport(CatalogueTypesTests.export([
            #"<Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Ana’s iPhone" startDate="2024-07-15 01:00:00 +0200" endDate="2024-07-15 02:00:00 +0200"/>"#,
            CatalogueTypesTests.sleep("AsleepCore", "2024-07-15 03:00:00", "2024-07-15 02:00:00"),
            CatalogueTypesTests.sleep("AsleepCore", "2024-07-01 03:00:00", "2024-07-15 02:00:00"),
            CatalogueTypesTests.sleep("AsleepCore", "2024-07-15 04:00:00", "2024-07-15 04:00:00"),
            CatalogueTypesTests.sleep("AsleepCore", "2024-07-15 05:00:00", "2024-07-15 05:00:30"),
        ]))
        #expect(r.summary.rejected.mapValues(\.count) == ["missing_attribute": 1, "end_before_start": 1, "duration_too_long": 1], "\(r.summary.rejected)")
        #expect(r.summary.rejected["missing_attribute"]?.firstMessage == "no value attribute")
        // An instant covers no time; 30 seconds are half a minute.
        #expect(r.samples.map(\.value) == [0, 0.5])
        #expect(cumulative(rollup(r.samples)["sleep 2024-07-15"]) == 0.5)
    }

    /// The uuid of a category record: the documented recipe with an empty unit and the value's
    /// name, stable across imports, re-exports at another offset and device pointers.
    @Test func sleepUUIDsDependOnlyOnTheRecord() throws {
        let night = CatalogueTypesTests.export(CatalogueTypesTests.night)
        let first = try importExport(night).samples.map(\.uuid)
        #expect(Set(first).count == 3)
        #expect(try importExport(night, zone: "Asia/Tokyo").samples.map(\.uuid) == first)
        let reexported = FixtureTests.shiftedToWinter(night).replacingOccurrences(of: "HKDevice: 0x28", with: "HKDevice: 0x17")
        #expect(reexported != night)
        #expect(try importExport(reexported).samples.map(\.uuid) == first)
        // uuid5(NameUUID.appleHealth, "\u{1F}".join(["record", type, sourceName, sourceVersion, device
        // without its pointer, "" (no unit), creationDate, startDate, endDate in ns, value name])).
        let fields = ["record", "HKCategoryTypeIdentifierSleepAnalysis", "Ana’s Apple Watch", "10.2",
                      "<<HKDevice: 0x>, name:Apple Watch, manufacturer:Apple Inc., model:Watch>", "",
                      "1721019900000000000", "1720990800000000000", "1721001600000000000", "HKCategoryValueSleepAnalysisAsleepCore"]
        #expect(first[0] == NameUUID.v5(namespace: NameUUID.appleHealth, name: Array(fields.joined(separator: "\u{1F}").utf8)))
        #expect(first[0] == "c325b8ba-1385-5a60-945e-41c2440418ab") // the same, by Python's uuid.uuid5
    }
}

/// The summary's line for catalogue types left unmapped stays for a type the catalogue may
/// gain before the importer maps it; today the importer maps every one.
@Suite struct UnmappedCatalogueTypesTests {
    @Test func theImporterMapsEveryTypeOfTheCatalogue() {
        let catalogued = Set(MetricCatalogue.builtIn.flatMap(\.healthKit))
        #expect(Set(AppleHealthImporter.metrics.keys) == catalogued)
        #expect(Set(AppleHealthImporter.categoryValues.keys).isSubset(of: catalogued))
        #expect(AppleHealthImporter.percentFractions.isSubset(of: catalogued))
    }

    @Test func aCatalogueTypeLeftUnmappedIsNamedWithItsMetric() {
        var summary = ImportSummary()
        summary.records = 3
        summary.otherTypes = ["HKCategoryTypeIdentifierSleepAnalysis": 2, "HKQuantityTypeIdentifierBloodGlucose": 1]
        let text = summary.render(destination: "written")
        #expect(text.contains("\nskipped, in the metric catalogue but not imported yet (1): HKCategoryTypeIdentifierSleepAnalysis 2 (sleep)\n"), "\(text)")
        #expect(text.contains("\nskipped, other types (1): HKQuantityTypeIdentifierBloodGlucose 1\n"), "\(text)")
    }
}
