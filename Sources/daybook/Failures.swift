import DaybookConfiguration
import DaybookCore
import DaybookFiles
import DaybookImportFiles
import DaybookKafka
import DaybookMetrics
import DaybookPipeline
import DaybookStore
import Foundation

extension ExitCode {
    /// The exit code for a shard that cannot be used, by what would fix it.
    static func of(_ kind: Shard.ShardError.Kind?) -> Int32 {
        switch kind {
        case .locked?: return tempFail
        case .priorityMismatch?, .catalogueMismatch?: return config
        case .notAShard?, .splitUser?: return dataError
        case .missingDirectory?: return noInput
        case .storage?, nil: return ioError
        }
    }
}

extension CLIError {
    /// The exit code and message for an error a command did not turn into a `CLIError`
    /// itself. Known failures get their documented code; a Foundation error is told as the
    /// file and the system's reason; anything else is a bug (70).
    init(_ error: any Error) {
        switch error {
        case let e as CLIError:
            self = e
        case var e as ProjectorError:
            // The library's words for a refusal, replaced by the one naming the options.
            if let detail = e.detail { e.message = detail.commandLineMessage }
            switch e.kind {
            case .storage: self.init(code: ExitCode.ioError, message: e.message)
            case .kafka:
                // A property librdkafka refuses is the configuration's fault, whichever command met it.
                let code = e.kafkaError?.kind == .configuration ? ExitCode.config : ExitCode.unavailable
                self.init(code: code, message: e.message + (e.kafkaError.map(CLIError.hint(for:)) ?? ""))
            case .shard:
                // A detail's command-line message already says what to run: the hint would say it again.
                let hint = e.detail == nil ? CLIError.hint(for: e.shardKind) : ""
                self.init(code: ExitCode.of(e.shardKind), message: e.shardDetail?.commandLineMessage ?? e.message + hint)
            case .logMismatch: self.init(code: ExitCode.logMismatch, message: e.message)
            case .badRequest: self.init(code: ExitCode.usage, message: e.message)
            case .interrupted: self.init(code: ExitCode.tempFail, message: e.message)
            }
        case let e as Shard.ShardError:
            self.init(code: ExitCode.of(e.kind), message: e.detail?.commandLineMessage ?? e.message + CLIError.hint(for: e.kind))
        case let e as DatabaseError:
            self.init(code: e.isCorrupt ? ExitCode.dataError : ExitCode.ioError, message: "\(e)")
        case let e as KafkaError:
            self.init(code: e.kind == .configuration ? ExitCode.config : ExitCode.unavailable, message: "\(e)" + CLIError.hint(for: e))
        case let e as ConfigurationError:
            self.init(code: ExitCode.config, message: "\(e)")
        case let e as FileWriteError:
            self.init(code: ExitCode.ioError, message: "\(e)")
        case let e as ScratchDirectoryError:
            self.init(code: ExitCode.ioError, message: "\(e)")
        case let e as LineSinkError:
            self.init(code: ExitCode.ioError, message: "\(e)")
        case let e as InputFileError:
            self.init(code: ExitCode.noInput, message: "\(e)")
        case let e as ConfigurationFileError:
            // A file that is not there or cannot be read is a missing input (66); one that
            // says something wrong is a configuration error (78).
            self.init(code: e.isUnreadable ? ExitCode.noInput : ExitCode.config, message: "\(e)")
        case let e where SystemError.isFoundationError(e):
            self.init(code: ExitCode.ioError, message: SystemError.describe(e))
        default:
            self.init(code: ExitCode.software, message: "internal error (a bug; please report it): \(error)")
        }
    }
}

extension CLIError {
    /// What to run or which option to give for a Kafka error the library describes in its
    /// own terms ("" when there is nothing to add).
    static func hint(for error: KafkaError) -> String {
        if error.errorCode == .unknownTopicOrPartition { return "; create it with 'daybook topics'" }
        if error.property == "group.id" { return " (--group G)" }
        return ""
    }

    /// The options that fix a shard the libraries refused ("" when there is nothing to add).
    static func hint(for kind: Shard.ShardError.Kind?) -> String {
        guard kind == .priorityMismatch else { return "" }
        return " Put the order it was built with in --config, or rebuild every partition under yours: daybook rebuild --data DIR --config FILE (it builds beside the live shards and swaps; leave out --partition)."
    }

    /// A `--metrics-file` that cannot work, refused at start (`project`, `stale`): 66 when its
    /// directory is missing or not a directory, 64 when it names a directory, 74 when the
    /// first write fails (permissions, read-only, full).
    static func metricsFile(_ error: MetricsFileError) -> CLIError {
        switch error.kind {
        case .missingDirectory, .notADirectory: CLIError(code: ExitCode.noInput, message: "--metrics-file \(error)")
        case .isDirectory: CLIError.usage("--metrics-file \(error)")
        case .system: CLIError(code: ExitCode.ioError, message: "--metrics-file: \(error)")
        }
    }
}

/// Foundation's file errors told the way the system tells them: the path and strerror's
/// reason, never "The operation could not be completed. (NSCocoaErrorDomain error 256.)".
enum SystemError {
    static func isFoundationError(_ error: any Error) -> Bool {
        if error is CocoaError { return true }
        let ns = error as NSError
        return ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain
    }

    /// `path: reason`, with the path from the error when it carries one.
    static func describe(_ error: any Error, path: String? = nil) -> String {
        let ns = error as NSError
        let file = (ns.userInfo[NSFilePathErrorKey] as? String) ?? (ns.userInfo[NSURLErrorKey] as? URL)?.path ?? path
        return (file.map { $0 + ": " } ?? "") + reason(error)
    }

    /// The system's reason ("Not a directory", "Permission denied") for a Foundation error.
    static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return strerror(Int32(ns.code)) }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? any Error {
            if let posix = underlying as? POSIXError { return strerror(posix.code.rawValue) }
            let u = underlying as NSError
            if u.domain == NSPOSIXErrorDomain { return strerror(Int32(u.code)) }
        }
        switch CocoaError.Code(rawValue: ns.code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return strerror(ENOENT)
        case .fileReadNoPermission, .fileWriteNoPermission: return strerror(EACCES)
        case .fileWriteOutOfSpace: return strerror(ENOSPC)
        case .fileWriteVolumeReadOnly: return strerror(EROFS)
        case .fileWriteFileExists: return strerror(EEXIST)
        case .fileReadTooLarge: return strerror(EFBIG)
        case .fileReadInapplicableStringEncoding, .fileWriteInapplicableStringEncoding: return "not valid UTF-8 text"
        case .fileReadCorruptFile: return "the file is damaged"
        default: return ns.code == CocoaError.Code.fileReadUnknown.rawValue ? "cannot be read" : "cannot be read or written"
        }
    }

    static func strerror(_ code: Int32) -> String { String(cString: Glibc.strerror(code)) }
}
