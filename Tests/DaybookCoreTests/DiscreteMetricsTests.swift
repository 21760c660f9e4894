@testable import DaybookCore
import Testing

/// The `discrete` aggregation beyond heart rate: every sample that starts on a civil day
/// counts (no dedupe: a reading is not an amount), summarized as min, max, mean, count and
/// latest, the latest being the sample last by start, then end, then uuid.
@Suite struct DiscreteMetricsTests {
    @Test func restingHeartRateIsMinMaxMeanCountAndTheLatestReadingNotTheLastDelivered() {
        // Berlin, 05-06: watch 58 at 07:00 and phone 62 at 07:00 (both count: no dedupe of
        // readings), phone 70 at 12:00, watch 55 at 22:30, delivered first. min 55, max 70,
        // mean (58 + 62 + 70 + 55) / 4 = 245 / 4 = 61.25, count 4, latest 55: the 22:30
        // reading, neither the last delivered (64, another day) nor the max (70) nor the
        // naive sum (245). 05-07: watch 64 at 06:30, one reading.
        let events = [
            added("c", "watch", "2024-05-06T22:30:00+02:00", "2024-05-06T22:30:00+02:00", 55, metric: .restingHeartRate),
            added("a", "watch", "2024-05-06T07:00:00+02:00", "2024-05-06T07:00:00+02:00", 58, metric: .restingHeartRate),
            added("b", "phone", "2024-05-06T07:00:00+02:00", "2024-05-06T07:00:00+02:00", 62, metric: .restingHeartRate),
            added("d", "phone", "2024-05-06T12:00:00+02:00", "2024-05-06T12:00:00+02:00", 70, metric: .restingHeartRate),
            added("e", "watch", "2024-05-07T06:30:00+02:00", "2024-05-07T06:30:00+02:00", 64, metric: .restingHeartRate),
        ]
        var rows = rollup(events)
        #expect(rows["ana resting_heart_rate 2024-05-06"]?.summary == .discrete(min: 55, max: 70, average: 61.25, count: 4, latest: 55))
        #expect(rows["ana resting_heart_rate 2024-05-07"]?.summary == .discrete(min: 64, max: 64, average: 64, count: 1, latest: 64))
        #expect(rows["ana resting_heart_rate 2024-05-06"]?.jsonLine
                == #"{"user":"ana","metric":"resting_heart_rate","day":"2024-05-06","min":55,"max":70,"avg":61.25,"count":4,"latest":55}"#)
        let naive = naiveAndMax(Array(events.prefix(4)))
        #expect(naive.sum == 245 && naive.max == 70)

        // The 22:30 reading deleted: the latest is 12:00's 70; min 58, mean (58 + 62 + 70) / 3.
        rows = rollup(events + [deleted("c")])
        #expect(rows["ana resting_heart_rate 2024-05-06"]?.summary == .discrete(min: 58, max: 70, average: 190.0 / 3, count: 3, latest: 70))
        // The 12:00 reading corrected to 66 (version 1): the latest follows the sample's
        // current version; the stale re-send of version 0 after it changes nothing.
        let corrected = added("d", "phone", "2024-05-06T12:00:00+02:00", "2024-05-06T12:00:00+02:00", 66, metric: .restingHeartRate, version: 1)
        rows = rollup(events + [deleted("c"), corrected, events[3]])
        #expect(rows["ana resting_heart_rate 2024-05-06"]?.summary == .discrete(min: 58, max: 66, average: 62, count: 3, latest: 66))
    }

    @Test func twoReadingsAtOneMomentLeaveTheLatestToTheUUIDWhateverTheOrder() throws {
        // Body mass at 08:00 from a scale (m-a, 70,000 g = 70 kg) and an app (m-b, 160 lb =
        // 160 × 0.45359237 = 72.5747792 kg): same start, same end, so the latest is m-b's, the
        // greater uuid, in either order of delivery. min 70, max 72.5747792, mean
        // (70 + 72.5747792) / 2 = 71.2873896, count 2.
        let decoder = EventDecoder()
        let scale = try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"m-a","metric":"body_mass","source":"scale","start":"2024-05-06T08:00:00+02:00","end":"2024-05-06T08:00:00+02:00","value":70000,"unit":"g","zone":"Europe/Berlin"}}"#)
        let app = try decoder.decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"m-b","metric":"body_mass","source":"app","start":"2024-05-06T08:00:00+02:00","end":"2024-05-06T08:00:00+02:00","value":160,"unit":"lb","zone":"Europe/Berlin"}}"#)
        let line = #"{"user":"ana","metric":"body_mass","day":"2024-05-06","min":70,"max":72.574779,"avg":71.28739,"count":2,"latest":72.574779}"#
        #expect(rollup([scale, app])["ana body_mass 2024-05-06"]?.jsonLine == line)
        #expect(rollup([app, scale])["ana body_mass 2024-05-06"]?.jsonLine == line)
    }

    @Test func oxygenSaturationHRVAndRespiratoryRateAreReadingsByTheirStartDay() throws {
        // Oxygen saturation 97 % at 23:50 and 95 % over 23:55–00:05 (Berlin): both start on
        // 05-06, so the row is there (min 95, max 97, mean 96, latest 95) and 05-07 has none.
        // HRV 48 ms and respiratory rate 14/min make rows of their own.
        let events = [
            added("o1", "watch", "2024-05-06T23:50:00+02:00", "2024-05-06T23:50:00+02:00", 97, metric: .oxygenSaturation),
            added("o2", "watch", "2024-05-06T23:55:00+02:00", "2024-05-07T00:05:00+02:00", 95, metric: .oxygenSaturation),
            added("v", "watch", "2024-05-06T03:00:00+02:00", "2024-05-06T03:01:00+02:00", 48, metric: .heartRateVariability),
            added("r", "watch", "2024-05-06T03:00:00+02:00", "2024-05-06T03:00:00+02:00", 14, metric: .respiratoryRate),
        ]
        let rows = rollup(events)
        #expect(rows["ana oxygen_saturation 2024-05-06"]?.summary == .discrete(min: 95, max: 97, average: 96, count: 2, latest: 95))
        #expect(rows["ana oxygen_saturation 2024-05-07"] == nil)
        #expect(rows["ana heart_rate_variability 2024-05-06"]?.summary == .discrete(min: 48, max: 48, average: 48, count: 1, latest: 48))
        #expect(rows["ana respiratory_rate 2024-05-06"]?.summary == .discrete(min: 14, max: 14, average: 14, count: 1, latest: 14))
        #expect(rows.count == 3)
        // A reading must be positive: 0 % is not a reading, nor a body mass so small that
        // converted to kg it is 0 (5e-324 g × 0.001).
        func refusal(_ metric: String, _ value: String, _ unit: String) -> String? {
            do {
                _ = try EventDecoder().decode(#"{"type":"sample-added","user":"ana","sample":{"uuid":"z","metric":"\#(metric)","source":"watch","start":"2024-05-06T10:00:00Z","end":"2024-05-06T10:00:00Z","value":\#(value),"unit":"\#(unit)","zone":"UTC"}}"#)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal("oxygen_saturation", "0", "%") == "sample.value: 0 is not a positive reading of oxygen_saturation")
        #expect(refusal("body_mass", "5e-324", "g") == "sample.value: 5e-324 g is 0 kg once converted: not a positive reading of body_mass")
    }
}
