import DaybookCore
@testable import DaybookImport
import DaybookSupport
import DaybookTestSupport
import Testing

/// The streaming reader on broken and unusual input: it names the line and never traps.
@Suite struct ScannerTests {
    static let head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_US\">\n"
    static let record = #" <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Phone" unit="count" creationDate="2024-01-10 10:00:00 +0200" startDate="2024-01-10 10:00:00 +0200" endDate="2024-01-10 10:10:00 +0200" value="10"/>"# + "\n"

    @Test(arguments: [
        ("", "line 1: no <HealthData> element: this is not an Apple Health export.xml"),
        ("{\"type\":\"sample-added\"}\n", "line 1: the file does not start with XML: this is not an Apple Health export.xml"),
        ("<?xml version=\"1.0\"?>\n<html><body/></html>\n", "line 2: the root element is <html>, not <HealthData>: this is not an Apple Health export.xml"),
        (head + record, "line 4: the file ends inside <HealthData> (cut short? export again, or unzip again)"),
        (head + String(record.prefix(90)), "line 3: the file ends inside a tag or comment (cut short? export again, or unzip again)"),
        (head + " <Record type=\"x\">\n </Workout>\n</HealthData>\n", "line 4: </Workout> closes <Record>: the XML is damaged"),
        (head + record + "</HealthData>\n<Record/>\n", "line 5: <Record> after the end of <HealthData>"),
        (head + " <Record type=x/>\n</HealthData>\n", "line 3: attribute type: the value is not quoted"),
        (head + "</HealthData>\ntrailing\n", "line 4: text outside the <HealthData> element"),
    ])
    func brokenFilesAreNamedByLine(xml: String, message: String) throws {
        for chunk in [1, 5, 1 << 20] {
            let r = try importExport(xml, chunk: chunk)
            #expect(r.error?.description == message, "chunk \(chunk)")
        }
    }

    @Test func recordsBeforeADamagedPartAreDelivered() throws {
        let r = try importExport(ScannerTests.head + ScannerTests.record + ScannerTests.record + " <Record type=\"")
        #expect(r.lines.count == 2)
        #expect(r.error != nil)
    }

    @Test func attributeValuesAreDecodedAsXMLSays() throws {
        func decode(_ raw: String) -> Result<String, XMLTextProblem> {
            var raw = raw
            return raw.withUTF8 { XMLText.attributeValue($0) }
        }
        #expect(try decode("Ana&#8217;s &amp; Ben&#x2019;s &lt;&lt;x&gt;&gt; &quot;q&quot; &apos;").get() == "Ana’s & Ben’s <<x>> \"q\" '")
        #expect(try decode("a\tb\nc\r\nd").get() == "a b c d")
        #expect(try decode("caf\u{E9}").get() == "café")
        #expect(throws: XMLTextProblem.self) { try decode("a & b").get() }
        #expect(throws: XMLTextProblem.self) { try decode("&#0;").get() }
        #expect(throws: XMLTextProblem.self) { try decode("&#xD800;").get() }
        #expect(throws: XMLTextProblem.self) { try decode("a<b").get() }
        let invalid: [UInt8] = [0x41, 0xFF, 0x42]
        #expect(throws: XMLTextProblem.self) { try invalid.withUnsafeBufferPointer { XMLText.attributeValue($0) }.get() }
    }

    @Test func aGreaterThanInsideQuotesDoesNotEndTheTag() throws {
        let xml = ScannerTests.head + #" <Record type="HKQuantityTypeIdentifierStepCount" sourceName="A > B" unit="count" startDate="2024-01-10 10:00:00 +0200" endDate="2024-01-10 10:10:00 +0200" value="10" device='&lt;&lt;HKDevice: 0x1&gt;, model:Watch&gt;'/>"# + "\n</HealthData>\n"
        let r = try importExport(xml)
        #expect(r.error == nil)
        #expect(r.samples.map(\.source) == ["watch"])
    }

    @Test func commentsCDATAAndAByteOrderMarkAreSkipped() throws {
        let xml = "\u{FEFF}" + ScannerTests.head + " <!-- a <Record> in a comment -->\n <![CDATA[ <Record/> ]]>\n" + ScannerTests.record + "</HealthData>\n"
        let r = try importExport(xml)
        #expect(r.error == nil)
        #expect(r.lines.count == 1)
    }

    @Test func exportTimestamps() {
        #expect(ExportTime.instant("2024-01-10 10:00:00 +0200") == (try? Instant(rfc3339: "2024-01-10T08:00:00Z")))
        #expect(ExportTime.instant("2024-01-10 10:00:00 -0530") == (try? Instant(rfc3339: "2024-01-10T15:30:00Z")))
        for bad in ["2024-01-10T10:00:00+0200", "2024-01-10 10:00:00 +02:00", "2024-02-30 10:00:00 +0200", "2024-01-10 10:00:00", ""] {
            #expect(ExportTime.instant(bad) == nil, "\(bad)")
        }
    }

    @Test func sourceMapRulesAndSlugs() throws {
        #expect(try SourceMap.rule("Ana’s Apple Watch=watch").get() == .init(field: .name, text: "Ana’s Apple Watch", source: "watch"))
        #expect(try SourceMap.rule("version:10.2=watch").get() == .init(field: .version, text: "10.2", source: "watch"))
        #expect(try SourceMap.rule("model:iPod=phone").get() == .init(field: .model, text: "iPod", source: "phone"))
        #expect(try SourceMap.rule("a=b=c").get() == .init(field: .name, text: "a=b", source: "c"))
        for bad in ["watch", "=watch", "x=", "x= watch", "x=e\u{301}"] {
            #expect(throws: SourceMapError.self, "\(bad)") { try SourceMap.rule(bad).get() }
        }
        #expect(SourceMap.slug("Sleep Cycle") == "sleep-cycle")
        #expect(SourceMap.slug("Lose It!") == "lose-it")
        #expect(SourceMap.slug("  Ärzte–App 2 ") == "ärzte-app-2")
        #expect(SourceMap.slug("!!!") == "unknown")
        #expect(AppleHealthImporter.stableDevice("<<HKDevice: 0x283b5c5f0>, name:Apple Watch>") == "<<HKDevice: 0x>, name:Apple Watch>")
    }

    @Test func badOptionsAreRefused() {
        #expect(throws: ImportOptionError(.emptyUser)) { try AppleHealthImporter(options: .init(user: "")) }
        #expect(throws: ImportOptionError(.userNotNFC("e\u{301}"))) { try AppleHealthImporter(options: .init(user: "e\u{301}")) }
        #expect(throws: ImportOptionError(.unknownZone("GMT+2"))) { try AppleHealthImporter(options: .init(user: "ana", zone: "GMT+2")) }
        // The library's words name the importer's options, not a command line's flags.
        #expect(ImportOptionError(.unknownZone("GMT+2")).message == "the default zone \"GMT+2\" is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)")
        #expect(throws: Never.self) { try AppleHealthImporter(options: .init(user: "ana", zone: "Asia/Calcutta")) }
    }
}

/// Damaged exports never trap: the fixture with bytes flipped, dropped, duplicated or cut,
/// in random chunkings, ends either with records or with a named error.
@Suite struct DamagedExportTests {
    @Test(arguments: Array(1...200).map(UInt64.init))
    func mutatedFixturesNeverTrap(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var bytes = Array(Fixture.xml.utf8)
        let specials: [UInt8] = Array("<>&\"'/=;#x![]-?\n\u{FF}".utf8)
        for _ in 0..<(1 + rng.below(6)) {
            let at = rng.below(bytes.count)
            switch rng.below(4) {
            case 0: bytes[at] = specials[rng.below(specials.count)]
            case 1: bytes.remove(at: at)
            case 2: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + rng.below(40))], at: at)
            default: bytes.removeLast(rng.below(bytes.count / 4))
            }
        }
        let xml = String(decoding: bytes, as: UTF8.self)
        let r = try importExport(xml, rules: FixtureTests.rules, chunk: 1 + rng.below(300))
        #expect(r.lines.count <= FixtureTests.expected.count + 8)
        for line in r.lines { #expect(throws: Never.self) { try EventDecoder().decode(line) } }
        #expect(r.error != nil || r.summary.records > 0)
    }
}
