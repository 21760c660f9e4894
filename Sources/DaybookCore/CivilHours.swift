/// Civil hours: the stretches of time the wall clock of one zone shows as one hour.
///
/// A civil hour is the longest stretch in which the wall clock's date, hour and UTC offset
/// stay the same: from a local HH:00 (or from an offset change inside the hour) to the next
/// local HH:00 (or to the next offset change). It is named by its first instant, shown as
/// local time with the offset then in force, so:
/// - the repeated hour of a fall-back night is two hours (America/New_York, 2026-11-01:
///   `01:00-04:00` and `01:00-05:00`, an hour each);
/// - the skipped hour of a spring night is none (2026-03-08: `01:00-05:00` ends at
///   `03:00-04:00`; no 02:00);
/// - a 30-minute shift cuts an hour in two: on Lord Howe's fall-back night (2026-04-05,
///   02:00 +11:00 becomes 01:30 +10:30) `01:00+11:00` lasts an hour and `01:30+10:30` the
///   half hour to 02:00; on its spring night (2026-10-04, 02:00 +10:30 becomes 02:30 +11:00)
///   `01:00+10:30` lasts an hour, to `02:30+11:00`, then `02:30+11:00` the half hour to 03:00;
/// - in half- and quarter-hour zones the hours start at the zone's HH:00 (Asia/Kolkata's
///   10:00+05:30 is 04:30Z, Asia/Kathmandu's 10:00+05:45 is 04:15Z).
///
/// An hour never crosses a local midnight, so it lies in exactly one civil day, the one
/// `forEachDay` attributes that stretch to: the hours of a day cut its pieces finer.
extension ZoneRules {
    public static let nanosPerHour: Int64 = 3_600 * Instant.nanosPerSecond

    /// Calls `body(hourStart, hourEnd, day, nanoseconds)` for each stretch of `[start, end)`
    /// that lies in one civil hour, in time order: the hour's whole bounds (it may reach
    /// beyond `[start, end)`), its civil day, and how much of the stretch lies in it.
    /// Complexity: O(log T + pieces).
    @inline(__always)
    func forEachHour(from start: Int64, to end: Int64, _ body: (Int64, Int64, Int32, Int64) -> Void) {
        var hours = HourCursor(self)
        var a = start
        while a < end {
            hours.move(to: a)
            let pieceEnd = min(end, hours.end)
            body(hours.start, hours.end, hours.day, pieceEnd - a)
            a = pieceEnd
        }
    }

    /// The civil hour holding instant `t` (ns): its bounds and its civil day.
    func hour(containing t: Int64) -> (start: Int64, end: Int64, day: Int32) {
        var found = (start: t, end: t, day: Int32(0))
        forEachHour(from: t, to: t + 1) { s, e, day, _ in found = (s, e, day) }
        return found
    }
}

/// The civil hour of one zone holding an instant, kept while the instant moves forward:
/// hours partition time, so while the instant stays inside the hour found last nothing is
/// computed again, and the next hour's segment is found from the last one. A read's runs
/// come in time order, ~9 an hour: most of them need no division and no search.
///
/// Complexity: `move(to:)` O(1) inside the last hour or its segment's next one, else
/// O(log T) for T offset changes.
struct HourCursor {
    let rules: ZoneRules
    /// The hour found last, `[start, end)`, and its civil day (empty before the first move).
    private(set) var start: Int64 = 0
    private(set) var end: Int64 = 0
    private(set) var day: Int32 = 0
    /// Its segment of one offset, the `k`-th, `[segmentStart, segmentEnd)` (empty before the
    /// first move: a real segment never is).
    private var k = 0
    private var segmentStart: Int64 = 0
    private var segmentEnd: Int64 = 0

    init(_ rules: ZoneRules) {
        self.rules = rules
    }

    /// Makes `start`, `end` and `day` those of the civil hour holding `t`.
    @inline(__always)
    mutating func move(to t: Int64) {
        if t >= start, t < end { return }
        if t < segmentStart || t >= segmentEnd {
            let transitions = rules.transitions
            if segmentStart < segmentEnd, t >= segmentEnd, k + 1 == transitions.count || t < transitions[k + 1] {
                k += 1 // the next segment (`segmentEnd` was `transitions[k]`): a run crossing an offset change
            } else {
                k = rules.segment(containing: t)
            }
            segmentStart = k > 0 ? transitions[k - 1] : Int64.min
            segmentEnd = k < transitions.count ? transitions[k] : Int64.max
        }
        let offset = rules.offsets[k]
        let wallHour = floorDiv(t + offset, ZoneRules.nanosPerHour)
        start = max(segmentStart, wallHour * ZoneRules.nanosPerHour - offset)
        end = min(segmentEnd, (wallHour + 1) * ZoneRules.nanosPerHour - offset)
        day = Int32(floorDiv(t + offset, Instant.nanosPerDay))
    }
}
