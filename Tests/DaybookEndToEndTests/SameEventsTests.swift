import DaybookTestSupport
import Foundation
import Testing

/// Issue 17, "Same events, same totals": inputs that must be refused, CSV that must not lose
/// or inject, temporary files that must not be left behind, messages that must say what
/// was wrong. Each test reproduces a finding against the `daybook` binary.
@Suite struct SameEventsTests {
    let scratch = TemporaryDirectory()

    static func sample(user: String, source: String, uuid: String, value: Int = 1000, hour: Int = 9) -> String {
        #"{"type":"sample-added","user":"# + user + #","sample":{"uuid":""# + uuid + #"","metric":"steps","source":"# + source
            + #","start":"2024-03-02T\#(String(format: "%02d", hour)):00:00+01:00","end":"2024-03-02T\#(String(format: "%02d", hour)):30:00+01:00","value":\#(value),"unit":"count","zone":"Europe/Berlin"}}"#
    }

    /// Publishes `lines` to a fresh one-partition broker and projects them into a new data directory.
    func project(_ lines: String) throws -> (broker: BrokerProcess, data: String) {
        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        let published = try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(lines)])
        #expect(published.status == 0, "\(published.stderr)")
        let data = scratch.newPath("data")
        let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", data, "--solo", "--until-caught-up"])
        #expect(r.status == 0, "\(r.stderr)")
        return (broker, data)
    }

    // MARK: Inputs that should be refused

    @Test(arguments: [
        (["totals", "--data", "a", "--data", "b"], "--data is given twice ('a' and 'b'); it takes one value: give it once"),
        (["rollup", "x.jsonl", "--config", "a.json", "--config=b.json"], "--config is given twice ('a.json' and 'b.json')"),
        (["import", "apple-health", "x.xml", "--user", "ana", "--user", "bob"], "--user is given twice ('ana' and 'bob')"),
        (["stale", "--data", "d", "--now", "2024-01-01T00:00:00Z", "--now", "2024-01-02T00:00:00Z"], "--now is given twice"),
    ])
    func aSingleValueOptionGivenTwiceExits64NamingIt(arguments: [String], message: String) throws {
        let r = try Daybook.run(arguments)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func repeatableOptionsStillRepeat() throws {
        let missing = scratch.newPath("data")
        // Past the parser: the missing directory is what stops them.
        let list = try Daybook.run(["dlq", "list", "--data", missing, "--partition", "0", "--partition", "1"])
        #expect(list.status == 66, "\(list.stderr)")
        let replay = try Daybook.run(["dlq", "replay", "--data", missing, "--dry-run", "--id", "0:1", "--id", "0:2"])
        #expect(replay.status == 66, "\(replay.stderr)")
        let xml = scratch.newPath("export") + ".xml"
        #expect(try Daybook.run(["import", "generate", "--megabytes", "1", "--days", "2", "--out", xml]).status == 0)
        let mapped = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin",
                                      "--source-map", "name:Apple Watch=watch", "--source-map", "name:iPhone=phone"])
        #expect(mapped.status == 0, "\(mapped.stderr)")
    }

    @Test func totalsFromAfterToExits64() throws {
        let r = try Daybook.run(["totals", "--data", scratch.path, "--from", "2024-03-05", "--to", "2024-03-01"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--from 2024-03-05 is after --to 2024-03-01: the range would hold no day; give --from on or before --to"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
        #expect(try Daybook.run(["totals", "--data", scratch.path, "--from", "2024-03-01", "--to", "2024-03-01"]).status == 0)
    }

    @Test func importOutOntoItsOwnInputExits64AndWritesNothing() throws {
        let xml = scratch.newPath("export") + ".xml"
        #expect(try Daybook.run(["import", "generate", "--megabytes", "1", "--days", "2", "--out", xml]).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: xml))
        let link = scratch.newPath("link") + ".xml"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: xml)
        for (input, out) in [(xml, xml), (xml, link), (link, xml)] {
            let r = try Daybook.run(["import", "apple-health", input, "--user", "ana", "--zone", "Europe/Berlin", "--out", out])
            #expect(r.status == 64, "\(input) → \(out): \(r.stderr)")
            #expect(r.stderr.contains("--out \(out) is the export being imported (\(input)): writing it would replace the export; give --out another file"), "\(r.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: xml)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == [xml, link].map { ($0 as NSString).lastPathComponent }.sorted())
    }

    @Test(arguments: [
        (#"{"priority":{"default":[]}}"#, "priority.default: is an empty list, which would rank every source by name alone"),
        (#"{"priority":{"steps":[]}}"#, "priority.steps: is an empty list"),
        (#"{"priority":{"default":[" watch","phone"]}}"#, #"priority.default[0]: " watch" has white space at its start or end; write the source name exactly as the samples give it"#),
        (#"{"priority":{"default":["phone","watch\t"]}}"#, #"priority.default[1]: "watch\t" holds a control character"#),
        (#"{"priority":{"default":["wa\u0007tch"]}}"#, #"priority.default[0]: "wa\u0007tch" holds a control character"#),
        (#"{"freshness":{"sources":{"phone ":{"threshold":"6h"}}}}"#, #"freshness.sources: "phone " has white space at its start or end"#),
        (#"{"freshness":{"canaries":[{"user":"c","source":" phone"}]}}"#, #"freshness.canaries[0].source: " phone" has white space at its start or end"#),
    ])
    func priorityListsAndSourceNamesThatCannotBeMeantExit78(config: String, message: String) throws {
        let events = try scratch.file(Self.sample(user: #""ana""#, source: #""watch""#, uuid: "w1") + "\n")
        let r = try Daybook.run(["rollup", events, "--config", try scratch.file(config, suffix: ".json")])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func deadLetterIdsAreTakenOnlyInCanonicalForm() throws {
        let missing = scratch.newPath("data")
        for id in ["02:1", "2:01", "+2:1", "2:1 "] {
            let r = try Daybook.run(["dlq", "replay", "--data", missing, "--dry-run", "--id", id])
            #expect(r.status == 64, "\(id): \(r.stderr)")
            #expect(r.stderr.contains("--id '\(id)' is not a dead-letter id; write PARTITION:OFFSET as 'daybook dlq list' shows it (e.g. 3:1234, no leading zeros)"), "\(r.stderr)")
        }
        // The same in a --fix file's lines.
        let event = #","event":{"type":"sample-deleted","user":"ana","uuid":"u1"}}"#
        #expect(DLQFixFileTests.parse(#"{"id":"02:1""# + event).problem?.contains(#"id: "02:1" is not a dead-letter id; write PARTITION:OFFSET"#) == true)
        #expect(DLQFixFileTests.parse(#"{"id":"2:1""# + event).fix?.id == "2:1")
    }

    @Test func secretsPastedIntoKafkaSecretsAreNeverEchoed() throws {
        let events = try scratch.file(Self.sample(user: #""ana""#, source: #""watch""#, uuid: "w1") + "\n")
        let pasted = try scratch.file(#"{"kafka":{"secrets":{"sasl.password":"hunter2-Xy!9"}}}"#, suffix: ".json")
        for command in [["publish", "--config", pasted, events], ["rollup", events, "--config", pasted]] {
            let r = try Daybook.run(command)
            #expect(r.status == 78, "\(r.stderr)")
            #expect(r.stderr.contains("kafka.secrets.sasl.password: is not the name of an environment variable"), "\(r.stderr)")
            #expect(!r.stderr.contains("hunter2"), "\(r.stderr)")
        }
        // A name that could be one, but is not set: not shown either (it may be a secret too).
        let unset = try scratch.file(#"{"kafka":{"secrets":{"sasl.password":"hunter2secret"}}}"#, suffix: ".json")
        let r = try Daybook.run(["publish", "--config", unset, events])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains("kafka.secrets.sasl.password: the environment variable it names is not set"), "\(r.stderr)")
        #expect(!r.stderr.contains("hunter2"), "\(r.stderr)")
        // A secret librdkafka rejects is quoted by librdkafka: redacted.
        let rejected = try scratch.file(#"{"kafka":{"secrets":{"security.protocol":"DAYBOOK_TEST_SECRET"}}}"#, suffix: ".json")
        let process = Process()
        process.executableURL = Daybook.binary
        process.arguments = ["publish", "--brokers", "127.0.0.1:1", "--config", rejected, events]
        process.environment = ProcessInfo.processInfo.environment.merging(["DAYBOOK_TEST_SECRET": "hunter2-in-env"]) { $1 }
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 78, "\(text)")
        #expect(text.contains(#"security.protocol: Invalid value "<redacted>""#), "\(text)")
        #expect(!text.contains("hunter2"), "\(text)")
    }

    // MARK: CSV

    @Test func csvKeepsBytesQuotesFieldsNeutralisesFormulasAndParsesBack() throws {
        let lines = [
            Self.sample(user: #""a\nb""#, source: #""watch""#, uuid: "n1", value: 100),
            Self.sample(user: #""a\\u{A}b""#, source: #""watch""#, uuid: "n2", value: 200),
            Self.sample(user: #""=HYPERLINK(\"http://x\",\"y\")""#, source: #""watch""#, uuid: "h1", value: 300),
            Self.sample(user: #""'quoted""#, source: #""-x=1;y\\z""#, uuid: "q1", value: 400, hour: 11),
            Self.sample(user: #""'quoted""#, source: #""watch""#, uuid: "q2", value: 500),
            Self.sample(user: #""solo""#, source: #""-x=1;y\\z""#, uuid: "s1", value: 600),
        ].joined(separator: "\n") + "\n"
        let (broker, data) = try project(lines)
        defer { _ = broker.stop() }
        let r = try Daybook.run(["totals", "--data", data, "--format", "csv"])
        #expect(r.status == 0, "\(r.stderr)")
        // Sorted by user bytes: "'quoted" < "=HYPERLINK" < "a\nb" < "a\\u{A}b". The two a…b ids
        // stay two different rows; "'quoted" gets a ' too, so that one leading ' is always ours;
        // the sources cell escapes = ; \ in names; none of it written as \u{A}.
        #expect(r.stdout == """
        user,metric,day,value,min,max,avg,count,sources,unknown,latest
        "''quoted",steps,2024-03-02,900,,,,,watch=500;-x\\=1\\;y\\\\z=400,,
        "'=HYPERLINK(""http://x"",""y"")",steps,2024-03-02,300,,,,,watch=300,,
        "a\nb",steps,2024-03-02,100,,,,,watch=100,,
        a\\u{A}b,steps,2024-03-02,200,,,,,watch=200,,
        solo,steps,2024-03-02,600,,,,,"'-x\\=1\\;y\\\\z=600",,

        """, "\(r.stdout)")
        // Read back: every user id and every source name exactly.
        let records = Self.parseCSV(r.stdout)
        #expect(records.map(\.[0]).dropFirst().map(Self.unneutralise) == ["'quoted", #"=HYPERLINK("http://x","y")"#, "a\nb", #"a\u{A}b"#, "solo"])
        #expect(Self.sources(Self.unneutralise(records[1][8])).map { "\($0.name) \($0.value)" } == ["watch 500", #"-x=1;y\z 400"#])
        #expect(Self.sources(Self.unneutralise(records[5][8])).map { "\($0.name) \($0.value)" } == [#"-x=1;y\z 600"#])
        // The table cuts long ids (a user's block header, a source's share); csv keeps them.
        let long = String(repeating: "s", count: 300)
        let (broker2, data2) = try project(Self.sample(user: "\"\(String(repeating: "u", count: 300))\"", source: "\"\(long)\"", uuid: "l1") + "\n")
        defer { _ = broker2.stop() }
        let table = try Daybook.run(["totals", "--data", data2])
        #expect(table.stdout == String(repeating: "u", count: 47) + "… · steps (count)\n  2024-03-02          1000  " + String(repeating: "s", count: 47) + "… 1000\n", "\(table.stdout)")
        #expect(try Daybook.run(["totals", "--data", data2, "--format", "csv"]).stdout.contains(long + "=1000"))
        // json is unchanged: the ids as JSON writes them.
        let json = try Daybook.run(["totals", "--data", data, "--format", "json"])
        #expect(json.stdout.contains(#"{"user":"a\nb","metric":"steps","day":"2024-03-02","value":100}"#), "\(json.stdout)")
    }

    /// RFC 4180 records (quoted fields may hold `,`, `""` and line breaks).
    static func parseCSV(_ text: String) -> [[String]] {
        var records: [[String]] = [], field = "", record: [String] = [], quoted = false
        var chars = Array(text)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" { field.append("\""); chars.removeFirst() } else { quoted = false }
                } else { field.append(c) }
            } else if c == "\"" { quoted = true }
            else if c == "," { record.append(field); field = "" }
            else if c == "\n" { record.append(field); records.append(record); record = []; field = "" }
            else { field.append(c) }
        }
        return records
    }

    /// A text cell as written, without the `'` the writer put in front.
    static func unneutralise(_ cell: String) -> String { cell.hasPrefix("'") ? String(cell.dropFirst()) : cell }

    /// `name=value;…` with `\` escaping `\`, `;` and `=` in names.
    static func sources(_ cell: String) -> [(name: String, value: String)] {
        var out: [(String, String)] = [], name = "", value = "", inValue = false, escaped = false
        for c in cell {
            if escaped { name.append(c); escaped = false }
            else if c == "\\" { escaped = true }
            else if c == "=" && !inValue { inValue = true }
            else if c == ";" { out.append((name, value)); name = ""; value = ""; inValue = false }
            else if inValue { value.append(c) } else { name.append(c) }
        }
        if !name.isEmpty { out.append((name, value)) }
        return out
    }

    // MARK: No user data left behind

    /// Starts `daybook` with TMPDIR set, its standard input a pipe left open.
    func start(_ arguments: [String], tmpdir: String) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = Daybook.binary
        process.arguments = arguments
        process.currentDirectoryURL = Daybook.root
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": tmpdir]) { $1 }
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, input)
    }

    /// Every path under `directory` (files and directories), relative to it, sorted.
    static func tree(_ directory: String) -> [String] {
        (FileManager.default.subpaths(atPath: directory) ?? []).sorted()
    }

    /// Waits until `condition` holds (at most 20 s).
    static func wait(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while !condition() {
            if Date() > deadline { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return true
    }

    @Test(.timeLimit(.minutes(2))) func rollupKilledLeavesNothingTheNextRunDoesNotRemove() throws {
        let tmpdir = scratch.newPath("tmp")
        try FileManager.default.createDirectory(atPath: tmpdir, withIntermediateDirectories: false)
        let line = Self.sample(user: #""ana""#, source: #""watch""#, uuid: "w1") + "\n"
        let (process, input) = try start(["rollup", "-"], tmpdir: tmpdir)
        input.fileHandleForWriting.write(Data(line.utf8))
        // The temporary store exists while rollup waits for more input.
        #expect(Self.wait { Self.tree(tmpdir).contains { $0.hasSuffix(".sqlite") } }, "\(Self.tree(tmpdir))")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        let left = Self.tree(tmpdir)
        #expect(left.contains { $0.contains("daybook-rollup.tmp-\(process.processIdentifier)") }, "\(left)")
        // The next rollup removes it, and its own.
        let next = Process()
        next.executableURL = Daybook.binary
        next.arguments = ["rollup", try scratch.file(line)]
        next.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": tmpdir]) { $1 }
        next.standardOutput = FileHandle.nullDevice
        next.standardError = FileHandle.nullDevice
        try next.run()
        next.waitUntilExit()
        #expect(next.terminationStatus == 0)
        #expect(Self.tree(tmpdir) == ["daybook-\(getuid())"], "\(Self.tree(tmpdir))")
    }

    @Test(.timeLimit(.minutes(2))) func importKilledLeavesNothingTheNextRunDoesNotRemove() throws {
        let tmpdir = scratch.newPath("tmp")
        try FileManager.default.createDirectory(atPath: tmpdir, withIntermediateDirectories: false)
        let outDir = scratch.newPath("out")
        try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: false)
        let out = outDir + "/ana.jsonl"
        let xml = scratch.newPath("export") + ".xml"
        #expect(try Daybook.run(["import", "generate", "--megabytes", "1", "--days", "2", "--out", xml]).status == 0)
        let head = Data(try Data(contentsOf: URL(fileURLWithPath: xml)).prefix(200_000))
        // --out stages beside OUT; --brokers under TMPDIR (nothing connects before the export is read).
        let runs: [([String], String)] = [
            (["--out", out], outDir),
            (["--brokers", "127.0.0.1:1"], tmpdir),
        ]
        var pids: [pid_t] = []
        for (destination, watched) in runs {
            let (process, input) = try start(["import", "apple-health", "-", "--user", "ana", "--zone", "Europe/Berlin"] + destination, tmpdir: tmpdir)
            input.fileHandleForWriting.write(head)
            #expect(Self.wait { Self.tree(watched).contains { $0.contains(".tmp-\(process.processIdentifier)") } }, "\(destination): \(Self.tree(watched))")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? input.fileHandleForWriting.close()
            pids.append(process.processIdentifier)
        }
        #expect(Self.tree(outDir) == ["ana.jsonl.tmp-\(pids[0])"], "\(Self.tree(outDir))")
        let mine = "daybook-\(getuid())", staged = "daybook-\(getuid())/daybook-import.tmp-\(pids[1])"
        #expect(Self.tree(tmpdir) == [mine, staged, staged + "/events.jsonl"], "\(Self.tree(tmpdir))")
        // The next import to the same --out, and the next one through Kafka, remove them.
        let again = try Daybook.run(["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin", "--out", out])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Self.tree(outDir) == ["ana.jsonl"], "\(Self.tree(outDir))")
        let next = Process()
        next.executableURL = Daybook.binary
        next.arguments = ["import", "apple-health", xml, "--user", "ana", "--zone", "Europe/Berlin", "--brokers", "127.0.0.1:1", "--connect-timeout", "1"]
        next.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": tmpdir]) { $1 }
        next.standardOutput = FileHandle.nullDevice
        next.standardError = FileHandle.nullDevice
        try next.run()
        next.waitUntilExit()
        #expect(next.terminationStatus == 69)
        #expect(Self.tree(tmpdir) == ["daybook-\(getuid())"], "\(Self.tree(tmpdir))")
    }

    // MARK: Messages

    static func checkIn(user: String, source: String, at: String) -> String {
        #"{"type":"source-checked-in","user":"# + user + #","source":""# + source + #"","at":""# + at + #"","metrics":["steps"]}"#
    }

    @Test func staleSaysWhatWasWrongAndCutsLongIdsInTables() throws {
        let now = Date()
        func iso(_ offset: TimeInterval) -> String {
            let f = ISO8601DateFormatter()
            return f.string(from: now.addingTimeInterval(offset))
        }
        let long = String(repeating: "u", count: 5_000)
        let config = try scratch.file(#"{"freshness":{"default":{"threshold":"1h"},"canaries":[{"user":"canary","source":"phone"}]}}"#, suffix: ".json")
        let lines = [Self.checkIn(user: #""canary""#, source: "phone", at: iso(-3 * 3600)),
                     Self.checkIn(user: "\"\(long)\"", source: "phone", at: iso(-2 * 3600))].joined(separator: "\n") + "\n"
        let (broker, data) = try project(lines)
        defer { _ = broker.stop() }

        // --now before the check-ins: said, not "DETECTOR BROKEN".
        let early = iso(-5 * 3600)
        let before = try Daybook.run(["stale", "--data", data, "--config", config, "--now", early])
        #expect(before.status == 64, "\(before.stderr)")
        #expect(before.stderr.contains("--now \(early) is before the data: "), "\(before.stderr)")
        #expect(before.stderr.contains("/phone checked in at "), "\(before.stderr)")
        #expect(!before.stderr.contains("DETECTOR BROKEN"), "\(before.stderr)")
        #expect(before.stdout.isEmpty)

        // A page fraction for a source nobody configured and no pair has: 78.
        let typo = try Daybook.run(["stale", "--data", data, "--config", config, "--page-fraction", "phnoe=0.5"])
        #expect(typo.status == 78, "\(typo.stderr)")
        #expect(typo.stderr.contains("--page-fraction names source 'phnoe', which freshness.sources does not list and no pair has (a typo?); name one of phone"), "\(typo.stderr)")
        #expect(typo.stdout.isEmpty)

        // Long ids are cut in the table, whole in json.
        let table = try Daybook.run(["stale", "--data", data, "--config", config, "--all"])
        #expect(table.status == 1, "\(table.stderr)")
        let widest = table.stdout.split(separator: "\n").map(\.count).max() ?? 0
        #expect(widest < 200, "\(widest)")
        #expect(table.stdout.contains(String(repeating: "u", count: 47) + "…"), "\(table.stdout)")
        let json = try Daybook.run(["stale", "--data", data, "--config", config, "--format", "json"])
        #expect(json.stdout.contains("\"user\":\"\(long)\""))
    }

    @Test func aDamagedZipSaysWhatUnzipSaid() throws {
        let xml = scratch.newPath("export") + ".xml"
        #expect(try Daybook.run(["import", "generate", "--megabytes", "1", "--days", "2", "--out", xml]).status == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: xml))
        let zip = scratch.newPath("export") + ".zip"
        let good = ImportCommandTests.storedZip(entries: [("apple_health_export/export.xml", bytes)])
        // Damage the stored XML early (the CRC is of the good bytes): the XML breaks while
        // unzip still has most of the entry to write, and only unzip knows why.
        let start = try #require(good.range(of: bytes.prefix(3_000))?.lowerBound)
        var damaged = good
        damaged.replaceSubrange((start + 4_000)..<(start + 4_016), with: Data(repeating: 0x3C, count: 16))
        try damaged.write(to: URL(fileURLWithPath: zip))
        let out = scratch.newPath("out") + ".jsonl"
        let r = try Daybook.run(["import", "apple-health", zip, "--user", "ana", "--zone", "Europe/Berlin", "--out", out])
        #expect(r.status == 66, "\(r.stderr)")
        #expect(r.stderr.contains("unzip failed (exit status 2): apple_health_export/export.xml"), "\(r.stderr)")
        #expect(r.stderr.contains("bad CRC"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
