@testable import DaybookCore
import DaybookSupport
import Foundation
import Testing

/// The decoder's answers, byte for byte, over the fuzz corpus and a grid of hostile
/// variants of one valid event, against `Golden/decoder-answers.txt`, written by the
/// decoder before its fast path was rebuilt (so a faster decoder that words one error
/// differently, or accepts or builds anything differently, fails here).
///
/// To record the file again after a deliberate change of wording:
/// `DAYBOOK_RECORD_GOLDEN=1 swift test --filter DecoderGoldenTests`, and say why in the commit.
@Suite struct DecoderGoldenTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/decoder-answers.txt")

    /// One valid sample-added event, member by member, in the order producers write them.
    static let base: [(String, String)] = [
        ("type", #""sample-added""#), ("schema", "1"), ("user", #""ada""#),
        ("sample", ""), // filled from `sample`
    ]
    static let sample: [(String, String)] = [
        ("uuid", #""9f1c2a8e-3b7d-4c1e-9a55-0d6f2b8c7e31""#), ("metric", #""steps""#), ("source", #""com.example.watch""#),
        ("start", #""2024-03-30T23:30:00+01:00""#), ("end", #""2024-03-31T03:30:00+02:00""#), ("value", "1200"),
        ("unit", #""count""#), ("zone", #""Europe/Berlin""#), ("version", "3"),
    ]

    /// Bad or unusual values for each member; each variant changes one member of `base`.
    static let variants: [String: [String]] = [
        "type": [#""sample-deleted""#, #""source-checked-in""#, #""sample-added ""#, #""Sample-Added""#, "1", "null", #""sample\u002dadded""#],
        "schema": ["2", "1.0", "0", #""1""#, "null", "-1", "1e0"],
        "user": [#""""#, #"" ""#, "7", #""e\u0301""#, #""\u00e9""#, "\"é\"", "\"e\u{301}\"", #""\ud800""#, #""a\nb""#, #""\u0000""#,
                 "\"" + String(repeating: "u", count: 300) + "\""],
        "uuid": [#""""#, "[]", #""AAA""#, "\"e\u{301}\"", #""a\"b""#, "\"" + String(repeating: "x", count: 100) + "\""],
        "metric": [#""step""#, #""heart_rate""#, #""active_energy""#, #""distance""#, #""STEPS""#, "0", #""st\u0065ps""#],
        "source": [#""""#, "1", "\"e\u{301}\"", #""a\tb""#, "\"ü\"", "null"],
        "start": [#""2024-03-30T23:30:00Z""#, #""2024-03-30 23:30:00+01:00""#, #""2024-02-30T00:00:00Z""#, #""1899-12-31T23:59:59Z""#,
                  #""2024-03-30T23:30:00""#, #""2024-03-30T23:30:00.123456789123+01:00""#, #""2024-03-31T05:00:00+02:00""#, "0",
                  #""2024-03-30T24:00:00Z""#, #""2024-03-30t23:30:00z""#, #""2024-03-30T23:30:00+24:00""#],
        "end": [#""2024-03-30T23:30:00+01:00""#, #""2024-04-07T03:30:00+02:00""#, #""2024-04-08T03:30:00+02:00""#, #""2199-12-31T23:59:59Z""#,
                #""2200-01-01T00:00:00Z""#, "null", #""2024-03-30T22:00:00Z""#],
        "value": ["-1", "0", "1e400", "-0", "2000000", "2000001", "1.5e3", #""1200""#, "NaN", "Infinity", "true", "01", "1.", ".5", "-"],
        "unit": [#""steps""#, #""kcal""#, #""""#, "1", #""Count""#],
        "zone": [#""UTC""#, #""GMT+5""#, #""Mars/Olympus""#, #""America/New_York""#, #""Asia/Calcutta""#, #""EST5EDT""#, #""""#, "1", #""utc""#],
        "version": ["0", "-1", "1.5", "9223372036854775807", "9223372036854775808", "1e3", "null", #""3""#, "00", "3.0", "true"],
    ]

    static func line(_ members: [(String, String)], sample: [(String, String)]) -> String {
        let inner = "{" + sample.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        return "{" + members.map { "\"\($0.0)\":\($0.0 == "sample" ? inner : $0.1)" }.joined(separator: ",") + "}"
    }

    /// Every input of the grid: the base line, each member replaced by each variant, each
    /// member dropped, each member repeated, unknown members, and a deletion.
    static func grid() -> [(name: String, bytes: [UInt8])] {
        var out: [(String, [UInt8])] = [("base", Array(line(base, sample: sample).utf8))]
        for (key, values) in variants.sorted(by: { $0.key < $1.key }) {
            for (i, value) in values.enumerated() {
                let top = base.map { $0.0 == key ? ($0.0, value) : $0 }
                let inner = sample.map { $0.0 == key ? ($0.0, value) : $0 }
                out.append(("\(key)=\(i)", Array(line(top, sample: inner).utf8)))
            }
        }
        for (i, member) in (base + sample).enumerated() {
            out.append(("drop=\(member.0)", Array(line(base.filter { $0.0 != member.0 || i >= base.count },
                                                        sample: sample.filter { $0.0 != member.0 || i < base.count }).utf8)))
            let top = i < base.count && member.0 != "sample" ? base + [member] : base
            let inner = i >= base.count ? sample + [member] : sample
            out.append(("repeat=\(member.0)", Array(line(top, sample: inner).utf8)))
        }
        out.append(("unknown", Array(line(base + [("note", #"{"a":[1,2,{"b":null}]}"#)], sample: sample + [("extra", "[]")]).utf8)))
        out.append(("deleted", Array(#"{"type":"sample-deleted","user":"ada","uuid":"9f1c2a8e"}"#.utf8)))
        out.append(("deleted-empty", Array(#"{"type":"sample-deleted","user":"ada","uuid":""}"#.utf8)))
        out.append(("deleted-nfd", Array("{\"type\":\"sample-deleted\",\"user\":\"ada\",\"uuid\":\"e\u{301}\"}".utf8)))
        out.append(("check-in", Array(#"{"type":"source-checked-in","user":"ada","source":"w","at":"2024-03-30T10:00:00Z","metrics":["steps","steps"]}"#.utf8)))
        out.append(("spaces", Array(" \t{ \"type\" : \"sample-added\" , \"user\":\"ada\",\"sample\":{\"uuid\":\"u\",\"metric\":\"steps\",\"source\":\"w\",\"start\":\"2024-03-30T10:00:00Z\",\"end\":\"2024-03-30T10:00:00Z\",\"value\":5,\"unit\":\"count\",\"zone\":\"UTC\"} } \r".utf8)))
        out.append(("trailing", Array((line(base, sample: sample) + "x").utf8)))
        out.append(("invalid-utf8", Array(line(base, sample: sample).utf8).map { $0 == 0x61 ? 0xFF : $0 }))
        return out
    }

    /// The fuzz corpus: each file whole, and each of its lines, as the fuzz target reads it.
    static func corpus() throws -> [(name: String, bytes: [UInt8])] {
        let folder = root.appendingPathComponent("Fuzz/corpus/event-decoder")
        var out: [(String, [UInt8])] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
            let bytes = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
            out.append((name, bytes))
            guard bytes.contains(10) else { continue }
            for (i, line) in bytes.split(separator: 10, omittingEmptySubsequences: false).prefix(64).enumerated() {
                out.append(("\(name)#\(i)", Array(line)))
            }
        }
        return out
    }

    static func answer(_ bytes: [UInt8]) -> String {
        describe(bytes.withUnsafeBufferPointer { b in Result { () throws(EventError) in try EventDecoder().decode(b) } })
    }

    static func describe(_ result: Result<Event, EventError>) -> String {
        switch result {
        case .success(let event): return "ok " + JSONWriter.quoted(String(reflecting: event))
        case .failure(let error): return "error \(error.code.rawValue) " + JSONWriter.quoted(error.description)
        }
    }

    @Test func everyAnswerIsTheOneRecorded() throws {
        let inputs = try Self.corpus() + Self.grid()
        let text = inputs.map { JSONWriter.quoted($0.name) + " " + Self.answer($0.bytes) }.joined(separator: "\n") + "\n"
        if ProcessInfo.processInfo.environment["DAYBOOK_RECORD_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: Self.golden.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: Self.golden, atomically: true, encoding: .utf8)
        }
        let recorded = try String(contentsOf: Self.golden, encoding: .utf8)
        let want = recorded.split(separator: "\n", omittingEmptySubsequences: false)
        let got = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(got.count == want.count, "the inputs changed: \(got.count) answers, \(want.count) recorded")
        for (g, w) in zip(got, want) where g != w {
            Issue.record("answer changed:\n  recorded \(w)\n  now      \(g)")
        }
        // One memo of valid zones shared by every line, as a partition's batch shares one,
        // changes no answer.
        var shared = ZoneMemo()
        for (input, line) in zip(inputs, got) {
            let result = input.bytes.withUnsafeBufferPointer { b in Result { () throws(EventError) in try EventDecoder().decode(b, zones: &shared) } }
            #expect(Self.describe(result) == line.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init), "\(input.name)")
        }
        // Staged straight into a batch (`EventDecoder.stage`, the projector's path): the event
        // the batch gives back, or the error, is the recorded answer for every input, with one
        // batch and one memo for all of them, as a partition's batch shares them; a refused
        // line adds nothing.
        var batch = StagedBatch()
        var memo = ZoneMemo()
        for (input, line) in zip(inputs, got) {
            let before = batch.count
            let staged = input.bytes.withUnsafeBufferPointer { b in
                Result { () throws(EventError) in try EventDecoder().stage(b, into: &batch, position: Int64(before), deliveredAt: nil, zones: &memo) }
            }
            let answer: Result<Event, EventError> = staged.map { _ in batch.event(at: before) }
            #expect(Self.describe(answer) == line.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init), "\(input.name)")
            switch staged {
            case .success(let user):
                #expect(batch.count == before + 1 && batch.name(user) == batch.event(at: before).user, "\(input.name)")
            case .failure:
                #expect(batch.count == before, "\(input.name)")
            }
        }
        // The direct path (bytes straight to an event) answers the usual lines, and only with
        // the event the JSON tree gives.
        var direct = 0
        for input in inputs {
            var zones = ZoneMemo()
            guard let event = input.bytes.withUnsafeBufferPointer({ FastEventReader.event($0, zones: &zones) }) else { continue }
            direct += 1
            var integers: [String: Int64]? = [:]
            let tree = try input.bytes.withUnsafeBufferPointer { try JSONParser.parse($0, exactIntegers: &integers) }
            #expect(try EventDecoder().decode(tree, exactIntegers: integers ?? [:]) == event, "\(input.name)")
        }
        #expect(direct >= 80, "only \(direct) inputs took the direct path")
        // The grid is not vacuous: it holds both answers and many kinds of fault.
        let codes = Set(got.compactMap { $0.split(separator: " ").dropFirst().first == "error" ? $0.split(separator: " ")[2] : nil })
        #expect(got.filter { $0.split(separator: " ").dropFirst().first == "ok" }.count >= 20)
        #expect(codes.count >= 15, "fault kinds covered: \(codes.sorted())")
    }
}
