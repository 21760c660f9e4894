import DaybookLog
import DaybookMetrics
@testable import DaybookPipeline
import DaybookTestSupport
import Foundation
import Testing

/// The projector's metrics file as a library type: checked and first written on creation
/// (typed errors, no command-line words), rewritten when its interval has passed, and warned
/// about under the name its caller gives.
@Suite struct ProjectorMetricsTests {
    let scratch = TemporaryDirectory()

    @Test func itIsWrittenAtOnceAndWarnsUnderTheCallersName() throws {
        let path = scratch.path + "/daybook.txt"
        let records = InMemoryLogHandler()
        var metrics = try ProjectorMetrics(path: path, topic: "health-samples", logger: Logger(label: "t", level: .info, handler: records),
                                           name: "the file \(path)")
        let first = try String(contentsOfFile: path, encoding: .utf8)
        #expect(first.contains(#"daybook_projector_up{topic="health-samples"} 1"#))
        #expect(first.contains(#"daybook_events_applied_total{topic="health-samples"} 0"#))
        // Not *.prom: node_exporter would not read it, and the warning names it as asked.
        #expect(records.records.map(\.message).contains { $0.hasPrefix("the file \(path): ") && $0.contains("*.prom") })
        var statistics = ProjectorStatistics()
        statistics.applied = 7
        metrics.finish(statistics)
        let last = try String(contentsOfFile: path, encoding: .utf8)
        #expect(last.contains(#"daybook_projector_up{topic="health-samples"} 0"#))
        #expect(last.contains(#"daybook_events_applied_total{topic="health-samples"} 7"#))
    }

    @Test func aDirectoryOrAMissingOneIsATypedError() {
        let logger = Logger(label: "t", level: .error, handler: InMemoryLogHandler())
        #expect(throws: MetricsFileError.self) { try ProjectorMetrics(path: scratch.path, topic: "t", logger: logger) }
        do {
            _ = try ProjectorMetrics(path: scratch.path + "/missing/daybook.prom", topic: "t", logger: logger)
            Issue.record("a missing directory was accepted")
        } catch {
            #expect(error.kind == .missingDirectory)
        }
    }
}
