extension HourRollup {
    /// A stretch of one sample's contribution inside one civil hour; nanos == -1 marks an
    /// instant counted in full.
    struct Piece {
        var hour: HourKey
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
            var lo: Int64 = 0, hi: Int64 = 0
            if let first = rules.offsets.first {
                lo = first
                hi = first
                for o in rules.offsets {
                    lo = min(lo, o)
                    hi = max(hi, o)
                }
            }
            low = min(low, Int64(days.lowerBound) * Instant.nanosPerDay - hi)
            high = max(high, (Int64(days.upperBound) + 1) * Instant.nanosPerDay - lo)
        }
        let resolver = ColumnResolver(s: s, rank: rank)
        let runs = resolver.runs(low: low, high: high)
        let instants = resolver.countedInstants(low: low, high: high, runs: runs)
        var dayRows: [(day: Int32, value: Double, bySource: [(source: Int32, value: Double)])] = []
        if anchors == nil {
            // No stored day rows to anchor on (a window of samples given in memory): the days
            // from the same runs, as `DayAttribution` sums them.
            let records = s.records()
            let dayRuns = runs.start.indices.map { Run(start: runs.start[$0], end: runs.end[$0], winner: Int(runs.winner[$0])) }
            var attribution = DayAttribution()
            attribution.attribute(runs: dayRuns, instants: instants.map { InstantOutcome(record: Int($0), shadowedBy: nil) },
                                  records: records, zones: zones, include: { days.contains($0) })
            dayRows = attribution.totals(records: records)
        }

        // The runs and instants cut into hours; a zone's rules copied out only when it changes.
        var pieces: [Piece] = []
        pieces.reserveCapacity(runs.start.count * 2 + instants.count)
        var zone: Int32 = -1
        var rules = zones.first ?? ZoneRules(identifier: "UTC", transitions: [], offsetSeconds: [0])
        for r in runs.start.indices {
            let winner = runs.winner[r]
            let winnerZone = s.zone[Int(winner)]
            if winnerZone != zone {
                zone = winnerZone
                rules = zones[Int(zone)]
            }
            rules.forEachHour(from: runs.start[r], to: runs.end[r]) { start, end, day, nanos in
                if days.contains(day) { pieces.append(Piece(hour: HourKey(day: day, start: start, end: end, zone: zone), record: winner, nanos: nanos)) }
            }
        }
        for index in instants {
            if s.zone[Int(index)] != zone {
                zone = s.zone[Int(index)]
                rules = zones[Int(zone)]
            }
            let hour = rules.hour(containing: s.start[Int(index)])
            if days.contains(hour.day) {
                pieces.append(Piece(hour: HourKey(day: hour.day, start: hour.start, end: hour.end, zone: zone), record: index, nanos: -1))
            }
        }
        orderBySumOrder(&pieces, s)

        // Raw contributions per (hour, source), as `rows(records:…)` sums them.
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
                let index = Int(pieces[i].record)
                var nanos: Int64 = 0
                var whole = false
                while i < pieces.count, pieces[i].hour == key, pieces[i].record == Int32(truncatingIfNeeded: index) {
                    if pieces[i].nanos < 0 { whole = true } else { nanos += pieces[i].nanos }
                    i += 1
                }
                let value = s.value[index]
                let contribution = whole ? value : value * (Double(nanos) / Double(s.end[index] - s.start[index]))
                let source = s.source[index]
                var k = first
                while k < cellSources.count, cellSources[k] != source { k += 1 }
                if k < cellSources.count {
                    cellRaws[k] += contribution
                } else {
                    cellSources.append(source)
                    cellRaws.append(contribution)
                }
            }
            if cellSources.count - first > 1 {
                for c in (first + 1)..<cellSources.count {
                    let (source, raw) = (cellSources[c], cellRaws[c])
                    var j = c
                    while j > first, rank[Int(source)] < rank[Int(cellSources[j - 1])] {
                        cellSources[j] = cellSources[j - 1]
                        cellRaws[j] = cellRaws[j - 1]
                        j -= 1
                    }
                    cellSources[j] = source
                    cellRaws[j] = raw
                }
            }
            keys.append(key)
            cellEnds.append(cellSources.count)
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

    /// `orderBySumOrder(_:records:)` over columns: by hour, then the samples' sum order.
    static func orderBySumOrder(_ pieces: inout [Piece], _ s: SampleColumns) {
        var byHour = true
        for i in pieces.indices.dropFirst() where pieces[i].hour < pieces[i - 1].hour {
            byHour = false
            break
        }
        guard byHour else {
            var order = Array(0..<s.count)
            order.sort { s.precedesInSumOrder($0, $1) }
            var sumRank = [Int32](repeating: 0, count: s.count)
            for (place, index) in order.enumerated() { sumRank[index] = Int32(place) }
            pieces.sort { a, b in a.hour != b.hour ? a.hour < b.hour : sumRank[Int(a.record)] < sumRank[Int(b.record)] }
            return
        }
        var first = 0
        while first < pieces.count {
            var end = first + 1
            while end < pieces.count, pieces[end].hour == pieces[first].hour { end += 1 }
            if end - first > 32 {
                pieces[first..<end].sort { s.precedesInSumOrder(Int($0.record), Int($1.record)) }
            } else if end - first > 1 {
                for i in (first + 1)..<end {
                    let piece = pieces[i]
                    var j = i
                    while j > first, s.precedesInSumOrder(Int(piece.record), Int(pieces[j - 1].record)) {
                        pieces[j] = pieces[j - 1]
                        j -= 1
                    }
                    pieces[j] = piece
                }
            }
            first = end
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
