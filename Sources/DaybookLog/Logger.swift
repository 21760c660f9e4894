import Foundation
import Synchronization

/// A small value-type logger: a label, a minimum level, metadata, and a handler.
///
/// Messages are `@autoclosure`s, built only when the level is enabled. There is no global
/// bootstrap: whoever creates a component hands it a logger.
public struct Logger: Sendable {
    public enum Level: Int, Comparable, Sendable, CustomStringConvertible {
        case debug, info, notice, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["debug", "info", "notice", "warning", "error"][rawValue] }
    }

    public var label: String
    public var level: Level
    public var metadata: [String: String]
    public let handler: any LogHandler

    public init(label: String, level: Level = .info, metadata: [String: String] = [:], handler: any LogHandler = StderrLogHandler()) {
        self.label = label
        self.level = level
        self.metadata = metadata
        self.handler = handler
    }

    /// A logger that drops everything.
    public static let silent = Logger(label: "silent", level: .error, handler: NullLogHandler())

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        guard level >= self.level else { return }
        var all = self.metadata
        for (k, v) in metadata() { all[k] = v }
        handler.log(LogRecord(level: level, label: label, message: message(), metadata: all, timestamp: Date()))
    }

    public func debug(_ m: @autoclosure () -> String, _ md: @autoclosure () -> [String: String] = [:]) { log(.debug, m(), md()) }
    public func info(_ m: @autoclosure () -> String, _ md: @autoclosure () -> [String: String] = [:]) { log(.info, m(), md()) }
    public func notice(_ m: @autoclosure () -> String, _ md: @autoclosure () -> [String: String] = [:]) { log(.notice, m(), md()) }
    public func warning(_ m: @autoclosure () -> String, _ md: @autoclosure () -> [String: String] = [:]) { log(.warning, m(), md()) }
    public func error(_ m: @autoclosure () -> String, _ md: @autoclosure () -> [String: String] = [:]) { log(.error, m(), md()) }

    /// A copy with one more metadata entry.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }
}

/// One log event.
public struct LogRecord: Sendable {
    public var level: Logger.Level
    public var label: String
    public var message: String
    public var metadata: [String: String]
    /// When the event was logged.
    public var timestamp: Date

    public init(level: Logger.Level, label: String, message: String, metadata: [String: String] = [:], timestamp: Date = Date()) {
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
        self.timestamp = timestamp
    }

    /// `2026-11-30T07:00:00.250Z warning kafka: message key=value` (UTC, milliseconds;
    /// metadata sorted by key).
    public var line: String {
        let md = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(LogRecord.format(timestamp)) \(level) \(label): \(message)" + (md.isEmpty ? "" : " " + md)
    }

    /// RFC 3339 in UTC with milliseconds, without Foundation's date formatters (not Sendable).
    static func format(_ date: Date) -> String {
        let t = date.timeIntervalSince1970
        let whole = t.rounded(.down)
        var seconds = time_t(whole)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let ms = min(999, Int(((t - whole) * 1_000).rounded()))
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), ms)
    }
}

/// Where log records go.
public protocol LogHandler: Sendable {
    func log(_ record: LogRecord)
}

/// Writes one line per record to standard error, as `LogRecord.line` (timestamp first).
public struct StderrLogHandler: LogHandler {
    public init() {}
    public func log(_ record: LogRecord) {
        FileHandle.standardError.write(Data((record.line + "\n").utf8))
    }
}

/// Drops every record.
public struct NullLogHandler: LogHandler {
    public init() {}
    public func log(_ record: LogRecord) {}
}

/// Keeps records in memory, for tests that assert what was logged.
public final class InMemoryLogHandler: LogHandler {
    private let storage = Mutex<[LogRecord]>([])
    public init() {}
    public func log(_ record: LogRecord) { storage.withLock { $0.append(record) } }
    public var records: [LogRecord] { storage.withLock { $0 } }
}
