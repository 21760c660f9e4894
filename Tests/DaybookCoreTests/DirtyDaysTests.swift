import DaybookCore
import DaybookSupport
import Testing

/// `DirtyDays` remembers its last few keys by their words: whatever Strings its users come
/// in (the same bytes in new storage each time, long and short, freed after each call), it
/// holds exactly the set of keys inserted.
@Suite struct DirtyDaysTests {
    @Test func itHoldsExactlyTheKeysInsertedWhateverStringsTheUsersComeIn() {
        var random = SplitMix64(seed: 26)
        // Users of 2 to 40 bytes: short ones are inline Strings, long ones heap storage.
        let names = (0..<12).map { i in "user-\(i)-" + String(repeating: "x", count: i * 3) }
        var dirty = DirtyDays()
        var plain = Set<DayKey>()
        for _ in 0..<5_000 {
            // A new String of the name's bytes each time (never the one inserted before).
            let name = names[Int(random.next() % UInt64(names.count))]
            let user = String(decoding: Array(name.utf8), as: UTF8.self)
            let metric = Metric.allCases[Int(random.next() % 4)]
            let key = DayKey(user: user, metric: metric, day: CivilDay(number: 19_800 + Int32(random.next() % 5)))
            dirty.insert(key)
            plain.insert(key)
        }
        // 12 users × 4 metrics × 5 days = 240 keys at most; the draw covers nearly all of them.
        #expect(dirty.keys == plain)
        #expect(plain.count > 200)
    }

    @Test func aKeyRepeatedAmongOthersIsKeptOnce() {
        var dirty = DirtyDays()
        let day = CivilDay(number: 19_800)
        for _ in 0..<3 {
            for user in ["ana", "bob", "cy"] { dirty.insert(DayKey(user: user, metric: .steps, day: day)) }
        }
        dirty.insert(DayKey(user: "ana", metric: .distance, day: day))
        #expect(dirty.keys.count == 4)
    }
}
