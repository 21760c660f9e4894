import DaybookCore
import Foundation

/// The core benchmark (`daybook bench core`): how fast, on one thread, the core decodes and
/// validates a realistic log's JSON lines, applies its events to a ledger and resolves every
/// (user, metric, day) total. Measures; asserts nothing.
public enum CoreBench {
    /// Generates about `samples` events for `users` users (`SyntheticLog`, seeded) and times
    /// each stage, giving `report` one line per figure.
    public static func run(samples: Int, users: Int, seed: Int, report: (String) -> Void) {
        var t0 = Date()
        var generator = SyntheticLog(seed: UInt64(seed))
        let events = generator.events(samples: samples, users: users)
        let lines = events.map(\.jsonLine)
        let bytes = lines.reduce(0) { $0 + $1.utf8.count + 1 }
        report("generated \(events.count) events (\(bytes / 1_000_000) MB of JSON) for \(users) users in \(seconds(since: t0))")
        func rate(_ what: String, count: Int, since t0: Date, unit: String) {
            let elapsed = Date().timeIntervalSince(t0)
            let rate = Double(count) / max(elapsed, 1e-9)
            report("\(what): \(count) \(unit) in \(String(format: "%.3f", elapsed)) s = \(String(format: "%.0f", rate)) \(unit)/s")
        }

        t0 = Date()
        let decoder = EventDecoder()
        var decoded = 0
        for line in lines where (try? decoder.decode(line)) != nil { decoded += 1 }
        rate("decode+validate", count: decoded, since: t0, unit: "events")

        let ledger = Ledger()
        t0 = Date()
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        rate("apply (index)", count: events.count, since: t0, unit: "events")

        t0 = Date()
        let totals = ledger.allTotals()
        let resolveTime = Date().timeIntervalSince(t0)
        rate("resolve (dedupe + days)", count: ledger.liveSampleCount, since: t0, unit: "samples")

        let applyAndResolve = Ledger()
        t0 = Date()
        for (i, e) in events.enumerated() { applyAndResolve.apply(e, at: Int64(i)) }
        _ = applyAndResolve.allTotals()
        rate("apply + resolve", count: applyAndResolve.liveSampleCount, since: t0, unit: "samples")

        // As the projector will: apply a batch, then recompute the union of its dirty days.
        let incremental = Ledger()
        t0 = Date()
        var dirty = Set<DayKey>()
        var recomputed = 0
        for (i, e) in events.enumerated() {
            dirty.formUnion(incremental.apply(e, at: Int64(i)))
            if i % 5_000 == 4_999 || i == events.count - 1 {
                recomputed += incremental.recompute(dirty).count
                dirty.removeAll(keepingCapacity: true)
            }
        }
        rate("incremental (batches of 5000 events, \(recomputed) day recomputations)", count: events.count, since: t0, unit: "events")

        report("rows: \(totals.count); resolve took \(String(format: "%.3f", resolveTime)) s")
    }

    static func seconds(since t0: Date) -> String { String(format: "%.2f s", Date().timeIntervalSince(t0)) }
}
