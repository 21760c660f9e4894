/// Civil-hour rows of one (user, metric), computed from the same resolver runs as its day
/// rows, so that hours and days cannot disagree.
///
/// Each winning stretch is split across the civil hours of the winner's own zone
/// (`ZoneRules.forEachHour`) pro rata by elapsed time, exactly as `DayAttribution` splits it
/// across civil days; a counted instant goes whole to the hour holding it; heart rate's
/// samples to the hour holding their start. Hours finer than days cut the same pieces, so
/// the raw hour contributions of a day add up to its total up to floating-point rounding.
///
/// Exactness: a day prints its total rounded to 6 decimals (`DayTotal.format`). Its hours
/// are whole micro-units apportioned from that printed total by largest remainder
/// (Hamilton's method): every (hour, source) cell gets the floor of its raw share in
/// micro-units, and the micro-units still missing go one each to the cells with the largest
/// fractional parts (ties: the earlier hour, then the higher-ranked source). So the printed
/// hours of a day sum to the printed day exactly, each hour's shares sum to its value, and
/// no cell is more than one micro-unit from its raw share. Rounding each hour on its own
/// instead would let a day of 24 hours drift by up to 12 micro-units from its total.
/// Beyond 4.5e15 micro-units (4.5 billion of a metric's unit in a day, far past any real
/// day) micro-units are no longer exact in a Double: such a day's hours keep their raw shares.
enum HourRollup {
    /// A civil hour of one zone on one day (two zones' identical hours merge into one row).
    struct HourKey: Hashable, Comparable {
        var day: Int32
        var start: Int64
        var end: Int64
        var zone: Int32

        static func < (a: HourKey, b: HourKey) -> Bool {
            (a.day, a.start, a.end, a.zone) < (b.day, b.start, b.end, b.zone)
        }
    }

    /// The hour rows of the civil days `days`, sorted by day, start and end; and the day rows
    /// they were anchored on (cumulative metrics; empty for heart rate).
    ///
    /// `anchors`, when given, are the day rows' values already known (a shard's stored rows,
    /// computed from the same samples by the same runs): the hours are apportioned from them
    /// and no day is computed again (the day rows returned are then empty). A day with hours
    /// and no anchor is anchored on its hours' raw sum.
    static func rows(records: [Record], rank: [Int32], zones: [ZoneRules], sources: [String], user: String, metric: Metric,
                     days: ClosedRange<Int32>, anchors: [Int32: Double]? = nil) -> (hours: [HourTotal], days: [DayTotal]) {
        guard metric.isCumulative else {
            return (discrete(records: records, zones: zones, user: user, metric: metric, days: days), [])
        }
        let (runs, instants) = TimelineResolver(records: records, rank: { rank[Int($0)] }).resolve(metric)
        var dayRows: [(day: Int32, value: Double, bySource: [(source: Int32, value: Double)])] = []
        if anchors == nil {
            var attribution = DayAttribution()
            attribution.attribute(runs: runs, instants: instants, records: records, zones: zones, include: { days.contains($0) })
            dayRows = attribution.totals(records: records, countsTime: metric.countsTime)
        }

        // The same runs and instants, cut into hours. nanos == -1: an instant counted in full.
        // A zone's rules are copied out of `zones` only when the zone changes: each copy
        // retains its three arrays, and a user's runs are nearly all of one zone.
        var pieces: [(hour: HourKey, record: Int, nanos: Int64)] = []
        pieces.reserveCapacity(runs.count * 2 + instants.count)
        var zone: Int32 = -1
        var rules = zones.first ?? ZoneRules(identifier: "UTC", transitions: [], offsetSeconds: [0]) // no records, no zones
        for run in runs {
            let winnerZone = records[run.winner].zone
            if winnerZone != zone {
                zone = winnerZone
                rules = zones[Int(zone)]
            }
            rules.forEachHour(from: run.start, to: run.end) { start, end, day, nanos in
                if days.contains(day) { pieces.append((HourKey(day: day, start: start, end: end, zone: zone), run.winner, nanos)) }
            }
        }
        for outcome in instants where outcome.shadowedBy == nil {
            let index = outcome.record
            if records[index].zone != zone {
                zone = records[index].zone
                rules = zones[Int(zone)]
            }
            let hour = rules.hour(containing: records[index].start)
            if days.contains(hour.day) {
                pieces.append((HourKey(day: hour.day, start: hour.start, end: hour.end, zone: zone), index, -1))
            }
        }
        // A fixed order (as `DayAttribution.totals`), so that any two computations agree to the
        // bit: by hour, then the record's place in the sum order.
        orderBySumOrder(&pieces, records: records)

        // Raw contributions per (hour, source), hours in order, sources in order of first use
        // then by rank: one flat list of cells, `cellEnds[h]` the end of hour h's cells, so
        // that a day's cells are one slice and no hour allocates an array of its own.
        var keys: [HourKey] = []
        var cellEnds: [Int] = []
        var cellSources: [Int32] = []
        var cellRaws: [Double] = []
        cellSources.reserveCapacity(pieces.count)
        cellRaws.reserveCapacity(pieces.count)
        var i = 0
        while i < pieces.count {
            let key = pieces[i].hour
            let first = cellSources.count
            while i < pieces.count, pieces[i].hour == key {
                let index = pieces[i].record
                var nanos: Int64 = 0
                var whole = false
                while i < pieces.count, pieces[i].hour == key, pieces[i].record == index {
                    if pieces[i].nanos < 0 { whole = true } else { nanos += pieces[i].nanos }
                    i += 1
                }
                let contribution = DayAttribution.contribution(value: records[index].value, start: records[index].start, end: records[index].end,
                                                               nanos: nanos, whole: whole, countsTime: metric.countsTime)
                addToCell(contribution, of: records[index].source, from: first, sources: &cellSources, raws: &cellRaws)
            }
            sortCells(from: first, byRank: rank, sources: &cellSources, raws: &cellRaws)
            keys.append(key)
            cellEnds.append(cellSources.count)
        }

        // Per day: the cells' micro-units, anchored on the day's total.
        var dayValue = anchors ?? [:]
        for row in dayRows { dayValue[row.day] = row.value }
        let out = hourTotals(keys: keys, cellEnds: cellEnds, cellSources: cellSources, cellRaws: cellRaws, dayValue: dayValue,
                             zones: zones, sources: sources, user: user, metric: metric)
        let days = dayRows.map { row in
            DayTotal(key: DayKey(user: user, metric: metric, day: CivilDay(number: row.day)),
                     summary: .cumulative(value: row.value, sources: row.bySource
                        .sorted { rank[Int($0.source)] < rank[Int($1.source)] }
                        .map { SourceShare(source: sources[Int($0.source)], value: $0.value) }))
        }
        return (merged(out, rank: { name in sources.firstIndex(of: name).map { rank[$0] } ?? Int32.max }), days)
    }

    /// Puts `pieces` in the order they are summed in: by hour, then by their records' sum
    /// order (`Record.precedesInSumOrder`), pieces of one record in one hour kept in the order
    /// they came (they add up as integer nanoseconds, so their order does not matter).
    ///
    /// Pieces come from the runs in time order, so for a user in one zone they are already by
    /// hour: then only each hour's few pieces are sorted. Otherwise (zones whose hours
    /// interleave, instants after the runs) the whole array is sorted by (hour, sum rank).
    static func orderBySumOrder(_ pieces: inout [(hour: HourKey, record: Int, nanos: Int64)], records: [Record]) {
        var byHour = true
        for i in pieces.indices.dropFirst() where pieces[i].hour < pieces[i - 1].hour {
            byHour = false
            break
        }
        guard byHour else {
            var sumRank = [Int32](repeating: 0, count: records.count)
            for (place, index) in sumOrder(records).enumerated() { sumRank[index] = Int32(place) }
            pieces.sort { a, b in a.hour != b.hour ? a.hour < b.hour : sumRank[a.record] < sumRank[b.record] }
            return
        }
        var first = 0
        while first < pieces.count {
            var end = first + 1
            while end < pieces.count, pieces[end].hour == pieces[first].hour { end += 1 }
            if end - first > 32 {
                // Many pieces in one hour: a sort, never a quadratic one (two records never tie).
                pieces[first..<end].sort { precedesInSumOrder($0.record, $1.record, records) }
            } else if end - first > 1 {
                for i in (first + 1)..<end { // insertion sort: a few steps an hour
                    let piece = pieces[i]
                    var j = i
                    while j > first, precedesInSumOrder(piece.record, pieces[j - 1].record, records) {
                        pieces[j] = pieces[j - 1]
                        j -= 1
                    }
                    pieces[j] = piece
                }
            }
            first = end
        }
    }

    /// `records[a].precedesInSumOrder(records[b])`, reading the fields in place: a copy of a
    /// record retains its uuid, and the piece sort compares a few thousand pairs a read.
    @inline(__always)
    static func precedesInSumOrder(_ a: Int, _ b: Int, _ records: [Record]) -> Bool {
        let sa = records[a].start, sb = records[b].start
        if sa != sb { return sa < sb }
        let ea = records[a].end, eb = records[b].end
        if ea != eb { return ea < eb }
        return records[a].uuid < records[b].uuid
    }

    /// The indices of `records` in their sum order (`Record.precedesInSumOrder`): sorted by
    /// (start, end) as plain integers, the uuids compared only between records whose bounds
    /// tie, so that no record is copied (nor its uuid retained) per comparison.
    static func sumOrder(_ records: [Record]) -> [Int] {
        var keys = records.indices.map { (start: records[$0].start, end: records[$0].end, index: $0) }
        keys.sort { a, b in
            if a.start != b.start { return a.start < b.start }
            if a.end != b.end { return a.end < b.end }
            return records[a.index].uuid < records[b.index].uuid
        }
        return keys.map(\.index)
    }

    /// Whole micro-units for `raws` that add up to `total` rounded to 6 decimals, each within
    /// one micro-unit of its raw share (largest remainder); nil when the amounts are too
    /// large for micro-units to be exact.
    static func apportion<Raws: RandomAccessCollection<Double>>(_ raws: Raws, total: Double) -> [Int64]? {
        let limit = 4.5e15 // below 2^52: a Double holds every micro-unit, and x / 1e6 prints back as x
        let target = (total * 1e6).rounded()
        guard target.isFinite, abs(target) < limit else { return nil }
        var micros: [Int64] = []
        var remainders: [Double] = []
        micros.reserveCapacity(raws.count)
        remainders.reserveCapacity(raws.count)
        var sum: Int64 = 0
        for raw in raws {
            let q = raw * 1e6
            guard q.isFinite, abs(q) < limit else { return nil }
            let floor = q.rounded(.down)
            micros.append(Int64(floor))
            remainders.append(q - floor)
            sum += Int64(floor)
        }
        var missing = Int64(target) - sum
        guard !raws.isEmpty else { return missing == 0 ? [] : nil }
        let n = Int64(raws.count)
        // Only a floating-point accident leaves more than one micro-unit per cell to place:
        // spread that evenly first, so the loop below runs fewer than n times.
        let each = missing / n
        if each != 0 {
            for k in micros.indices { micros[k] += each }
            missing -= each * n
        }
        guard missing != 0 else { return micros }
        let order = remainders.indices.sorted { remainders[$0] != remainders[$1] ? remainders[$0] > remainders[$1] : $0 < $1 }
        var k = 0
        while missing > 0 {
            micros[order[k]] += 1
            missing -= 1
            k += 1
        }
        k = order.count - 1
        while missing < 0 {
            micros[order[k]] -= 1 // the smallest remainders give one back
            missing += 1
            k -= 1
        }
        return micros
    }

    /// Rows of different zones that name the same hour (same bounds and offsets: London and
    /// Lisbon) as one row, their shares added.
    static func merged(_ rows: [HourTotal], rank: (String) -> Int32) -> [HourTotal] {
        guard rows.count > 1 else { return rows }
        func order(_ a: HourTotal, _ b: HourTotal) -> Bool {
            (a.key.day, a.start, a.end, a.startOffsetSeconds, a.endOffsetSeconds) < (b.key.day, b.start, b.end, b.startOffsetSeconds, b.endOffsetSeconds)
        }
        func same(_ a: HourTotal, _ b: HourTotal) -> Bool {
            a.key.day == b.key.day && a.start == b.start && a.end == b.end
                && a.startOffsetSeconds == b.startOffsetSeconds && a.endOffsetSeconds == b.endOffsetSeconds
        }
        // Rows strictly in this order hold no two rows of one hour (one zone's hours, or
        // zones whose hours differ): nothing to merge or move.
        var inOrder = true
        for k in rows.indices.dropFirst() where !order(rows[k - 1], rows[k]) {
            inOrder = false
            break
        }
        if inOrder { return rows }
        let sorted = rows.sorted(by: order)
        var out: [HourTotal] = []
        out.reserveCapacity(sorted.count)
        for row in sorted {
            guard let last = out.last, same(last, row),
                  case .cumulative(let a, let sa) = last.summary, case .cumulative(let b, let sb) = row.summary else {
                out.append(row)
                continue
            }
            var shares = sa
            for s in sb {
                if let k = shares.firstIndex(where: { $0.source == s.source }) { shares[k].value += s.value } else { shares.append(s) }
            }
            shares.sort { rank($0.source) < rank($1.source) }
            out[out.count - 1].summary = .cumulative(value: a + b, sources: shares)
        }
        return out
    }

    /// A discrete metric (heart rate, body mass, ...): min, max, mean, count and latest of
    /// the samples starting in each hour, sorted by day, start, end and offsets.
    ///
    /// An hour is its instants and offsets, not its zone: two zones whose clocks agree over
    /// it (Berlin and Paris) make one row of all its samples, whose figures are computed from
    /// them together (the latest of both, not of whichever zone sorts last).
    static func discrete(records: [Record], zones: [ZoneRules], user: String, metric: Metric,
                                 days: ClosedRange<Int32>) -> [HourTotal] {
        var byZoneHour: [HourKey: [Int]] = [:]
        for i in records.indices {
            let r = records[i]
            let hour = zones[Int(r.zone)].hour(containing: r.start)
            if days.contains(hour.day) { byZoneHour[HourKey(day: hour.day, start: hour.start, end: hour.end, zone: r.zone), default: []].append(i) }
        }
        struct Clock: Hashable {
            var day: Int32
            var start: Int64
            var end: Int64
            var startOffset: Int
            var endOffset: Int
        }
        var byHour: [Clock: [Int]] = [:]
        for (key, indices) in byZoneHour {
            let rules = zones[Int(key.zone)]
            let clock = Clock(day: key.day, start: key.start, end: key.end,
                              startOffset: rules.offsetSeconds(at: Instant(nanoseconds: key.start)),
                              endOffset: rules.offsetSeconds(at: Instant(nanoseconds: key.end)))
            byHour[clock, default: []].append(contentsOf: indices)
        }
        let clocks = byHour.keys.sorted {
            ($0.day, $0.start, $0.end, $0.startOffset, $0.endOffset) < ($1.day, $1.start, $1.end, $1.startOffset, $1.endOffset)
        }
        return clocks.map { clock in
            HourTotal(key: DayKey(user: user, metric: metric, day: CivilDay(number: clock.day)),
                      start: Instant(nanoseconds: clock.start), startOffsetSeconds: clock.startOffset,
                      end: Instant(nanoseconds: clock.end), endOffsetSeconds: clock.endOffset,
                      summary: Record.discreteSummary(records, byHour[clock] ?? []))
        }
    }
}

extension HourRollup {
    /// Adds `contribution` to `source`'s cell among an hour's cells (those from `first` on),
    /// a new cell when the hour has none of that source yet. Both rollups sum this way.
    @inline(__always)
    static func addToCell(_ contribution: Double, of source: Int32, from first: Int, sources: inout [Int32], raws: inout [Double]) {
        var k = first
        while k < sources.count, sources[k] != source { k += 1 }
        if k < sources.count {
            raws[k] += contribution
        } else {
            sources.append(source)
            raws.append(contribution)
        }
    }

    /// Puts an hour's cells (from `first` on) in the order of their sources' ranks, stably:
    /// an insertion sort, as an hour has a few sources.
    @inline(__always)
    static func sortCells<Ranks: RandomAccessCollection<Int32>>(from first: Int, byRank rank: Ranks, sources: inout [Int32], raws: inout [Double])
    where Ranks.Index == Int {
        guard sources.count - first > 1 else { return }
        for c in (first + 1)..<sources.count {
            let (source, raw) = (sources[c], raws[c])
            var j = c
            while j > first, rank[rank.startIndex + Int(source)] < rank[rank.startIndex + Int(sources[j - 1])] {
                sources[j] = sources[j - 1]
                raws[j] = raws[j - 1]
                j -= 1
            }
            sources[j] = source
            raws[j] = raw
        }
    }
}
