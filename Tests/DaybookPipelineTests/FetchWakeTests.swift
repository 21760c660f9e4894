@testable import DaybookPipeline
import Testing

/// `FetchWake`: when the projector wakes librdkafka's fetchers after a poll.
@Suite struct FetchWakeTests {
    let t0 = ContinuousClock.now

    @Test func aShortPollWhileBehindWakesTheFetchersAtMostOncePerIntervalWhileNothingIsRead() {
        var wake = FetchWake(interval: .milliseconds(100))
        var woke: Bool
        // A full poll: the queue still holds messages, nothing to wake.
        woke = wake.afterPoll(read: 100, asked: 100, now: t0, behind: { true })
        #expect(!woke)
        // Short while behind: wake.
        woke = wake.afterPoll(read: 40, asked: 100, now: t0, behind: { true })
        #expect(woke)
        #expect(wake.lastWake == t0)
        // Nothing read since, 99 ms later: too soon (and that wake found nothing: the
        // interval doubles).
        woke = wake.afterPoll(read: 0, asked: 100, now: t0 + .milliseconds(99), behind: { true })
        #expect(!woke)
        #expect(wake.currentInterval == .milliseconds(200))
        woke = wake.afterPoll(read: 0, asked: 100, now: t0 + .milliseconds(199), behind: { true })
        #expect(!woke)
        woke = wake.afterPoll(read: 0, asked: 100, now: t0 + .milliseconds(200), behind: { true })
        #expect(woke)
    }

    /// The catch-up this is for: each wake brings a fill of the queue, which is drained in
    /// well under the interval; the next short poll wakes again at once, not 100 ms after
    /// the last wake (the poll after it waited its whole timeout for nothing).
    @Test func aWakeThatHelpedAllowsTheNextAsSoonAsTheQueueRunsShortAgain() {
        var wake = FetchWake(interval: .milliseconds(100), shortestGap: .milliseconds(10))
        var woke: Bool
        woke = wake.afterPoll(read: 40, asked: 100, now: t0, behind: { true })
        #expect(woke)
        // The fill the wake brought: full polls, then a short one 60 ms after the wake.
        woke = wake.afterPoll(read: 100, asked: 100, now: t0 + .milliseconds(20), behind: { true })
        #expect(!woke)
        woke = wake.afterPoll(read: 70, asked: 100, now: t0 + .milliseconds(60), behind: { true })
        #expect(woke)
        #expect(wake.lastWake == t0 + .milliseconds(60))
        // Read again, but within the shortest gap: not yet.
        woke = wake.afterPoll(read: 5, asked: 100, now: t0 + .milliseconds(69), behind: { true })
        #expect(!woke)
        woke = wake.afterPoll(read: 5, asked: 100, now: t0 + .milliseconds(70), behind: { true })
        #expect(woke)
        // Nothing behind: no wake, however much was read.
        woke = wake.afterPoll(read: 5, asked: 100, now: t0 + .milliseconds(200), behind: { false })
        #expect(!woke)
        // The shortest gap is never longer than the interval.
        #expect(FetchWake(interval: .milliseconds(5), shortestGap: .milliseconds(10)).shortestGap == .milliseconds(5))
    }

    @Test func nothingIsWokenWhenNoPartitionIsBehindAndBehindIsAskedOnlyWhenItMatters() {
        var wake = FetchWake()
        var woke: Bool
        var asked = 0
        // Caught up (a live stream's usual short poll): no wake, and the interval is not spent.
        woke = wake.afterPoll(read: 3, asked: 100, now: t0, behind: { asked += 1; return false })
        #expect(!woke)
        #expect(asked == 1)
        #expect(wake.lastWake == nil)
        // A full poll does not ask whether anything is behind (it costs a look per partition).
        woke = wake.afterPoll(read: 100, asked: 100, now: t0, behind: { asked += 1; return true })
        #expect(!woke)
        #expect(asked == 1)
        woke = wake.afterPoll(read: 3, asked: 100, now: t0, behind: { asked += 1; return true })
        #expect(woke)
        // Within the interval it is not asked either (nothing read since the wake).
        woke = wake.afterPoll(read: 0, asked: 100, now: t0 + .milliseconds(1), behind: { asked += 1; return true })
        #expect(!woke)
        #expect(asked == 2)
    }

    @Test func wakesThatFindNothingComeLessOftenUntilAPollReadsAgain() {
        var wake = FetchWake(interval: .milliseconds(100), longestInterval: .milliseconds(400))
        var woke: Bool
        var now = t0
        woke = wake.afterPoll(read: 5, asked: 100, now: now, behind: { true })
        #expect(woke)
        // The poll after the wake read nothing (a broker down, say): 200 ms now.
        now += .milliseconds(100)
        woke = wake.afterPoll(read: 0, asked: 100, now: now, behind: { true })
        #expect(!woke)
        #expect(wake.currentInterval == .milliseconds(200))
        now += .milliseconds(100)
        woke = wake.afterPoll(read: 0, asked: 100, now: now, behind: { true }) // 200 ms after the first
        #expect(woke)
        now += .milliseconds(200)
        woke = wake.afterPoll(read: 0, asked: 100, now: now, behind: { true }) // nothing again: 400
        #expect(!woke)
        #expect(wake.currentInterval == .milliseconds(400))
        now += .milliseconds(200)
        woke = wake.afterPoll(read: 0, asked: 100, now: now, behind: { true })
        #expect(woke)
        now += .milliseconds(100)
        woke = wake.afterPoll(read: 0, asked: 100, now: now, behind: { true })
        #expect(!woke)
        #expect(wake.currentInterval == .milliseconds(400)) // at most the longest
        // A poll that reads messages puts it back to 100 ms.
        now += .milliseconds(100)
        woke = wake.afterPoll(read: 100, asked: 100, now: now, behind: { true })
        #expect(!woke)
        #expect(wake.currentInterval == .milliseconds(100))
    }
}
