import DaybookLog
import Foundation
import Testing

@Suite struct LogRecordTests {
    /// The line the stderr handler writes starts with the UTC time, as documented.
    @Test func lineStartsWithAnRFC3339Timestamp() {
        let record = LogRecord(level: .warning, label: "kafka", message: "broker down", metadata: ["partition": "3", "offset": "17"],
                               timestamp: Date(timeIntervalSince1970: 1_796_022_000.25))
        #expect(record.line == "2026-11-30T07:00:00.250Z warning kafka: broker down offset=17 partition=3")
    }

    @Test func theLoggerStampsEachRecord() {
        let memory = InMemoryLogHandler()
        let before = Date()
        Logger(label: "t", handler: memory).info("x")
        let stamped = memory.records.first?.timestamp ?? .distantPast
        #expect(stamped >= before.addingTimeInterval(-1) && stamped <= Date())
    }
}
