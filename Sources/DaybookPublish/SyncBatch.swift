import DaybookCore
import DaybookKafka
import DaybookSupport

/// A phone's sync batch, decoded, validated and published whole: the contract of an
/// ingestion service (the example service, and an HTTP endpoint).
///
///     {"user": "ana", "anchor": "17", "added": [sample, …], "deleted": ["uuid", …]}
///
/// (samples as the `sample` of a sample-added event, topics/README.md). A batch is all or
/// nothing: every event is checked before any is sent — by the projector's own decoder, and
/// against the largest message the cluster accepts — so a batch that `decode` accepts is
/// published whole or, if the cluster fails, not acknowledged; one it refuses publishes
/// nothing, and the reason names the field as the phone sent it (`added[3].end: …`).
///
///     switch SyncBatch.decode(bytes) {
///     case .success(let batch): answer(batch.publish(with: publisher))
///     case .failure(let rejection): answer(.rejected(rejection))
///     }
public struct SyncBatch: Sendable {
    /// The phone's anchor: what it moves past once the batch is acknowledged.
    public var anchor: String
    public var user: String
    /// The batch's events in the order they are published: added samples, then deletions.
    public var events: [Event]
    /// Each event's log line, exactly as it is published.
    public var lines: [[UInt8]]

    /// The largest message (key and value) a batch event may be: librdkafka refuses one
    /// whose wire size passes `message.max.bytes` (1,000,000 by default, less a record's
    /// framing), and Kafka's default `max.message.bytes` is larger.
    public static let defaultMaximumMessageBytes = 1_000_000 - 512

    /// The message limit for a connection: its `message.max.bytes` if set, less a record's
    /// framing (at most `defaultMaximumMessageBytes` + 512 by default).
    public static func maximumMessageBytes(for connection: KafkaConnection) -> Int {
        guard let text = connection.properties["message.max.bytes"], let limit = Int(text), limit > 512 else { return defaultMaximumMessageBytes }
        return limit - 512
    }

    /// Why a batch is refused; nothing of it is published. `anchor` when it could be read.
    public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
        public var anchor: String?
        /// The member as the phone sent it (`added[3].end`, `deleted[0]`, `user`), or nil
        /// when the batch as a whole is wrong.
        public var field: String?
        public var reason: String

        public init(anchor: String?, field: String?, reason: String) {
            self.anchor = anchor
            self.field = field
            self.reason = reason
        }

        public var description: String { field.map { "\($0): \(reason)" } ?? reason }
    }

    /// Decodes and validates one batch.
    /// - Parameters:
    ///   - bytes: the batch's JSON, not necessarily UTF-8 (bytes that are not are refused,
    ///     never replaced: two user ids must not become one).
    ///   - pathUser: the user the batch is for when the transport names it (an HTTP path):
    ///     the body's `user` may then be left out, and is refused if it names another.
    ///   - maximumMessageBytes: the largest event message the cluster accepts.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>, user pathUser: String? = nil,
                              maximumMessageBytes: Int = defaultMaximumMessageBytes) -> Result<SyncBatch, Rejection> {
        var integers: [String: Int64]? = [:]
        var texts: [String: String]? = [:]
        let parsed: Result<JSONValue, JSONSyntaxError> = Result { () throws(JSONSyntaxError) in
            try JSONParser.parse(bytes, exactIntegers: &integers, numberTexts: &texts)
        }
        let batch: [String: JSONValue]
        switch parsed {
        case .success(.object(let members)): batch = members
        case .success: return .failure(Rejection(anchor: nil, field: nil, reason: "not a JSON object {\"user\":…,\"anchor\":…,\"added\":[…],\"deleted\":[…]}"))
        case .failure(let error):
            // Refused whole; the anchor is read from a copy with bytes that are not UTF-8
            // replaced, only so that the phone can be answered.
            var copy = String(decoding: bytes, as: UTF8.self)
            var none: [String: Int64]? = nil
            let damaged: Result<JSONValue, JSONSyntaxError> = copy.withUTF8 { b in Result { () throws(JSONSyntaxError) in try JSONParser.parse(b, exactIntegers: &none) } }
            var anchor: String?
            if case .success(.object(let members)) = damaged { anchor = Self.anchor(members["anchor"]) }
            // The member the fault is in, when there is one (`user` given twice, a name that is not UTF-8).
            return .failure(Rejection(anchor: anchor, field: error.path, reason: "not valid JSON: \(error); nothing of the batch was published"))
        }
        guard let anchor = Self.anchor(batch["anchor"]) else {
            return .failure(Rejection(anchor: nil, field: "anchor", reason: "missing, or not a number or a string without spaces"))
        }
        let user: String
        if let pathUser {
            if let given = batch["user"], given != .string(pathUser) {
                return .failure(Rejection(anchor: anchor, field: "user", reason: "names another user than the path; leave it out, or send the path's"))
            }
            user = pathUser
        } else {
            guard case .string(let named)? = batch["user"] else {
                return .failure(Rejection(anchor: anchor, field: "user", reason: "missing or not a string"))
            }
            user = named
        }
        var events: [Event] = []
        var fields: [String] = []
        let decoder = EventDecoder()
        switch batch["added"] ?? .array([]) {
        case .array(let samples):
            for (i, sample) in samples.enumerated() {
                let event = JSONValue.object(["type": .string("sample-added"), "user": .string(user), "sample": sample])
                var exact: [String: Int64] = [:], written: [String: String] = [:]
                if let version = integers?["added[\(i)].version"] { exact["sample.version"] = version }
                if let text = texts?["added[\(i)].version"] { written["sample.version"] = text }
                do {
                    events.append(try decoder.decode(event, exactIntegers: exact, numberTexts: written))
                    fields.append("added[\(i)]")
                } catch {
                    return .failure(Rejection(anchor: anchor, field: phoneField(error.field, index: i, list: "added"), reason: error.message))
                }
            }
        default:
            return .failure(Rejection(anchor: anchor, field: "added", reason: "must be an array of samples"))
        }
        switch batch["deleted"] ?? .array([]) {
        case .array(let uuids):
            for (i, uuid) in uuids.enumerated() {
                guard case .string(let uuid) = uuid else {
                    return .failure(Rejection(anchor: anchor, field: "deleted[\(i)]", reason: "must be a sample's uuid, a string"))
                }
                events.append(.sampleDeleted(user: user, uuid: uuid))
                fields.append("deleted[\(i)]")
            }
        default:
            return .failure(Rejection(anchor: anchor, field: "deleted", reason: "must be an array of uuids"))
        }
        // Every event as it will be published, checked as the projector checks it (a deletion's
        // user and uuid were not checked above) and against the cluster's message limit.
        var lines: [[UInt8]] = []
        lines.reserveCapacity(events.count)
        let limit = min(maximumMessageBytes, EventDecoder.maximumEventBytes)
        for (event, field) in zip(events, fields) {
            let line = Array(event.jsonLine.utf8)
            let size = line.count + user.utf8.count
            guard size <= limit else {
                return .failure(Rejection(anchor: anchor, field: field, reason: "the event is \(size) bytes with its key, larger than the cluster accepts (\(limit)); nothing of the batch was published"))
            }
            let checked: Result<Event, EventError> = line.withUnsafeBufferPointer { b in Result { () throws(EventError) in try decoder.decode(b) } }
            if case .failure(let error) = checked {
                let list = field.hasPrefix("added") ? "added" : "deleted"
                let index = Int(field.dropFirst(list.count + 1).dropLast()) ?? 0
                return .failure(Rejection(anchor: anchor, field: phoneField(error.field, index: index, list: list), reason: error.message))
            }
            lines.append(line)
        }
        return .success(SyncBatch(anchor: anchor, user: user, events: events, lines: lines))
    }

    /// The batch's anchor: a non-negative whole number, or a string without spaces.
    static func anchor(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s)? where !s.isEmpty && !s.contains(where: \.isWhitespace): return s
        case .number(let n)? where n >= 0 && n == n.rounded() && n < 9e15: return String(Int64(n))
        default: return nil
        }
    }

    /// An event's field as the phone named it: `sample.end` of added[3] is `added[3].end`,
    /// the uuid of deleted[0] is `deleted[0]`, `user` stays `user`.
    static func phoneField(_ field: String?, index: Int, list: String) -> String {
        guard let field else { return "\(list)[\(index)]" }
        if field == "user" { return "user" }
        if list == "deleted" { return "deleted[\(index)]" }
        return field.hasPrefix("sample.") ? "\(list)[\(index)]." + field.dropFirst("sample.".count) : "\(list)[\(index)]"
    }

    /// What became of a batch.
    public enum Outcome: Sendable {
        /// Every event was delivered: the phone may move its anchor past the batch.
        /// `offsets` are the first and last event's (nil when a report did not say).
        case accepted(events: Int, partition: Int32?, offsets: (first: Int64, last: Int64)?)
        /// The batch cannot be accepted as it is; nothing of it was published.
        case rejected(Rejection)
        /// Not every event was delivered: nothing is acknowledged, and sending the batch
        /// again is safe (the same events twice change no total).
        case undelivered(PublishError)
    }

    /// Publishes every event and waits for each outcome.
    public func publish(with publisher: EventPublisher) -> Outcome {
        guard !events.isEmpty else { return .accepted(events: 0, partition: nil, offsets: nil) }
        let outcomes: [EventPublisher.Outcome]
        do {
            // The lines `decode` checked, as they are: not encoded and validated again.
            outcomes = try publisher.publish(validatedLines: lines.map { (user, $0) })
        } catch {
            return .undelivered(error)
        }
        var partition: Int32?
        var offsets: [Int64] = []
        for outcome in outcomes {
            switch outcome {
            case .delivered(let p, let offset):
                partition = p
                if let offset { offsets.append(offset) }
            case .rejected(let e), .undelivered(let e):
                // Checked against the limits before anything was sent, so a refusal here is
                // a cluster whose limit is lower than the one given: not acknowledged.
                return .undelivered(e)
            }
        }
        let range = offsets.count == outcomes.count ? offsets.min().flatMap { first in offsets.max().map { (first, $0) } } : nil
        return .accepted(events: events.count, partition: partition, offsets: range)
    }

    /// An anchor for an `ack`/`reject` line: control characters and bytes that would end
    /// the line escaped (`\u{1B}`), so an answer is always one line.
    public static func escapedAnchor(_ anchor: String) -> String {
        var out = ""
        for scalar in anchor.unicodeScalars {
            if scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}" {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
