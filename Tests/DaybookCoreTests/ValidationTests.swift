@testable import DaybookCore
import DaybookSupport
import Testing

@Suite struct ValidationTests {
    let decoder = EventDecoder()

    /// A valid sample-added line with one member of `sample` replaced (or removed with nil).
    func line(_ key: String, _ json: String?, top: String = "") -> String {
        var fields: [(String, String)] = [
            ("uuid", #""a1""#), ("metric", #""steps""#), ("source", #""watch""#),
            ("start", #""2024-03-02T09:00:00+01:00""#), ("end", #""2024-03-02T09:30:00.250+01:00""#),
            ("value", "3000"), ("unit", #""count""#), ("zone", #""Europe/Berlin""#),
        ]
        if let i = fields.firstIndex(where: { $0.0 == key }) {
            if let json { fields[i].1 = json } else { fields.remove(at: i) }
        } else if let json {
            fields.append((key, json))
        }
        let sample = fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",")
        return #"{"type":"sample-added","user":"ana",\#(top)"sample":{\#(sample)}}"#
    }

    func rejection(_ text: String) -> EventError? {
        do {
            _ = try decoder.decode(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func acceptsAValidLineAndConvertsNothing() throws {
        let event = try decoder.decode(line("extra", #"{"ignored":true}"#, top: #""schema":1,"#))
        guard case .sampleAdded(let s) = event else { Issue.record("not an add"); return }
        #expect(s.user == "ana" && s.uuid == "a1" && s.metric == .steps && s.source == "watch")
        #expect(s.value == 3000)
        #expect(s.end.nanoseconds - s.start.nanoseconds == 1_800_250_000_000)
        #expect(s.start == Instant(seconds: 1_709_366_400)) // 08:00Z
    }

    @Test func acceptsDeletion() throws {
        #expect(try decoder.decode(#"{"type":"sample-deleted","user":"ana","uuid":"a1"}"#) == .sampleDeleted(user: "ana", uuid: "a1"))
    }

    @Test(arguments: [
        ("distance", "km", 2.5, 2500.0), ("distance", "mi", 1, 1609.344), ("distance", "m", 7, 7),
        ("active_energy", "kJ", 418.4, 100), ("active_energy", "Cal", 12, 12), ("active_energy", "kcal", 3, 3),
    ])
    func convertsUnits(metric: String, unit: String, raw: Double, canonical: Double) throws {
        let text = line("metric", "\"\(metric)\"").replacingOccurrences(of: #""unit":"count""#, with: "\"unit\":\"\(unit)\"")
            .replacingOccurrences(of: #""value":3000"#, with: "\"value\":\(raw)")
        guard case .sampleAdded(let s) = try decoder.decode(text) else { Issue.record("not an add"); return }
        #expect(abs(s.value - canonical) < 1e-9)
    }

    @Test(arguments: [
        // (line, code, field, words the message must contain)
        ("{\"type\":", EventError.Code.malformedJSON, nil as String?, "malformed JSON"),
        (#"[1,2]"#, .wrongType, nil, "JSON object"),
        (#"{"type":"sample-added","user":"ana","schema":2,"sample":{}}"#, .unsupportedSchema, "schema", "schema 1"),
        (#"{"type":"sample-moved","user":"ana"}"#, .unknownType, "type", "sample-moved"),
        (#"{"type":"sample-deleted","user":"","uuid":"x"}"#, .emptyString, "user", "empty"),
        (#"{"type":"sample-deleted","user":"ana"}"#, .missingField, "uuid", "missing"),
        (#"{"type":"sample-added","user":"ana"}"#, .missingField, "sample", "missing"),
        (#"{"type":"sample-added","user":"ana","sample":[]}"#, .wrongType, "sample", "object"),
    ])
    func rejectsBadEnvelopes(text: String, code: EventError.Code, field: String?, words: String) throws {
        let error = try #require(rejection(text))
        #expect(error.code == code)
        #expect(error.field == field)
        #expect(error.description.contains(words), "\(error)")
    }

    @Test(arguments: [
        ("metric", #""stairs""# as String?, EventError.Code.unknownMetric, "sample.metric", "\"stairs\""),
        ("unit", #""ft""#, .unitMismatch, "sample.unit", "\"ft\""),
        ("unit", #""kcal""#, .unitMismatch, "sample.unit", "use count"),
        ("start", #""yesterday""#, .badTime, "sample.start", "\"yesterday\""),
        ("start", #""2024-02-30T09:00:00Z""#, .badTime, "sample.start", "out of range"),
        ("end", #""2024-03-02T09:00:00""#, .badTime, "sample.end", "RFC 3339"),
        ("end", #""2024-03-02T08:00:00+01:00""#, .endBeforeStart, "sample.end", "before"),
        ("end", #""2024-03-09T09:00:01+01:00""#, .tooLong, "sample.end", "7"),
        ("zone", #""Mars/Olympus""#, .badZone, "sample.zone", "\"Mars/Olympus\""),
        ("zone", #""GMT+5""#, .badZone, "sample.zone", "IANA"),
        ("value", "NaN", .notFinite, "sample.value", "NaN"),
        ("value", "1e999", .notFinite, "sample.value", "1e999"),
        ("value", "-Infinity", .notFinite, "sample.value", "-Infinity"),
        ("value", "-1", .negativeValue, "sample.value", "-1"),
        ("value", #""12""#, .wrongType, "sample.value", "number"),
        ("value", nil as String?, .missingField, "sample.value", "missing"),
        ("uuid", #""""#, .emptyString, "sample.uuid", "empty"),
        ("source", #""""#, .emptyString, "sample.source", "empty"),
        ("source", "7", .wrongType, "sample.source", "string"),
    ])
    func rejectsBadSamples(key: String, json: String?, code: EventError.Code, field: String, words: String) throws {
        let error = try #require(rejection(line(key, json)))
        #expect(error.code == code)
        #expect(error.field == field)
        #expect(error.description.contains(words), "\(error)")
    }

    @Test func heartRateMustBePositive() throws {
        let text = line("metric", #""heart_rate""#).replacingOccurrences(of: #""unit":"count""#, with: #""unit":"count/min""#)
            .replacingOccurrences(of: #""value":3000"#, with: #""value":0"#)
        let error = try #require(rejection(text))
        #expect(error.code == .nonPositiveHeartRate)
        #expect(error.description == "sample.value: 0 is not a positive heart rate")
    }

    @Test func zeroStepsIsValid() throws {
        _ = try decoder.decode(line("value", "0"))
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        ("2024-03-02T09:00:00Z", Int64(1_709_370_000) * 1_000_000_000),
        ("2024-03-02t09:00:00z", Int64(1_709_370_000) * 1_000_000_000),
        ("2024-03-02 10:00:00+01:00", Int64(1_709_370_000) * 1_000_000_000),
        ("2024-03-02T04:30:00.123456789-04:30", Int64(1_709_370_000) * 1_000_000_000 + 123_456_789),
        ("2024-03-02T09:00:00.5Z", Int64(1_709_370_000) * 1_000_000_000 + 500_000_000),
        ("1969-12-31T23:59:59Z", -1_000_000_000),
        ("2024-02-29T00:00:00Z", Int64(1_709_164_800) * 1_000_000_000),
    ])
    func parses(text: String, nanos: Int64) throws {
        #expect(try Instant(rfc3339: text).nanoseconds == nanos)
    }

    @Test(arguments: ["", "2024-03-02", "2024-03-02T09:00Z", "2024-03-02T09:00:00", "2024-03-02T09:00:00+0100",
                      "2024-13-02T09:00:00Z", "2023-02-29T09:00:00Z", "2024-03-02T24:00:00Z", "2024-03-02T09:00:00.Z",
                      "2024-03-02T09:00:00Z ", "2024-03-02T09:00:60Z"])
    func rejects(text: String) {
        #expect(throws: TimestampError.self) { try Instant(rfc3339: text) }
    }

    @Test func formatsRoundTrip() throws {
        let t = try Instant(rfc3339: "2024-03-31T01:30:00.25+01:00")
        #expect(t.description == "2024-03-31T00:30:00.25Z")
        #expect(t.format(offsetSeconds: 3600) == "2024-03-31T01:30:00.25+01:00")
        #expect(try Instant(rfc3339: t.description) == t)
    }

    /// The one-buffer formatter against the general one (interpolated pieces) over instants
    /// of the whole accepted range, with and without fractions, at offsets of every kind.
    @Test func fastTimesEqualTheGeneralForm() throws {
        var rng = SplitMix64(seed: 28)
        let offsets = [0, 3600, -3600, 19_800, 20_700, -34_200, 50_400, -43_200, 37_800, 45]
        let low = Instant.earliestAccepted.nanoseconds, high = Instant.endOfAccepted.nanoseconds
        for i in 0..<4000 {
            // The range spans more than Int64.max nanoseconds: draw in UInt64.
            var n = Int64(bitPattern: UInt64(bitPattern: low) &+ rng.next() % (UInt64(bitPattern: high) &- UInt64(bitPattern: low)))
            if i % 3 == 0 { n -= n % Instant.nanosPerSecond } // whole seconds
            if i % 7 == 0 { n -= n % 1_000_000 }               // milliseconds
            let t = Instant(nanoseconds: n)
            for offset in offsets {
                #expect(t.text(offsetSeconds: offset, zulu: true) == t.slowText(offsetSeconds: offset, zulu: true))
                #expect(t.text(offsetSeconds: offset, zulu: false) == t.slowText(offsetSeconds: offset, zulu: false))
            }
        }
        // By hand: the range's first instant, one nanosecond, a local time at +00:00, Marquesas.
        #expect(Instant.earliestAccepted.description == "1900-01-01T00:00:00Z")
        #expect(Instant(nanoseconds: 1).description == "1970-01-01T00:00:00.000000001Z")
        #expect(Instant(nanoseconds: 1).text(offsetSeconds: 0, zulu: false) == "1970-01-01T00:00:00.000000001+00:00")
        #expect(Instant(nanoseconds: -1).format(offsetSeconds: -34_200) == "1969-12-31T14:29:59.999999999-09:30")
        #expect(CivilDay(year: 2024, month: 3, day: 5).description == "2024-03-05")
        #expect(CivilDay(year: 812, month: 11, day: 30).description == "0812-11-30")
    }

    /// `DayTotal.format`'s integer path against the general one (Swift's shortest form of the
    /// value rounded to 6 places) over values of every size the integer path takes and the
    /// edges around it: 1e-4, 4e9, whole numbers, negatives, values at 6 places exactly.
    @Test func fastNumbersEqualTheGeneralForm() {
        func general(_ v: Double) -> String {
            let rounded = (v * 1e6).rounded() / 1e6
            return JSONWriter.number(rounded.isFinite ? rounded : v)
        }
        var rng = SplitMix64(seed: 6)
        var values: [Double] = [0.0001, 0.00012, 0.000099, 0.00005, -0.0001, 0.5, -0.5, 1, 7050.000000000001, 2532.170761,
                                3_999_999_999.999999, 4_000_000_000.5, 4_294_967_295.123456, 12_345_678_901.123456, 1e15 + 0.5,
                                .nan, .infinity, -.infinity, 0, -0.0, 0.0000004, 0.0000005, 123.4560001]
        for scale in [1e-4, 1e-3, 1, 10, 1e3, 1e5, 1e7, 1e9, 4e9, 1e11] {
            for _ in 0..<2_000 {
                let u = Double(rng.next() >> 11) / Double(1 << 53)
                values.append((u * 2 - 1) * scale)
                values.append(((u * scale) * 1e6).rounded() / 1e6) // exactly 6 places
            }
        }
        for v in values {
            #expect(DayTotal.format(v) == general(v), "\(v)")
        }
        #expect(DayTotal.format(2532.17076) == "2532.17076")
        #expect(DayTotal.format(-0.25) == "-0.25")
        #expect(DayTotal.format(0.000123) == "0.000123")
    }

    @Test func civilDaysRoundTripOverFourCenturies() {
        for n in stride(from: Int32(-146_097), through: 146_097, by: 7) {
            let d = CivilDay(number: n)
            let (y, m, day) = d.components
            #expect(CivilDay(year: y, month: m, day: day) == d)
            #expect(CivilDay(d.description) == d)
        }
        #expect(CivilDay(year: 1970, month: 1, day: 1).number == 0)
        #expect(CivilDay("2024-02-30") == nil)
    }
}

@Suite struct JSONTests {
    @Test func parsesNestedValuesAndEscapes() throws {
        let v = try JSONParser.parse(#" {"a":[1,-2.5e2,true,false,null],"b":"x\"\\\/\n\u00e9\ud83d\ude00","c":{}} "#)
        #expect(v["a"] == .array([.number(1), .number(-250), .bool(true), .bool(false), .null]))
        #expect(v["b"] == .string("x\"\\/\né😀"))
        #expect(v["c"] == .object([:]))
    }

    @Test(arguments: ["", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "\"a", "{} x", "tru", "\"\u{01}\"", "\"\\ud800\""])
    func rejectsMalformed(text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(text) }
    }

    @Test func numbersRoundTrip() throws {
        for d in [0.1, 1e-7, 123456789012345678.0, Double.leastNonzeroMagnitude, 1.7976931348623157e308, 3.0, -0.5] {
            #expect(try JSONParser.parse(JSONWriter.number(d)) == .number(d))
        }
        #expect(JSONWriter.number(7050) == "7050")
        #expect(DayTotal.format(7050.000000000001) == "7050")
        #expect(DayTotal.format(1234.5678904) == "1234.56789")
    }

    @Test func rejectsDeepNesting() {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) }
    }
}

@Suite struct FastReaderTests {
    /// The one-pass reader and the tree reader agree on every line: same event or same error.
    @Test func fastAndGeneralReadersAgree() throws {
        let base = #"{"type":"sample-added","user":"ana","schema":1,"sample":{"uuid":"a1","metric":"distance","source":"phone","start":"2024-03-02T09:00:00+01:00","end":"2024-03-02T09:30:00.5+01:00","value":2.5,"unit":"km","zone":"Europe/Berlin","extra":[1,{"x":null}]},"note":"x"}"#
        let variants = [
            base,
            #"{"type":"sample-deleted","user":"ana","uuid":"a1"}"#,
            #"{ "user" : "bob" , "type" : "sample-deleted" , "uuid" : "z" }"#,
            base.replacingOccurrences(of: "\"schema\":1,", with: "\"schema\":2,"),
            base.replacingOccurrences(of: "\"schema\":1,", with: "\"schema\":\"1\","),
            base.replacingOccurrences(of: "2.5", with: "-2.5"),
            base.replacingOccurrences(of: "2.5", with: "1e999"),
            base.replacingOccurrences(of: "2.5", with: "\"2.5\""),
            base.replacingOccurrences(of: "\"km\"", with: "\"ft\""),
            base.replacingOccurrences(of: "Europe/Berlin", with: "Europe/Nowhere"),
            base.replacingOccurrences(of: "\"user\":\"ana\"", with: "\"user\":\"\""),
            base.replacingOccurrences(of: "\"uuid\":\"a1\"", with: "\"uuid\":7"),
            base.replacingOccurrences(of: "\"metric\":\"distance\",", with: ""),
            base.replacingOccurrences(of: "\"type\":\"sample-added\"", with: "\"type\":\"sample-removed\""),
            base.replacingOccurrences(of: "\"source\":\"phone\"", with: "\"source\":\"ph\\u006fne\""),
            base + " x",
            String(base.dropLast()),
            #"{"type":"sample-deleted","user":"ana","uuid":""}"#,
            #"{"type":"sample-added","user":"ana","sample":null}"#,
        ]
        let decoder = EventDecoder()
        for line in variants {
            let fast = Result { () throws(EventError) in try decoder.decode(line) }
            let general: Result<Event, EventError>
            do {
                let tree = try JSONParser.parse(line)
                general = Result { () throws(EventError) in try decoder.decode(tree, exactIntegers: [:]) } // no versions here
            } catch {
                general = .failure(EventError(code: .malformedJSON, field: nil, message: "malformed JSON: \(error)"))
            }
            switch (fast, general) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(line)")
            case (.failure(let a), .failure(let b)): #expect(a == b, "\(line)")
            default: Issue.record("readers disagree on \(line): \(fast) vs \(general)")
            }
        }
    }
}
