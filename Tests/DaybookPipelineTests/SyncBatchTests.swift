import DaybookCore
import DaybookKafka
import DaybookPublish
import Foundation
import Testing

/// `SyncBatch`: a phone's batch is refused whole, naming the field as the phone sent it, for
/// anything the projector or the cluster would refuse — and otherwise published whole.
@Suite struct SyncBatchTests {
    typealias P = PublisherTests

    static func sample(_ uuid: String, _ hour: Int, _ value: Int) -> String {
        String(format: #"{"uuid":"%@","metric":"steps","source":"watch","start":"2024-03-02T%02d:00:00Z","end":"2024-03-02T%02d:30:00Z","value":%d,"unit":"count","zone":"UTC"}"#,
               uuid, hour, hour, value)
    }

    static func decode(_ bytes: [UInt8], limit: Int = SyncBatch.defaultMaximumMessageBytes) -> Result<SyncBatch, SyncBatch.Rejection> {
        bytes.withUnsafeBufferPointer { SyncBatch.decode($0, maximumMessageBytes: limit) }
    }

    static func decode(_ text: String) -> Result<SyncBatch, SyncBatch.Rejection> { decode(Array(text.utf8)) }

    static func rejection(_ result: Result<SyncBatch, SyncBatch.Rejection>) -> SyncBatch.Rejection? {
        if case .failure(let r) = result { return r }
        return nil
    }

    /// Issue 25, item 2: `bo\xFFb` and `bo\xFEb` are two users; a reader that replaced the
    /// bytes made both `bo\u{FFFD}b`. Each is refused, answered by its anchor.
    @Test func bytesThatAreNotUTF8AreRefusedNotReplaced() throws {
        for (byte, anchor) in [(UInt8(0xFF), "6"), (0xFE, "7")] {
            let line = Array(#"{"user":"bo"#.utf8) + [byte] + Array(#"b","anchor":"\#(anchor)","added":[\#(Self.sample("x1", 9, 100))]}"#.utf8)
            let r = try #require(Self.rejection(Self.decode(line)))
            #expect(r.anchor == anchor && r.field == "user")
            #expect(r.reason.contains("not valid UTF-8") && r.reason.contains("nothing of the batch was published"), "\(r)")
        }
    }

    /// Issue 29: over HTTP the user is the path's. The body may leave `user` out or repeat
    /// it; naming another user is refused, so a token for ana cannot post bob's samples
    /// inside ana's URL.
    @Test func theUserOfThePathIsTheBatchsUser() throws {
        let body = { (user: String) in Array(#"{\#(user)"anchor":"5","added":[\#(Self.sample("p1", 9, 100))],"deleted":["p0"]}"#.utf8) }
        for given in ["", #""user":"ana","#] {
            let batch = try body(given).withUnsafeBufferPointer { SyncBatch.decode($0, user: "ana") }.get()
            #expect(batch.user == "ana" && batch.events.map(\.user) == ["ana", "ana"])
            #expect(batch.lines.allSatisfy { String(decoding: $0, as: UTF8.self).contains(#""user":"ana""#) })
        }
        let other = try #require(Self.rejection(body(#""user":"bob","#).withUnsafeBufferPointer { SyncBatch.decode($0, user: "ana") }))
        #expect(other.anchor == "5" && other.field == "user", "\(other)")
        let number = try #require(Self.rejection(body(#""user":7,"#).withUnsafeBufferPointer { SyncBatch.decode($0, user: "ana") }))
        #expect(number.field == "user", "\(number)")
        // Without a path user the body must name one, as before.
        #expect(Self.rejection(Self.decode(body(""))).map(\.field) == "user")
    }

    /// Issue 25, item 3: what validation refuses is a rejection (never "not delivered"),
    /// including deletions, whose user and uuid were never checked before.
    @Test func aDeletionOnlyBatchIsValidatedToo() throws {
        let empty = try #require(Self.rejection(Self.decode(#"{"user":"","anchor":"8","deleted":["u1"]}"#)))
        #expect(empty.anchor == "8" && empty.field == "user" && empty.reason.contains("empty"), "\(empty)")
        let decomposed = try #require(Self.rejection(Self.decode("{\"user\":\"cy\",\"anchor\":\"9\",\"deleted\":[\"e\u{301}\"]}")))
        #expect(decomposed.field == "deleted[0]" && decomposed.reason.contains("NFC"), "\(decomposed)")
        let late = try #require(Self.rejection(Self.decode(#"{"user":"cy","anchor":"9","added":[\#(Self.sample("a", 9, 1)), {"uuid":"b"}]}"#)))
        #expect(late.field?.hasPrefix("added[1]") == true, "\(late)")
    }

    /// Issue 25, item 4: a batch whose middle event passes 1 MiB as a line but not the
    /// cluster's message limit is refused before anything is sent.
    @Test func anEventLargerThanTheClusterAcceptsRefusesTheWholeBatch() throws {
        let big = String(repeating: "u", count: 1_020_000)
        let line = #"{"user":"cy","anchor":"10","added":[\#(Self.sample("c1", 9, 100)),\#(Self.sample(big, 10, 100)),\#(Self.sample("c3", 11, 100))]}"#
        let r = try #require(Self.rejection(Self.decode(line)))
        #expect(r.anchor == "10" && r.field == "added[1]" && r.reason.contains("larger than the cluster accepts (999488)"), "\(r.reason.prefix(200))")
        // A connection's own message.max.bytes sets the limit.
        let connection = KafkaConnection(bootstrapServers: "x:1", properties: ["message.max.bytes": "2000"])
        let limit = SyncBatch.maximumMessageBytes(for: connection)
        #expect(limit == 1_488)
        let small = try #require(Self.rejection(Self.decode(Array(#"{"user":"cy","anchor":"1","added":[\#(Self.sample(String(repeating: "v", count: 1_300), 9, 1))]}"#.utf8), limit: limit)))
        #expect(small.field == "added[0]")
    }

    @Test func fieldsAreNamedAsThePhoneSentThem() throws {
        let r = try #require(Self.rejection(Self.decode(#"{"user":"cy","anchor":3,"added":[\#(Self.sample("a", 9, 1)),\#(Self.sample("b", 9, -5))]}"#)))
        #expect(r.anchor == "3" && r.description == "added[1].value: -5 is negative; steps is cumulative and cannot go down", "\(r)")
        #expect(Self.rejection(Self.decode(#"{"user":"cy","added":[]}"#))?.field == "anchor")
        #expect(Self.rejection(Self.decode(#"{"user":"cy","anchor":"a b"}"#))?.field == "anchor")
    }

    /// Issue 25, item 12: a second "user" is named, not "not a JSON object".
    @Test func aDuplicateUserKeyIsNamed() throws {
        let r = try #require(Self.rejection(Self.decode(#"{"user":"ana","user":"bo","anchor":"5","deleted":["x"]}"#)))
        #expect(r.field == "user" && r.description.hasPrefix("user: not valid JSON: appears twice in one object"), "\(r)")
    }

    @Test func aBadVersionIsEchoedAsThePhoneWroteIt() throws {
        let sample = Self.sample("a", 9, 1).replacingOccurrences(of: #""zone""#, with: #""version":9223372036854775808,"zone""#)
        let r = try #require(Self.rejection(Self.decode(#"{"user":"cy","anchor":"1","added":[\#(sample)]}"#)))
        #expect(r.field == "added[0].version" && r.reason.hasPrefix("9223372036854775808 is not a version"), "\(r)")
    }

    @Test func controlCharactersInAnAnchorAreEscapedInAnswers() {
        #expect(SyncBatch.escapedAnchor("1\u{1B}[2J\r\n") == "1\\u{1B}[2J\\u{D}\\u{A}")
        #expect(SyncBatch.escapedAnchor("é-17") == "é-17")
    }

    /// A valid batch: its lines are what the projector decodes, and it is published whole,
    /// to its user's partition, at consecutive offsets.
    @Test func aValidBatchIsPublishedWhole() throws {
        let batch = try Self.decode(#"{"user":"ana","anchor":"5","added":[\#(Self.sample("a", 9, 100)),\#(Self.sample("b", 10, 200))],"deleted":["z"]}"#).get()
        #expect(batch.events.count == 3 && batch.lines.count == 3)
        for line in batch.lines { #expect((try? EventDecoder().decode(String(decoding: line, as: UTF8.self))) != nil) }
        let broker = try P.broker()
        let publisher = try EventPublisher(connection: P.connection(broker))
        defer { try? publisher.close() }
        guard case .accepted(let events, let partition, let offsets) = batch.publish(with: publisher) else {
            Issue.record("not accepted")
            return
        }
        #expect(events == 3)
        #expect(partition == Partitioner.murmur2Random.partition(ofKey: "ana".utf8, count: 4))
        #expect(offsets.map { $0.last - $0.first } == 2)
    }
}
