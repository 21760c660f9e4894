@testable import DaybookCore
import Testing

/// Hand-computed fixtures. Each comment gives the arithmetic; each fixture's answer differs
/// from the naive sum and from the max of its samples.
@Suite struct DedupeFixtureTests {
    @Test func workedExampleFromTheDesignNotes() {
        // watch 09:00–09:30 3000 wins its half hour; phone 09:15–10:15 5400 keeps 45 of 60
        // minutes: 3000 + 5400 × 45/60 = 3000 + 4050 = 7050 (naive 8400, max 5400).
        let events = [
            added("w1", "watch", "2024-03-02T09:00:00+01:00", "2024-03-02T09:30:00+01:00", 3000),
            added("p1", "phone", "2024-03-02T09:15:00+01:00", "2024-03-02T10:15:00+01:00", 5400),
        ]
        expectDiscriminating(events, total: 7050)
        let rows = rollup(events)
        #expect(value(rows, "2024-03-02") == 7050)
        #expect(rows.count == 1)
        guard case .cumulative(_, let shares)? = rows["ana steps 2024-03-02"]?.summary else { Issue.record("no row"); return }
        #expect(shares == [SourceShare(source: "watch", value: 3000), SourceShare(source: "phone", value: 4050)])
    }

    @Test func threeSources() {
        // manual 09:00–13:00 4000 (1000/h), watch 10:00–11:00 6000, phone 10:30–12:00 9000 (100/min).
        // 09–10 manual 1000; 10–11 watch 6000; 11–12 phone 60 min × 100 = 6000; 12–13 manual 1000.
        // = 14000 (naive 19000, max 9000).
        let events = [
            added("m", "manual", "2024-05-06T09:00:00Z", "2024-05-06T13:00:00Z", 4000, zone: "UTC"),
            added("w", "watch", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 6000, zone: "UTC"),
            added("p", "phone", "2024-05-06T10:30:00Z", "2024-05-06T12:00:00Z", 9000, zone: "UTC"),
        ]
        expectDiscriminating(events, total: 14000)
        #expect(value(rollup(events), "2024-05-06") == 14000)
    }

    @Test func nestedIntervals() {
        // phone 08:00–12:00 4800 (1200/h) around watch 09:00–10:00 1000, and manual 10:30–11:00 500
        // nested in the phone (ranked below it: contributes nothing).
        // watch 1000 + phone 3 h × 1200 = 3600 → 4600 (naive 6300, max 4800).
        let events = [
            added("p", "phone", "2024-05-06T08:00:00Z", "2024-05-06T12:00:00Z", 4800, zone: "UTC"),
            added("w", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 1000, zone: "UTC"),
            added("m", "manual", "2024-05-06T10:30:00Z", "2024-05-06T11:00:00Z", 500, zone: "UTC"),
        ]
        expectDiscriminating(events, total: 4600)
        #expect(value(rollup(events), "2024-05-06") == 4600)
    }

    @Test func instantaneousSamples() {
        // watch interval 10:00–11:00 600 counts in full.
        // phone instant 10:30 (50): covered by the higher-ranked watch interval → not counted.
        // watch instant 10:15 (30): same source as the cover, not strictly higher → counts.
        // 12:00: manual 70 and phone 40 → phone outranks manual → 40.
        // 13:00: phone 25 then phone 35 later in the log → 35.
        // 600 + 30 + 40 + 35 = 705 (naive 850, max 600).
        let events = [
            added("wi", "watch", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 600, zone: "UTC"),
            added("p1", "phone", "2024-05-06T10:30:00Z", "2024-05-06T10:30:00Z", 50, zone: "UTC"),
            added("w1", "watch", "2024-05-06T10:15:00Z", "2024-05-06T10:15:00Z", 30, zone: "UTC"),
            added("m1", "manual", "2024-05-06T12:00:00Z", "2024-05-06T12:00:00Z", 70, zone: "UTC"),
            added("p2", "phone", "2024-05-06T12:00:00Z", "2024-05-06T12:00:00Z", 40, zone: "UTC"),
            added("p3", "phone", "2024-05-06T13:00:00Z", "2024-05-06T13:00:00Z", 25, zone: "UTC"),
            added("p4", "phone", "2024-05-06T13:00:00Z", "2024-05-06T13:00:00Z", 35, zone: "UTC"),
        ]
        expectDiscriminating(events, total: 705)
        #expect(value(rollup(events), "2024-05-06") == 705)
    }

    @Test func instantAtTheEndOfAnIntervalIsNotCovered() {
        // Cover is start ≤ t < end: a phone instant at 11:00 exactly is outside watch 10:00–11:00.
        // 600 + 50 = 650 (naive 650 would equal — so add a shadowed phone instant at 10:59: naive 700, max 600).
        let events = [
            added("wi", "watch", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 600, zone: "UTC"),
            added("p1", "phone", "2024-05-06T11:00:00Z", "2024-05-06T11:00:00Z", 50, zone: "UTC"),
            added("p2", "phone", "2024-05-06T10:59:00Z", "2024-05-06T10:59:00Z", 50, zone: "UTC"),
        ]
        expectDiscriminating(events, total: 650)
        #expect(value(rollup(events), "2024-05-06") == 650)
    }

    @Test func berlin23HourDay() {
        // 2024-03-31 Berlin springs forward (02:00 CET → 03:00 CEST): the day lasts 23 h.
        // phone 00:00+01 → next 00:00+02 = 23 h elapsed, 2300 (100/h).
        // watch 01:00+01 → 04:00+02 = 00:00Z → 02:00Z = 2 h elapsed, 500, wins its 2 h.
        // 500 + 21 × 100 = 2600 (naive 2800, max 2300; a wall-clock 24 h day would give 2508.33).
        let events = [
            added("p", "phone", "2024-03-31T00:00:00+01:00", "2024-04-01T00:00:00+02:00", 2300),
            added("w", "watch", "2024-03-31T01:00:00+01:00", "2024-03-31T04:00:00+02:00", 500),
        ]
        expectDiscriminating(events, total: 2600)
        let rows = rollup(events)
        #expect(value(rows, "2024-03-31") == 2600)
        #expect(rows.count == 1)
    }

    @Test func berlin25HourDay() {
        // 2024-10-27 Berlin falls back (03:00 CEST → 02:00 CET): 25 h.
        // phone 00:00+02 → next 00:00+01 = 25 h, 2500 (100/h); watch 02:30+02 → 02:30+01 = 1 h, 300.
        // 300 + 24 × 100 = 2700 (naive 2800, max 2500).
        let events = [
            added("p", "phone", "2024-10-27T00:00:00+02:00", "2024-10-28T00:00:00+01:00", 2500),
            added("w", "watch", "2024-10-27T02:30:00+02:00", "2024-10-27T02:30:00+01:00", 300),
        ]
        expectDiscriminating(events, total: 2700)
        #expect(value(rollup(events), "2024-10-27") == 2700)
    }

    @Test func newYork23HourDaySplitsAMultiDaySample() {
        // phone 2024-03-09 12:00-05 → 2024-03-11 12:00-04 = 47 h elapsed (03-10 has 23 h), 4700 (100/h):
        // 03-09 gets 12 h = 1200, 03-10 23 h, 03-11 12 h = 1200.
        // watch 03-10 01:00-05 → 03:30-04 = 06:00Z → 07:30Z = 1.5 h, 450.
        // 03-10: 450 + (23 − 1.5) × 100 = 2600. Days sum 5000 (naive 5150, max 4700).
        let events = [
            added("p", "phone", "2024-03-09T12:00:00-05:00", "2024-03-11T12:00:00-04:00", 4700, zone: "America/New_York"),
            added("w", "watch", "2024-03-10T01:00:00-05:00", "2024-03-10T03:30:00-04:00", 450, zone: "America/New_York"),
        ]
        expectDiscriminating(events, total: 5000)
        let rows = rollup(events)
        #expect(value(rows, "2024-03-09") == 1200)
        #expect(value(rows, "2024-03-10") == 2600)
        #expect(value(rows, "2024-03-11") == 1200)
    }

    @Test func newYork25HourDay() {
        // 2024-11-03 New York falls back at 02:00 EDT → 01:00 EST: 25 h.
        // phone 00:00-04 → 11-04 00:00-05 = 25 h, 5000 (200/h); watch 01:30-04 → 01:30-05 = 1 h, 100.
        // 100 + 24 × 200 = 4900 (naive 5100, max 5000).
        let events = [
            added("p", "phone", "2024-11-03T00:00:00-04:00", "2024-11-04T00:00:00-05:00", 5000, zone: "America/New_York"),
            added("w", "watch", "2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00", 100, zone: "America/New_York"),
        ]
        expectDiscriminating(events, total: 4900)
        #expect(value(rollup(events), "2024-11-03") == 4900)
    }

    @Test func lordHoweHalfHourShift() {
        // 2024-04-07 Lord Howe ends DST at 02:00 +11 → 01:30 +10:30: a 24.5 h day.
        // phone 00:00+11 → 04-08 00:00+10:30 = 24.5 h, 4900 (200/h);
        // watch 01:00+11 → 01:45+10:30 = 14:00Z → 15:15Z = 1.25 h, 300.
        // 300 + (24.5 − 1.25) × 200 = 300 + 4650 = 4950 (naive 5200, max 4900).
        let events = [
            added("p", "phone", "2024-04-07T00:00:00+11:00", "2024-04-08T00:00:00+10:30", 4900, zone: "Australia/Lord_Howe"),
            added("w", "watch", "2024-04-07T01:00:00+11:00", "2024-04-07T01:45:00+10:30", 300, zone: "Australia/Lord_Howe"),
        ]
        expectDiscriminating(events, total: 4950)
        let rows = rollup(events)
        #expect(value(rows, "2024-04-07") == 4950)
        #expect(rows.count == 1)
    }

    @Test func santiagoDayThatStartsAt0100() {
        // 2024-09-08 Santiago skips midnight (00:00 -04 → 01:00 -03): the day starts at 01:00, 23 h long.
        // phone 09-07 12:00-04 (16:00Z) → 09-08 12:00-03 (15:00Z) = 23 h, 2300 (100/h):
        // 09-07 holds 12 h, 09-08 holds 11 h (01:00 → 12:00).
        // watch 09-07 23:00-04 (03:00Z) → 09-08 01:30-03 (04:30Z) = 1.5 h, 600 (400/h):
        // 1 h on 09-07 (400), 0.5 h on 09-08 (200).
        // 09-07: 400 + 11 × 100 = 1500; 09-08: 200 + 10.5 × 100 = 1250. Days sum 2750 (naive 2900, max 2300).
        let events = [
            added("p", "phone", "2024-09-07T12:00:00-04:00", "2024-09-08T12:00:00-03:00", 2300, zone: "America/Santiago"),
            added("w", "watch", "2024-09-07T23:00:00-04:00", "2024-09-08T01:30:00-03:00", 600, zone: "America/Santiago"),
        ]
        expectDiscriminating(events, total: 2750)
        let rows = rollup(events)
        #expect(value(rows, "2024-09-07") == 1500)
        #expect(value(rows, "2024-09-08") == 1250)
    }

    @Test func zoneChangeMidDay() {
        // Ana flies Berlin → New York on 2024-06-15.
        // Berlin: watch 08:00–09:00+02 1000; phone 08:30–09:30+02 600 keeps 30 min = 300.
        // New York: watch 20:00–21:00-04 (06-16 00:00Z–01:00Z) 800 counts on New York's 06-15.
        // The phone, still on Berlin time, records 06-16 01:30–03:00+02 (23:30Z–01:00Z) 900 (600/h):
        // the watch wins 00:00Z–01:00Z, the phone keeps 23:30Z–00:00Z = 300 on Berlin's 06-16.
        // 06-15: 1000 + 300 + 800 = 2100; 06-16: 300. Days sum 2400 (naive 3300, max 1000).
        let events = [
            added("w1", "watch", "2024-06-15T08:00:00+02:00", "2024-06-15T09:00:00+02:00", 1000),
            added("p1", "phone", "2024-06-15T08:30:00+02:00", "2024-06-15T09:30:00+02:00", 600),
            added("w2", "watch", "2024-06-15T20:00:00-04:00", "2024-06-15T21:00:00-04:00", 800, zone: "America/New_York"),
            added("p2", "phone", "2024-06-16T01:30:00+02:00", "2024-06-16T03:00:00+02:00", 900),
        ]
        expectDiscriminating(events, total: 2400)
        let rows = rollup(events)
        #expect(value(rows, "2024-06-15") == 2100)
        #expect(value(rows, "2024-06-16") == 300)
        #expect(rows.count == 2)
    }

    @Test func sampleAcrossMidnight() {
        // watch 05-01 23:00 → 05-02 01:00 1200: 600 on each day.
        // phone 23:30 → 00:30 500: entirely under the watch, contributes nothing.
        // manual 05-02 00:30 → 02:00 300 (200/h): keeps 01:00–02:00 = 200.
        // 05-01: 600; 05-02: 600 + 200 = 800. Sum 1400 (naive 2000, max 1200).
        let events = [
            added("w", "watch", "2024-05-01T23:00:00+02:00", "2024-05-02T01:00:00+02:00", 1200),
            added("p", "phone", "2024-05-01T23:30:00+02:00", "2024-05-02T00:30:00+02:00", 500),
            added("m", "manual", "2024-05-02T00:30:00+02:00", "2024-05-02T02:00:00+02:00", 300),
        ]
        expectDiscriminating(events, total: 1400)
        let rows = rollup(events)
        #expect(value(rows, "2024-05-01") == 600)
        #expect(value(rows, "2024-05-02") == 800)
    }

    @Test func deletingTheWinnerBringsTheLoserBack() {
        // Before: watch 09:00–09:30 3000; phone 09:15–10:15 5400 keeps 09:30–10:15 = 4050;
        // manual 09:00–11:00 2000 (1000/h) keeps 10:15–11:00 = 750 → 7800.
        // Delete the watch: phone 5400 in full; manual keeps 09:00–09:15 (250) and 10:15–11:00 (750)
        // → 6400 (naive 7400, max 5400).
        var events = [
            added("w", "watch", "2024-03-02T09:00:00+01:00", "2024-03-02T09:30:00+01:00", 3000),
            added("p", "phone", "2024-03-02T09:15:00+01:00", "2024-03-02T10:15:00+01:00", 5400),
            added("m", "manual", "2024-03-02T09:00:00+01:00", "2024-03-02T11:00:00+01:00", 2000),
        ]
        #expect(value(rollup(events), "2024-03-02") == 7800)
        events.append(deleted("w"))
        expectDiscriminating(events, total: 6400)
        #expect(value(rollup(events), "2024-03-02") == 6400)
    }

    @Test func deletingEverythingLeavesNoRow() {
        let events = [
            added("w", "watch", "2024-03-02T09:00:00+01:00", "2024-03-02T09:30:00+01:00", 3000),
            added("p", "phone", "2024-03-02T09:15:00+01:00", "2024-03-02T10:15:00+01:00", 5400),
            added("h", "watch", "2024-03-02T09:15:00+01:00", "2024-03-02T09:15:00+01:00", 70, metric: .heartRate),
            deleted("w"), deleted("p"), deleted("h"),
        ]
        #expect(rollup(events).isEmpty)
    }

    @Test func zeroValuedSampleIsDataAndEmptyShadowIsNot() {
        // A 0-step phone sample on 05-07 makes a row with 0; on 05-06 the phone sample is
        // entirely under the watch and the day's row is the watch's 100 (naive 150, max 100 → use 3 samples).
        let events = [
            added("z", "phone", "2024-05-07T10:00:00Z", "2024-05-07T11:00:00Z", 0, zone: "UTC"),
            added("w", "watch", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 100, zone: "UTC"),
            added("p", "phone", "2024-05-06T10:15:00Z", "2024-05-06T10:45:00Z", 50, zone: "UTC"),
            added("m", "manual", "2024-05-06T10:45:00Z", "2024-05-06T11:15:00Z", 60, zone: "UTC"),
        ]
        // 05-06: watch 100 + manual 11:00–11:15 = 60 × 15/30 = 30 → 130 (naive 210, max 100).
        expectDiscriminating(events, total: 130)
        let rows = rollup(events)
        #expect(value(rows, "2024-05-07") == 0)
        #expect(value(rows, "2024-05-06") == 130)
        #expect(rows.count == 2)
    }

    @Test func lateSampleAndRetroEdit() {
        // phone 10:00–11:00 1200 alone: 1200.
        // A late watch 10:30–11:00 900 arrives: 600 + 900 = 1500.
        // The watch is edited to 10:00–10:20 400: 400 + phone 40 min × 20 = 800 → 1200.
        // After the edit: naive 1600, max 1200... so add a manual 11:00–11:30 90 → 1290 (naive 1690, max 1200).
        var events = [added("p", "phone", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 1200, zone: "UTC")]
        #expect(value(rollup(events), "2024-05-06") == 1200)
        events.append(added("w", "watch", "2024-05-06T10:30:00Z", "2024-05-06T11:00:00Z", 900, zone: "UTC"))
        #expect(value(rollup(events), "2024-05-06") == 1500)
        events.append(added("w", "watch", "2024-05-06T10:00:00Z", "2024-05-06T10:20:00Z", 400, zone: "UTC"))
        events.append(added("m", "manual", "2024-05-06T11:00:00Z", "2024-05-06T11:30:00Z", 90, zone: "UTC"))
        expectDiscriminating(events, total: 1290)
        #expect(value(rollup(events), "2024-05-06") == 1290)
    }

    @Test func retroEditThatMovesASampleToAnotherDay() {
        // The watch sample moves from 05-06 to 05-07: 05-06 falls back to the phone alone.
        let events = [
            added("p", "phone", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 1200, zone: "UTC"),
            added("w", "watch", "2024-05-06T10:30:00Z", "2024-05-06T11:00:00Z", 900, zone: "UTC"),
            added("w", "watch", "2024-05-07T10:30:00Z", "2024-05-07T11:00:00Z", 900, zone: "UTC"),
        ]
        let rows = rollup(events)
        #expect(value(rows, "2024-05-06") == 1200)
        #expect(value(rows, "2024-05-07") == 900)
    }

    @Test func tombstoneBlocksResurrection() {
        // w is added, deleted, then re-sent by a retrying producer: it must stay deleted.
        // Phone alone: 09:00–10:00 600 → 600 (naive with w: 1100, max 600... the live set is the phone + manual):
        // manual 09:30–10:30 300 keeps 10:00–10:30 = 150 → 750 (naive 900, max 600).
        let events = [
            added("w", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 500, zone: "UTC"),
            added("p", "phone", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC"),
            added("m", "manual", "2024-05-06T09:30:00Z", "2024-05-06T10:30:00Z", 300, zone: "UTC"),
            deleted("w"),
            added("w", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 500, zone: "UTC"),
        ]
        expectDiscriminating(events, total: 750)
        #expect(value(rollup(events), "2024-05-06") == 750)
    }

    @Test func duplicatesAreCountedOnce() {
        // The watch exports the same walk twice under two uuids (a and b), and event a is delivered
        // twice. The phone 09:30–10:30 900 keeps 10:00–10:30 = 450. 600 + 450 = 1050.
        let a = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        let events = [
            a,
            added("b", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC"),
            added("p", "phone", "2024-05-06T09:30:00Z", "2024-05-06T10:30:00Z", 900, zone: "UTC"),
            a,
        ]
        // naive over uuids 2100, max 900.
        expectDiscriminating(events, total: 1050)
        #expect(value(rollup(events), "2024-05-06") == 1050)
    }

    @Test func sameSourceOverlapGoesToTheSampleNotTheLogPosition() {
        // Two watch samples over 09:00–10:00, a 600 and b 900, both version 0: same version,
        // start and end, so the larger value (b, 900) wins the hour in either log order; the
        // phone 09:30–10:30 300 keeps 10:00–10:30 = 150 → 1050 (naive 1800, max 900).
        let a = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        let b = added("b", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 900, zone: "UTC")
        let p = added("p", "phone", "2024-05-06T09:30:00Z", "2024-05-06T10:30:00Z", 300, zone: "UTC")
        expectDiscriminating([a, b, p], total: 1050)
        #expect(value(rollup([a, b, p]), "2024-05-06") == 1050)
        #expect(value(rollup([b, a, p]), "2024-05-06") == 1050)
        #expect(value(rollup([p, b, a]), "2024-05-06") == 1050)
        // A re-send of a with a higher version (1) now outranks b: 700 + 150 = 850, wherever
        // it sits after a's first version (naive over uuids 700 + 900 + 300 = 1900, max 900).
        let a1 = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 700, zone: "UTC", version: 1)
        expectDiscriminating([a, b, p, a1], total: 850)
        #expect(value(rollup([a, b, p, a1]), "2024-05-06") == 850)
        #expect(value(rollup([a, a1, b, p]), "2024-05-06") == 850)
        // The same re-send at version 0 is a tie on version, start and end; b's larger value
        // keeps the hour: 1050 as before, though a now holds 750.
        let a0 = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 750, zone: "UTC")
        #expect(value(rollup([a, b, p, a0]), "2024-05-06") == 1050)
    }

    @Test func publishingTwiceIsPublishingOnce() {
        // The issue's three lines, all phone 08:00–09:00: A 100, A 200 (a same-version edit:
        // the later of A's own events is in force), B 500; plus C phone 08:30–09:30 600.
        // 08:00–08:30: A (200) and B (500) tie on version, start and end; B's larger value
        // wins: 250. 08:30–09:30: C starts later than B and wins: 600. 850, for the log once
        // and for the log twice (before versions, twice moved A to the end of the log and
        // printed 100 + 100 + 300 = 500). Naive over uuids 200 + 500 + 600 = 1300, max 600.
        let log = [
            added("A", "phone", "2024-05-06T08:00:00Z", "2024-05-06T09:00:00Z", 100, zone: "UTC"),
            added("A", "phone", "2024-05-06T08:00:00Z", "2024-05-06T09:00:00Z", 200, zone: "UTC"),
            added("B", "phone", "2024-05-06T08:00:00Z", "2024-05-06T09:00:00Z", 500, zone: "UTC"),
            added("C", "phone", "2024-05-06T08:30:00Z", "2024-05-06T09:30:00Z", 600, zone: "UTC"),
        ]
        expectDiscriminating(log, total: 850)
        #expect(value(rollup(log), "2024-05-06") == 850)
        #expect(value(rollup(log + log), "2024-05-06") == 850)
    }

    @Test func aLowerVersionIsAStaleResend() {
        // a v3 600 over 09:00–10:00, then a stale re-send a v2 900 (a retry that lost a race):
        // ignored and counted. The phone 09:30–10:30 300 keeps 10:00–10:30 = 150 → 750
        // (naive over uuids, the last line of each, 900 + 300 = 1200, max 900). An equal
        // version replaces: a v3 800 → 950.
        let v3 = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC", version: 3)
        let v2 = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 900, zone: "UTC", version: 2)
        let p = added("p", "phone", "2024-05-06T09:30:00Z", "2024-05-06T10:30:00Z", 300, zone: "UTC")
        expectDiscriminating([v3, v2, p], total: 750)
        #expect(value(rollup([v3, v2, p]), "2024-05-06") == 750)
        let ledger = Ledger()
        for (i, e) in [v3, v2, p].enumerated() { ledger.apply(e, at: Int64(i)) }
        #expect(ledger.staleResendCount == 1)
        let v3b = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 800, zone: "UTC", version: 3)
        #expect(value(rollup([v3, v2, p, v3b]), "2024-05-06") == 950)
    }

    @Test func sameRankTiesGoToVersionThenStartThenEndThenValueThenUUID() {
        // Each pair overlaps on the watch alone; the right answer is the winner's share of
        // the overlap plus the loser's share outside it.
        // 1. version: x v1 09:00–10:00 600 beats y v0 09:30–10:30 1000 (later start, larger
        //    value): x 600 + y keeps 10:00–10:30 = 500 → 1100 (naive 1600, max 1000).
        // 1b. both at version 0, y starts later and wins 09:30–10:30: x keeps 09:00–09:30 =
        //    300, + 1000 = 1300 (naive 1600, max 1000).
        let x1 = added("x", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC", version: 1)
        let y0 = added("y", "watch", "2024-05-06T09:30:00Z", "2024-05-06T10:30:00Z", 1000, zone: "UTC")
        expectDiscriminating([x1, y0], total: 1100)
        #expect(value(rollup([x1, y0]), "2024-05-06") == 1100)
        #expect(value(rollup([y0, x1]), "2024-05-06") == 1100)
        let x0 = added("x", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        expectDiscriminating([x0, y0], total: 1300)
        #expect(value(rollup([x0, y0]), "2024-05-06") == 1300)
        #expect(value(rollup([y0, x0]), "2024-05-06") == 1300)
        // 2. end: same start 09:00, s ends 10:00 (600), t ends 09:30 (900): s ends later and
        //    wins the whole hour: 600 (t is covered). Naive 1500, max 900.
        let s = added("s", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        let t = added("t", "watch", "2024-05-06T09:00:00Z", "2024-05-06T09:30:00Z", 900, zone: "UTC")
        expectDiscriminating([s, t], total: 600)
        #expect(value(rollup([t, s]), "2024-05-06") == 600)
        #expect(value(rollup([s, t]), "2024-05-06") == 600)
        // 3. uuid: same version, times and value: the greater uuid in byte order ("b" > "a")
        //    wins. The total is 600 whichever wins (no total can tell them apart), so this
        //    asserts the winner, through `explain`, in both log orders.
        let ua = added("a", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        let ub = added("b", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 600, zone: "UTC")
        for order in [[ua, ub], [ub, ua]] {
            let ledger = Ledger()
            for (i, e) in order.enumerated() { ledger.apply(e, at: Int64(i)) }
            let day = DayKey(user: "ana", metric: .steps, day: CivilDay("2024-05-06")!)
            #expect(ledger.explain(day).pieces.map(\.winner.uuid) == ["b"])
        }
    }

    @Test func instantsAtOneMomentTieOnVersionThenValueThenUUID() {
        // Three phone instants at 12:00: i1 v0 40, i2 v0 70, i3 v1 10. i3 has the highest version
        // and alone counts: 10 (naive 120, max 70). Without i3, i2's larger value counts: 70 in
        // either order (an order check only: that total is the max).
        let i1 = added("i1", "phone", "2024-05-06T12:00:00Z", "2024-05-06T12:00:00Z", 40, zone: "UTC")
        let i2 = added("i2", "phone", "2024-05-06T12:00:00Z", "2024-05-06T12:00:00Z", 70, zone: "UTC")
        let i3 = added("i3", "phone", "2024-05-06T12:00:00Z", "2024-05-06T12:00:00Z", 10, zone: "UTC", version: 1)
        expectDiscriminating([i1, i2, i3], total: 10)
        #expect(value(rollup([i1, i2, i3]), "2024-05-06") == 10)
        #expect(value(rollup([i3, i2, i1]), "2024-05-06") == 10)
        #expect(value(rollup([i2, i1]), "2024-05-06") == 70)
        #expect(value(rollup([i1, i2]), "2024-05-06") == 70)
    }

    @Test func unlistedSourcesRankBelowListedOnesInCodePointOrder() {
        // phone (listed) 10:00–11:00 600; "alpha" 10:30–11:30 900 (15/min); "zeta" 10:45–12:00 750 (10/min).
        // phone 600; alpha (before zeta in code-point order) 11:00–11:30 = 450; zeta 11:30–12:00 = 300.
        // 1350 (naive 2250, max 900).
        let events = [
            added("z", "zeta", "2024-05-06T10:45:00Z", "2024-05-06T12:00:00Z", 750, zone: "UTC"),
            added("a", "alpha", "2024-05-06T10:30:00Z", "2024-05-06T11:30:00Z", 900, zone: "UTC"),
            added("p", "phone", "2024-05-06T10:00:00Z", "2024-05-06T11:00:00Z", 600, zone: "UTC"),
        ]
        expectDiscriminating(events, total: 1350)
        #expect(value(rollup(events), "2024-05-06") == 1350)
    }

    @Test func perMetricPriorityOverridesTheDefault() {
        // steps: phone before watch. phone 09:15–10:15 5400 in full; watch 09:00–09:30 3000 keeps
        // 09:00–09:15 = 3000 × 15/30 = 1500 → 6900 (naive 8400, max 5400). Distance keeps the default (watch first): 3000 + 5400 × 45/60 = 7050.
        let priority = SourcePriority(defaultOrder: ["watch", "phone"], perMetric: [.steps: ["phone", "watch"]])
        var events: [Event] = []
        for metric in [Metric.steps, .distance] {
            events.append(added("w-\(metric)", "watch", "2024-03-02T09:00:00+01:00", "2024-03-02T09:30:00+01:00", 3000, metric: metric))
            events.append(added("p-\(metric)", "phone", "2024-03-02T09:15:00+01:00", "2024-03-02T10:15:00+01:00", 5400, metric: metric))
        }
        let rows = rollup(events, priority: priority)
        #expect(value(rows, "2024-03-02", metric: .steps) == 6900)
        #expect(value(rows, "2024-03-02", metric: .distance) == 7050)
    }

    @Test func heartRateSummarizesEverySampleByStartDay() {
        // Berlin 05-06: 60 (watch), 90 (phone, same instant: no dedupe for heart rate), 120 (interval
        // 23:50 → 05-07 00:10 counts on its start day). min 60, max 120, avg 90, count 3.
        // 05-07: 70 → one row with count 1. Latest: 120 on 05-06 (h3 starts last), 70 on 05-07.
        let events = [
            added("h1", "watch", "2024-05-06T10:00:00+02:00", "2024-05-06T10:00:00+02:00", 60, metric: .heartRate),
            added("h2", "phone", "2024-05-06T10:00:00+02:00", "2024-05-06T10:00:00+02:00", 90, metric: .heartRate),
            added("h3", "watch", "2024-05-06T23:50:00+02:00", "2024-05-07T00:10:00+02:00", 120, metric: .heartRate),
            added("h4", "watch", "2024-05-07T08:00:00+02:00", "2024-05-07T08:00:00+02:00", 70, metric: .heartRate),
        ]
        let rows = rollup(events)
        #expect(rows["ana heart_rate 2024-05-06"]?.summary == .discrete(min: 60, max: 120, average: 90, count: 3, latest: 120))
        #expect(rows["ana heart_rate 2024-05-07"]?.summary == .discrete(min: 70, max: 70, average: 70, count: 1, latest: 70))
        #expect(rows["ana heart_rate 2024-05-06"]?.jsonLine == #"{"user":"ana","metric":"heart_rate","day":"2024-05-06","min":60,"max":120,"avg":90,"count":3,"latest":120}"#)
    }

    @Test func usersAreIndependent() {
        // The same uuid under two users is two samples; a deletion for bob does not touch ana.
        let events = [
            added("x", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 500, zone: "UTC"),
            added("x", "watch", "2024-05-06T09:00:00Z", "2024-05-06T10:00:00Z", 700, zone: "UTC", user: "bob"),
            deleted("x", user: "bob"),
        ]
        let rows = rollup(events)
        #expect(value(rows, "2024-05-06") == 500)
        #expect(value(rows, "2024-05-06", user: "bob") == nil)
    }
}
