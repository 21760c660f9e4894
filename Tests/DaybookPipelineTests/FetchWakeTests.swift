@testable import DaybookPipeline
import Testing

/// `FetchWake`: when the projector wakes librdkafka's fetchers after a poll.
@Suite struct FetchWakeTests {
    let t0 = ContinuousClock.now

    @Test func aShortPollWhileBehindWakesTheFetchersAtMostOncePerInterval() {
        var wake = FetchWake(interval: .milliseconds(100))
        var woke: Bool
        // A full poll: the queue still holds messages, nothing to wake.
        woke = wake.afterPoll(read: 100, asked: 100, now: t0, behind: { true })
        #expect(!woke)
        // Short while behind: wake.
        woke = wake.afterPoll(read: 40, asked: 100, now: t0, behind: { true })
        #expect(woke)
        #expect(wake.lastWake == t0)
        // 99 ms later: too soon, however short the poll.
        woke = wake.afterPoll(read: 10, asked: 100, now: t0 + .milliseconds(99), behind: { true })
        #expect(!woke)
        // 100 ms later: again.
        woke = wake.afterPoll(read: 10, asked: 100, now: t0 + .milliseconds(100), behind: { true })
        #expect(woke)
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
        // Within the interval it is not asked either.
        woke = wake.afterPoll(read: 3, asked: 100, now: t0 + .milliseconds(1), behind: { asked += 1; return true })
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
