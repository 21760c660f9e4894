import DaybookImport

/// The import loop: an export's bytes, a chunk at a time, through `ExportScanner` and an
/// `AppleHealthImporter`, each event's JSON line handed to `write` in export order. Memory
/// does not grow with the file. Where the lines go (standard output, a file renamed into
/// place, a staging file to publish) is the caller's.
public enum AppleHealthImport {
    /// Why reading stopped before the end.
    public enum Stop: Error, Sendable, Equatable {
        /// `shouldStop` said so (an interrupt) after `bytesRead` bytes; unzip, if any, is
        /// stopped too.
        case interrupted(bytesRead: Int)
        /// The XML is damaged or cut short (unzip's own failure, an `ExportInputError`, is
        /// thrown instead when there is one: it says more).
        case damaged(ExportSyntaxError, bytesRead: Int)
    }

    /// Reads `input` to its end into `importer`, whose `summary` counts every record.
    /// A record without a zone (and no default zone) stops the lines: nothing after it
    /// is written, though the rest is still read and counted.
    ///
    /// - Parameters:
    ///   - shouldStop: asked before each chunk and on a failure (true: an interrupt).
    ///   - progress: after each chunk, the bytes read so far and the summary.
    ///   - write: each event's JSON line.
    /// - Returns: the bytes read.
    /// - Throws: `Stop`; `ExportInputError` (unreadable, unzip failed); what `write` throws.
    public static func read(_ input: ExportInput, into importer: inout AppleHealthImporter, shouldStop: () -> Bool,
                            progress: (Int, ImportSummary) -> Void, write: (String) throws -> Void) throws -> Int {
        var scanner = ExportScanner()
        var stopped = false
        var bytesRead = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        func handle(_ record: ExportRecord) throws {
            switch importer.convert(record) {
            case .event(let line, _): if !stopped { try write(line) }
            case .missingZone: stopped = true
            case .skipped: break
            }
        }
        do {
            while true {
                if shouldStop() { throw Stop.interrupted(bytesRead: bytesRead) }
                let n = try input.read(into: &chunk)
                if n == 0 { break }
                bytesRead += n
                try chunk.withUnsafeBytes { try scanner.feed(UnsafeRawBufferPointer(rebasing: $0[..<n]), handle) }
                progress(bytesRead, importer.summary)
            }
            // An interrupt reaches unzip too, which then ends the XML early: interrupted, not damaged.
            if shouldStop() { throw Stop.interrupted(bytesRead: bytesRead) }
            try scanner.finish(handle)
            try input.finish(stopping: shouldStop)
        } catch let stop as Stop {
            throw stop
        } catch where shouldStop() {
            throw Stop.interrupted(bytesRead: bytesRead)
        } catch let error as ExportSyntaxError {
            try input.finish(stopping: shouldStop) // unzip's own failure says more than the XML it cut short
            throw Stop.damaged(error, bytesRead: bytesRead)
        }
        return bytesRead
    }
}
