/// When the projector wakes librdkafka's fetchers (`KafkaConsumer.wakeFetchers`): after a
/// poll that read less than it asked for while a partition is behind its log end, at most
/// once per `interval`. I/O-free; the projector performs what it says.
///
/// librdkafka 2.0 stops fetching once the consumer's queue is full and looks again only
/// when a broker's thread next wakes, up to a second later. Catching up, the projector
/// drains that queue in well under a second, then polled nothing for 300–450 ms at a time:
/// a third of a catch-up's wall clock on the issue's log (BENCHMARKS.md, "Issue 26, tenth
/// steps"). A short poll while behind is that signature; live and caught up (nothing
/// behind), nothing is woken.
struct FetchWake {
    /// The least time between two wakes while they help.
    let interval: Duration
    /// The most it grows to while they do not (a broker down or a stale high watermark).
    let longestInterval: Duration
    /// The time now kept between two wakes: `interval`, doubled after each wake that the
    /// next poll found nothing after, back to `interval` once a poll reads a message.
    private(set) var currentInterval: Duration
    private(set) var lastWake: ContinuousClock.Instant?
    /// Whether the last call woke the fetchers (the poll after it tells whether that helped).
    private var wokeLastPoll = false

    init(interval: Duration = .milliseconds(100), longestInterval: Duration = .seconds(2)) {
        self.interval = interval
        self.longestInterval = max(interval, longestInterval)
        currentInterval = interval
    }

    /// Whether to wake the fetchers now, after a poll that read `read` of the `asked`
    /// messages; `behind` (asked only when the rest says yes) tells whether some partition
    /// has messages not yet read. Counts a wake it says yes to.
    mutating func afterPoll(read: Int, asked: Int, now: ContinuousClock.Instant, behind: () -> Bool) -> Bool {
        if read > 0 {
            currentInterval = interval
        } else if wokeLastPoll {
            currentInterval = min(currentInterval * 2, longestInterval)
        }
        wokeLastPoll = false
        guard read < asked else { return false }
        if let lastWake, now - lastWake < currentInterval { return false }
        guard behind() else { return false }
        lastWake = now
        wokeLastPoll = true
        return true
    }
}
