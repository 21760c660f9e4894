import DaybookSupport
/// What the log says about one (user, source) pair's syncing: when it last checked in,
/// when it last delivered a sample (the message's Kafka timestamp), the newest sample end
/// it delivered, and the metrics it syncs.
///
/// Every field only moves forward and `merge` is a max per field, so the state after a set
/// of events is the same in any order and with any event delivered twice: a rebuild, a
/// replay and the live projector agree.
public struct SourceSync: Hashable, Sendable {
    public var user: String
    public var source: String
    /// The latest `at` of the pair's `source-checked-in` events.
    public var lastCheckIn: Instant?
    /// The latest Kafka timestamp of the pair's `sample-added` messages (none when the
    /// events came from a file: `daybook rollup`).
    public var lastSampleDelivered: Instant?
    /// The latest end of a sample the pair delivered (deleted or not: a delivery is a fact).
    public var newestSampleEnd: Instant?
    /// The zone of that newest sample: the pair's civil days are counted in it.
    public var zone: String?
    /// Metrics the pair syncs: named by its check-ins or seen in its samples. Empty: not known.
    public var metrics: Set<Metric>

    public init(user: String, source: String, lastCheckIn: Instant? = nil, lastSampleDelivered: Instant? = nil,
                newestSampleEnd: Instant? = nil, zone: String? = nil, metrics: Set<Metric> = []) {
        self.user = user
        self.source = source
        self.lastCheckIn = lastCheckIn
        self.lastSampleDelivered = lastSampleDelivered
        self.newestSampleEnd = newestSampleEnd
        self.zone = zone
        self.metrics = metrics
    }

    /// The last sign of life: a check-in, or a delivered sample, whichever is later.
    public var lastSeen: Instant? {
        switch (lastCheckIn, lastSampleDelivered) {
        case let (a?, b?): return max(a, b)
        case let (a, b): return a ?? b
        }
    }

    /// Whether the pair speaks for `metric` (a pair whose metrics are not known speaks for all).
    public func covers(_ metric: Metric) -> Bool { metrics.isEmpty || metrics.contains(metric) }

    /// The civil day of the last sign of life, in the zone of the pair's newest sample
    /// (UTC when it never sent one). It and the days after it are unknown for the pair.
    public var lastSeenDay: CivilDay? {
        guard let seen = lastSeen else { return nil }
        guard let rules = zone.flatMap(ZoneRules.named) ?? ZoneRules.named("UTC") else {
            return CivilDay(number: Int32(floorDiv(seen.nanoseconds, Instant.nanosPerDay)))
        }
        return rules.day(of: seen)
    }

    /// The sources among `pairs` (one user's) that speak for `metric` and have not been
    /// heard from since `day` ended (in the pair's zone): their data for that day may still
    /// come, so the day is unknown rather than a total or "no data". That includes the day
    /// of the last sign of life itself: a check-in at 01:00 says nothing of the rest of the
    /// day. A pair that never gave a time (a log read from a file) claims nothing.
    /// Returns each such source with the day it was last heard from, by source.
    public static func silentSources(_ pairs: [SourceSync], metric: Metric, day: CivilDay) -> [(source: String, lastSeen: CivilDay)] {
        lastSeenDays(pairs, metric: metric).filter { day >= $0.lastSeen }
    }

    /// The sources among `pairs` that speak for `metric` and have given a time, with the day
    /// each was last heard from, by source: `silentSources` for every day at once (a reader
    /// of many days computes these once and filters them per day).
    public static func lastSeenDays(_ pairs: [SourceSync], metric: Metric) -> [(source: String, lastSeen: CivilDay)] {
        pairs.compactMap { pair -> (String, CivilDay)? in
            guard pair.covers(metric), let seen = pair.lastSeenDay else { return nil }
            return (pair.source, seen)
        }.sorted { $0.0 < $1.0 }
    }

    /// Merges what one delivered sample of the pair says: `merge(signOfLife(.sampleAdded(sample),
    /// deliveredAt:)!)`, in place (a batch notes every sample; this builds nothing per sample).
    public mutating func note(_ sample: Sample, deliveredAt: Instant?) {
        lastSampleDelivered = SourceSync.later(lastSampleDelivered, deliveredAt)
        takeNewest(end: sample.end, zone: sample.zone)
        metrics.insert(sample.metric)
    }

    /// Combines two states of the same pair: the later of each fact.
    public mutating func merge(_ other: SourceSync) {
        lastCheckIn = SourceSync.later(lastCheckIn, other.lastCheckIn)
        lastSampleDelivered = SourceSync.later(lastSampleDelivered, other.lastSampleDelivered)
        if let end = other.newestSampleEnd { takeNewest(end: end, zone: other.zone) }
        metrics.formUnion(other.metrics)
    }

    /// Keeps `end` and its zone if it is the newest sample end yet. Ties go to the greater
    /// zone name, so the order of merging never matters.
    private mutating func takeNewest(end: Instant, zone other: String?) {
        if newestSampleEnd.map({ end > $0 || (end == $0 && (other ?? "") > (zone ?? "")) }) ?? true {
            newestSampleEnd = end
            zone = other
        }
    }

    private static func later(_ a: Instant?, _ b: Instant?) -> Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return max(a, b)
    }

    /// How far a check-in's `at` may run ahead of its message's Kafka timestamp (clock skew
    /// between a phone and the producer). Beyond it, the check-in counts as of the message's
    /// timestamp plus this: a phone whose clock says 2199 must not look fresh forever.
    public static let clockSkewAllowance: Int64 = 10 * 60 * Instant.nanosPerSecond

    /// What one event says about its pair, if anything (a deletion names no source).
    /// - Parameter deliveredAt: the message's Kafka timestamp, when it came from Kafka; a
    ///   check-in's `at` is capped at it plus `clockSkewAllowance` (both are in the log,
    ///   so a rebuild caps the same way).
    public static func signOfLife(_ event: Event, deliveredAt: Instant?) -> SourceSync? {
        switch event {
        case .sampleAdded(let s):
            return SourceSync(user: s.user, source: s.source, lastSampleDelivered: deliveredAt,
                              newestSampleEnd: s.end, zone: s.zone, metrics: [s.metric])
        case .sourceCheckedIn(let c):
            var at = c.at
            if let deliveredAt {
                let (limit, overflow) = deliveredAt.nanoseconds.addingReportingOverflow(clockSkewAllowance)
                if !overflow, at.nanoseconds > limit { at = Instant(nanoseconds: limit) }
            }
            return SourceSync(user: c.user, source: c.source, lastCheckIn: at, metrics: Set(c.metrics ?? []))
        case .sampleDeleted:
            return nil
        }
    }
}

/// A (user, source) pair. Ordered as SQLite orders text: by UTF-8 bytes, user first.
public struct SyncKey: Hashable, Sendable, Comparable {
    public var user: String
    public var source: String
    public init(user: String, source: String) {
        self.user = user
        self.source = source
    }

    public static func < (a: SyncKey, b: SyncKey) -> Bool {
        if a.user != b.user { return a.user.utf8.lexicographicallyPrecedes(b.user.utf8) }
        return a.source.utf8.lexicographicallyPrecedes(b.source.utf8)
    }

    /// Names compare byte for byte, as the store keys them; hashed with `NameHash` (a batch
    /// looks a pair up once per event).
    public static func == (a: SyncKey, b: SyncKey) -> Bool {
        NameHash.sameBytes(a.user, b.user) && NameHash.sameBytes(a.source, b.source)
    }
    private var mixed: UInt64 { NameHash.of(user) &* 0x9E37_79B9_7F4A_7C15 ^ NameHash.of(source) }
    public func hash(into hasher: inout Hasher) { hasher.combine(mixed) }
    public func _rawHashValue(seed: Int) -> Int { NameHash.table(mixed, seed: seed) }
}
