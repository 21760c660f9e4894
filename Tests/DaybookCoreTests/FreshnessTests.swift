@testable import DaybookCore
import DaybookSupport
import DaybookTestSupport
import Testing

/// Check-ins, sync state, the stale detector and the canary check, by hand-built fixtures.
struct FreshnessTests {
    static func at(_ text: String) -> Instant { try! Instant(rfc3339: text) }

    static let now = at("2026-11-30T12:00:00Z")

    /// watch 12 h, phone 24 h, anything else 36 h; page at half of a source's users.
    static let policy = FreshnessPolicy(
        defaultRule: .init(threshold: .seconds(36 * 3600), pageFraction: 0.5),
        sources: ["watch": .init(threshold: .seconds(12 * 3600), pageFraction: 0.5),
                  "phone": .init(threshold: .seconds(24 * 3600), pageFraction: 0.5)])

    /// Silence at `now` (2026-11-30T12:00Z), by pair:
    /// - ana/watch checked in 06:00 → 6 h < 12 h: fresh
    /// - ana/phone checked in 11-29 06:00 → 30 h > 24 h: STALE (the one stale pair)
    /// - bob/watch checked in 01:00 (11 h), sample delivered 11-29 → last seen 11 h ago: fresh
    /// - bob/phone checked in 11-27, but a sample delivered 11-29 13:00 → 23 h: fresh
    ///   (a delivered sample is a sign of life too)
    /// - cai/scale (the default, 36 h) checked in 11-29 01:00 → 35 h: fresh
    static func pairs(anaPhoneCheckIn: String = "2026-11-29T06:00:00Z") -> [SourceSync] {
        [SourceSync(user: "ana", source: "watch", lastCheckIn: at("2026-11-30T06:00:00Z")),
         SourceSync(user: "ana", source: "phone", lastCheckIn: at(anaPhoneCheckIn)),
         SourceSync(user: "bob", source: "watch", lastCheckIn: at("2026-11-30T01:00:00Z"), lastSampleDelivered: at("2026-11-29T00:00:00Z")),
         SourceSync(user: "bob", source: "phone", lastCheckIn: at("2026-11-27T00:00:00Z"), lastSampleDelivered: at("2026-11-29T13:00:00Z")),
         SourceSync(user: "cai", source: "scale", lastCheckIn: at("2026-11-29T01:00:00Z"))]
    }

    @Test func aDeliberatelyStalePairIsExactlyWhatIsReported() {
        let report = StaleDetector(policy: Self.policy).evaluate(pairs: Self.pairs(), now: Self.now)
        #expect(report.stale.map { "\($0.user)/\($0.source)" } == ["ana/phone"])
        #expect(report.stale.first?.silence == .seconds(30 * 3600))
        #expect(report.stale.first?.threshold == .seconds(24 * 3600))
        // phone: 1 of 2 users stale = 0.5 ≥ 0.5 pages; watch 0 of 2; scale 0 of 1.
        let phone = report.sources.first { $0.source == "phone" }
        #expect(phone?.users == 2 && phone?.stale == 1 && phone?.fraction == 0.5 && phone?.pages == true)
        #expect(report.sources.map(\.source) == ["phone", "scale", "watch"])
        #expect(report.pages)
    }

    @Test func itsNegativeTwinWithTheCheckInMovedForwardIsSilent() {
        // ana/phone checked in at 11-29 13:00 instead: 23 h < 24 h.
        let report = StaleDetector(policy: Self.policy).evaluate(pairs: Self.pairs(anaPhoneCheckIn: "2026-11-29T13:00:00Z"), now: Self.now)
        #expect(report.stale.isEmpty)
        #expect(!report.pages)
        // Exactly at the threshold is not yet past it.
        let edge = StaleDetector(policy: Self.policy).evaluate(pairs: Self.pairs(anaPhoneCheckIn: "2026-11-29T12:00:00Z"), now: Self.now)
        #expect(edge.stale.isEmpty)
        let past = StaleDetector(policy: Self.policy).evaluate(pairs: Self.pairs(anaPhoneCheckIn: "2026-11-29T11:59:59Z"), now: Self.now)
        #expect(past.stale.map(\.user) == ["ana"])
    }

    @Test func pagingIsOnTheShareOfASourcesUsersNotOnIndividuals() {
        var policy = Self.policy
        policy.sources["phone"]?.pageFraction = 0.6 // 1 of 2 = 0.5 < 0.6
        let report = StaleDetector(policy: policy).evaluate(pairs: Self.pairs(), now: Self.now)
        #expect(report.stale.count == 1 && !report.pages)
        // A page fraction of 0 pages on any one stale user, but never on none.
        policy.sources["phone"]?.pageFraction = 0
        #expect(StaleDetector(policy: policy).evaluate(pairs: Self.pairs(), now: Self.now).pages)
        #expect(!StaleDetector(policy: policy).evaluate(pairs: Self.pairs(anaPhoneCheckIn: "2026-11-30T00:00:00Z"), now: Self.now).pages)
    }

    @Test func aThresholdOfNeverIsNeverStale() {
        var policy = Self.policy
        policy.sources["phone"] = .init(threshold: nil, pageFraction: 0.5)
        #expect(StaleDetector(policy: policy).evaluate(pairs: Self.pairs(), now: Self.now).stale.isEmpty)
    }

    // MARK: Canaries

    /// canary-w/watch checked in once, 3 days ago; canary-p/phone never (not in the log).
    static let canaries = [SyncKey(user: "canary-w", source: "watch"), SyncKey(user: "canary-p", source: "phone")]
    static let canaryPairs = pairs() + [SourceSync(user: "canary-w", source: "watch", lastCheckIn: at("2026-11-27T12:00:00Z"))]

    @Test func canariesAreReportedAndNeverCountTowardThePageFraction() {
        var policy = Self.policy
        policy.canaries = Self.canaries
        let report = StaleDetector(policy: policy).evaluate(pairs: Self.canaryPairs, now: Self.now)
        #expect(report.stale.map { "\($0.user)/\($0.source)/\($0.isCanary)" } == ["ana/phone/false", "canary-p/phone/true", "canary-w/watch/true"])
        #expect(report.stale.first { $0.user == "canary-p" }?.lastSeen == nil)
        #expect(CanaryCheck.unreported(Self.canaries, in: report).isEmpty)
        // phone still 1 stale of 2 users, watch 0 of 2: the canaries are in neither count.
        #expect(report.sources.first { $0.source == "phone" }.map { "\($0.users) \($0.stale)" } == "2 1")
        #expect(report.sources.first { $0.source == "watch" }.map { "\($0.users) \($0.stale)" } == "2 0")
    }

    @Test func aThresholdInTheWrongUnitFailsTheCanaryCheck() {
        // "36d" written for "36h": canary-w, silent 72 h, is no longer past its threshold.
        var policy = Self.policy
        policy.canaries = Self.canaries
        policy.sources["watch"]?.threshold = .seconds(36 * 86_400)
        let report = StaleDetector(policy: policy).evaluate(pairs: Self.canaryPairs, now: Self.now)
        #expect(CanaryCheck.unreported(Self.canaries, in: report) == [SyncKey(user: "canary-w", source: "watch")])
    }

    @Test func aDetectorThatTakesAMissingCheckInForAFreshOneFailsTheCanaryCheck() {
        var policy = Self.policy
        policy.canaries = Self.canaries
        let broken = StaleDetector(policy: policy) { lastSeen, now, threshold in
            guard let lastSeen else { return false } // the bug: never heard from = fresh
            return StaleDetector.silence(since: lastSeen, now: now) > threshold
        }
        let report = broken.evaluate(pairs: Self.canaryPairs, now: Self.now)
        #expect(CanaryCheck.unreported(Self.canaries, in: report) == [SyncKey(user: "canary-p", source: "phone")])
        // And one that compares in the wrong unit (seconds read as milliseconds) misses the other.
        let milliseconds = StaleDetector(policy: policy) { lastSeen, now, threshold in
            guard let lastSeen else { return true }
            return StaleDetector.silence(since: lastSeen, now: now) / 1000 > threshold
        }
        #expect(CanaryCheck.unreported(Self.canaries, in: milliseconds.evaluate(pairs: Self.canaryPairs, now: Self.now))
                == [SyncKey(user: "canary-w", source: "watch")])
    }

    // MARK: Sync state

    @Test func syncStateIsTheSameInAnyOrderAndWithRedelivery() {
        var rng = SplitMix64(seed: 10)
        let base = Self.at("2026-11-01T00:00:00Z").nanoseconds
        for _ in 0..<200 {
            var events: [(Event, Instant?)] = []
            for _ in 0..<(1 + rng.below(12)) {
                let user = ["ana", "bob"][rng.below(2)], source = ["watch", "phone"][rng.below(2)]
                let t = Instant(nanoseconds: base + Int64(rng.below(100)) * 3_600_000_000_000)
                if rng.below(2) == 0 {
                    let metrics: [Metric]? = rng.below(3) == 0 ? nil : [Metric.allCases[rng.below(4)]]
                    events.append((.sourceCheckedIn(CheckIn(user: user, source: source, at: t, metrics: metrics)), nil))
                } else {
                    let zone = ["Europe/Berlin", "America/New_York"][rng.below(2)]
                    let s = Sample(user: user, uuid: "u\(rng.below(5))", metric: .steps, source: source, start: t,
                                   end: Instant(nanoseconds: t.nanoseconds + Int64(rng.below(3)) * 3_600_000_000_000), value: 10, zone: zone)
                    events.append((.sampleAdded(s), rng.below(4) == 0 ? nil : Instant(nanoseconds: t.nanoseconds + 60_000_000_000)))
                }
            }
            func fold(_ list: [(Event, Instant?)]) -> [SyncKey: SourceSync] {
                var out: [SyncKey: SourceSync] = [:]
                for (e, at) in list {
                    guard let life = SourceSync.signOfLife(e, deliveredAt: at) else { continue }
                    out[SyncKey(user: life.user, source: life.source), default: life].merge(life)
                }
                return out
            }
            let expected = fold(events)
            var shuffled = events + events.prefix(rng.below(events.count + 1)) // some delivered twice
            shuffled.shuffle(using: &rng)
            #expect(fold(shuffled) == expected)
        }
    }

    @Test func mergeKeepsTheLatestOfEachFactAndNeverLetsNothingWin() {
        var a = SourceSync(user: "ana", source: "phone", lastCheckIn: Self.at("2026-11-29T06:00:00Z"),
                           newestSampleEnd: Self.at("2026-11-28T10:00:00Z"), zone: "Europe/Berlin", metrics: [.steps])
        a.merge(SourceSync(user: "ana", source: "phone", lastCheckIn: Self.at("2026-11-28T06:00:00Z"),
                           lastSampleDelivered: Self.at("2026-11-29T07:00:00Z"), metrics: [.distance]))
        #expect(a.lastCheckIn == Self.at("2026-11-29T06:00:00Z"))
        #expect(a.lastSampleDelivered == Self.at("2026-11-29T07:00:00Z"))
        #expect(a.lastSeen == Self.at("2026-11-29T07:00:00Z"))
        #expect(a.newestSampleEnd == Self.at("2026-11-28T10:00:00Z") && a.zone == "Europe/Berlin")
        #expect(a.metrics == [.steps, .distance])
    }

    @Test func daysNotOverAtTheLastSignOfLifeInTheSourcesOwnZoneAreUnknown() {
        // Last seen 2026-11-29T23:30Z: in Berlin (UTC+1) that is 11-30 00:30, so 11-29 was
        // over there (known) and 11-30 is the first unknown day; in UTC 11-29 itself was not
        // over yet, so it would be unknown.
        let phone = SourceSync(user: "ana", source: "phone", lastCheckIn: Self.at("2026-11-29T23:30:00Z"),
                               newestSampleEnd: Self.at("2026-11-29T20:00:00Z"), zone: "Europe/Berlin", metrics: [.steps])
        let watch = SourceSync(user: "ana", source: "watch", lastCheckIn: Self.at("2026-11-27T10:00:00Z"), metrics: [.heartRate])
        let day = { (text: String) in CivilDay(text)! }
        #expect(phone.lastSeenDay == day("2026-11-30"))
        #expect(SourceSync.silentSources([phone, watch], metric: .steps, day: day("2026-11-29")).isEmpty)
        #expect(SourceSync.silentSources([phone, watch], metric: .steps, day: day("2026-11-30")).map(\.source) == ["phone"])
        #expect(SourceSync.silentSources([phone, watch], metric: .steps, day: day("2026-11-30")).first?.lastSeen == day("2026-11-30"))
        // The watch speaks only for heart rate: last heard 11-27 at 10:00, so 11-27 on is unknown for it alone.
        #expect(SourceSync.silentSources([phone, watch], metric: .heartRate, day: day("2026-11-27")).map(\.source) == ["watch"])
        #expect(SourceSync.silentSources([phone, watch], metric: .heartRate, day: day("2026-11-26")).isEmpty)
        var utc = phone
        utc.zone = nil
        #expect(SourceSync.silentSources([utc], metric: .steps, day: day("2026-11-29")).map(\.source) == ["phone"])
    }

    @Test func aCheckInCountsAtMostTenMinutesPastItsMessage() {
        // A phone whose clock says 2199: as of its message (12:00) + 10 min, never later.
        let message = Self.at("2026-11-30T12:00:00Z")
        let future = Event.sourceCheckedIn(CheckIn(user: "ana", source: "phone", at: Self.at("2199-12-31T00:00:00Z")))
        #expect(SourceSync.signOfLife(future, deliveredAt: message)?.lastCheckIn == Self.at("2026-11-30T12:10:00Z"))
        // Within the allowance (and in the past) it counts as written; from a file, as written.
        let skewed = Event.sourceCheckedIn(CheckIn(user: "ana", source: "phone", at: Self.at("2026-11-30T12:04:00Z")))
        #expect(SourceSync.signOfLife(skewed, deliveredAt: message)?.lastCheckIn == Self.at("2026-11-30T12:04:00Z"))
        #expect(SourceSync.signOfLife(future, deliveredAt: nil)?.lastCheckIn == Self.at("2199-12-31T00:00:00Z"))
    }

    @Test func silenceIsExactAcrossTheWholeAcceptedRange() {
        // 1900 → 2199 is more nanoseconds than Int64 holds.
        let policy = FreshnessPolicy(defaultRule: .init(threshold: .seconds(3600), pageFraction: 0.5))
        let old = SourceSync(user: "ana", source: "phone", lastCheckIn: Self.at("1900-01-01T00:00:00Z"))
        let report = StaleDetector(policy: policy).evaluate(pairs: [old], now: Self.at("2199-12-31T23:59:59Z"))
        #expect(report.stale.map(\.user) == ["ana"])
        let future = SourceSync(user: "ana", source: "phone", lastCheckIn: Self.at("2199-12-31T23:59:59Z"))
        #expect(StaleDetector(policy: policy).evaluate(pairs: [future], now: Self.at("1900-01-01T00:00:00Z")).stale.isEmpty)
    }

    // MARK: The event

    @Test func checkInsDecodeAndRoundTrip() throws {
        let decoder = EventDecoder()
        let line = #"{"type":"source-checked-in","user":"ana","source":"phone","at":"2026-11-30T08:00:00+01:00","metrics":["steps","distance","steps"]}"#
        let event = try decoder.decode(line)
        #expect(event == .sourceCheckedIn(CheckIn(user: "ana", source: "phone", at: Self.at("2026-11-30T07:00:00Z"), metrics: [.distance, .steps])))
        #expect(try decoder.decode(event.jsonLine) == event)
        let bare = try decoder.decode(#"{"type":"source-checked-in","user":"ana","source":"watch","at":"2026-11-30T07:00:00Z"}"#)
        #expect(bare == .sourceCheckedIn(CheckIn(user: "ana", source: "watch", at: Self.at("2026-11-30T07:00:00Z"))))
        #expect(try decoder.decode(bare.jsonLine) == bare)
    }

    @Test func badCheckInsNameTheFieldAndTheValue() {
        let cases: [(String, EventError.Code, String)] = [
            (#"{"type":"source-checked-in","user":"ana","at":"2026-11-30T07:00:00Z"}"#, .missingField, "source"),
            (#"{"type":"source-checked-in","user":"ana","source":"","at":"2026-11-30T07:00:00Z"}"#, .emptyString, "source"),
            (#"{"type":"source-checked-in","user":"ana","source":"watch"}"#, .missingField, "at"),
            (#"{"type":"source-checked-in","user":"ana","source":"watch","at":"yesterday"}"#, .badTime, "at"),
            (#"{"type":"source-checked-in","user":"ana","source":"watch","at":"2026-11-30T07:00:00Z","metrics":"steps"}"#, .wrongType, "metrics"),
            (#"{"type":"source-checked-in","user":"ana","source":"watch","at":"2026-11-30T07:00:00Z","metrics":["steps","stpes"]}"#, .unknownMetric, "metrics[1]"),
            (#"{"type":"source-checked-in","user":"ana","source":"watch","at":"2026-11-30T07:00:00Z","metrics":[3]}"#, .wrongType, "metrics[0]"),
            (#"{"type":"source-checked-in","user":"","source":"watch","at":"2026-11-30T07:00:00Z"}"#, .emptyString, "user"),
        ]
        for (line, code, field) in cases {
            #expect(throws: EventError.self) { try EventDecoder().decode(line) }
            do {
                _ = try EventDecoder().decode(line)
            } catch {
                #expect(error.code == code && error.field == field, "\(line): \(error)")
            }
        }
    }

    @Test func aCheckInChangesNoTotals() {
        // 3,000 watch steps 09:00–10:00 and 2,000 phone steps 09:30–10:30 (Berlin): the watch
        // wins 09:00–10:00, the phone keeps 10:00–10:30 = 1,000 → 4,000 (naive 5,000, max 3,000).
        let samples = [added("w", "watch", "2026-11-25T09:00:00+01:00", "2026-11-25T10:00:00+01:00", 3000),
                       added("p", "phone", "2026-11-25T09:30:00+01:00", "2026-11-25T10:30:00+01:00", 2000)]
        expectDiscriminating(samples, total: 4000)
        let checkIn = Event.sourceCheckedIn(CheckIn(user: "ana", source: "phone", at: Self.at("2026-11-25T12:00:00Z")))
        #expect(value(rollup(samples), "2026-11-25") == 4000)
        #expect(rollup([checkIn] + samples + [checkIn]) == rollup(samples))
    }
}

extension FreshnessTests {
    @Test func aJudgementChecksTheCanariesAgainstItsOwnReport() {
        // The canary zed/watch never checked in: stale, so the detector fired. With a
        // threshold of "never" for the watch, nothing of the watch can be stale: it did not.
        var policy = Self.policy
        policy.canaries = [SyncKey(user: "zed", source: "watch")]
        var evaluation = StaleDetector.Evaluation(detector: StaleDetector(policy: policy), now: Self.now)
        for pair in Self.pairs() { evaluation.add(pair) }
        let judged = evaluation.judge()
        #expect(judged.detectorFired && judged.unreported.isEmpty)
        #expect(judged.canariesNeverSeen == [SyncKey(user: "zed", source: "watch")])
        #expect(judged.report.stale.map { "\($0.user)/\($0.source)" } == ["ana/phone", "zed/watch"])

        policy.sources["watch"]?.threshold = nil
        var broken = StaleDetector.Evaluation(detector: StaleDetector(policy: policy), now: Self.now)
        for pair in Self.pairs() { broken.add(pair) }
        let judgedBroken = broken.judge()
        #expect(!judgedBroken.detectorFired)
        #expect(judgedBroken.unreported == [SyncKey(user: "zed", source: "watch")])
    }
}
