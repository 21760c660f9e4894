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
///
/// A wake that helped (a poll read messages after it) allows the next one as soon as the
/// queue runs short again, `shortestGap` after it: each fill of the queue is drained in
/// ~100 ms while catching up, and a wake held back by the interval left the next poll
/// empty for its whole wait, then committed every staged batch as idle: ~0.13 s lost a
/// fill, in about half the runs of the 262,482-event log (BENCHMARKS.md, "Issue 26,
/// thirteenth steps"). Wakes that find nothing keep the interval, doubled each time.
struct FetchWake {
    /// The least time between two wakes when the last one was followed by no message.
    let interval: Duration
    /// The least time between two wakes when messages were read after the last one.
    let shortestGap: Duration
    /// The most it grows to while they do not (a broker down or a stale high watermark).
    let longestInterval: Duration
    /// The time now kept between two wakes: `interval`, doubled after each wake that the
    /// next poll found nothing after, back to `interval` once a poll reads a message.
    private(set) var currentInterval: Duration
    private(set) var lastWake: ContinuousClock.Instant?
    /// Whether the last call woke the fetchers (the poll after it tells whether that helped).
    private var wokeLastPoll = false
    /// Whether a poll read messages since the last wake: that wake helped.
    private var readSinceWake = false

    init(interval: Duration = .milliseconds(100), longestInterval: Duration = .seconds(2), shortestGap: Duration = .milliseconds(10)) {
        self.interval = interval
        self.longestInterval = max(interval, longestInterval)
        self.shortestGap = min(shortestGap, interval)
        currentInterval = interval
    }

    /// Whether to wake the fetchers now, after a poll that read `read` of the `asked`
    /// messages; `behind` (asked only when the rest says yes) tells whether some partition
    /// has messages not yet read. Counts a wake it says yes to.
    mutating func afterPoll(read: Int, asked: Int, now: ContinuousClock.Instant, behind: () -> Bool) -> Bool {
        if read > 0 {
            currentInterval = interval
            readSinceWake = true
        } else if wokeLastPoll {
            currentInterval = min(currentInterval * 2, longestInterval)
        }
        wokeLastPoll = false
        guard read < asked else { return false }
        if let lastWake, now - lastWake < (readSinceWake ? shortestGap : currentInterval) { return false }
        guard behind() else { return false }
        lastWake = now
        wokeLastPoll = true
        readSinceWake = false
        return true
    }
}
