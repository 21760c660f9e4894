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

    /// The runs of the timeline inside `[low, high)` (they may reach beyond it), in time
    /// order, adjacent runs of one winner merged: parallel arrays of start, end and winner.
    ///
    /// The sweep reads the columns, the rank table and its heap through buffers, and writes
    /// runs into buffers of their largest count: each step moves the time to another sample
    /// bound, so n samples give at most 2n runs.
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
        let n = order.count
        guard n > 0 else { return ([], [], []) }

        let runStart = UnsafeMutableBufferPointer<Int64>.allocate(capacity: 2 * n)
        let runEnd = UnsafeMutableBufferPointer<Int64>.allocate(capacity: 2 * n)
        let runWinner = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 2 * n)
        let heap = UnsafeMutableBufferPointer<Int32>.allocate(capacity: n)
        defer {
            runStart.deallocate()
            runEnd.deallocate()
            runWinner.deallocate()
            heap.deallocate()
        }
        let count = s.withFields { f in
            rank.withUnsafeBufferPointer { rank in
                keys.withUnsafeBufferPointer { keys in
                    order.withUnsafeBufferPointer { order in
                        let beats = Beats(f: f, rank: rank)
                        var runs = 0
                        var size = 0
                        var next = 0
                        var t = Int64.min
                        while next < n || size > 0 {
                            if size == 0 { t = keys[next] }
                            while next < n, keys[next] <= t {
                                beats.push(order[next], heap, &size)
                                next += 1
                            }
                            while size > 0, f.end[Int(heap[0])] <= t { beats.pop(heap, &size) }
                            guard size > 0 else { continue }
                            let winner = heap[0]
                            var until = f.end[Int(winner)]
                            if next < n { until = min(until, keys[next]) }
                            if runs > 0, runWinner[runs - 1] == winner, runEnd[runs - 1] == t {
                                runEnd[runs - 1] = until
                            } else {
                                runStart[runs] = t
                                runEnd[runs] = until
                                runWinner[runs] = winner
                                runs += 1
                            }
                            t = until
                        }
                        return runs
                    }
                }
            }
        }
        return (Array(runStart[..<count]), Array(runEnd[..<count]), Array(runWinner[..<count]))
    }

    /// The instants in `[low, high)` that count (`TimelineResolver.instants`' outcomes with no
    /// `shadowedBy`), in time order.
    /// `TimelineResolver.everySample` over the columns (`Aggregation.sum`): each interval
    /// sample overlapping `[low, high)` a run of its own over its whole span, by start.
    func everySample(low: Int64, high: Int64) -> (start: [Int64], end: [Int64], winner: [Int32]) {
        var order: [Int32] = []
        for i in 0..<s.count where s.start[i] != s.end[i] && s.end[i] > low && s.start[i] < high {
            order.append(Int32(truncatingIfNeeded: i))
        }
        order.sort { s.start[Int($0)] != s.start[Int($1)] ? s.start[Int($0)] < s.start[Int($1)] : $0 < $1 }
        return (order.map { s.start[Int($0)] }, order.map { s.end[Int($0)] }, order)
    }

    /// Every instant inside `[low, high)`, each counted (`Aggregation.sum`).
    func instants(low: Int64, high: Int64) -> [Int32] {
        (0..<s.count).filter { s.start[$0] == s.end[$0] && s.start[$0] >= low && s.start[$0] < high }.map { Int32(truncatingIfNeeded: $0) }
    }

    func countedInstants(low: Int64, high: Int64, runs: (start: [Int64], end: [Int64], winner: [Int32])) -> [Int32] {
        var order: [Int32] = []
        for i in 0..<s.count where s.start[i] == s.end[i] && s.start[i] >= low && s.start[i] < high {
            order.append(Int32(truncatingIfNeeded: i))
        }
        guard !order.isEmpty else { return [] }
        s.withFields { f in
            rank.withUnsafeBufferPointer { rank in
                let beats = Beats(f: f, rank: rank)
                order.sort { a, b in f.start[Int(a)] != f.start[Int(b)] ? f.start[Int(a)] < f.start[Int(b)] : beats(a, b) }
            }
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

}

/// `TimelineResolver.beats` over the columns' buffers, and the resolver's heap of places (best on top) in a
/// buffer of room for every sample: no bounds or uniqueness check per step.
private struct Beats {
    let f: SampleColumns.Fields
    let rank: UnsafeBufferPointer<Int32>

    @inline(__always)
    func callAsFunction(_ a: Int32, _ b: Int32) -> Bool {
        let a = Int(a), b = Int(b)
        let ra = rank[Int(f.source[a])], rb = rank[Int(f.source[b])]
        if ra != rb { return ra < rb }
        if f.version[a] != f.version[b] { return f.version[a] > f.version[b] }
        if f.start[a] != f.start[b] { return f.start[a] > f.start[b] }
        if f.end[a] != f.end[b] { return f.end[a] > f.end[b] }
        if f.value[a] != f.value[b] { return f.value[a] > f.value[b] }
        return f.uuid[b].utf8.lexicographicallyPrecedes(f.uuid[a].utf8)
    }

    @inline(__always)
    func push(_ x: Int32, _ items: UnsafeMutableBufferPointer<Int32>, _ size: inout Int) {
        var i = size
        size += 1
        while i > 0 {
            let p = (i - 1) >> 1
            guard self(x, items[p]) else { break }
            items[i] = items[p]
            i = p
        }
        items[i] = x
    }

    @inline(__always)
    func pop(_ items: UnsafeMutableBufferPointer<Int32>, _ size: inout Int) {
        size -= 1
        let n = size
        guard n > 0 else { return }
        let last = items[n]
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = l
            guard l < n else { break }
            if r < n, self(items[r], items[l]) { m = r }
            guard self(items[m], last) else { break }
            items[i] = items[m]
            i = m
        }
        items[i] = last
    }
}
