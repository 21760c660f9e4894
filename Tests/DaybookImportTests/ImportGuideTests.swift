import DaybookCore
@testable import DaybookImport
import Foundation
import Testing

/// Guides/Import.md stays true: its import command, run over the fixture it says it shows,
/// prints the summary lines the guide prints, and its table's figures are the rollup's and
/// the naive sum's of that import.
@Suite struct ImportGuideTests {
    static let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Guides/Import.md")

    /// The lines of the guide's fenced blocks (``` … ```), in order.
    static func fencedLines(_ text: String) -> [String] {
        var inside = false, lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inside.toggle(); continue }
            if inside { lines.append(String(line)) }
        }
        return lines
    }

    /// The values of `option` in a command's words.
    static func values(_ option: String, in words: [String]) -> [String] {
        words.indices.filter { words[$0] == option && $0 + 1 < words.count }.map { words[$0 + 1] }
    }

    @Test func theGuidesCommandPrintsTheGuidesSummaryAndFigures() throws {
        let text = try String(contentsOf: Self.guide, encoding: .utf8)
        let fenced = Self.fencedLines(text)
        let command = try #require(fenced.first { $0.hasPrefix("daybook import apple-health ") })
        let words = command.split(separator: " ").map(String.init)
        let user = try #require(Self.values("--user", in: words).first)
        let out = try #require(Self.values("--out", in: words).first)
        let r = try importExport(Fixture.xml, user: user, zone: Self.values("--zone", in: words).first,
                                 rules: Self.values("--source-map", in: words))
        let summary = r.summary.render(destination: "written to \(out)", names: .init(defaultZone: "--zone", sourceMapRule: "--source-map"))
        // Every summary line the guide shows (its "..." stands for lines left out).
        let shown = try #require(fenced.firstIndex { $0.contains(" records read: ") })
        let end = fenced[shown...].firstIndex { $0.hasPrefix("time span:") } ?? fenced.endIndex - 1
        for line in fenced[shown...end] where !line.contains("...") {
            #expect(summary.contains(line), "the guide shows \(line), the import prints:\n\(summary)")
        }

        // The table: | day | naive sum | Daybook | why |, steps per day of each event's start.
        let rows = rollup(r.samples)
        var naive: [String: Double] = [:]
        for (line, sample) in zip(r.lines, r.samples) where sample.metric == .steps {
            // The day of the event's own start, as the guide's grep reads it.
            guard let start = line.range(of: #""start":""#) else { continue }
            naive[String(line[start.upperBound...].prefix(10)), default: 0] += sample.value
        }
        let table = text.split(separator: "\n").filter { $0.hasPrefix("| 20") }
        #expect(table.count == 4)
        for row in table {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let figure = { (cell: String) in Double(cell.replacingOccurrences(of: ",", with: "")) }
            let day = cells[0]
            #expect(figure(cells[1]) == naive[day], "\(day): naive sum")
            let daybook = cumulative(rows["steps \(day)"]).map { ($0 * 100).rounded() / 100 }
            #expect(figure(cells[2]) == daybook, "\(day): Daybook")
        }
    }

    /// The guide's "What is imported" names every type the importer maps, and nothing else.
    @Test func theGuideNamesEveryImportedType() throws {
        let text = try String(contentsOf: Self.guide, encoding: .utf8)
        let start = try #require(text.range(of: "## What is imported\n"))
        let section = text[start.upperBound...]
        let body = section[..<(section.range(of: "\n## ")?.lowerBound ?? section.endIndex)]
        for type in AppleHealthImporter.metrics.keys {
            let short = type.replacingOccurrences(of: "HKQuantityTypeIdentifier", with: "")
            #expect(body.contains(short), "the guide does not name \(type)")
        }
        let named = body.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).filter { word in
            word.first?.isUppercase == true && word.dropFirst().contains(where: \.isUppercase) && word.contains(where: \.isLowercase)
                && !word.hasPrefix("HKCategoryValue") && !word.hasPrefix("HKQuantityTypeIdentifier")
        }
        let known = Set(AppleHealthImporter.metrics.keys.map { $0.replacingOccurrences(of: "HKQuantityTypeIdentifier", with: "") })
        for word in named { #expect(known.contains(String(word)), "the guide names \(word), which the import does not map") }
    }
}
