import DaybookHTTP
import DaybookKafka

/// How a sync's body is encoded, read from its headers; a refusal is the 415 to answer.
/// Pure, so every rule has a test.
///
///     try SyncBodyEncoding(contentType: "application/json; charset=utf-8", contentEncoding: "gzip")   // .gzip
///     try SyncBodyEncoding(contentType: "text/plain", contentEncoding: nil)                          // throws 415
public enum SyncBodyEncoding: Sendable, Equatable {
    case identity
    case gzip

    /// - Throws: a 415 naming the header at fault: a content type other than
    ///   `application/json` (parameters such as `charset` are allowed), or a content coding
    ///   other than `gzip` or `identity` (one coding; a list is refused).
    public init(contentType: String?, contentEncoding: String?) throws(ReadError) {
        let type = contentType?.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard type == "application/json" else {
            throw ReadError(status: 415, code: "unsupported_media_type", parameter: "Content-Type",
                            message: "a sync is sent as Content-Type: application/json" + (contentType == nil ? "; the request has none" : ", not \(ReadError.shown(contentType ?? ""))"))
        }
        switch contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased() {
        case nil, "", "identity"?: self = .identity
        case "gzip"?, "x-gzip"?: self = .gzip
        case let other?:
            throw ReadError(status: 415, code: "unsupported_media_type", parameter: "Content-Encoding",
                            message: "\(ReadError.shown(other)) is not accepted; send the body as it is, or with Content-Encoding: gzip")
        }
    }
}

/// One sync batch between being queued and being answered: each message's delivery report
/// and the deadline, and what they decide. Pure (the time is given), so every rule has a
/// test: the batch is accepted only when every event is delivered, fails at the first
/// event that is not, and fails when the deadline passes first; it decides once.
///
///     var wait = BatchWait(events: 2, deadline: 10)
///     wait.report(delivered(offset: 4))   // .wait
///     wait.report(delivered(offset: 5))   // .accept(partition: 1, offsets: (4, 5))
public struct BatchWait: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Nothing to answer yet (or the batch was decided already).
        case wait
        /// Every event is delivered: answer 202.
        case accept(partition: Int32?, first: Int64?, last: Int64?)
        /// Not every event can be acknowledged: answer 503, nothing acknowledged.
        case fail(reason: String)
    }

    public let events: Int
    /// When the batch fails unless it was accepted (seconds, on the caller's clock).
    public let deadline: Double
    private(set) var delivered = 0
    private(set) var partition: Int32?
    private(set) var first: Int64?
    private(set) var last: Int64?
    private(set) var withOffset = 0
    private(set) var decided = false

    public init(events: Int, deadline: Double) {
        self.events = events
        self.deadline = deadline
    }

    /// One event's report (an event reports once).
    public mutating func report(partition: Int32, offset: Int64, error: KafkaError?) -> Action {
        guard !decided else { return .wait }
        if let error {
            decided = true
            return .fail(reason: "an event was not delivered: \(error)")
        }
        delivered += 1
        self.partition = partition
        if offset >= 0 {
            withOffset += 1
            first = min(first ?? offset, offset)
            last = max(last ?? offset, offset)
        }
        guard delivered == events else { return .wait }
        decided = true
        // Offsets only when every report gave one: a range with a hole would mislead.
        let known = withOffset == events
        return .accept(partition: self.partition, first: known ? first : nil, last: known ? last : nil)
    }

    /// The time is `now`: a batch not yet accepted fails once its deadline has passed.
    public mutating func tick(now: Double) -> Action {
        guard !decided, now >= deadline else { return .wait }
        decided = true
        return .fail(reason: "\(events - delivered) of \(events) events were not delivered in time")
    }
}
