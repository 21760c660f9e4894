import DaybookImport
import DaybookImportFiles
import DaybookTestSupport
import Foundation
import Testing

/// The import loop over real files (DaybookImportFiles), in process: the same lines as the
/// pure importer, an interrupt, damaged XML, and inputs that are not exports.
@Suite struct ImportFilesTests {
    let scratch = TemporaryDirectory()

    func write(_ text: String) throws -> String {
        let path = scratch.newPath("export") + ".xml"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func importer() throws -> AppleHealthImporter {
        try AppleHealthImporter(options: .init(user: "ana", zone: "Europe/Berlin", sourceMap: SourceMap(rules: try FixtureTests.rules.map { try SourceMap.rule($0).get() })))
    }

    @Test func aFileGivesTheSameLinesAsTheImporterInMemory() throws {
        let path = try write(Fixture.xml)
        let input = try ExportInput.open(path)
        defer { input.close() }
        var importer = try importer()
        var lines: [String] = []
        var reports = 0
        let read = try AppleHealthImport.read(input, into: &importer, shouldStop: { false }, progress: { _, _ in reports += 1 }, write: { lines.append($0) })
        #expect(read == Fixture.xml.utf8.count)
        #expect(input.total == read)
        #expect(reports == 1) // one chunk: the fixture is smaller than 1 MiB
        // The fixture's 26 events, as the in-memory import converts them.
        #expect(lines == (try importExport(Fixture.xml, rules: FixtureTests.rules).lines))
        #expect(lines.count == 26 && importer.summary.events == 26)
    }

    @Test func anInterruptStopsBeforeTheFirstChunkAndWritesNothing() throws {
        let input = try ExportInput.open(try write(Fixture.xml))
        defer { input.close() }
        var importer = try importer()
        #expect(throws: AppleHealthImport.Stop.interrupted(bytesRead: 0)) {
            try AppleHealthImport.read(input, into: &importer, shouldStop: { true }, progress: { _, _ in }, write: { line in Issue.record("wrote \(line)") })
        }
    }

    @Test func xmlCutShortIsDamagedAfterTheRecordsBeforeIt() throws {
        let cut = String(Fixture.xml.prefix(Fixture.xml.utf8.count / 2))
        let input = try ExportInput.open(try write(cut))
        defer { input.close() }
        var importer = try importer()
        var lines = 0
        do {
            _ = try AppleHealthImport.read(input, into: &importer, shouldStop: { false }, progress: { _, _ in }, write: { _ in lines += 1 })
            Issue.record("a cut-short export was read to the end")
        } catch AppleHealthImport.Stop.damaged(let error, let bytesRead) {
            #expect(bytesRead == cut.utf8.count)
            #expect(error.message.contains("cut short"), "\(error)")
            #expect(lines == importer.summary.events && lines < 22)
        }
    }

    @Test func whatIsNotAnExportIsNamed() throws {
        let missing = scratch.path + "/nothing.xml"
        #expect(throws: ExportInputError(path: missing, kind: .missing)) { try ExportInput.open(missing) }
        #expect(throws: ExportInputError(path: scratch.path, kind: .isDirectory)) { try ExportInput.open(scratch.path) }
    }
}
