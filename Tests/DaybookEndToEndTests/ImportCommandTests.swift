import DaybookTestSupport
import Foundation
import Testing

/// `daybook import apple-health` run as a binary: published twice it totals as once; a
/// .zip is read as is; its mistakes end with the documented codes and leave no files.
@Suite(.serialized) struct ImportCommandTests {
    let scratch = TemporaryDirectory()

    /// A generated export of about `megabytes` MB (records over 20 days, at +0200 throughout).
    func export(megabytes: Int = 1, seed: Int = 3) throws -> String {
        let path = scratch.newPath("export") + ".xml"
        let r = try Daybook.run(["import", "generate", "--megabytes", "\(megabytes)", "--days", "20", "--seed", "\(seed)", "--out", path])
        #expect(r.status == 0, "\(r.stderr)")
        return path
    }

    @Test(.timeLimit(.minutes(3))) func importingTwiceAndPublishingBothTotalsAsOnce() throws {
        let xml = try export()
        let once = scratch.newPath("once") + ".jsonl"
        let written = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin", "--out", once])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stderr.contains("0 rejected"), "\(written.stderr)")
        let expected = try Daybook.run(["rollup", once])
        #expect(expected.status == 0)
        #expect(expected.stdout.split(separator: "\n").count > 40)

        let broker = try BrokerProcess(arguments: ["--partitions", "2"])
        defer { _ = broker.stop() }
        for _ in 0..<2 {
            let r = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin", "--brokers", broker.bootstrap])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("import: published"), "\(r.stderr)")
        }
        let data = scratch.newPath("data")
        let project = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(project.status == 0, "\(project.stderr)")
        let totals = try Daybook.run(["totals", "--data", data, "--format", "json"])
        #expect(totals.status == 0, "\(totals.stderr)")
        #expect(totals.stdout == expected.stdout)
        // Nothing staged is left behind in the temporary directory.
        // (The staging lives in $TMPDIR/daybook-UID as daybook-import.tmp-PID.)
        let mine = NSTemporaryDirectory() + "/daybook-\(getuid())"
        let staged = ((try? FileManager.default.contentsOfDirectory(atPath: mine)) ?? []).filter { $0.hasPrefix("daybook-import") }
            + (try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())).filter { $0.hasPrefix("daybook-import") }
        #expect(staged.isEmpty, "\(staged)")
    }

    @Test func aZipIsReadAsIs() throws {
        let xml = try export()
        let zip = scratch.newPath("export") + ".zip"
        try ImportCommandTests.storedZip(entries: [("apple_health_export/export_cda.xml", Data("<ClinicalDocument/>".utf8)),
                                                   ("apple_health_export/export.xml", try Data(contentsOf: URL(fileURLWithPath: xml)))]).write(to: URL(fileURLWithPath: zip))
        let fromZip = try Daybook.run(["import", "apple-health", zip, "--user", "ana", "--zone", "Europe/Berlin"])
        let fromXML = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin"])
        #expect(fromZip.status == 0, "\(fromZip.stderr)")
        #expect(!fromZip.stdout.isEmpty && fromZip.stdout == fromXML.stdout)
        // (--out: Daybook.run writes all of stdin before it reads stdout.)
        let viaStdin = scratch.newPath("stdin") + ".jsonl"
        let fromStdin = try Daybook.run(["import", "apple-health", "-", "--user", "ana", "--zone", "Europe/Berlin", "--out", viaStdin], stdin: try String(contentsOfFile: xml, encoding: .utf8))
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(try String(contentsOfFile: viaStdin, encoding: .utf8) == fromXML.stdout)

        let noExport = scratch.newPath("other") + ".zip"
        try ImportCommandTests.storedZip(entries: [("notes.txt", Data("hi".utf8))]).write(to: URL(fileURLWithPath: noExport))
        let r = try Daybook.run(["import", "apple-health", noExport, "--user", "ana", "--zone", "UTC"])
        #expect(r.status == 66, "\(r.stderr)")
        #expect(r.stderr.contains("holds no export.xml"), "\(r.stderr)")
    }

    @Test func mistakesEndWithTheDocumentedCodesAndLeaveNoFiles() throws {
        let xml = try export()
        let out = scratch.newPath("out") + ".jsonl"
        let cases: [(arguments: [String], status: Int32, text: String)] = [
            (["import", "apple-health", xml], 64, "needs --user U"),
            (["import", "apple-health", xml, "--user", "ana", "--out", out], 64, "have no HKTimeZone metadata (the first at line "),
            (["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berln"], 64, "--zone \"Europe/Berln\" is not an IANA time zone"),
            (["import", "apple-health", xml, "--user", "ana", "--zone", "UTC", "--out", out, "--brokers", "127.0.0.1:1"], 64, "not both"),
            (["import", "apple-health", xml, "--user", "ana", "--source-map", "watch"], 64, "--source-map 'watch' has no '='"),
            (["import", "apple-health", scratch.path + "/nothing.xml", "--user", "ana"], 66, "no such file"),
            (["import", "apple-health", scratch.path, "--user", "ana"], 66, "Is a directory"),
            (["import", "healthconnect", xml], 64, "'healthconnect' is not a kind of import"),
            (["import", "apple-health", xml, "--user", "ana", "--zone", "UTC", "--brokers", "127.0.0.1:1", "--connect-timeout", "1"], 69, "cannot reach the Kafka cluster"),
        ]
        for c in cases {
            let r = try Daybook.run(c.arguments)
            #expect(r.status == c.status, "\(c.arguments): \(r.stderr)")
            #expect(r.stderr.contains(c.text), "\(c.arguments): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
        // A file cut short: 65, and --out writes nothing (no temporary file either).
        let bytes = try Data(contentsOf: URL(fileURLWithPath: xml))
        let cut = try scratch.file(String(decoding: bytes.prefix(bytes.count / 2), as: UTF8.self), suffix: ".xml")
        let r = try Daybook.run(["import", "apple-health", cut, "--user", "ana", "--zone", "UTC", "--out", out])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("(cut short? export again, or unzip again); nothing was written"), "\(r.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasPrefix("out") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test func rejectedRecordsExit65AndTheRestIsWritten() throws {
        let record = #" <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Phone" unit="count" creationDate="2024-01-10 10:00:00 +0200" startDate="2024-01-10 10:00:00 +0200" endDate="2024-01-10 10:10:00 +0200" value="%@"/>"#
        let xml = "<?xml version=\"1.0\"?>\n<HealthData locale=\"en\">\n" + record.replacingOccurrences(of: "%@", with: "10") + "\n"
            + record.replacingOccurrences(of: "%@", with: "-3") + "\n</HealthData>\n"
        let r = try Daybook.run(["import", "apple-health", try scratch.file(xml, suffix: ".xml"), "--user", "ana", "--zone", "Europe/Berlin"])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").count == 1)
        #expect(r.stderr.contains("rejected, negative_value: 1 (first at line 4: sample.value: -3 is negative"), "\(r.stderr)")
    }

    /// A zip archive with stored (uncompressed) entries: enough for unzip, no zip tool needed.
    static func storedZip(entries: [(String, Data)]) -> Data {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        var out: [UInt8] = [], central: [UInt8] = []
        for (name, data) in entries {
            let crc = crc32(data), size = UInt32(data.count), offset = UInt32(out.count), n = Array(name.utf8)
            let common = le16(20) + le16(0) + le16(0) + le16(0) + le16(0x21) + le32(crc) + le32(size) + le32(size) + le16(n.count) + le16(0)
            out += le32(0x0403_4B50) + common + n + Array(data)
            central += le32(0x0201_4B50) + le16(20) + common + le16(0) + le16(0) + le16(0) + le32(0) + le32(offset) + n
        }
        let start = UInt32(out.count)
        out += central + le32(0x0605_4B50) + le16(0) + le16(0) + le16(entries.count) + le16(entries.count) + le32(UInt32(central.count)) + le32(start) + le16(0)
        return Data(out)
    }

    static func crc32(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
