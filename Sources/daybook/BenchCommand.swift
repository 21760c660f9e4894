import DaybookCore
import Foundation

/// `daybook bench core`: how fast the core resolves a realistic mix of samples.
enum BenchCommand: Subcommand {
    static let name = "bench"
    static let abstract = "Measure throughput (bench core: decode, apply, resolve)."
    static let usage = "bench core|generate [--samples N] [--users N] [--seed N]"
    static let options = [
        OptionSpec(name: "--samples", value: "N", help: "About how many samples to generate (default 1000000)."),
        OptionSpec(name: "--users", value: "N", help: "Users to spread them over (default 200)."),
        OptionSpec(name: "--seed", value: "N", help: "Random seed, for repeatable data (default 1)."),
    ]
    static let discussion = """
    'generate' writes such a log as JSON lines to stdout (for publish and projector
    benchmarks: daybook bench generate --samples 1000000 > events.jsonl).

    'core' generates a realistic log in memory (a watch and a phone recording the same
    walks, manual entries, per-minute heart rate, a few travellers and DST weekends) and
    times, on one thread: decoding and validating the JSON lines, applying the events to
    the ledger, and resolving every (user, metric, day) total. Prints figures; asserts nothing.

    EXIT CODES: 0 done; 64 usage.
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals == ["core"] || arguments.positionals == ["generate"] else {
            throw CLIError.usage("bench takes one target: core or generate")
        }
        let target = try arguments.integer("--samples", default: 1_000_000, in: 1...100_000_000)
        let userCount = try arguments.integer("--users", default: 200, in: 1...1_000_000)
        let seed = try arguments.integer("--seed", default: 1, in: 0...Int(Int32.max))
        if arguments.positionals == ["generate"] {
            var generator = SyntheticLog(seed: UInt64(seed))
            var out = OutputBuffer()
            for event in generator.events(samples: target, users: userCount) { out.line(SyntheticLog.jsonLine(event)) }
            out.flush()
            return ExitCode.ok
        }

        var t0 = Date()
        var generator = SyntheticLog(seed: UInt64(seed))
        let events = generator.events(samples: target, users: userCount)
        let lines = events.map(SyntheticLog.jsonLine)
        let bytes = lines.reduce(0) { $0 + $1.utf8.count + 1 }
        print("generated \(events.count) events (\(bytes / 1_000_000) MB of JSON) for \(userCount) users in \(seconds(since: t0))")

        t0 = Date()
        let decoder = EventDecoder()
        var decoded = 0
        for line in lines where (try? decoder.decode(line)) != nil { decoded += 1 }
        report("decode+validate", count: decoded, since: t0, unit: "events")

        let ledger = Ledger()
        t0 = Date()
        for (i, e) in events.enumerated() { ledger.apply(e, at: Int64(i)) }
        report("apply (index)", count: events.count, since: t0, unit: "events")

        t0 = Date()
        let totals = ledger.allTotals()
        let resolveTime = Date().timeIntervalSince(t0)
        report("resolve (dedupe + days)", count: ledger.liveSampleCount, since: t0, unit: "samples")

        let applyAndResolve = Ledger()
        t0 = Date()
        for (i, e) in events.enumerated() { applyAndResolve.apply(e, at: Int64(i)) }
        _ = applyAndResolve.allTotals()
        report("apply + resolve", count: applyAndResolve.liveSampleCount, since: t0, unit: "samples")

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
        report("incremental (batches of 5000 events, \(recomputed) day recomputations)", count: events.count, since: t0, unit: "events")

        print("rows: \(totals.count); resolve took \(String(format: "%.3f", resolveTime)) s")
        return ExitCode.ok
    }

    static func seconds(since t0: Date) -> String { String(format: "%.2f s", Date().timeIntervalSince(t0)) }

    static func report(_ what: String, count: Int, since t0: Date, unit: String) {
        let elapsed = Date().timeIntervalSince(t0)
        let rate = Double(count) / max(elapsed, 1e-9)
        print("\(what): \(count) \(unit) in \(String(format: "%.3f", elapsed)) s = \(String(format: "%.0f", rate)) \(unit)/s")
    }
}

/// A deterministic generator of realistic logs, for benchmarks and the bundled examples.
struct SyntheticLog {
    var rng: SplitMix

    init(seed: UInt64) { rng = SplitMix(seed: seed) }

    private static let zones = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Santiago", "Europe/London"]

    /// About `samples` events over `users` users, in log order, with a few deletions.
    mutating func events(samples: Int, users: Int) -> [Event] {
        var out: [Event] = []
        out.reserveCapacity(samples + samples / 100)
        // ~330 samples per user-day (see below); enough days to reach the target.
        let perDay = 330
        let days = max(1, samples / (perDay * users))
        let firstDay = Int64(CivilDay(year: 2024, month: 3, day: 25).number)
        for u in 0..<users {
            let user = "user-\(u)"
            let home = SyntheticLog.zones[u % SyntheticLog.zones.count]
            for d in 0..<days {
                let zone = (u % 10 == 0 && d % 7 == 3) ? SyntheticLog.zones[(u + 1) % SyntheticLog.zones.count] : home
                let offset = Int64(ZoneRules.named(zone)?.offsetSeconds(at: Instant(seconds: (firstDay + Int64(d)) * 86_400)) ?? 0)
                let dayStart = (firstDay + Int64(d)) * 86_400 - offset
                var n = 0
                func add(_ metric: Metric, _ source: String, _ s: Int64, _ e: Int64, _ v: Double) {
                    n += 1
                    out.append(.sampleAdded(Sample(
                        user: user, uuid: "\(user)-\(d)-\(n)-\(source)", metric: metric, source: source,
                        start: Instant(seconds: s), end: Instant(seconds: e), value: v, zone: zone)))
                }
                // Watch: 5-minute step and energy samples from 07:00 to 23:00 (~190 + 40).
                var t = dayStart + 7 * 3600
                while t < dayStart + 23 * 3600 {
                    let len = Int64(240 + rng.next(120))
                    add(.steps, "watch", t, t + len, Double(rng.next(600)))
                    if rng.next(4) == 0 { add(.activeEnergy, "watch", t, t + len, Double(rng.next(300)) / 10) }
                    t += len + Int64(rng.next(60))
                }
                // Phone: walking bouts overlapping the watch (~40 samples of steps and distance).
                for _ in 0..<20 {
                    let s = dayStart + 6 * 3600 + Int64(rng.next(17 * 3600))
                    let len = Int64(300 + rng.next(1500))
                    let steps = Double(rng.next(2000))
                    add(.steps, "phone", s, s + len, steps)
                    add(.distance, "phone", s, s + len, steps * 0.75)
                }
                // Heart rate every ~16 minutes (instants), and a manual entry now and then.
                var h = dayStart
                while h < dayStart + 86_400 {
                    add(.heartRate, "watch", h, h, Double(55 + rng.next(80)))
                    h += 900 + Int64(rng.next(120))
                }
                if rng.next(3) == 0 { add(.steps, "manual", dayStart + 12 * 3600, dayStart + 13 * 3600, 3000) }
                if rng.next(50) == 0, case .sampleAdded(let s)? = out.last {
                    out.append(.sampleDeleted(user: user, uuid: s.uuid))
                }
            }
        }
        return out
    }

    static func jsonLine(_ event: Event) -> String {
        switch event {
        case .sampleAdded(let s):
            return "{\"type\":\"sample-added\",\"user\":\(JSONWriter.quoted(s.user)),\"sample\":{\"uuid\":\(JSONWriter.quoted(s.uuid)),\"metric\":\"\(s.metric.rawValue)\",\"source\":\(JSONWriter.quoted(s.source)),\"start\":\"\(s.start)\",\"end\":\"\(s.end)\",\"value\":\(JSONWriter.number(s.value)),\"unit\":\"\(s.metric.canonicalUnit)\",\"zone\":\"\(s.zone)\"}}"
        case .sampleDeleted(let user, let uuid):
            return "{\"type\":\"sample-deleted\",\"user\":\(JSONWriter.quoted(user)),\"uuid\":\(JSONWriter.quoted(uuid))}"
        }
    }
}

/// SplitMix64: a tiny, fast, repeatable random number generator.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
