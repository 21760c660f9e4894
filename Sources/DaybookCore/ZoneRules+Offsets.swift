extension ZoneRules {
    /// The smallest and the largest UTC offset (ns) the zone has from 1900 to 2200 (0 and 0
    /// for rules of no offset): a civil day `d` of the zone lies within
    /// `[d·day − max, (d+1)·day − min)`.
    public var offsetRange: (min: Int64, max: Int64) {
        guard var low = offsets.first else { return (0, 0) }
        var high = low
        for o in offsets {
            low = min(low, o)
            high = max(high, o)
        }
        return (low, high)
    }
}
