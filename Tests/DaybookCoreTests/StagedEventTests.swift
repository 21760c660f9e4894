import DaybookCore
import Testing

/// `Ledger.Staged` and `StagedBatch`, the flat form a projection stages events in: each kind
/// of event comes back whole, each name is kept once per batch, and an event is plain data
/// of at most 88 bytes (the staging budget counts its stride, so a larger form would shrink
/// every batch; the `Event` form it replaced took 136 and a heap String per long name).
@Suite struct StagedEventTests {
    let start = Instant(nanoseconds: 1_711_900_800_000_000_000), end = Instant(nanoseconds: 1_711_901_400_000_000_000)

    @Test func everyKindOfEventComesBackWhole() {
        let added = Event.sampleAdded(Sample(user: "user-1", uuid: "3F2504E0-4F89-11D3-9A0C-0305E82C3301", metric: .distance,
                                             source: "com.example.watch", start: start, end: end, value: 812.5,
                                             zone: "Europe/London", version: 3))
        let lower = Event.sampleAdded(Sample(user: "user-1", uuid: "3f2504e0-4f89-11d3-9a0c-0305e82c3302", metric: .steps,
                                             source: "phone", start: start, end: start, value: 12, zone: "America/Los_Angeles"))
        let text = Event.sampleAdded(Sample(user: "user-3", uuid: "s-1", metric: .heartRate, source: "phone",
                                            start: end, end: end, value: 61, zone: "UTC", version: 1))
        let deleted = Event.sampleDeleted(user: "user-1", uuid: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")
        let deletedText = Event.sampleDeleted(user: "user-3", uuid: "s-1")
        let checkIn = Event.sourceCheckedIn(CheckIn(user: "user-2", source: "com.example.phone", at: end, metrics: [.steps, .heartRate]))
        let unsaid = Event.sourceCheckedIn(CheckIn(user: "user-2", source: "com.example.phone", at: start))
        let events: [(Event, Ledger.Staged.Kind)] = [(added, .added), (lower, .added), (text, .added), (deleted, .deleted),
                                                     (deletedText, .deleted), (checkIn, .checkedIn), (unsaid, .checkedIn)]
        var batch = StagedBatch()
        for (i, (event, _)) in events.enumerated() {
            batch.append(event, position: 41 + Int64(i), deliveredAt: i == 1 ? nil : end)
        }
        #expect(batch.count == events.count)
        for (i, (event, kind)) in events.enumerated() {
            #expect(batch.events[i].kind == kind)
            #expect(batch.event(at: i) == event)
            #expect(batch.events[i].position == 41 + Int64(i))
            #expect(batch.events[i].deliveredAt == (i == 1 ? nil : end))
            #expect(batch.sample(at: i).user == event.user)
            #expect(batch.name(batch.events[i].user) == event.user)
        }
        #expect(batch.uuid(at: 2).text == "s-1")
        guard case .sourceCheckedIn(let said) = batch.event(at: 5), case .sourceCheckedIn(let unsaidBack) = batch.event(at: 6) else {
            Issue.record("check-ins did not come back as check-ins")
            return
        }
        #expect(said.metrics == [.steps, .heartRate])
        #expect(unsaidBack.metrics == nil)
        batch.removeAll()
        #expect(batch.isEmpty && batch.names.isEmpty && batch.nameBytes == 0)
    }

    @Test func eachNameIsKeptOnceAndCountedOnce() {
        // Three samples of one user, source and zone, then one of another user: 3 + 1 names.
        var batch = StagedBatch()
        for i in 0..<3 {
            batch.append(.sampleAdded(Sample(user: "ana", uuid: "u\(i)", metric: .steps, source: "watch", start: start, end: end,
                                             value: 10, zone: "Europe/Amsterdam")), position: Int64(i))
        }
        let afterThree = batch.nameBytes
        batch.append(.sampleAdded(Sample(user: "bo", uuid: "u9", metric: .steps, source: "watch", start: start, end: end,
                                         value: 10, zone: "Europe/Amsterdam")), position: 3)
        // "ana", "watch", "Europe/Amsterdam", "u0", "u1", "u2", then "bo", "u9".
        #expect(batch.names == ["ana", "watch", "Europe/Amsterdam", "u0", "u1", "u2", "bo", "u9"])
        #expect(batch.events.map(\.user) == [0, 0, 0, 6])
        #expect(batch.events.map(\.zone) == [2, 2, 2, 2])
        // Two more short names (inline Strings, no heap): each its String's 16 bytes, its
        // bytes again (2), its span (16) and its hash entry (32): 2 × (16 + 2 + 16 + 32) = 132.
        #expect(batch.nameBytes - afterThree == 132)
        #expect(batch.bytes == 4 * MemoryLayout<Ledger.Staged>.stride + batch.nameBytes)
    }

    @Test func theFlatFormIsPlainDataOfAtMost88Bytes() {
        #expect(_isPOD(Ledger.Staged.self))
        #expect(MemoryLayout<Ledger.Staged>.stride <= 88)
    }
}
