@testable import DaybookCore
import DaybookSupport
import DaybookTestSupport
import Testing

/// `SourceSync.note`, the in-place form the projection uses per sample, is exactly
/// `merge(signOfLife(.sampleAdded(sample)))`, in any order and with ties of end and zone.
@Suite struct SyncNoteTests {
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func noteEqualsMergingTheSignOfLife(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let zones = ["UTC", "Europe/Berlin", "America/New_York"]
        var noted = SourceSync(user: "ana", source: "watch")
        var merged = noted
        for i in 0..<200 {
            // Few distinct ends and zones, so ties of end are common and decided by the zone.
            let end = Instant(nanoseconds: Int64(rng.below(6)) * Instant.nanosPerDay)
            let sample = Sample(user: "ana", uuid: "u\(i)", metric: Metric.allCases[rng.below(4)], source: "watch",
                                start: end, end: end, value: 1, zone: zones[rng.below(3)])
            let delivered = rng.below(3) == 0 ? nil : Instant(nanoseconds: Int64(rng.below(1_000)))
            noted.note(sample, deliveredAt: delivered)
            guard let life = SourceSync.signOfLife(.sampleAdded(sample), deliveredAt: delivered) else {
                Issue.record("a sample is a sign of life")
                return
            }
            merged.merge(life)
            #expect(noted == merged, "seed \(seed), sample \(i)")
        }
        #expect(noted.metrics.count > 1 && noted.zone != nil && noted.lastSampleDelivered != nil)
    }
}
