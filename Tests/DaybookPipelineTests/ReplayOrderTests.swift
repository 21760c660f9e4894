import DaybookCore
import DaybookPipeline
import DaybookStore
import Testing

/// `ReplayOrder` on its own: which dead letters a replay may republish, from versions and
/// produce times alone. Each test names the rule it holds to; breaking that rule fails it.
@Suite struct ReplayOrderTests {
    static func add(_ uuid: String, version: Int64 = 0, user: String = "ana") -> Event {
        .sampleAdded(Sample(user: user, uuid: uuid, metric: .steps, source: "phone", start: Instant(seconds: 0),
                            end: Instant(seconds: 60), value: 1, zone: "UTC", version: version))
    }

    static func id(_ p: Int32, _ o: Int64) -> DeadLetterID { DeadLetterID(partition: p, offset: o) }
    static let key = ReplayOrder.Key(user: "ana", uuid: "u3")

    static func home(version: Int64 = 0, at ms: Int64?, _ position: DeadLetterID = id(0, 7)) -> [ReplayOrder.Key: ReplayOrder.Home] {
        [key: .live(.init(version: version, producedAt: ms, position: position))]
    }

    /// Rule: the same version, produced later at home → the dead letter is superseded (the
    /// issue's u3: 200 misrouted at 1000, 300 home at 2000).
    @Test func anOlderDeadLetterOfTheSameVersionLosesToHome() {
        let c = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3"), producedAt: 1_000)
        let out = ReplayOrder.superseded([c], homes: Self.home(at: 2_000))
        #expect(out == [c.id: .init(reason: .producedLater, by: Self.id(0, 7), byDeadLetter: false)])
    }

    /// Rule: the same version, produced strictly later than the home write → it goes.
    @Test func aNewerDeadLetterOfTheSameVersionGoes() {
        let c = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3"), producedAt: 3_000)
        #expect(ReplayOrder.superseded([c], homes: Self.home(at: 2_000)).isEmpty)
    }

    /// Rule: a tie (the same millisecond) and an unknown time keep the write in force.
    @Test func aTieOrAnUnknownTimeKeepsHome() {
        let tie = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3"), producedAt: 2_000)
        #expect(ReplayOrder.superseded([tie], homes: Self.home(at: 2_000))[tie.id]?.reason == .producedLater)
        let unknown = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3"), producedAt: nil)
        #expect(ReplayOrder.superseded([unknown], homes: Self.home(at: 2_000))[unknown.id]?.reason == .unknownOrder)
        let homeUnknown = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3"), producedAt: 9_000)
        #expect(ReplayOrder.superseded([homeUnknown], homes: Self.home(at: nil))[homeUnknown.id]?.reason == .unknownOrder)
    }

    /// Rule: versions decide before times, both ways.
    @Test func aHigherVersionWinsWhateverItsTime() {
        let newer = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3", version: 2), producedAt: 1)
        #expect(ReplayOrder.superseded([newer], homes: Self.home(version: 1, at: 2_000)).isEmpty)
        let older = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3", version: 1), producedAt: 9_000)
        #expect(ReplayOrder.superseded([older], homes: Self.home(version: 2, at: 2_000))[older.id]?.reason == .higherVersion(2))
    }

    /// Rule: a deletion is permanent — at home it supersedes every add; a deletion among the
    /// dead letters goes, and supersedes the adds of its uuid beside it.
    @Test func deletionsArePermanent() {
        let add = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3", version: 5), producedAt: 9_000)
        let deleted: [ReplayOrder.Key: ReplayOrder.Home] = [Self.key: .deleted(at: Self.id(0, 4))]
        #expect(ReplayOrder.superseded([add], homes: deleted)[add.id] == .init(reason: .deleted, by: Self.id(0, 4), byDeadLetter: false))
        let deletion = ReplayOrder.Candidate(id: Self.id(2, 1), event: .sampleDeleted(user: "ana", uuid: "u3"), producedAt: 1)
        let out = ReplayOrder.superseded([add, deletion], homes: [:])
        #expect(out == [add.id: .init(reason: .deleted, by: deletion.id, byDeadLetter: true)])
    }

    /// Rule: of several dead letters of one uuid only the newest can go, and it still has to
    /// beat home; nothing at home lets it go.
    @Test func ofSeveralDeadLettersOnlyTheNewestCanGo() {
        let a = ReplayOrder.Candidate(id: Self.id(1, 0), event: Self.add("u3"), producedAt: 1_000)
        let b = ReplayOrder.Candidate(id: Self.id(2, 0), event: Self.add("u3"), producedAt: 3_000)
        let c = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u3", version: 0), producedAt: 2_000)
        let out = ReplayOrder.superseded([a, b, c], homes: [:])
        #expect(out == [a.id: .init(reason: .producedLater, by: b.id, byDeadLetter: true),
                        c.id: .init(reason: .producedLater, by: b.id, byDeadLetter: true)])
        let beaten = ReplayOrder.superseded([a, b, c], homes: Self.home(at: 4_000))
        #expect(beaten[b.id] == .init(reason: .producedLater, by: Self.id(0, 7), byDeadLetter: false) && beaten.count == 3)
    }

    /// Rule: check-ins and other uuids are left alone.
    @Test func otherUUIDsAndCheckInsGo() {
        let other = ReplayOrder.Candidate(id: Self.id(3, 0), event: Self.add("u9"), producedAt: 1)
        let checkIn = ReplayOrder.Candidate(id: Self.id(3, 1), event: .sourceCheckedIn(CheckIn(user: "ana", source: "phone", at: Instant(seconds: 5))),
                                            producedAt: 1)
        #expect(ReplayOrder.superseded([other, checkIn], homes: Self.home(at: 2_000)).isEmpty)
    }

    /// The home is what the projector keeps: a lower version is ignored, the same or a
    /// higher one replaces, a deletion stays.
    @Test func theHomeFollowsTheProjectorsRule() throws {
        var home = try #require(ReplayOrder.Home.first(Self.add("u3", version: 1), producedAt: 10, at: Self.id(0, 1)))
        home = home.applying(Self.add("u3", version: 0), producedAt: 20, at: Self.id(0, 2))
        #expect(home == .live(.init(version: 1, producedAt: 10, position: Self.id(0, 1))))
        home = home.applying(Self.add("u3", version: 1), producedAt: 30, at: Self.id(0, 3))
        #expect(home == .live(.init(version: 1, producedAt: 30, position: Self.id(0, 3))))
        home = home.applying(.sampleDeleted(user: "ana", uuid: "u3"), producedAt: 40, at: Self.id(0, 4))
        home = home.applying(Self.add("u3", version: 9), producedAt: 50, at: Self.id(0, 5))
        #expect(home == .deleted(at: Self.id(0, 4)))
    }
}
