import DaybookSupport
import Testing

/// `RecentNames`: the last few names and their answers, compared by bytes.
@Suite struct RecentNamesTests {
    @Test func aNameIsFoundByItsBytesUntilItIsTheOldestOfTooMany() {
        var recent = RecentNames<Int32>(capacity: 2)
        let zone = "America/Argentina/Buenos_Aires" // a large String (more than 15 bytes)
        recent.note(zone, 7)
        recent.note("UTC", 1)
        #expect(recent.value(of: zone) == 7)
        // The same bytes in another String's storage.
        #expect(recent.value(of: "America/Argentina/" + "Buenos_Aires") == 7)
        #expect(recent.value(of: "UTC") == 1)
        #expect(recent.value(of: "America/Argentina/Cordoba") == nil)
        // A third name takes the oldest slot.
        recent.note("Asia/Kolkata", 3)
        #expect(recent.value(of: zone) == nil)
        #expect(recent.value(of: "UTC") == 1)
        #expect(recent.value(of: "Asia/Kolkata") == 3)
    }

    @Test func canonicallyEquivalentNamesAreNotTheSameName() {
        // The event format's names are NFC; a decomposed spelling is other bytes, as the
        // store and NameKey see it (Swift's == would call them equal).
        var recent = RecentNames<Int32>(capacity: 4)
        recent.note("caf\u{E9}", 1)
        #expect(recent.value(of: "caf\u{E9}") == 1)
        #expect(recent.value(of: "cafe\u{301}") == nil)
    }
}
