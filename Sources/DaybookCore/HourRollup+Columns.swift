extension HourRollup {
    /// A stretch of one sample's contribution inside one civil hour (`keys[hour]` of the
    /// hours met); nanos == -1 marks an instant counted in full. 16 bytes: the hour sort
    /// moves these, not the hour's 32-byte key.
    struct Piece {
        var hour: Int32
        var record: Int32
        var nanos: Int64
    }

    /// `rows(records:…)` over `SampleColumns` (a store's window): the same rows, to the bit,
    /// from the same rules, with the resolver over flat arrays (`ColumnResolver`) and only the
    /// samples that can reach the civil days `days` in some zone of `zones` resolved.
    static func rows(columns s: SampleColumns, rank: [Int32], zones: [ZoneRules], sources: [String], user: String, metric: Metric,
                     days: ClosedRange<Int32>, anchors: [Int32: Double]? = nil) -> (hours: [HourTotal], days: [DayTotal]) {
        guard metric.isCumulative else {
            return (discrete(records: s.records(), zones: zones, user: user, metric: metric, days: days), [])
        }
        // The instants any of the zones counts in these civil days: a civil day d of a zone
        // whose offsets lie in [lo, hi] is within [d·day − hi, (d+1)·day − lo).
        var low = Int64.max, high = Int64.min
        for rules in zones {
            let (lo, hi) = rules.offsetRange
            low = min(low, Int64(days.lowerBound) * Instant.nanosPerDay - hi)
            high = max(high, (Int64(days.upperBound) + 1) * Instant.nanosPerDay - lo)
        }
        let resolver = ColumnResolver(s: s, rank: rank)
        let runs = metric.countsEverySample ? resolver.everySample(low: low, high: high) : resolver.runs(low: low, high: high)
        let instants = metric.countsEverySample ? resolver.instants(low: low, high: high)
            : resolver.countedInstants(low: low, high: high, runs: runs)
        var dayRows: [(day: Int32, value: Double, bySource: [(source: Int32, value: Double)])] = []
        if anchors == nil {
            // No stored day rows to anchor on (a window of samples given in memory): the days
            // from the same runs, as `DayAttribution` sums them.
            let records = s.records()
            let dayRuns = runs.start.indices.map { Run(start: runs.start[$0], end: runs.end[$0], winner: Int(runs.winner[$0])) }
            var attribution = DayAttribution()
            attribution.attribute(runs: dayRuns, instants: instants.map { InstantOutcome(record: Int($0), shadowedBy: nil) },
                                  records: records, zones: zones, include: { days.contains($0) })
            dayRows = attribution.totals(records: records, countsTime: metric.countsTime)
        }

        // The runs and instants cut into hours (a cursor per zone: a zone's hours are found
        // again only when a run leaves the last one), each distinct hour's key kept once in the
        // order met, its pieces pointing at it.
        // Everything the loops below write is a local of the closure (captured from outside,
        // each array's every append went through memory), handed out at its end.
        let countsTime = metric.countsTime
        let (keys, cellEnds, cellSources, cellRaws) = s.withFields { f in
            var keys: [HourKey] = []
            var pieces: [Piece] = []
            pieces.reserveCapacity(runs.start.count * 2 + instants.count)
            var byHour = true // every hour met after the ones before it: pieces already by hour
            var zone: Int32 = -1
            var hours = HourCursor(zones.first ?? ZoneRules(identifier: "UTC", transitions: [], offsetSeconds: [0]))
            @inline(__always)
            func add(_ record: Int32, _ nanos: Int64) {
                guard days.contains(hours.day) else { return }
                if let last = keys.last, last.start == hours.start, last.end == hours.end, last.zone == zone, last.day == hours.day {
                    pieces.append(Piece(hour: Int32(keys.count - 1), record: record, nanos: nanos))
                    return
                }
                let key = HourKey(day: hours.day, start: hours.start, end: hours.end, zone: zone)
                if let last = keys.last, !(last < key) { byHour = false }
                keys.append(key)
                pieces.append(Piece(hour: Int32(keys.count - 1), record: record, nanos: nanos))
            }
            for r in runs.start.indices {
                let winner = runs.winner[r]
                if f.zone[Int(winner)] != zone {
                    zone = f.zone[Int(winner)]
                    hours = HourCursor(zones[Int(zone)])
                }
                var a = runs.start[r]
                let end = runs.end[r]
                while a < end {
                    hours.move(to: a)
                    let pieceEnd = min(end, hours.end)
                    add(winner, pieceEnd - a)
                    a = pieceEnd
                }
            }
            for index in instants {
                if f.zone[Int(index)] != zone {
                    zone = f.zone[Int(index)]
                    hours = HourCursor(zones[Int(zone)])
                }
                hours.move(to: f.start[Int(index)])
                add(index, -1)
            }
            orderBySumOrder(&pieces, keys: keys, byHour: byHour, f)

            // Raw contributions per (hour, source), as `rows(records:…)` sums them.
            var cellEnds: [Int] = []
            var cellSources: [Int32] = []
            var cellRaws: [Double] = []
            cellSources.reserveCapacity(pieces.count)
            cellRaws.reserveCapacity(pieces.count)
            var distinct: [HourKey] = []
            distinct.reserveCapacity(keys.count)
            rank.withUnsafeBufferPointer { rank in
                keys.withUnsafeBufferPointer { keys in
                    pieces.withUnsafeBufferPointer { pieces in
                        var i = 0
                        while i < pieces.count {
                            let hour = pieces[i].hour
                            let key = keys[Int(hour)]
                            let first = cellSources.count
                            while i < pieces.count, pieces[i].hour == hour || keys[Int(pieces[i].hour)] == key {
                                let index = Int(pieces[i].record)
                                var nanos: Int64 = 0
                                var whole = false
                                while i < pieces.count, pieces[i].record == Int32(truncatingIfNeeded: index),
                                      pieces[i].hour == hour || keys[Int(pieces[i].hour)] == key {
                                    if pieces[i].nanos < 0 { whole = true } else { nanos += pieces[i].nanos }
                                    i += 1
                                }
                                let contribution = DayAttribution.contribution(value: f.value[index], start: f.start[index], end: f.end[index],
                                                                               nanos: nanos, whole: whole, countsTime: countsTime)
                                HourRollup.addToCell(contribution, of: f.source[index], from: first, sources: &cellSources, raws: &cellRaws)
                            }
                            HourRollup.sortCells(from: first, byRank: rank, sources: &cellSources, raws: &cellRaws)
                            distinct.append(key)
                            cellEnds.append(cellSources.count)
                        }
                    }
                }
            }
            return (distinct, cellEnds, cellSources, cellRaws)
        }

        var dayValue = anchors ?? [:]
        for row in dayRows { dayValue[row.day] = row.value }
        let out = hourTotals(keys: keys, cellEnds: cellEnds, cellSources: cellSources, cellRaws: cellRaws, dayValue: dayValue,
                             zones: zones, sources: sources, user: user, metric: metric)
        let dayTotals = dayRows.map { row in
            DayTotal(key: DayKey(user: user, metric: metric, day: CivilDay(number: row.day)),
                     summary: .cumulative(value: row.value, sources: row.bySource
                        .sorted { rank[Int($0.source)] < rank[Int($1.source)] }
                        .map { SourceShare(source: sources[Int($0.source)], value: $0.value) }))
        }
        return (merged(out, rank: { name in sources.firstIndex(of: name).map { rank[$0] } ?? Int32.max }), dayTotals)
    }

    /// `orderBySumOrder(_:records:)` over columns: by hour (`keys[piece.hour]`), then the
    /// samples' sum order. When `byHour` (each hour met after the ones before it) the pieces
    /// are already by hour and only each hour's few are sorted, in place in their buffer.
    /// Complexity: O(p + inversions) by hour (a sort for an hour of over 32 pieces), else
    /// O(n log n + p log p).
    static func orderBySumOrder(_ pieces: inout [Piece], keys: [HourKey], byHour: Bool, _ f: SampleColumns.Fields) {
        guard byHour else {
            var order = Array(0..<f.start.count)
            order.sort { f.precedesInSumOrder($0, $1) }
            var sumRank = [Int32](repeating: 0, count: f.start.count)
            for (place, index) in order.enumerated() { sumRank[index] = Int32(place) }
            pieces.sort { a, b in
                let x = keys[Int(a.hour)], y = keys[Int(b.hour)]
                return x != y ? x < y : sumRank[Int(a.record)] < sumRank[Int(b.record)]
            }
            return
        }
        pieces.withUnsafeMutableBufferPointer { p in
            var first = 0
            while first < p.count {
                var end = first + 1
                while end < p.count, p[end].hour == p[first].hour { end += 1 }
                if end - first > 32 {
                    p[first..<end].sort { f.precedesInSumOrder(Int($0.record), Int($1.record)) }
                } else if end - first > 1 {
                    for i in (first + 1)..<end {
                        let piece = p[i]
                        var j = i
                        while j > first, f.precedesInSumOrder(Int(piece.record), Int(p[j - 1].record)) {
                            p[j] = p[j - 1]
                            j -= 1
                        }
                        p[j] = piece
                    }
                }
                first = end
            }
        }
    }

    /// The `HourTotal` rows of hours `keys` (in order), hour h's cells ending at `cellEnds[h]`,
    /// each day's cells apportioned from `dayValue[day]` (else their raw sum).
    static func hourTotals(keys: [HourKey], cellEnds: [Int], cellSources: [Int32], cellRaws: [Double], dayValue: [Int32: Double],
                           zones: [ZoneRules], sources: [String], user: String, metric: Metric) -> [HourTotal] {
        var out: [HourTotal] = []
        out.reserveCapacity(keys.count)
        var zone: Int32 = -1
        var rules = zones.first ?? ZoneRules(identifier: "UTC", transitions: [], offsetSeconds: [0])
        var h = 0
        while h < keys.count {
            let day = keys[h].day
            var last = h
            while last + 1 < keys.count, keys[last + 1].day == day { last += 1 }
            let dayCells = (h == 0 ? 0 : cellEnds[h - 1])..<cellEnds[last]
            let raws = cellRaws[dayCells]
            let micros = apportion(raws, total: dayValue[day] ?? raws.reduce(0, +))
            var cell = dayCells.lowerBound
            for hour in h...last {
                let key = keys[hour]
                var shares: [SourceShare] = []
                shares.reserveCapacity(cellEnds[hour] - cell)
                var microSum: Int64 = 0
                var rawSum = 0.0
                while cell < cellEnds[hour] {
                    let v: Double
                    if let micros {
                        let m = micros[cell - dayCells.lowerBound]
                        microSum += m
                        v = Double(m) / 1e6
                    } else {
                        rawSum += cellRaws[cell]
                        v = cellRaws[cell]
                    }
                    shares.append(SourceShare(source: sources[Int(cellSources[cell])], value: v))
                    cell += 1
                }
                if key.zone != zone {
                    zone = key.zone
                    rules = zones[Int(zone)]
                }
                out.append(HourTotal(
                    key: DayKey(user: user, metric: metric, day: CivilDay(number: key.day)),
                    start: Instant(nanoseconds: key.start), startOffsetSeconds: rules.offsetSeconds(at: Instant(nanoseconds: key.start)),
                    end: Instant(nanoseconds: key.end), endOffsetSeconds: rules.offsetSeconds(at: Instant(nanoseconds: key.end)),
                    summary: .cumulative(value: micros == nil ? rawSum : Double(microSum) / 1e6, sources: shares)))
            }
            h = last + 1
        }
        return out
    }
}
