import DaybookFiles
import DaybookTestSupport
import Foundation
import Testing

/// The one line splitter, over a mapped file and over a stream: the same numbered lines
/// from the same bytes.
@Suite struct LineInputTests {
    let scratch = TemporaryDirectory()

    /// A byte order mark, a CRLF line, a blank line and one of spaces and a tab (skipped but
    /// numbered), a 12-byte line over the 10-byte limit, and a last line without a newline.
    static let text = "\u{FEFF}one\r\n\n  \t\ntwo\n123456789012\nthree"
    static let expected: [(Int, String?)] = [(1, "one"), (4, "two"), (5, nil), (6, "three")]

    func lines(_ input: LineInput, batchLines: Int = 32_768) throws -> [(Int, String?)] {
        var out: [(Int, String?)] = []
        try LineInput.forEachBatch(input, maximumLineBytes: 10, batchLines: batchLines) { batch in
            for line in batch { out.append((line.number, line.bytes.map { String(decoding: $0, as: UTF8.self) })) }
        }
        return out
    }

    func same(_ a: [(Int, String?)], _ b: [(Int, String?)]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    @Test func aMappedFileAndAStreamGiveTheSameLines() throws {
        let path = scratch.path + "/lines.txt"
        try Data(Self.text.utf8).write(to: URL(fileURLWithPath: path))
        guard case .bytes = try LineInput.open(path) else { Issue.record("a regular file was not mapped"); return }
        #expect(same(try lines(try LineInput.open(path)), Self.expected))
        // Batches of one line: the batch boundaries change nothing.
        #expect(same(try lines(try LineInput.open(path), batchLines: 1), Self.expected))
        // Not mapped: streamed through the chunked reader.
        guard case .stream = try LineInput.open(path, mapping: false) else { Issue.record("mapping: false still mapped"); return }
        #expect(same(try lines(try LineInput.open(path, mapping: false)), Self.expected))
        // A pipe, written and closed before it is read.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let bytes = Array(Self.text.utf8)
        #expect(write(fds[1], bytes, bytes.count) == bytes.count)
        close(fds[1])
        #expect(same(try lines(.stream(fd: fds[0], name: "pipe", close: true)), Self.expected))
    }

    @Test func whatCannotBeReadIsNamedWithTheSystemsReason() throws {
        let missing = scratch.path + "/nothing.txt"
        #expect(throws: InputFileError(path: missing, errno: ENOENT)) { try LineInput.open(missing) }
        #expect(InputFileError(path: missing, errno: ENOENT).description == "\(missing): no such file")
        #expect(throws: InputFileError(path: scratch.path, errno: EISDIR)) { try LineInput.open(scratch.path) }
        #expect(InputFileError(path: scratch.path, errno: EISDIR).description == "\(scratch.path): cannot be read: Is a directory")
        #expect(throws: InputFileError(path: missing, errno: ENOENT)) { try LineInput.read(missing) }
    }
}
