@testable import DaybookCore
import DaybookSupport
import Testing

/// The hour rollup's flat arrays: the start sort (nearly sorted or not) and the tie finder.
@Suite struct SampleColumnsTests {
    /// Keys nearly in order take the insertion sort, keys in reverse exhaust its budget and
    /// take the full sort: both give the keys ascending with each place carried along.
    @Test(arguments: [0, 1, 2, 3])
    func sortByKeyCarriesThePlaces(shape: Int) {
        var rng = SplitMix64(seed: UInt64(shape) + 7)
        let n = 500
        let keys: [Int64] = (0..<n).map { i in
            switch shape {
            case 0: return Int64(i * 10 + Int(rng.below(25))) // a few steps out of order
            case 1: return Int64(n - i)                       // reversed: the full sort
            case 2: return Int64(rng.below(40))               // many equal keys
            default: return Int64(rng.next() >> 1) - Int64.max / 2
            }
        }
        var sorted = keys
        var places = (0..<n).map { Int32($0) }
        SampleColumns.sortByKey(&sorted, &places)
        #expect(sorted == keys.sorted())
        #expect(places.map { keys[Int($0)] } == sorted)
        #expect(Set(places).count == n)
    }

    /// Only samples sharing both bounds with another are tied, in place order.
    @Test func tiedPlacesAreThoseSharingBothBounds() {
        var c = SampleColumns()
        for (start, end) in [(5, 9), (1, 2), (5, 9), (5, 8), (1, 2), (3, 3), (3, 3), (3, 4), (5, 9)] as [(Int64, Int64)] {
            c.append(start: start, end: end, value: 1, version: 0, source: 0, zone: 0, uuid: "")
        }
        #expect(c.tiedPlaces() == [0, 1, 2, 4, 5, 6, 8])
    }
}
