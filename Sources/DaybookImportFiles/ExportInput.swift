import DaybookFiles
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where an Apple Health export's bytes come from: a file, standard input (`-`), or an
/// export.zip, whose export.xml `unzip -p` (Debian's unzip, a child process) streams through
/// a pipe with no temporary copy.
public final class ExportInput {
    /// What is read, for messages: the path, "standard input", or "PATH (ENTRY)" for a zip.
    public let name: String
    /// Bytes the XML has in all, when known (for progress).
    public let total: Int?
    private let fd: Int32
    private let ownsDescriptor: Bool
    private let unzip: Process?
    private let unzipErrors: Pipe?

    private init(name: String, total: Int?, fd: Int32, ownsDescriptor: Bool, unzip: Process? = nil, unzipErrors: Pipe? = nil) {
        self.name = name
        self.total = total
        self.fd = fd
        self.ownsDescriptor = ownsDescriptor
        self.unzip = unzip
        self.unzipErrors = unzipErrors
    }

    /// Opens `path` (`-`: standard input); a file that starts as a zip archive is read
    /// through unzip.
    public static func open(_ path: String) throws(ExportInputError) -> ExportInput {
        if path == "-" { return ExportInput(name: "standard input", total: nil, fd: 0, ownsDescriptor: false) }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw ExportInputError(path: path, kind: code == ENOENT ? .missing : .unreadable(reason: strerror(code)))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ExportInputError(path: path, kind: .unreadable(reason: strerror(code)))
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            Glibc.close(fd)
            throw ExportInputError(path: path, kind: .isDirectory)
        }
        var magic = [UInt8](repeating: 0, count: 4)
        let isRegular = info.st_mode & S_IFMT == S_IFREG
        if isRegular, pread(fd, &magic, 4, 0) == 4, magic == [0x50, 0x4B, 0x03, 0x04] {
            Glibc.close(fd)
            return try zip(path)
        }
        return ExportInput(name: path, total: isRegular ? Int(info.st_size) : nil, fd: fd, ownsDescriptor: true)
    }

    /// Reads into `buffer`; 0 at the end.
    public func read(into buffer: inout [UInt8]) throws(ExportInputError) -> Int {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n >= 0 { return n }
            guard errno == EINTR else { throw ExportInputError(path: name, kind: .unreadable(reason: ExportInput.strerror(errno))) }
        }
    }

    /// Waits for unzip, if any, and fails if it did, with unzip's own message. Unzip still
    /// running (the XML ended early, e.g. damaged bytes it inflated) is let run to the end
    /// of the entry, its output discarded: it says what was wrong (a bad CRC) only there,
    /// and stopping it would leave only the exit status of a signal. When `stopping` says
    /// so (an interrupt), unzip is stopped instead.
    public func finish(stopping: () -> Bool = { false }) throws(ExportInputError) {
        guard let unzip else { return }
        var discard = [UInt8](repeating: 0, count: 1 << 16)
        while unzip.isRunning, !stopping() {
            let n = discard.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 || (n < 0 && errno != EINTR) { break }
        }
        if unzip.isRunning, stopping() { unzip.terminate() }
        unzip.waitUntilExit()
        guard unzip.terminationReason == .exit, unzip.terminationStatus == 0 else {
            let text = String(decoding: unzipErrors?.fileHandleForReading.readDataToEndOfFile() ?? Data(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let how = unzip.terminationReason == .exit ? "exit status \(unzip.terminationStatus)" : "signal \(unzip.terminationStatus)"
            throw ExportInputError(path: name, kind: .unzipFailed(how: how, reason: text))
        }
    }

    public func close() {
        if let unzip, unzip.isRunning { unzip.terminate(); unzip.waitUntilExit() }
        if ownsDescriptor { Glibc.close(fd) }
    }

    /// `unzip -p` of the archive's export.xml (not export_cda.xml), streamed through a pipe.
    private static func zip(_ path: String) throws(ExportInputError) -> ExportInput {
        guard let unzip = ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map({ "\($0)/unzip" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ExportInputError(path: path, kind: .unzipMissing)
        }
        let listing: (status: Int32, output: String, errors: String)
        do { listing = try run(unzip, ["-l", path]) } catch {
            throw ExportInputError(path: path, kind: .unzipCannotRun(reason: strerror(InputFileError.errno(of: error))))
        }
        guard listing.status == 0 else {
            throw ExportInputError(path: path, kind: .notAZip(reason: "unzip -l: " + listing.errors.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        // "  Length      Date    Time    Name" rows: length, date, time, then the name (spaces allowed).
        var entries: [(name: String, length: Int)] = []
        for row in listing.output.split(separator: "\n") {
            let parts = row.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            guard parts.count == 4, let length = Int(parts[0]), parts[1].contains("-") else { continue }
            entries.append((String(parts[3].drop { $0 == " " }), length))
        }
        let candidates = entries.filter { ($0.name.split(separator: "/").last ?? "").lowercased() == "export.xml" }
        guard let entry = candidates.min(by: { $0.name.count < $1.name.count }) else {
            throw ExportInputError(path: path, kind: .noExportXML(xmlEntries: entries.map(\.name).filter { $0.lowercased().hasSuffix(".xml") }))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: unzip)
        // unzip reads entry names as wildcards: bracket the wildcard characters.
        let pattern = entry.name.map { "*?[".contains($0) ? "[\($0)]" : String($0) }.joined()
        process.arguments = ["-p", path, pattern]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw ExportInputError(path: path, kind: .unzipCannotRun(reason: strerror(InputFileError.errno(of: error))))
        }
        return ExportInput(name: "\(path) (\(entry.name))", total: entry.length, fd: output.fileHandleForReading.fileDescriptor,
                           ownsDescriptor: false, unzip: process, unzipErrors: errors)
    }

    private static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    static func strerror(_ code: Int32) -> String { String(cString: Glibc.strerror(code)) }
}

/// An export that cannot be read: the path and what is wrong with it.
public struct ExportInputError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case missing
        case unreadable(reason: String)
        case isDirectory
        /// A .zip, and unzip is not on PATH.
        case unzipMissing
        /// unzip could not be started.
        case unzipCannotRun(reason: String)
        /// unzip cannot list it.
        case notAZip(reason: String)
        /// The archive has no export.xml; `xmlEntries` are the XML entries it has.
        case noExportXML(xmlEntries: [String])
        /// unzip failed while inflating export.xml (`how`: "exit status 2"); `reason` is
        /// what it printed.
        case unzipFailed(how: String, reason: String)
    }

    public var path: String
    public var kind: Kind

    public init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
    }

    public var description: String {
        switch kind {
        case .missing: "\(path): no such file"
        case .unreadable(let reason): "\(path): cannot be read: \(reason)"
        case .isDirectory: "\(path): cannot be read: \(ExportInput.strerror(EISDIR)) (give export.xml or export.zip)"
        case .unzipMissing: "\(path) is a .zip and unzip is not installed: apt-get install unzip (scripts/setup does), or unzip its export.xml yourself and import that"
        case .unzipCannotRun(let reason): "\(path): cannot run unzip: \(reason); unzip its export.xml yourself and import that"
        case .notAZip(let reason): "\(path): not a readable zip archive (\(reason))"
        case .noExportXML(let xml):
            "\(path) holds no export.xml (XML entries: \(xml.isEmpty ? "none" : xml.prefix(5).joined(separator: ", "))); extract the export's XML yourself and import that"
        case .unzipFailed(let how, let reason):
            "\(path): unzip failed (\(how)): \(reason.isEmpty ? "it printed no reason" : reason); the archive is damaged: export it again from the Health app"
        }
    }
}
