import DaybookCore
import DaybookFiles
import DaybookKafka
import DaybookLog

/// Files of events, one JSON line each (`daybook publish`, `rollup`, import's staging): every
/// non-blank line decoded with the projector's rules, on all cores, in batches so memory
/// stays flat; and such a file published through an `EventPublisher`.
public enum EventLines {
    /// Calls `body` in line order with each non-blank line's number, bytes (valid only during
    /// the call) and event or rejection. A line over `EventDecoder.maximumEventBytes` is
    /// rejected without being kept in memory.
    /// - Throws: `InputFileError` (a stream that cannot be read); what `body` throws.
    public static func forEach(_ input: LineInput, _ body: (Int, UnsafeBufferPointer<UInt8>, Result<Event, EventError>) throws -> Void) throws {
        let decoder = EventDecoder()
        try LineInput.forEachBatch(input, maximumLineBytes: EventDecoder.maximumEventBytes) { lines in
            let results = decoder.decode(batch: lines.map(\.bytes), lineLimit: EventDecoder.maximumEventBytes)
            for i in lines.indices {
                try body(lines[i].number, lines[i].bytes ?? UnsafeBufferPointer(start: nil, count: 0), results[i])
            }
        }
    }

    /// What became of a file's lines.
    public struct Report: Sendable {
        public var read = 0
        /// Delivered (acknowledged by the cluster).
        public var published = 0
        /// Invalid lines, and lines the cluster refused for their size.
        public var rejected = 0
        /// Lines not delivered after the producer's retries; publishing them again is safe.
        public var failedLines: [Int] = []
        public var firstFailure: KafkaError?
        /// Lines the cluster refused for their size (counted in `rejected` too).
        public var tooLarge: [Int] = []
    }

    /// The reason given for a line the cluster refused for its size.
    public static let tooLargeReason = "the event is larger than the cluster accepts (message.max.bytes, 1000000 bytes unless configured); it was not published"

    /// Validates every line of `input` and publishes the valid ones unchanged, keyed by user,
    /// waiting for every outcome; nothing is queued until the cluster has answered once.
    ///
    /// - Parameters:
    ///   - rejected: each invalid line's number and reason, then each line refused for its size.
    ///   - progress: every 1,024 lines: lines read, the publisher's tally, lines rejected.
    ///   - waiting: while closing, the delivery reports still awaited and the tally.
    /// - Throws: `PublishError` (configuration, unreachable, the producer failed);
    ///   `InputFileError`.
    public static func publish(_ input: LineInput, connection: KafkaConnection, configuration: ProducerConfiguration, topic: String,
                               connectTimeout: Duration = .seconds(30), logger: Logger = Logger(label: "publish", level: .warning),
                               rejected: (Int, String) -> Void, progress: (Int, EventPublisher.Tally, Int) -> Void = { _, _, _ in },
                               waiting: (Int, EventPublisher.Tally) -> Void = { _, _ in }) throws -> Report {
        var r = Report()
        var failedLines: [Int] = []
        var firstFailure: KafkaError?
        var tooLarge: [Int] = []
        let publisher = try EventPublisher(connection: connection, configuration: configuration, topic: topic, connectTimeout: connectTimeout,
                                           logger: logger) { number, outcome in
            switch outcome {
            case .delivered: break
            case .rejected: tooLarge.append(number)
            case .undelivered(let error):
                failedLines.append(number)
                if firstFailure == nil { firstFailure = error.kafkaError }
            }
        }
        try publisher.connect()
        try forEach(input) { number, line, decoded in
            r.read += 1
            let user: String
            switch decoded {
            case .success(let event): user = event.user
            case .failure(let error):
                r.rejected += 1
                rejected(number, error.description)
                return
            }
            do {
                try publisher.send(validatedJSON: UnsafeRawBufferPointer(line), user: user, id: number)
            } catch let error as PublishError where error.kind == .oversized {
                tooLarge.append(number)
            }
            if r.read % 1_024 == 0 {
                publisher.poll()
                progress(r.read, publisher.tally, r.rejected)
            }
        }
        try publisher.close { inFlight in waiting(inFlight, publisher.tally) }
        for number in tooLarge.sorted() {
            r.rejected += 1
            rejected(number, tooLargeReason)
        }
        r.tooLarge = tooLarge
        r.published = publisher.tally.delivered
        r.failedLines = failedLines
        r.firstFailure = firstFailure
        return r
    }
}
