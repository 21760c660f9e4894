import DaybookCore
import DaybookSupport

/// A deterministic generator of realistic logs: a watch and a phone recording the same walks,
/// manual entries, per-minute heart rate, a few travellers and DST weekends.
public struct SyntheticLog: Sendable {
    var rng: SplitMix64

    /// How the samples' uuids are spelled.
    public enum UUIDs: String, Sendable {
        /// Upper-case RFC 9562 UUIDs (version 4 in form), as HealthKit writes `HKObject.uuid`
        /// and Health Connect its record ids: what a projector meets in production.
        case canonical
        /// Readable names, `user-3-0-259-watch` (the logs of BENCHMARKS.md before 2026-12-05).
        case names
    }
    public var uuids: UUIDs

    public init(seed: UInt64, uuids: UUIDs = .canonical) {
        rng = SplitMix64(seed: seed)
        self.uuids = uuids
    }

    /// The uuid of the sample named `name`: the name itself, or a UUID made from a stable
    /// hash of it (FNV-1a, then SplitMix64's finaliser for the second half), so that one
    /// name gets one UUID on any machine, in any run.
    func uuid(_ name: String) -> String {
        guard uuids == .canonical else { return name }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        var mixer = SplitMix64(seed: h)
        var high = mixer.next(), low = mixer.next()
        high = high & ~(0xF << 12) | 0x4 << 12         // version 4
        low = low & ~(0xC << 60) | 0x8 << 60           // RFC 9562 variant
        return SampleUUID(high: high, low: low, upper: true).text
    }

    /// The same events in the order a live stream delivers them: by sync hour (the hour a
    /// sample ends; a deletion keeps the hour of the last sample of its uuid before it, a
    /// check-in the hour of the event before it), users interleaved; within an hour, events
    /// keep their order, so a deletion still follows the sample it deletes.
    ///
    /// Complexity: O(n log n) for n events.
    public static func arrivalOrder(_ events: [Event]) -> [Event] {
        var hourOfUUID: [String: Int64] = [:]
        var hours: [Int64] = []
        hours.reserveCapacity(events.count)
        var previous: Int64 = .min
        for event in events {
            let hour: Int64
            switch event {
            case .sampleAdded(let s):
                hour = s.end.nanoseconds / (3_600 * 1_000_000_000)
                hourOfUUID[s.uuid] = hour
            case .sampleDeleted(_, let uuid):
                hour = hourOfUUID[uuid] ?? previous
            case .sourceCheckedIn:
                hour = previous
            }
            hours.append(hour)
            previous = hour
        }
        // By (hour, index): a stable order, so a deletion (in its sample's hour, after it in
        // the log) stays after its sample.
        let order = events.indices.sorted { hours[$0] != hours[$1] ? hours[$0] < hours[$1] : $0 < $1 }
        return order.map { events[$0] }
    }

    private static let zones = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Santiago", "Europe/London"]

    /// About `samples` events over `users` users, in log order, with a few deletions.
    public mutating func events(samples: Int, users: Int) -> [Event] {
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
                        user: user, uuid: uuid("\(user)-\(d)-\(n)-\(source)"), metric: metric, source: source,
                        start: Instant(seconds: s), end: Instant(seconds: e), value: v, zone: zone)))
                }
                // Watch: 5-minute step and energy samples from 07:00 to 23:00 (~190 + 40).
                var t = dayStart + 7 * 3600
                while t < dayStart + 23 * 3600 {
                    let len = Int64(240 + rng.below(120))
                    add(.steps, "watch", t, t + len, Double(rng.below(600)))
                    if rng.below(4) == 0 { add(.activeEnergy, "watch", t, t + len, Double(rng.below(300)) / 10) }
                    t += len + Int64(rng.below(60))
                }
                // Phone: walking bouts overlapping the watch (~40 samples of steps and distance).
                for _ in 0..<20 {
                    let s = dayStart + 6 * 3600 + Int64(rng.below(17 * 3600))
                    let len = Int64(300 + rng.below(1500))
                    let steps = Double(rng.below(2000))
                    add(.steps, "phone", s, s + len, steps)
                    add(.distance, "phone", s, s + len, steps * 0.75)
                }
                // Heart rate every ~16 minutes (instants), and a manual entry now and then.
                var h = dayStart
                while h < dayStart + 86_400 {
                    add(.heartRate, "watch", h, h, Double(55 + rng.below(80)))
                    h += 900 + Int64(rng.below(120))
                }
                if rng.below(3) == 0 { add(.steps, "manual", dayStart + 12 * 3600, dayStart + 13 * 3600, 3000) }
                if rng.below(50) == 0, case .sampleAdded(let s)? = out.last {
                    out.append(.sampleDeleted(user: user, uuid: s.uuid))
                }
            }
        }
        return out
    }
}

