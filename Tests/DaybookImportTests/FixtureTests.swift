import DaybookCore
@testable import DaybookImport
import Foundation
import Testing

/// The hand-written export (`Fixture.xml`) converts to exactly these events, however it is
/// chunked, and rolls up to Daybook's answer, which is neither the naive sum nor the max.
@Suite struct FixtureTests {
    /// The anonymised records ("Anonymous" 10.2 and 17.2) have only their version as a clue.
    static let rules = ["version:10.2=watch", "version:17.2=phone"]

    /// Checked by hand, record by record: winter records printed at +0200 are at +01:00 in
    /// Berlin; the DST-night bucket starts at +01:00 and ends at +02:00; the trip record is
    /// in New York time; the byte-identical repeat (4th) has its own uuid; the re-synced
    /// Lose It! record (HKMetadataKeySyncIdentifier) keeps its uuid so it replaces the first;
    /// units are the record's own, but for the oxygen saturation (0.97 written as 97 %) and
    /// the sleep record (no unit: the 450 minutes from 23:10 to 06:40); in bed and awake
    /// are not sleep and write nothing. Versions: the Lose It! records carry HKMetadataKeySyncVersion
    /// 1 and 2; every other record its creationDate in ms (the first: 2024-01-10 10:12:31
    /// +0200 = 08:12:31Z = 1704874351 s).
    static let expected: [String] = [
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"90dbace9-464d-5f83-aeda-edc4792a7c53","metric":"steps","source":"watch","start":"2024-01-10T09:00:00+01:00","end":"2024-01-10T09:10:00+01:00","value":1000,"unit":"count","zone":"Europe/Berlin","version":1704874351000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"2a3c864c-646e-5b86-b94e-17b93957ee75","metric":"steps","source":"watch","start":"2024-01-10T09:10:00+01:00","end":"2024-01-10T09:20:00+01:00","value":800,"unit":"count","zone":"Europe/Berlin","version":1704874922000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"91bb35c6-9d82-59c3-9b75-0934743bc289","metric":"steps","source":"phone","start":"2024-01-10T09:00:00+01:00","end":"2024-01-10T09:59:59+01:00","value":2400,"unit":"count","zone":"Europe/Berlin","version":1704877207000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"7b97f09b-3486-51e5-bd05-2354bb94f211","metric":"steps","source":"phone","start":"2024-01-10T09:00:00+01:00","end":"2024-01-10T09:59:59+01:00","value":2400,"unit":"count","zone":"Europe/Berlin","version":1704877207000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"d6b955b9-f055-59f6-86e5-e6a31237ff36","metric":"steps","source":"phone","start":"2024-01-10T10:00:00+01:00","end":"2024-01-10T10:59:59+01:00","value":600,"unit":"count","zone":"Europe/Berlin","version":1704880809000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"3de067fd-82e7-5c8f-85ea-e9d4cdc2b4a9","metric":"steps","source":"phone","start":"2024-01-10T10:00:00+01:00","end":"2024-01-10T10:59:59+01:00","value":900,"unit":"count","zone":"Europe/Berlin","version":1704880809000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"e64d93a1-14a8-5566-a25d-d39d39a79130","metric":"steps","source":"manual","start":"2024-01-10T12:00:00+01:00","end":"2024-01-10T13:00:00+01:00","value":30000,"unit":"count","zone":"Europe/Berlin","version":1704915600000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"f0a5efda-0aae-598b-bbc1-d4a95f1bbcfe","metric":"steps","source":"phone","start":"2024-01-10T09:05:00+01:00","end":"2024-01-10T09:05:00+01:00","value":50,"unit":"count","zone":"Europe/Berlin","version":1704873900000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"a2d359b9-99e8-5d1d-b2f9-30d2975b2b32","metric":"steps","source":"phone","start":"2024-01-10T15:00:00+01:00","end":"2024-01-10T15:00:00+01:00","value":20,"unit":"count","zone":"Europe/Berlin","version":1704895200000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"65ec5b84-87a9-5ca3-be45-09dde7951830","metric":"steps","source":"phone","start":"2024-03-31T01:00:00+01:00","end":"2024-03-31T03:59:59+02:00","value":120,"unit":"count","zone":"Europe/Berlin","version":1711850412000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"d4c99731-8808-5683-a5e3-00250c65b56a","metric":"distance","source":"watch","start":"2024-07-15T07:00:00+02:00","end":"2024-07-15T07:10:00+02:00","value":0.8,"unit":"km","zone":"Europe/Berlin","version":1721020230000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"dfc8bed7-9762-5233-85a0-a032ea5c5803","metric":"distance","source":"phone","start":"2024-07-15T07:00:00+02:00","end":"2024-07-15T07:15:00+02:00","value":0.5,"unit":"mi","zone":"Europe/Berlin","version":1721020530000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"2bf28220-371b-5eb6-bb7a-1db83dfb36ac","metric":"distance","source":"strava","start":"2024-07-15T18:00:00+02:00","end":"2024-07-15T18:20:00+02:00","value":1200,"unit":"m","zone":"Europe/Berlin","version":1721060700000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"de37df85-22ef-5751-a5da-cd6e321719df","metric":"active_energy","source":"watch","start":"2024-07-15T07:00:00+02:00","end":"2024-07-15T07:10:00+02:00","value":50,"unit":"kcal","zone":"Europe/Berlin","version":1721020230000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"1d4ef129-d43a-5766-b12f-620ef8450678","metric":"active_energy","source":"phone","start":"2024-07-15T07:00:00+02:00","end":"2024-07-15T07:10:00+02:00","value":40,"unit":"Cal","zone":"Europe/Berlin","version":1721020230000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"f9e7567b-d9c8-5b0d-bf0b-a2a3925cd157","metric":"active_energy","source":"lose-it","start":"2024-07-15T18:00:00+02:00","end":"2024-07-15T18:20:00+02:00","value":418.4,"unit":"kJ","zone":"Europe/Berlin","version":1}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"f9e7567b-d9c8-5b0d-bf0b-a2a3925cd157","metric":"active_energy","source":"lose-it","start":"2024-07-15T18:00:00+02:00","end":"2024-07-15T18:20:00+02:00","value":836.8,"unit":"kJ","zone":"Europe/Berlin","version":2}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"207149f2-5303-57de-962a-82d20b4ae0b0","metric":"heart_rate","source":"watch","start":"2024-07-15T07:05:00+02:00","end":"2024-07-15T07:05:00+02:00","value":72,"unit":"count/min","zone":"Europe/Berlin","version":1721019904000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"57e06cbd-464e-5ea1-a873-46d37483c074","metric":"heart_rate","source":"phone","start":"2024-07-15T07:05:00+02:00","end":"2024-07-15T07:05:00+02:00","value":80,"unit":"count/min","zone":"Europe/Berlin","version":1721019904000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"fc91eb29-17c6-5fb6-b3cf-04c8ad04efe1","metric":"steps","source":"watch","start":"2024-07-20T08:00:00-04:00","end":"2024-07-20T08:30:00-04:00","value":3000,"unit":"count","zone":"America/New_York","version":1721478660000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"57e18722-2948-5ed0-ad5e-f28406b5fbff","metric":"steps","source":"watch","start":"2024-03-05T08:00:00+01:00","end":"2024-03-05T08:20:00+01:00","value":1500,"unit":"count","zone":"Europe/Berlin","version":1709623260000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"25eb347e-d125-5017-8290-26b31236996a","metric":"steps","source":"phone","start":"2024-03-05T08:00:00+01:00","end":"2024-03-05T08:30:00+01:00","value":2000,"unit":"count","zone":"Europe/Berlin","version":1709623860000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"dd8ea006-5e53-59cc-8234-3c65a554a0e1","metric":"sleep","source":"watch","start":"2024-07-14T23:10:00+02:00","end":"2024-07-15T06:40:00+02:00","value":450,"unit":"min","zone":"Europe/Berlin","version":1721019480000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"cd6a3ddb-f3ec-50c5-9792-c851fa99cdce","metric":"oxygen_saturation","source":"watch","start":"2024-07-15T03:12:41+02:00","end":"2024-07-15T03:12:41+02:00","value":97,"unit":"%","zone":"Europe/Berlin","version":1721006050000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"7aee5cfb-54b6-57f1-a0f3-faf9d4ee7e56","metric":"resting_heart_rate","source":"watch","start":"2024-07-15T00:00:04+02:00","end":"2024-07-15T23:57:49+02:00","value":58,"unit":"count/min","zone":"Europe/Berlin","version":1721080682000}}"#,
        #"{"type":"sample-added","user":"ana","sample":{"uuid":"8e592811-dba2-5e9a-916c-cd0bdc106e3e","metric":"body_mass","source":"withings","start":"2024-07-15T07:30:00+02:00","end":"2024-07-15T07:30:00+02:00","value":68.4,"unit":"kg","zone":"Europe/Berlin","version":1721021460000}}"#,
    ]

    @Test func theFixtureConvertsToExactlyTheseEvents() throws {
        let r = try importExport(Fixture.xml, rules: FixtureTests.rules)
        #expect(r.error == nil)
        #expect(r.lines == FixtureTests.expected)
        for line in r.lines { #expect(throws: Never.self) { try EventDecoder().decode(line) } }
    }

    @Test(arguments: [1, 2, 3, 7, 64, 500, 4_096])
    func chunkBoundariesChangeNothing(chunk: Int) throws {
        let r = try importExport(Fixture.xml, rules: FixtureTests.rules, chunk: chunk)
        #expect(r.error == nil)
        #expect(r.lines == FixtureTests.expected)
        #expect(r.summary == (try importExport(Fixture.xml, rules: FixtureTests.rules)).summary)
    }

    /// The uuid recipe, computed independently with Python's `uuid.uuid5` over the fields
    /// joined by U+001F (instants as nanoseconds since 1970, the device without its pointer).
    @Test func uuidsFollowTheDocumentedRecipe() throws {
        let r = try importExport(Fixture.xml, rules: FixtureTests.rules)
        let uuids = r.samples.map(\.uuid)
        #expect(uuids[0] == "90dbace9-464d-5f83-aeda-edc4792a7c53")  // the first watch record
        #expect(uuids[2] == "91bb35c6-9d82-59c3-9b75-0934743bc289")  // the phone's hourly bucket
        #expect(uuids[3] == "7b97f09b-3486-51e5-bd05-2354bb94f211")  // its byte-identical repeat: fields + "#1"
        #expect(uuids[12] == "2bf28220-371b-5eb6-bb7a-1db83dfb36ac") // Strava, from HKExternalUUID
        #expect(uuids[22] == "dd8ea006-5e53-59cc-8234-3c65a554a0e1") // sleep: no unit (an empty field), the value's name
        #expect(uuids[23] == "cd6a3ddb-f3ec-50c5-9792-c851fa99cdce") // oxygen saturation: the record's 0.97, not 97
        #expect(NameUUID.v5(namespace: NameUUID.dns, name: Array("python.org".utf8)) == "886313e1-3b8a-5372-9b90-0c9aee199e5d")
    }

    @Test func theRollupIsDaybooksAnswerNotTheNaiveSumOrTheMax() throws {
        let r = try importExport(Fixture.xml, rules: FixtureTests.rules)
        let rows = rollup(r.samples)
        // 1000 + 800 (watch) + 2400 × 2399/3599 (the phone's bucket outside the watch's
        // 20 minutes; its repeat is the same source and interval, counted once) + 900 (the
        // later of two values for one interval) + 30000 (manual) + 20 (an instant; the other
        // lies under the watch and is shadowed).
        #expect(cumulative(rows["steps 2024-01-10"]) == 34319.777716)
        #expect(cumulative(rows["steps 2024-03-31"]) == 120)
        #expect(cumulative(rows["steps 2024-03-05"]) == 2166.666667) // 1500 + 2000 × 10/30
        #expect(cumulative(rows["steps 2024-07-20"]) == 3000)        // a New York day
        #expect(cumulative(rows["distance 2024-07-15"]) == 2268.224) // 800 m + 0.5 mi × 5/15 + 1200 m
        #expect(cumulative(rows["active_energy 2024-07-15"]) == 250) // 50 kcal (not the phone's 40 Cal) + 836.8 kJ
        #expect(rows["heart_rate 2024-07-15"] == .discrete(min: 72, max: 80, average: 76, count: 2, latest: 80))
        // The catalogue's other types: the night's asleep record 23:10–06:40 counts the minutes
        // it covers per Berlin day, 23:10–24:00 = 50 and 00:00–06:40 = 400 (in bed 22:50–06:55
        // and awake 06:40–06:48 count nowhere); the readings are summarized like heart rate.
        #expect(cumulative(rows["sleep 2024-07-14"]) == 50)
        #expect(cumulative(rows["sleep 2024-07-15"]) == 400)
        #expect(rows["oxygen_saturation 2024-07-15"] == .discrete(min: 97, max: 97, average: 97, count: 1, latest: 97))
        #expect(rows["resting_heart_rate 2024-07-15"] == .discrete(min: 58, max: 58, average: 58, count: 1, latest: 58))
        #expect(rows["body_mass 2024-07-15"] == .discrete(min: 68.4, max: 68.4, average: 68.4, count: 1, latest: 68.4))
        #expect(rows.count == 12)

        // What a naive importer would print: every record summed (re-synced ones once), or the largest.
        for (key, right) in [("steps 2024-01-10", 34319.777716), ("distance 2024-07-15", 2268.224), ("active_energy 2024-07-15", 250)] {
            let parts = key.split(separator: " ")
            var live: [String: Double] = [:]
            for s in r.samples where s.metric.rawValue == parts[0] && "\(ZoneRules.named(s.zone).map { $0.day(of: s.start) }.map { "\($0)" } ?? "")" == parts[1] {
                live[s.uuid] = s.value
            }
            let naive = live.values.reduce(0, +), largest = live.values.max() ?? 0
            #expect(abs(naive - right) > 1 && abs(largest - right) > 1, "\(key): naive \(naive), max \(largest), right \(right)")
        }
    }

    @Test func theSummaryCountsEverything() throws {
        let s = try importExport(Fixture.xml, rules: FixtureTests.rules).summary
        #expect(s.records == 36)
        #expect(s.events == 26)
        #expect(s.otherTypes == ["HKQuantityTypeIdentifierBloodPressureSystolic": 1, "HKQuantityTypeIdentifierBloodPressureDiastolic": 1])
        #expect(s.uncountedValues == ["HKCategoryTypeIdentifierSleepAnalysis": ["HKCategoryValueSleepAnalysisInBed": 1, "HKCategoryValueSleepAnalysisAwake": 1]])
        // Every record is accounted for: 26 events + 2 of other types + 2 other values + 6 rejected.
        #expect(s.events + s.otherTypes.values.reduce(0, +) + 2 + s.rejectedCount == s.records)
        #expect(s.rejected.mapValues(\.count) == ["bad_date": 1, "end_before_start": 1, "implausible_value": 1,
                                                  "non_positive_heart_rate": 1, "unit_mismatch": 1, "unreadable_text": 1])
        #expect(s.rejected["unreadable_text"]?.firstMessage == "unknown entity &bogus;")
        #expect(s.rejected["non_positive_heart_rate"]?.firstLine == 57)
        #expect(s.zones == ["Europe/Berlin": .init(fromMetadata: 2, fromOption: 23), "America/New_York": .init(fromMetadata: 1, fromOption: 0)])
        #expect(s.byMetric[.steps] == ["watch": 4, "phone": 8, "manual": 1])
        #expect(s.byMetric[.sleep] == ["watch": 1])
        #expect(s.byMetric[.oxygenSaturation] == ["watch": 1])
        #expect(s.byMetric[.restingHeartRate] == ["watch": 1])
        #expect(s.byMetric[.bodyMass] == ["withings": 1])
        #expect(s.idsFromMetadata == 3)
        #expect(s.repeatedRecords == 1)
        // The two Lose It! records share "lose-it-42" at HKMetadataKeySyncVersion 1 and 2: the
        // second replaces the first.
        #expect(s.collapsedRecords == 1)
        #expect(s.versionsFromMetadata == 2)
        #expect(s.earliest == (try Instant(rfc3339: "2024-01-10T08:00:00Z")))
        #expect(s.latest == (try Instant(rfc3339: "2024-07-20T12:30:00Z")))
        let text = s.render(destination: "written")
        #expect(text.hasPrefix("36 records read: 26 events written, 2 of other types skipped, 2 of other values skipped, 6 rejected\n"), "\(text)")
        // Each imported type's metric has its line; the sleep values that are not sleep are named with their counts.
        for line in ["  resting_heart_rate: 1 (watch 1)", "  body_mass: 1 (withings 1)", "  oxygen_saturation: 1 (watch 1)", "  sleep: 1 (watch 1)",
                     "skipped, HKCategoryTypeIdentifierSleepAnalysis values that are not sleep (2): Awake 1, InBed 1"] {
            #expect(text.contains("\n\(line)\n"), "\(line)\n\(text)")
        }
        // Every type of the metric catalogue is imported now: none is listed as waiting.
        #expect(!text.contains("not imported yet"), "\(text)")
        #expect(text.contains("skipped, other types (2): HKQuantityTypeIdentifierBloodPressureDiastolic 1, HKQuantityTypeIdentifierBloodPressureSystolic 1\n"), "\(text)")
        #expect(text.contains("source watch ← source map version:10.2, model:Watch") == false) // the map decides first
        #expect(text.contains("source watch ← source map version:10.2: \"Ana’s Apple Watch\" 10.2; \"Anonymous\" 10.2"), "\(text)")
        #expect(text.contains("zones: America/New_York (HKTimeZone 1); Europe/Berlin (HKTimeZone 2, default zone 23)"))
        // A command line names the options by its flags.
        let flags = s.render(destination: "written", names: .init(defaultZone: "--zone", sourceMapRule: "--source-map"))
        #expect(flags.contains("source watch ← --source-map version:10.2: \"Ana’s Apple Watch\" 10.2; \"Anonymous\" 10.2"), "\(flags)")
        #expect(flags.contains("Europe/Berlin (HKTimeZone 2, --zone 23)"))
    }

    @Test func withoutASourceMapAnonymisedNamesAreOneSource() throws {
        let r = try importExport(Fixture.xml)
        let anonymous = r.samples.filter { $0.start == (try? Instant(rfc3339: "2024-03-05T08:00:00+01:00")) }
        #expect(anonymous.map(\.source) == ["anonymous", "anonymous"])
        // One source: the later record wins the shared 20 minutes.
        #expect(cumulative(rollup(r.samples)["steps 2024-03-05"]) == 2000)
        // Everything else is attributed by device model, HKWasUserEntered or name.
        #expect(Set(r.samples.map(\.source)) == ["watch", "phone", "manual", "strava", "lose-it", "withings", "anonymous"])
    }

    /// Importing again — after a re-export in winter (+0100, other device pointers), with
    /// another --zone or --source-map — gives the same uuids, so samples are replaced, never added.
    @Test func uuidsDependOnlyOnTheRecord() throws {
        let first = try importExport(Fixture.xml, rules: FixtureTests.rules).samples.map(\.uuid)
        #expect(try importExport(Fixture.xml, rules: FixtureTests.rules).samples.map(\.uuid) == first)
        #expect(try importExport(Fixture.xml, zone: "Asia/Tokyo").samples.map(\.uuid) == first)
        let reexported = FixtureTests.shiftedToWinter(Fixture.xml).replacingOccurrences(of: "HKDevice: 0x28", with: "HKDevice: 0x17")
        #expect(reexported != Fixture.xml)
        let again = try importExport(reexported, rules: FixtureTests.rules)
        #expect(again.samples.map(\.uuid) == first)
        #expect(again.lines == FixtureTests.expected)
        #expect(Set(first).count == first.count - 1) // only the re-synced record shares its uuid
    }

    /// Every `YYYY-MM-DD HH:MM:SS +0200` as the same instant at +0100.
    static func shiftedToWinter(_ xml: String) -> String {
        var out = ""
        var rest = Substring(xml)
        while let r = rest.range(of: " +0200\"") {
            let stamp = rest[rest.index(r.lowerBound, offsetBy: -19)..<r.lowerBound]
            let parts = stamp.split(whereSeparator: { "-: ".contains($0) }).compactMap { Int($0) }
            var hour = parts[3] - 1, day = parts[2], month = parts[1]
            if hour < 0 { hour += 24; day -= 1 } // the fixture has no record at midnight on the 1st
            if day < 1 { month -= 1; day = 28 }
            out += rest[..<stamp.startIndex]
            out += String(format: "%04d-%02d-%02d %02d:%02d:%02d +0100\"", parts[0], month, day, hour, parts[4], parts[5])
            rest = rest[r.upperBound...]
        }
        return out + rest
    }

    @Test func withoutAZoneRecordsLackingHKTimeZoneAreCounted() throws {
        let r = try importExport(Fixture.xml, zone: nil, rules: FixtureTests.rules)
        #expect(r.missingZone == 26) // the 23 that used --zone, and 3 the format would reject anyway
        #expect(r.summary.firstMissingZoneLine == 25)
        #expect(r.lines.count == 3) // Strava, the New York trip and the night's sleep carry HKTimeZone
        // In bed and awake are skipped for their value, zone or not.
        #expect(r.summary.uncountedValues["HKCategoryTypeIdentifierSleepAnalysis"]?.values.reduce(0, +) == 2)
    }
}
