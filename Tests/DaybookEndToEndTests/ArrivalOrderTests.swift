import DaybookTestSupport
import Foundation
import Testing

/// The projector on a log in arrival order (`bench generate --order arrival`: by sync hour,
/// users interleaved), with no state cache between batches, so that every batch reloads what
/// it needs from the shards: its totals must be `daybook rollup`'s of the same lines, and its
/// metrics file must show the cache working (misses and evictions, not only hits).
@Suite struct ArrivalOrderTests {
    let scratch = TemporaryDirectory()

    /// `bench generate` spells uuids as phones do (upper-case UUIDs, one per sample, the same
    /// in every run), or as the readable names of the logs measured before (`--uuids names`).
    @Test func generatedUUIDsAreUUIDsUnlessNamesAreAsked() throws {
        func uuids(_ extra: [String]) throws -> [String] {
            let r = try Daybook.run(["bench", "generate", "--samples", "3000", "--users", "2"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.split(separator: "\n").filter { $0.contains("sample-added") }.compactMap { line in
                line.range(of: #""uuid":""#).map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
            }
        }
        let canonical = try uuids([])
        #expect(canonical.count > 2_000 && Set(canonical).count == canonical.count)
        let hex = Set("0123456789ABCDEF")
        for u in canonical.prefix(200) {
            let parts = u.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
            #expect(parts == [8, 4, 4, 4, 12] && u.allSatisfy { $0 == "-" || hex.contains($0) }, "\(u)")
        }
        #expect(try uuids([]) == canonical, "the same uuids in every run")
        #expect(try uuids(["--uuids", "names"]).first == "user-0-0-1-watch")
        let bad = try Daybook.run(["bench", "generate", "--uuids", "lower"])
        #expect(bad.status == 64 && bad.stderr.contains("--uuids takes canonical or names, not lower"))
    }

    @Test(.timeLimit(.minutes(2))) func anInterleavedLogThroughAnEvictingCacheGivesTheRollupsTotals() throws {
        let generated = try Daybook.run(["bench", "generate", "--samples", "12000", "--users", "9", "--seed", "4", "--order", "arrival"])
        #expect(generated.status == 0, "\(generated.stderr)")
        let lines = generated.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count > 12_000)
        let broker = try BrokerProcess(arguments: ["--partitions", "3"])
        defer { _ = broker.stop() }
        let dir = scratch.newPath("data")
        let config = try scratch.file(#"{"state":{"cache_mb":0}}"#)
        let metrics = scratch.path + "/daybook.prom"
        // In two halves, projected after each: a batch takes all a poll brings of its
        // partition, so the second run's batches find the users of the first in the shards
        // only (the cache keeps nothing), and must read them back.
        let half = lines.count / 2
        for part in [lines[..<half], lines[half...]] {
            let file = try Daybook.temporaryFile(part.joined(separator: "\n") + "\n")
            let published = try Daybook.run(["publish", "--brokers", broker.bootstrap, file])
            #expect(published.status == 0, "\(published.stderr)")
            let r = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up",
                                     "--config", config, "--metrics-file", metrics])
            #expect(r.status == 0, "\(r.stderr)")
        }
        #expect(try ProjectorTests.totals(dir).sorted() == (try ProjectorTests.rollup(lines)).sorted())
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        func counter(_ name: String) -> Double {
            text.split(separator: "\n").first { $0.hasPrefix(name + "{") }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? -1
        }
        #expect(counter("daybook_events_applied_total") == Double(lines.count - half))
        // With no cache every batch after a user's first reads the user's windows back.
        #expect(counter("daybook_state_cache_misses_total") > 0, "\(text)")
        #expect(counter("daybook_state_cache_evictions_total") > 0, "\(text)")
        #expect(counter("daybook_state_cache_hits_total") >= 0, "\(text)")
    }
}
