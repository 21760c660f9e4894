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
        handler.log(LogRecord(level: level, label: label, message: message(), metadata: all))
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

    /// `2026-11-30T07:00:00Z warning kafka: message key=value`
    public var line: String {
        let md = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(level) \(label): \(message)" + (md.isEmpty ? "" : " " + md)
    }
}

/// Where log records go.
public protocol LogHandler: Sendable {
    func log(_ record: LogRecord)
}

/// Writes one line per record to standard error.
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
