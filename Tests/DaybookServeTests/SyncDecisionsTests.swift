import DaybookKafka
import DaybookServe
import Testing

/// The sync endpoint's decisions without I/O: the token bucket, the body's encoding, and a
/// batch between being queued and answered (`BatchWait`).
@Suite struct SyncDecisionsTests {
    @Test func aBucketAllowsItsBurstThenItsRate() {
        var bucket = TokenBucket(perSecond: 2, burst: 3, now: 100)
        for _ in 0..<3 { #expect(bucket.take(now: 100) == .allowed) }
        // Empty: a token comes back every 0.5 s, so the wait is 0.5 s, said as 1 whole second.
        #expect(bucket.take(now: 100) == .refused(retryAfterSeconds: 1))
        #expect(bucket.take(now: 100.4) == .refused(retryAfterSeconds: 1))
        #expect(bucket.take(now: 100.5) == .allowed)
        #expect(bucket.take(now: 100.5) == .refused(retryAfterSeconds: 1))
        // A long silence refills only to the burst, not beyond.
        #expect(bucket.isFull(now: 1_000))
        for _ in 0..<3 { #expect(bucket.take(now: 1_000) == .allowed) }
        #expect(bucket.take(now: 1_000) == .refused(retryAfterSeconds: 1))
        // A clock that steps back gives nothing.
        #expect(bucket.take(now: 10) == .refused(retryAfterSeconds: 1))
        // A slow rate says how long: one token every 10 s.
        var slow = TokenBucket(perSecond: 0.1, burst: 1, now: 0)
        #expect(slow.take(now: 0) == .allowed)
        #expect(slow.take(now: 2) == .refused(retryAfterSeconds: 8))
    }

    @Test func theBodyIsJSONPlainOrGzipped() throws {
        #expect(try SyncBodyEncoding(contentType: "application/json", contentEncoding: nil) == .identity)
        #expect(try SyncBodyEncoding(contentType: "Application/JSON; charset=utf-8", contentEncoding: "identity") == .identity)
        #expect(try SyncBodyEncoding(contentType: "application/json", contentEncoding: "GZIP") == .gzip)
        for (type, coding, header) in [(nil, nil, "Content-Type"), ("text/plain", nil, "Content-Type"), ("application/jsonx", nil, "Content-Type"),
                                        ("application/json", "br", "Content-Encoding"), ("application/json", "gzip, gzip", "Content-Encoding")] as [(String?, String?, String)] {
            #expect(throws: ReadError.self) { try SyncBodyEncoding(contentType: type, contentEncoding: coding) }
            do {
                _ = try SyncBodyEncoding(contentType: type, contentEncoding: coding)
            } catch {
                #expect(error.status == 415)
                #expect(error.parameter == header)
            }
        }
    }

    @Test func aBatchIsAcceptedOnlyWhenEveryEventIsDelivered() {
        var wait = BatchWait(events: 3, deadline: 10)
        #expect(wait.report(partition: 2, offset: 41, error: nil) == .wait)
        #expect(wait.tick(now: 9.9) == .wait)
        #expect(wait.report(partition: 2, offset: 40, error: nil) == .wait)
        #expect(wait.report(partition: 2, offset: 42, error: nil) == .accept(partition: 2, first: 40, last: 42))
        // Decided once: a late tick or report changes nothing.
        #expect(wait.tick(now: 11) == .wait)
        #expect(wait.report(partition: 2, offset: 43, error: nil) == .wait)
        // A report without an offset: no range rather than one with a hole.
        var partial = BatchWait(events: 2, deadline: 10)
        _ = partial.report(partition: 0, offset: 5, error: nil)
        #expect(partial.report(partition: 0, offset: -1, error: nil) == .accept(partition: 0, first: nil, last: nil))
    }

    @Test func aBatchFailsAtItsFirstUndeliveredEventOrItsDeadline() {
        var failing = BatchWait(events: 3, deadline: 10)
        #expect(failing.report(partition: 1, offset: 7, error: nil) == .wait)
        guard case .fail = failing.report(partition: 1, offset: -1, error: KafkaError(.delivery, "timed out")) else { Issue.record("not failed"); return }
        #expect(failing.report(partition: 1, offset: 8, error: nil) == .wait)
        var late = BatchWait(events: 2, deadline: 10)
        #expect(late.report(partition: 1, offset: 7, error: nil) == .wait)
        #expect(late.tick(now: 10) == .fail(reason: "1 of 2 events were not delivered in time"))
        #expect(late.report(partition: 1, offset: 8, error: nil) == .wait)
    }
}
