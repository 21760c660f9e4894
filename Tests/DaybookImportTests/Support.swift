import DaybookCore
@testable import DaybookImport
import Testing

/// What importing an export gave: the lines, the summary, and the scanner's error if any.
struct Imported {
    var lines: [String] = []
    var samples: [Sample] = []
    var summary = ImportSummary()
    var missingZone = 0
    var error: ExportSyntaxError?
}

/// Imports `xml` the way the command does, feeding it in chunks of `chunk` bytes.
func importExport(_ xml: String, user: String = "ana", zone: String? = "Europe/Berlin", rules: [String] = [],
                  chunk: Int = 1 << 20) throws -> Imported {
    let map = SourceMap(rules: try rules.map { try SourceMap.rule($0).get() })
    var importer = try AppleHealthImporter(options: .init(user: user, zone: zone, sourceMap: map))
    var scanner = ExportScanner()
    var out = Imported()
    let bytes = Array(xml.utf8)
    let handle: (ExportRecord) -> Void = { record in
        switch importer.convert(record) {
        case .event(let line, let sample):
            out.lines.append(line)
            out.samples.append(sample)
        case .missingZone: out.missingZone += 1
        case .skipped: break
        }
    }
    do {
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + chunk)
            try bytes[start..<end].withUnsafeBytes { try scanner.feed($0, handle) }
            start = end
        }
        try scanner.finish(handle)
    } catch let error as ExportSyntaxError {
        out.error = error
    }
    out.summary = importer.summary
    return out
}

/// Rolls `samples` up in log order with the built-in priority, rows keyed "metric day".
func rollup(_ samples: [Sample], priority: SourcePriority = .builtIn) -> [String: DaySummary] {
    let ledger = Ledger(priority: priority)
    for (i, s) in samples.enumerated() { _ = ledger.apply(.sampleAdded(s), at: Int64(i)) }
    var rows: [String: DaySummary] = [:]
    for t in ledger.allTotals() { rows["\(t.key.metric.rawValue) \(t.key.day)"] = t.summary }
    return rows
}

func cumulative(_ row: DaySummary?) -> Double? {
    guard case .cumulative(let v, _)? = row else { return nil }
    return (v * 1e6).rounded() / 1e6
}
