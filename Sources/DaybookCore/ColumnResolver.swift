/// `TimelineResolver` over `SampleColumns`: the same rules and the same runs and instant
/// outcomes, computed over flat arrays (a sort of plain start keys, a heap of integer places)
/// instead of `Record`s, and only for the samples that overlap `[low, high)`.
///
/// Which sample wins an instant depends only on the samples covering it, so the runs inside
/// `[low, high)` and the outcomes of the instants inside it are the same as a resolver of
/// every sample gives (runs may be cut at other places, never won by another sample).
///
/// Complexity: O(n + inversions) to order n samples that come nearly in time order (else
/// O(n log n)), O(n log n) for the heap.
struct ColumnResolver {
    let s: SampleColumns
    /// Rank of each source id: lower is better.
    let rank: [Int32]

    /// `TimelineResolver.beats` over the columns.
    @inline(__always)
    func beats(_ a: Int32, _ b: Int32) -> Bool {
        let a = Int(a), b = Int(b)
        let ra = rank[Int(s.source[a])], rb = rank[Int(s.source[b])]
        if ra != rb { return ra < rb }
        if s.version[a] != s.version[b] { return s.version[a] > s.version[b] }
        if s.start[a] != s.start[b] { return s.start[a] > s.start[b] }
        if s.end[a] != s.end[b] { return s.end[a] > s.end[b] }
        if s.value[a] != s.value[b] { return s.value[a] > s.value[b] }
        return s.uuid[b].utf8.lexicographicallyPrecedes(s.uuid[a].utf8)
    }

    /// The runs of the timeline inside `[low, high)` (they may reach beyond it), in time
    /// order, adjacent runs of one winner merged: parallel arrays of start, end and winner.
    func runs(low: Int64, high: Int64) -> (start: [Int64], end: [Int64], winner: [Int32]) {
        var keys: [Int64] = []
        var order: [Int32] = []
        keys.reserveCapacity(s.count)
        order.reserveCapacity(s.count)
        for i in 0..<s.count {
            let a = s.start[i], b = s.end[i]
            if a != b, b > low, a < high {
                keys.append(a)
                order.append(Int32(truncatingIfNeeded: i))
            }
        }
        SampleColumns.sortByKey(&keys, &order)

        var runStart: [Int64] = [], runEnd: [Int64] = [], runWinner: [Int32] = []
        runStart.reserveCapacity(order.count)
        runEnd.reserveCapacity(order.count)
        runWinner.reserveCapacity(order.count)
        var heap: [Int32] = []
        var next = 0
        var t = Int64.min
        while next < order.count || !heap.isEmpty {
            if heap.isEmpty { t = keys[next] }
            while next < order.count, keys[next] <= t {
                push(order[next], &heap)
                next += 1
            }
            while let top = heap.first, s.end[Int(top)] <= t { pop(&heap) }
            guard let winner = heap.first else { continue }
            var until = s.end[Int(winner)]
            if next < order.count { until = min(until, keys[next]) }
            if let last = runWinner.last, last == winner, runEnd[runEnd.count - 1] == t {
                runEnd[runEnd.count - 1] = until
            } else {
                runStart.append(t)
                runEnd.append(until)
                runWinner.append(winner)
            }
            t = until
        }
        return (runStart, runEnd, runWinner)
    }

    /// The instants in `[low, high)` that count (`TimelineResolver.instants`' outcomes with no
    /// `shadowedBy`), in time order.
    func countedInstants(low: Int64, high: Int64, runs: (start: [Int64], end: [Int64], winner: [Int32])) -> [Int32] {
        var order: [Int32] = []
        for i in 0..<s.count where s.start[i] == s.end[i] && s.start[i] >= low && s.start[i] < high {
            order.append(Int32(truncatingIfNeeded: i))
        }
        guard !order.isEmpty else { return [] }
        order.sort { a, b in
            s.start[Int(a)] != s.start[Int(b)] ? s.start[Int(a)] < s.start[Int(b)] : beats(a, b)
        }
        var out: [Int32] = []
        var r = 0
        var best: Int32 = -1
        for i in order {
            let t = s.start[Int(i)]
            if best >= 0, s.start[Int(best)] == t { continue } // a better instant at the same moment
            best = i
            while r < runs.start.count, runs.end[r] <= t { r += 1 }
            if r < runs.start.count, runs.start[r] <= t, rank[Int(s.source[Int(runs.winner[r])])] < rank[Int(s.source[Int(i)])] {
                continue // an interval of a higher-ranked source covers it
            }
            out.append(i)
        }
        return out
    }

    @inline(__always)
    private func push(_ x: Int32, _ items: inout [Int32]) {
        items.append(x)
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) >> 1
            guard beats(items[i], items[p]) else { break }
            items.swapAt(i, p)
            i = p
        }
    }

    @inline(__always)
    private func pop(_ items: inout [Int32]) {
        let last = items.removeLast()
        guard !items.isEmpty else { return }
        items[0] = last
        var i = 0
        let n = items.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < n, beats(items[l], items[m]) { m = l }
            if r < n, beats(items[r], items[m]) { m = r }
            if m == i { return }
            items.swapAt(i, m)
            i = m
        }
    }
}
