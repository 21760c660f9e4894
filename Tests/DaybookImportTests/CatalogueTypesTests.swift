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
        // min 57, max 100, mean (97 + 57 + 98 + 100) / 4 = 352 / 4 = 88.
        #expect(rollup(r.samples)["oxygen_saturation 2024-07-15"] == .discrete(min: 57, max: 100, average: 88, count: 4))
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
}
