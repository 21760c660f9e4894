import Foundation
import Synchronization

/// The UTC-offset history of one IANA time zone, flattened into a sorted transition table.
///
/// Foundation is asked once per zone (for 1900–2100; outside that range the nearest
/// offset is used), then every conversion is a binary search and integer arithmetic.
/// Civil days follow the wall clock exactly: a 23- or 25-hour day, a day that starts at
/// 01:00 because midnight was skipped, a half-hour shift — all fall out of the table.
public struct ZoneRules: Sendable {
    public let identifier: String
    /// UTC instants (ns) at which the offset changes, ascending.
    let transitions: [Int64]
    /// `offsets[0]` applies before `transitions[0]`; `offsets[k+1]` from `transitions[k]` on.
    let offsets: [Int64]

    init(identifier: String, transitions: [Int64], offsetSeconds: [Int]) {
        self.identifier = identifier
        self.transitions = transitions
        self.offsets = offsetSeconds.map { Int64($0) * Instant.nanosPerSecond }
    }

    private static let cache = Mutex<[String: ZoneRules]>([:])

    /// Foundation's list of canonical zones, plus the UTC names it resolves without listing.
    private static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC", "GMT"])

    /// The rules a sample of zone `identifier` is counted under: `named(identifier)`, or UTC
    /// for an identifier that is not a zone (the decoder has refused those; degrading beats a
    /// trap for a store that holds one).
    public static func forSamples(_ identifier: String) -> ZoneRules {
        named(identifier) ?? ZoneRules(identifier: identifier, transitions: [], offsetSeconds: [0])
    }

    /// The rules for an IANA identifier such as `Europe/Berlin`; nil when it is not one.
    public static func named(_ identifier: String) -> ZoneRules? {
        if let hit = cache.withLock({ $0[identifier] }) { return hit }
        guard let tz = TimeZone(identifier: identifier), isZoneName(identifier, of: tz) else { return nil }
        let rules = build(identifier: identifier, tz)
        cache.withLock { $0[identifier] = rules }
        return rules
    }

    /// True when `identifier` names a tz database zone, not an offset Foundation made up.
    ///
    /// Foundation lists only canonical Area/Location zones, but resolves their aliases
    /// (Asia/Calcutta) and the database's other names (EST5EDT, CST6CDT, Etc/GMT+5, CET),
    /// which keep their identifier. It also turns ad-hoc offsets such as "GMT+5" or
    /// "UTC-0330" into zones; those are not zone names and are refused.
    static func isZoneName(_ identifier: String, of tz: TimeZone) -> Bool {
        if known.contains(identifier) || identifier.contains("/") { return true }
        guard tz.identifier == identifier else { return false }
        let offsetForm = ["GMT+", "GMT-", "UTC+", "UTC-"].contains { identifier.hasPrefix($0) }
        return !offsetForm
    }

    private static func build(identifier: String, _ tz: TimeZone) -> ZoneRules {
        let first = Date(timeIntervalSince1970: -2_208_988_800) // 1900-01-01
        let last = Date(timeIntervalSince1970: 4_102_444_800)   // 2100-01-01
        var transitions: [Int64] = []
        var offsets = [tz.secondsFromGMT(for: first)]
        var cursor = first
        while let next = tz.nextDaylightSavingTimeTransition(after: cursor), next < last {
            let offset = tz.secondsFromGMT(for: next)
            if offset != offsets[offsets.count - 1] {
                transitions.append(Int64(next.timeIntervalSince1970.rounded()) * Instant.nanosPerSecond)
                offsets.append(offset)
            }
            cursor = next
        }
        return ZoneRules(identifier: identifier, transitions: transitions, offsetSeconds: offsets)
    }

    /// Index into `offsets` of the segment containing `t`.
    @inline(__always)
    func segment(containing t: Int64) -> Int {
        var lo = 0, hi = transitions.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if transitions[mid] <= t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The UTC offset in force at `instant`, in seconds.
    public func offsetSeconds(at instant: Instant) -> Int {
        Int(offsets[segment(containing: instant.nanoseconds)] / Instant.nanosPerSecond)
    }

    /// The civil day that the wall clock shows at `instant`.
    public func day(of instant: Instant) -> CivilDay {
        let t = instant.nanoseconds
        return CivilDay(number: Int32(floorDiv(t + offsets[segment(containing: t)], Instant.nanosPerDay)))
    }

    /// Calls `body(day, nanoseconds)` for each stretch of `[start, end)` that the wall clock
    /// shows as one civil day, in time order. A day is reported twice only when the clock
    /// is set back across midnight. Complexity: O(log T + pieces).
    @inline(__always)
    public func forEachDay(from start: Int64, to end: Int64, _ body: (CivilDay, Int64) -> Void) {
        var a = start
        var k = segment(containing: a)
        var pendingDay: Int64 = 0
        var pending: Int64 = 0
        while a < end {
            let segmentEnd = k < transitions.count ? min(end, transitions[k]) : end
            let offset = offsets[k]
            while a < segmentEnd {
                let day = floorDiv(a + offset, Instant.nanosPerDay)
                let pieceEnd = min(segmentEnd, (day + 1) * Instant.nanosPerDay - offset)
                if pending > 0, day != pendingDay {
                    body(CivilDay(number: Int32(pendingDay)), pending)
                    pending = 0
                }
                pendingDay = day
                pending += pieceEnd - a
                a = pieceEnd
            }
            k += 1
        }
        if pending > 0 { body(CivilDay(number: Int32(pendingDay)), pending) }
    }

    /// The first instant the wall clock shows `day`, and the instant it stops (exclusive).
    /// When the clock is set back across midnight the day has two stretches; this spans both.
    public func bounds(of day: CivilDay) -> (start: Instant, end: Instant) {
        let midnight = Int64(day.number) * Instant.nanosPerDay
        var cursor = midnight - 2 * Instant.nanosPerDay
        var start: Int64? = nil
        var end = midnight
        forEachDay(from: cursor, to: midnight + 3 * Instant.nanosPerDay) { d, length in
            if d == day {
                if start == nil { start = cursor }
                end = cursor + length
            }
            cursor += length
        }
        return (Instant(nanoseconds: start ?? midnight), Instant(nanoseconds: end))
    }
}
