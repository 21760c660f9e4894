import DaybookFiles
import DaybookImportFiles
import DaybookTestSupport
import Foundation
import Testing

/// Where an import's lines go (DaybookImportFiles' ImportOutput), in process: `--out`
/// resolved and checked against the export, a file replaced only when committed, staging
/// removed by discard.
@Suite struct ImportOutputTests {
    let scratch = TemporaryDirectory()

    @Test func anOutThatIsTheExportIsRefusedThroughALinkToo() throws {
        let export = try scratch.file("<HealthData/>", suffix: ".xml")
        let link = scratch.newPath("link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: export)
        for out in [export, link] {
            #expect {
                try ImportDestination.output(out, input: export)
            } throws: { ($0 as? ImportDestinationError).map { $0.kind == .isTheInput && $0.out == out } ?? false }
        }
        let other = scratch.newPath("ana") + ".jsonl"
        #expect(try ImportDestination.output(other, input: export) == .file(other))
        // A link's target is replaced, the link kept.
        #expect(try ImportDestination.output(link) == .file(URL(fileURLWithPath: export).resolvingSymlinksInPath().path))
        #expect(try ImportDestination.output("/dev/null", input: export) == .stream("/dev/null"))
    }

    @Test func aDirectoryIsRefusedAsOutputPathSays() throws {
        #expect {
            try ImportDestination.output(scratch.path, input: "-")
        } throws: { error in
            guard let error = error as? ImportDestinationError, case .path(let path) = error.kind else { return false }
            return path.kind == .directory
        }
    }

    @Test func aFileIsReplacedOnlyWhenCommittedAndDiscardLeavesNothing() throws {
        let out = try scratch.file("old\n")
        let sink = try LineSink.open(.file(out))
        let temporary = try #require(sink.temporaryPath)
        try sink.write("{\"a\":1}")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "old\n")
        try sink.commit(to: out)
        sink.discard()
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "{\"a\":1}\n")
        #expect(!FileManager.default.fileExists(atPath: temporary))

        let abandoned = try LineSink.open(.file(out))
        let left = try #require(abandoned.temporaryPath)
        try abandoned.write("{\"b\":2}")
        abandoned.discard()
        #expect(!FileManager.default.fileExists(atPath: left))
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "{\"a\":1}\n")
    }

    @Test func stagingLivesInAScratchDirectoryThatDiscardRemoves() throws {
        let sink = try LineSink.open(.staging)
        #expect(sink.path.hasSuffix("/events.jsonl") && sink.path.contains("/daybook-\(getuid())/daybook-import.tmp-\(getpid())/"))
        try sink.write("{\"c\":3}")
        try sink.close()
        #expect(try String(contentsOfFile: sink.path, encoding: .utf8) == "{\"c\":3}\n")
        sink.discard()
        #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: sink.path).deletingLastPathComponent().path))
    }
}
