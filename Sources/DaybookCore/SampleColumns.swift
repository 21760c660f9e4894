/// The samples of one (user, metric) as parallel arrays, one element per sample in the order
/// they were added: what the hour rollup reads (`HourRollup.rows(columns:…)`), without a
/// `Record` (and its uuid String) per sample.
///
/// `uuid[i]` is "" for a sample added without its uuid: only samples sharing their start and
/// end with another are ever told apart by uuid (`tiedPlaces`), and those get theirs.
struct SampleColumns {
    var start: [Int64] = []
    var end: [Int64] = []
    var value: [Double] = []
    var version: [Int64] = []
    /// The window's source and zone ids.
    var source: [Int32] = []
    var zone: [Int32] = []
    var uuid: [String] = []

    var count: Int { start.count }

    mutating func append(start: Int64, end: Int64, value: Double, version: Int64, source: Int32, zone: Int32, uuid: String) {
        self.start.append(start)
        self.end.append(end)
        self.value.append(value)
        self.version.append(version)
        self.source.append(source)
        self.zone.append(zone)
        self.uuid.append(uuid)
    }

    /// The samples as `Record`s (seq 0: hours never read it), for the paths that take records.
    func records() -> [Record] {
        (0..<count).map { i in
            Record(start: start[i], end: end[i], value: value[i], seq: 0, version: version[i], source: source[i], zone: zone[i], uuid: SampleUUID(uuid[i]))
        }
    }

    /// The columns a resolver and the sum order read, as buffers: valid only inside
    /// `withFields`. An array read costs a bounds check (and a mutation a uniqueness check),
    /// which in the resolver's heap and the hours' sort cost more than the comparisons; a
    /// buffer's subscript is checked in debug builds only.
    struct Fields {
        let start: UnsafeBufferPointer<Int64>
        let end: UnsafeBufferPointer<Int64>
        let value: UnsafeBufferPointer<Double>
        let version: UnsafeBufferPointer<Int64>
        let source: UnsafeBufferPointer<Int32>
        let zone: UnsafeBufferPointer<Int32>
        /// Read only when two samples tie on every other field (rare).
        let uuid: [String]

        /// `Record.precedesInSumOrder` over the buffers: by start, end, then uuid (UTF-8 order).
        @inline(__always)
        func precedesInSumOrder(_ a: Int, _ b: Int) -> Bool {
            if a == b { return false } // two pieces of one sample in one hour
            let sa = start[a], sb = start[b]
            if sa != sb { return sa < sb }
            let ea = end[a], eb = end[b]
            if ea != eb { return ea < eb }
            return uuid[a].utf8.lexicographicallyPrecedes(uuid[b].utf8)
        }
    }

    /// Calls `body` with the columns' storage (none of them is copied).
    func withFields<R>(_ body: (Fields) throws -> R) rethrows -> R {
        try start.withUnsafeBufferPointer { s in
            try end.withUnsafeBufferPointer { e in
                try value.withUnsafeBufferPointer { v in
                    try version.withUnsafeBufferPointer { ver in
                        try source.withUnsafeBufferPointer { src in
                            try zone.withUnsafeBufferPointer { z in
                                try body(Fields(start: s, end: e, value: v, version: ver, source: src, zone: z, uuid: uuid))
                            }
                        }
                    }
                }
            }
        }
    }

    /// The places of the samples that share their start and end with another (the only ones
    /// whose uuids a tie-break compares), ascending.
    /// Complexity: O(n + inversions) for starts nearly in order (`sortByKey`), the scan over
    /// buffers; a group of shared starts is sorted by end.
    func tiedPlaces() -> [Int] {
        let n = count
        guard n > 1 else { return [] }
        var keys = start // a copy on the sort's first write: one memcpy, not n appends
        var places = [Int32](unsafeUninitializedCapacity: n) { buffer, initialized in
            for i in 0..<n { buffer[i] = Int32(truncatingIfNeeded: i) }
            initialized = n
        }
        Self.sortByKey(&keys, &places)
        var out: [Int] = []
        keys.withUnsafeBufferPointer { keys in
            places.withUnsafeBufferPointer { places in
                var k = 0
                while k < n {
                    var last = k
                    while last + 1 < n, keys[last + 1] == keys[k] { last += 1 }
                    if last > k { // a shared start: its samples sharing an end too
                        let group = places[k...last].map(Int.init).sorted { end[$0] < end[$1] }
                        var g = 0
                        while g < group.count {
                            var h = g
                            while h + 1 < group.count, end[group[h + 1]] == end[group[g]] { h += 1 }
                            if h > g { out.append(contentsOf: group[g...h]) }
                            g = h + 1
                        }
                    }
                    k = last + 1
                }
            }
        }
        return out.sorted()
    }

    /// Sorts `keys` ascending, carrying `places` along (the order among equal keys is left
    /// unspecified). An insertion sort while the keys are nearly in order (a store's samples
    /// come in log order, which is nearly time order: ~1 step a sample), else a full sort.
    /// Complexity: O(n + inversions) up to 8n steps, then O(n log n).
    static func sortByKey(_ keys: inout [Int64], _ places: inout [Int32]) {
        let n = keys.count
        guard n > 1 else { return }
        var budget = 8 * n + 64
        var sorted = true
        keys.withUnsafeMutableBufferPointer { k in
            places.withUnsafeMutableBufferPointer { p in
                var i = 1
                while i < n {
                    let key = k[i]
                    if key < k[i - 1] {
                        let place = p[i]
                        var j = i
                        while j > 0, k[j - 1] > key {
                            k[j] = k[j - 1]
                            p[j] = p[j - 1]
                            j -= 1
                        }
                        k[j] = key
                        p[j] = place
                        budget -= i - j
                        if budget < 0 {
                            sorted = false
                            return
                        }
                    }
                    i += 1
                }
            }
        }
        guard !sorted else { return }
        var pairs = (0..<n).map { (key: keys[$0], place: places[$0]) }
        pairs.sort { $0.key < $1.key }
        for i in 0..<n {
            keys[i] = pairs[i].key
            places[i] = pairs[i].place
        }
    }
}
