import DaybookFiles
import DaybookTestSupport
import Foundation
import Testing

@Suite struct AtomicFileTests {
    let scratch = TemporaryDirectory()

    @Test func replacesTheWholeFileAndLeavesNoTemporary() throws {
        let path = scratch.path + "/out.txt"
        try AtomicFile.write(Array("first version, longer than the second\n".utf8), to: path)
        try AtomicFile.write(Array("second\n".utf8), to: path)
        // The second write replaced the file; it did not overwrite the first in place
        // (which would leave "second\nversion, longer…").
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["out.txt"])
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        // 0644 less the umask: readable by the owner, never executable.
        #expect(mode.map { $0 & 0o400 != 0 && $0 & 0o111 == 0 } == true)
    }

    @Test func aFailedRenameKeepsTheOldFileAndRemovesTheTemporary() throws {
        // A directory in the destination's place: the rename fails after everything was
        // written and flushed.
        let path = scratch.path + "/taken"
        try FileManager.default.createDirectory(atPath: path + "/inside", withIntermediateDirectories: true)
        do {
            try AtomicFile.write(Array("x".utf8), to: path)
            Issue.record("renaming over a non-empty directory succeeded")
        } catch {
            #expect(error.step == .rename)
            #expect(error.temporaryPath == AtomicFile.temporaryPath(for: path))
            #expect(error.description.hasPrefix("\(path): renaming \(AtomicFile.temporaryPath(for: path)) to \(path) failed: "))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["taken"])
    }

    @Test func aMissingDirectoryFailsAtCreate() throws {
        let path = scratch.path + "/no-such-directory/out.txt"
        do {
            try AtomicFile.write(Array("x".utf8), to: path)
            Issue.record("wrote into a missing directory")
        } catch {
            #expect(error.step == .create)
            #expect(error.errno == ENOENT)
        }
    }
}

@Suite struct CheckedWriterTests {
    @Test func aFullDeviceIsAnErrorNotASilentlyShortOutput() throws {
        let fd = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var writer = CheckedWriter(fd: fd, name: "/dev/full")
        // Below the buffer's capacity nothing is written yet: the line is accepted…
        try writer.line("a total")
        // …and the flush reports the lost bytes.
        do {
            try writer.flush()
            Issue.record("a write to /dev/full succeeded")
        } catch {
            #expect(error.errno == ENOSPC)
            #expect(error.description == "/dev/full: writing failed: No space left on device")
        }
    }

    @Test func aClosedPipeIsAnError() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        // The test process must not die of SIGPIPE; the error is what is checked.
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        var writer = CheckedWriter(fd: fds[1], name: "pipe")
        try writer.line("x")
        #expect(throws: FileWriteError(path: "pipe", step: .write, errno: EPIPE)) { try writer.flush() }
    }

    @Test func fullBuffersGoOutAsTheyFill() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var writer = CheckedWriter(fd: fds[1], name: "pipe")
        // 65,536 bytes of lines (8,192 × "1234567" + LF) reach the capacity: written at once.
        for _ in 0..<8_192 { try writer.line("1234567") }
        var available: Int32 = 0
        _ = ioctl(fds[0], UInt(FIONREAD), &available)
        #expect(available == 65_536)
        close(fds[1])
    }
}
