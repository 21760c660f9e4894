/// One (user, metric) block of daily totals over a range of days, with the sync state of
/// its user: what `daybook totals` shows, and the rules that tell an empty day apart.
///
/// A day of the range is one of three things. A row: the day's total. No data: no row, and
/// every source that speaks for the metric has been heard from since the day ended, so
/// nothing was recorded. Unknown: a source that speaks for the metric has been silent since
/// before (or during) that day, so its samples for the day may still come (`SourceSync`).
/// An empty day is never a row.
public struct DayBlock: Sendable {
    public var user: String
    public var metric: Metric
    /// The block's rows, in day order, each inside `first...last`.
    public var rows: [DayTotal]
    public var first: CivilDay
    public var last: CivilDay
    /// The sync state of `user` (every source, every metric).
    public var pairs: [SourceSync]

    public init(user: String, metric: Metric, rows: [DayTotal], first: CivilDay, last: CivilDay, pairs: [SourceSync]) {
        self.user = user
        self.metric = metric
        self.rows = rows
        self.first = first
        self.last = last
        self.pairs = pairs
    }

    /// Visits the days of the range with their row (if any) and the sources not heard from
    /// since the day ended (`SourceSync.silentSources`): no row and no silent source is "no
    /// data", no row and some silent source is "unknown". With `everyDay` false, only days
    /// with a row or a silent source are visited.
    ///
    /// Complexity: O(days visited + rows): a long range costs the days shown, not the days in it.
    public func forEachDay(everyDay: Bool, _ body: (CivilDay, DayTotal?, [(source: String, lastSeen: CivilDay)]) throws -> Void) rethrows {
        let seen = SourceSync.lastSeenDays(pairs, metric: metric)
        // From the day of the earliest last sign of life of a source that syncs the metric, days may be unknown.
        let earliestUnknown = seen.map(\.lastSeen).min()
        var day = first
        var next = rows.startIndex
        while day <= last {
            while next < rows.endIndex, rows[next].key.day < day { next += 1 }
            let row = next < rows.endIndex && rows[next].key.day == day ? rows[next] : nil
            let maybeUnknown = earliestUnknown.map { day >= $0 } ?? false
            if everyDay || row != nil || maybeUnknown {
                try body(day, row, maybeUnknown ? seen.filter { day >= $0.lastSeen } : [])
                day = day.adding(days: 1)
            } else {
                // Jump to the next row, or to the first day that may be unknown.
                let candidates = [next < rows.endIndex ? rows[next].key.day : nil, earliestUnknown].compactMap { $0 }
                guard let jump = candidates.min(), jump > day else { break }
                day = jump
            }
        }
    }

    /// Groups `rows` (sorted by user, metric, day) into blocks by (user, metric). A block
    /// covers `from...to` when both are given, else its first to its last row. Asked for
    /// one `user` and a whole range, each metric of theirs without rows (every metric their
    /// sources speak for, or just `metric`) still gets a block, so its unknown days show.
    ///
    /// - Parameter pairs: the sync state of each user with rows (and of `user`).
    public static func blocks(_ rows: [DayTotal], user: String? = nil, metric: Metric? = nil,
                              from: CivilDay? = nil, to: CivilDay? = nil, pairs: [String: [SourceSync]]) -> [DayBlock] {
        var byKey: [(String, Metric, [DayTotal])] = []
        for row in rows {
            if let last = byKey.last, last.0 == row.key.user, last.1 == row.key.metric {
                byKey[byKey.count - 1].2.append(row)
            } else {
                byKey.append((row.key.user, row.key.metric, [row]))
            }
        }
        if let user, from != nil, to != nil {
            let theirs = pairs[user] ?? []
            let spoken = theirs.contains { $0.metrics.isEmpty } ? Set(Metric.allCases) : Set(theirs.flatMap(\.metrics))
            let metrics = metric.map { [$0] } ?? spoken.sorted()
            for m in metrics where !byKey.contains(where: { $0.1 == m }) { byKey.append((user, m, [])) }
            byKey.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        }
        return byKey.compactMap { user, metric, days in
            guard let first = from ?? days.first?.key.day, let last = to ?? days.last?.key.day else { return nil }
            return DayBlock(user: user, metric: metric, rows: days, first: first, last: last, pairs: pairs[user] ?? [])
        }
    }
}
