import DaybookCore
import Testing

/// `Ledger.Staged`, the flat form a projection stages events in: each kind of event comes
/// back whole, and the form is no larger than the `Event` form it replaced (the staging
/// budget counts its stride, so a larger form would shrink every batch).
@Suite struct StagedEventTests {
    @Test func everyKindOfEventComesBackWhole() {
        let start = Instant(nanoseconds: 1_711_900_800_000_000_000), end = Instant(nanoseconds: 1_711_901_400_000_000_000)
        let added = Event.sampleAdded(Sample(user: "user-1", uuid: "3F2504E0-4F89-11D3-9A0C-0305E82C3301", metric: .distance,
                                             source: "com.example.watch", start: start, end: end, value: 812.5,
                                             zone: "Europe/London", version: 3))
        let deleted = Event.sampleDeleted(user: "user-1", uuid: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")
        let checkIn = Event.sourceCheckedIn(CheckIn(user: "user-2", source: "com.example.phone", at: end, metrics: [.steps, .heartRate]))
        let unsaid = Event.sourceCheckedIn(CheckIn(user: "user-2", source: "com.example.phone", at: start))
        for (event, kind) in [(added, Ledger.Staged.Kind.added), (deleted, .deleted), (checkIn, .checkedIn), (unsaid, .checkedIn)] {
            let staged = Ledger.Staged(event: event, position: 41, deliveredAt: end)
            #expect(staged.kind == kind)
            #expect(staged.event == event)
            #expect(staged.position == 41)
            #expect(staged.deliveredAt == end)
            #expect(staged.sample.user == event.user)
        }
        #expect(Ledger.Staged(event: unsaid, position: 0).checkInMetrics == nil)
    }

    @Test func theFlatFormIsNoLargerThanTheEventForm() {
        // The form it replaced: an Event, a position and an optional delivery time.
        struct EventForm { var event: Event; var position: Int64; var deliveredAt: Instant? }
        #expect(MemoryLayout<Ledger.Staged>.stride <= MemoryLayout<EventForm>.stride)
    }
}
