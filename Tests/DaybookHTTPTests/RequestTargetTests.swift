import DaybookHTTP
import Testing

/// `RequestTarget(parsing:)`: segments split before decoding, query items decoded with `+`
/// as a space, and the malformed escapes and bytes refused with the part named.
@Suite struct RequestTargetTests {
    @Test func decodesSegmentsAndItems() throws {
        let target = try RequestTarget(parsing: "/v1/users/ana%40x%2Fy/totals?metric=steps&from=2026-03-01&note=a+b%2Bc&flag&&")
        #expect(target.segments == ["v1", "users", "ana@x/y", "totals"])
        #expect(target.items == [.init("metric", "steps"), .init("from", "2026-03-01"), .init("note", "a b+c"), .init("flag", "")])
        #expect(target.value("from") == "2026-03-01")
        #expect(target.value("to") == nil)
    }

    @Test func plusStaysInPathAndRootIsOneEmptySegment() throws {
        #expect(try RequestTarget(parsing: "/a+b").segments == ["a+b"])
        #expect(try RequestTarget(parsing: "/").segments == [""])
        #expect(try RequestTarget(parsing: "/v1//x/").segments == ["v1", "", "x", ""])
        #expect(try RequestTarget(parsing: "/caf%C3%A9").segments == ["café"])
    }

    @Test func refusesWhatIsNotAPathOrNotText() {
        #expect(throws: RequestTarget.ParseError.notAPath("*")) { try RequestTarget(parsing: "*") }
        #expect(throws: RequestTarget.ParseError.notAPath("http://x/")) { try RequestTarget(parsing: "http://x/") }
        #expect(throws: RequestTarget.ParseError.badEscape(part: "a%4")) { try RequestTarget(parsing: "/a%4") }
        #expect(throws: RequestTarget.ParseError.badEscape(part: "%zz")) { try RequestTarget(parsing: "/x?%zz=1") }
        #expect(throws: RequestTarget.ParseError.notText(part: "%FF")) { try RequestTarget(parsing: "/%FF") }
        #expect(throws: RequestTarget.ParseError.notText(part: "a%00")) { try RequestTarget(parsing: "/x?q=a%00") }
        #expect(RequestTarget.ParseError.badEscape(part: String(repeating: "x", count: 200)).message.count < 140)  // 80 shown characters, the ellipsis, quotes and the sentence
    }
}
