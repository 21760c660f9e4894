/// How long each source may stay silent, when a source's silence pages, and which pairs
/// are canaries (configured to never check in, so that every run proves the detector fires).
public struct FreshnessPolicy: Sendable, Equatable {
    /// A source's rule: silent longer than `threshold` is stale (nil: never stale, e.g.
    /// manual entries); page when at least `pageFraction` of its users are stale.
    public struct Rule: Sendable, Equatable {
        public var threshold: Duration?
        public var pageFraction: Double
        public init(threshold: Duration?, pageFraction: Double) {
            self.threshold = threshold
            self.pageFraction = pageFraction
        }
    }

    public var defaultRule: Rule
    public var sources: [String: Rule]
    public var canaries: [SyncKey]

    public init(defaultRule: Rule = Rule(threshold: .seconds(36 * 3600), pageFraction: 0.25),
                sources: [String: Rule] = [:], canaries: [SyncKey] = []) {
        self.defaultRule = defaultRule
        self.sources = sources
        self.canaries = canaries
    }

    public func rule(for source: String) -> Rule { sources[source] ?? defaultRule }
}

/// One pair found silent past its source's threshold.
public struct StalePair: Sendable, Equatable {
    public var user: String
    public var source: String
    /// Its last sign of life; nil if it never gave one (a canary not in the log).
    public var lastSeen: Instant?
    /// How long it has been silent at `now` (nil: never heard from).
    public var silence: Duration?
    public var threshold: Duration
    public var isCanary: Bool
}

/// A source's share of stale users (canaries left out).
public struct SourceFreshness: Sendable, Equatable {
    public var source: String
    public var users: Int
    public var stale: Int
    public var pageFraction: Double
    public var fraction: Double { users == 0 ? 0 : Double(stale) / Double(users) }
    /// Pages when some user is stale and the stale share reached the page fraction.
    public var pages: Bool { stale > 0 && fraction >= pageFraction }
}

/// What `daybook stale` reports.
public struct StaleReport: Sendable {
    public var now: Instant
    /// Stale pairs, by source then user.
    public var stale: [StalePair]
    /// Every source with a pair or a rule, by name.
    public var sources: [SourceFreshness]
    public var pages: Bool { sources.contains(where: \.pages) }
}

/// Finds the (user, source) pairs silent past their source's threshold.
///
/// The rule is a parameter so that the canary check (`CanaryCheck`), which is written
/// apart from it, can be shown to catch a broken one.
public struct StaleDetector: Sendable {
    /// Whether a pair last seen at `lastSeen` (nil: never) is silent past `threshold` at `now`.
    public typealias Rule = @Sendable (_ lastSeen: Instant?, _ now: Instant, _ threshold: Duration) -> Bool

    /// Never heard from is stale; otherwise silent for longer than the threshold.
    public static let standardRule: Rule = { lastSeen, now, threshold in
        guard let lastSeen else { return true }
        return silence(since: lastSeen, now: now) > threshold
    }

    public let policy: FreshnessPolicy
    public let isSilent: Rule

    public init(policy: FreshnessPolicy, rule: @escaping Rule = StaleDetector.standardRule) {
        self.policy = policy
        isSilent = rule
    }

    /// `now − lastSeen`, exact over the whole accepted range (Duration does not overflow
    /// where Int64 nanoseconds would, past 292 years).
    static func silence(since lastSeen: Instant, now: Instant) -> Duration {
        .nanoseconds(now.nanoseconds) - .nanoseconds(lastSeen.nanoseconds)
    }

    /// Reads every pair once (a shard at a time is fine: memory grows with the stale
    /// pairs and the sources, not with all pairs).
    public func evaluate(pairs: some Sequence<SourceSync>, now: Instant) -> StaleReport {
        var evaluation = Evaluation(detector: self, now: now)
        for pair in pairs { evaluation.add(pair) }
        return evaluation.finish()
    }

    /// An evaluation fed pair by pair (a reader streaming the shards).
    public struct Evaluation {
        let detector: StaleDetector
        let now: Instant
        private let canaries: Set<SyncKey>
        private var canariesSeen = Set<SyncKey>()
        private var stale: [StalePair] = []
        private var users: [String: Int] = [:]
        private var staleUsers: [String: Int] = [:]
        /// Whether stale pairs other than canaries are kept for the report (false: counted only).
        private let keepPairs: Bool
        /// The canaries the data has no pair for (filled by `finish`).
        public private(set) var canariesNeverSeen: [SyncKey] = []

        public init(detector: StaleDetector, now: Instant, keepPairs: Bool = true) {
            self.detector = detector
            self.now = now
            self.keepPairs = keepPairs
            canaries = Set(detector.policy.canaries)
        }

        public mutating func add(_ pair: SourceSync) {
            let key = SyncKey(user: pair.user, source: pair.source)
            let isCanary = canaries.contains(key)
            if isCanary { canariesSeen.insert(key) } else { users[pair.source, default: 0] += 1 }
            check(key, lastSeen: pair.lastSeen, isCanary: isCanary)
        }

        private mutating func check(_ key: SyncKey, lastSeen: Instant?, isCanary: Bool) {
            guard let threshold = detector.policy.rule(for: key.source).threshold,
                  detector.isSilent(lastSeen, now, threshold) else { return }
            if !isCanary { staleUsers[key.source, default: 0] += 1 }
            guard keepPairs || isCanary else { return }
            stale.append(StalePair(user: key.user, source: key.source, lastSeen: lastSeen,
                                   silence: lastSeen.map { StaleDetector.silence(since: $0, now: now) },
                                   threshold: threshold, isCanary: isCanary))
        }

        public mutating func finish() -> StaleReport {
            // A canary the log has never heard of is a pair too: never seen.
            for canary in detector.policy.canaries where !canariesSeen.contains(canary) {
                canariesSeen.insert(canary)
                canariesNeverSeen.append(canary)
                check(canary, lastSeen: nil, isCanary: true)
            }
            let names = Set(users.keys).union(detector.policy.sources.keys).union(stale.map(\.source))
            let sources = names.sorted().map { name in
                SourceFreshness(source: name, users: users[name] ?? 0, stale: staleUsers[name] ?? 0,
                                pageFraction: detector.policy.rule(for: name).pageFraction)
            }
            let sorted = stale.sorted { ($0.source, $0.user) < ($1.source, $1.user) }
            return StaleReport(now: now, stale: sorted, sources: sources)
        }
    }
}

/// Proves the detector fires: every canary must be among the stale pairs of a report.
/// Kept apart from `StaleDetector` on purpose; it shares no code with the rule it checks.
public enum CanaryCheck {
    /// The canaries the report failed to list as stale (empty: the detector fired for all).
    public static func unreported(_ canaries: [SyncKey], in report: StaleReport) -> [SyncKey] {
        let reported = Set(report.stale.map { SyncKey(user: $0.user, source: $0.source) })
        return canaries.filter { !reported.contains($0) }
    }
}

/// What one judgement of freshness says: the report, and whether the detector proved itself.
///
/// A canary never checks in, so it must be in every report; one that is not means the
/// thresholds or the rule are broken, and real silence may go unreported too.
public struct FreshnessJudgement: Sendable {
    public var report: StaleReport
    /// Canaries the report does not list as stale: the detector is broken (empty: it fired).
    public var unreported: [SyncKey]
    /// Canaries the data has no pair for (they prove only that never-seen pairs are reported).
    public var canariesNeverSeen: [SyncKey]

    /// True when every canary was reported stale.
    public var detectorFired: Bool { unreported.isEmpty }
}

extension StaleDetector.Evaluation {
    /// Finishes the evaluation and checks its report against the canaries (`CanaryCheck`,
    /// which shares no code with the rule it checks).
    public mutating func judge() -> FreshnessJudgement {
        let report = finish()
        return FreshnessJudgement(report: report, unreported: CanaryCheck.unreported(detector.policy.canaries, in: report),
                                  canariesNeverSeen: canariesNeverSeen)
    }
}
