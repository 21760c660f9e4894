import DaybookTestSupport
import Foundation
import Testing

/// A command whose output could not be written did not do its job: it exits 74 (EX_IOERR)
/// and says why, whether standard output is a full device or a pipe nobody reads.
@Suite struct OutputFailureTests {
    let scratch = TemporaryDirectory()

    enum Sink { case devFull, closedPipe }

    /// Runs the binary with standard output on `sink`; returns its status and stderr.
    func run(_ arguments: [String], into sink: Sink) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = Daybook.binary
        process.arguments = arguments
        process.currentDirectoryURL = Daybook.root
        let err = Pipe()
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        switch sink {
        case .devFull:
            let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
            process.standardOutput = full
            try process.run()
            try full.close()
        case .closedPipe:
            let out = Pipe()
            // Nobody reads: the first write meets EPIPE.
            try out.fileHandleForReading.close()
            process.standardOutput = out
            try process.run()
            try out.fileHandleForWriting.close()
        }
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: e, as: UTF8.self))
    }

    @Test(arguments: [Sink.devFull, .closedPipe])
    func aLostResultExits74(_ sink: Sink) throws {
        let reason = sink == .devFull ? "No space left on device" : "Broken pipe"
        let events = try scratch.file(RollupCommandTests.workedExample)
        let rollup = try run(["rollup", events], into: sink)
        #expect(rollup.status == 74, "\(rollup.stderr)")
        #expect(rollup.stderr.contains("daybook rollup: standard output: writing failed: \(reason)"), "\(rollup.stderr)")

        let data = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let totals = try run(["totals", "--data", data], into: sink) // "no data", lost
        #expect(totals.status == 74, "\(totals.stderr)")
        #expect(totals.stderr.contains("daybook totals: standard output: writing failed: \(reason)"), "\(totals.stderr)")

        let explain = try run(["explain", "--help"], into: sink)
        #expect(explain.status == 74, "\(explain.stderr)")
        #expect(explain.stderr.contains("standard output: writing failed: \(reason)"), "\(explain.stderr)")
        let version = try run(["--version"], into: sink)
        #expect(version.status == 74, "\(version.stderr)")
    }

    @Test func theSameCommandOnAWorkingOutputExits0() throws {
        // The control: what fails above succeeds when the output can be written.
        let r = try Daybook.run(["rollup", try scratch.file(RollupCommandTests.workedExample)])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix(#""metric":"steps","day":"2024-03-02","value":7050}"# + "\n"))
    }
}
