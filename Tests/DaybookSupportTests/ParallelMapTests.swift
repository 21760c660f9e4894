import DaybookSupport
import Foundation
import Testing

/// `Collection.parallelMap`: results in the collection's order, every element transformed
/// once, the lowest-positioned error thrown after all have run, nothing leaked.
@Suite struct ParallelMapTests {
    /// Counts calls and live values across threads.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var calls = 0
        private var live = 0
        func call() { lock.withLock { calls += 1 } }
        func born() { lock.withLock { live += 1 } }
        func died() { lock.withLock { live -= 1 } }
        var callCount: Int { lock.withLock { calls } }
        var liveCount: Int { lock.withLock { live } }
    }

    /// A result that says when it is destroyed (an uninitialized or doubly destroyed slot shows).
    final class Box {
        let value: Int
        let tally: Tally
        init(_ value: Int, _ tally: Tally) { self.value = value; self.tally = tally; tally.born() }
        deinit { tally.died() }
    }

    struct Failed: Error, Equatable { var position: Int }

    /// One task per element, and slices: 10,000 fit 8 slices of 1,250; 3 slices of 3,334,
    /// 3,334 and 3,332; 20,000 slices are cut down to one element each.
    @Test(arguments: [nil, 1, 3, 8, 20_000] as [Int?])
    func keepsTheOrderOfTenThousandElements(slices: Int?) {
        let tally = Tally()
        let input = Array(0..<10_000)
        let out = input.parallelMap(slices: slices) { i in
            tally.call()
            return "#\(i * 3)"
        }
        #expect(out == input.map { "#\($0 * 3)" })
        #expect(tally.callCount == 10_000)
    }

    @Test func aCollectionThatIsNotAnArrayAndAnEmptyOne() {
        #expect((1...5).parallelMap { $0 * $0 } == [1, 4, 9, 16, 25])
        #expect([Int]().parallelMap(slices: 4) { $0 } == [])
        #expect("abc".parallelMap { $0.uppercased() } == ["A", "B", "C"])
    }

    /// Positions 7,300 and 2,100 throw (2,100 in an earlier task than 7,300): every element is
    /// still transformed, 2,100's error is thrown, and the 9,998 results made are destroyed.
    @Test(arguments: [nil, 4, 10] as [Int?])
    func theLowestPositionedErrorSurfacesAfterEveryElementRan(slices: Int?) {
        let tally = Tally()
        #expect(throws: Failed(position: 2_100)) {
            try Array(0..<10_000).parallelMap(slices: slices) { i throws(Failed) in
                tally.call()
                if i == 7_300 || i == 2_100 { throw Failed(position: i) }
                return Box(i, tally)
            }
        }
        #expect(tally.callCount == 10_000)
        #expect(tally.liveCount == 0)
    }

    /// Two failures in one slice: the first of them is thrown, both slots left alone.
    @Test func twoFailuresInOneSlice() {
        let tally = Tally()
        #expect(throws: Failed(position: 5)) {
            try Array(0..<100).parallelMap(slices: 2) { i throws(Failed) in
                if i == 5 || i == 6 || i == 80 { throw Failed(position: i) }
                return Box(i, tally)
            }
        }
        #expect(tally.liveCount == 0)
    }

    /// Results without a throw are kept, in order (and destroyed with the array).
    @Test func resultsLiveAsLongAsTheArray() {
        let tally = Tally()
        do {
            let boxes = Array(0..<1_000).parallelMap(slices: 4) { Box($0, tally) }
            #expect(boxes.map(\.value) == Array(0..<1_000))
            #expect(tally.liveCount == 1_000)
        }
        #expect(tally.liveCount == 0)
    }

    /// Returning a `Result` keeps every element's outcome (what the projector's commit does).
    @Test func aResultPerElementKeepsEachOutcome() {
        let out = Array(0..<10).parallelMap { i in
            Result { () throws(Failed) in
                if i % 4 == 1 { throw Failed(position: i) }
                return i
            }
        }
        #expect(out.compactMap { try? $0.get() } == [0, 2, 3, 4, 6, 7, 8])
        #expect(out.compactMap { if case .failure(let e) = $0 { e.position } else { nil } } == [1, 5, 9])
    }
}

/// `WaitingWork.run`: every index once, on as many threads as asked (not one a core), and
/// nothing left running when it returns.
@Suite struct WaitingWorkTests {
    final class Calls: @unchecked Sendable {
        let lock = NSLock()
        var indices: [Int] = []
        var threads = Set<UInt64>()
        var running = 0, mostAtOnce = 0
    }

    @Test(arguments: [(0, 8), (1, 8), (33, 4), (100, 8)])
    func mapGivesEachIndexsResultInOrder(count: Int, threads: Int) {
        // Each result a String (a value with storage of its own), in index order.
        #expect(WaitingWork.map(count, threads: threads) { "r\($0)" } == (0..<count).map { "r\($0)" })
    }

    @Test(arguments: [(0, 8), (1, 8), (5, 8), (32, 8), (33, 4), (10, 1)])
    func everyIndexIsCalledOnceOnAtMostTheThreadsAsked(count: Int, threads: Int) {
        let calls = Calls()
        WaitingWork.run(count, threads: threads) { i in
            calls.lock.withLock {
                calls.indices.append(i)
                calls.threads.insert(UInt64(pthread_self()))
                calls.running += 1
                calls.mostAtOnce = max(calls.mostAtOnce, calls.running)
            }
            usleep(2_000) // a call that waits, as a sync does: the others go on meanwhile
            calls.lock.withLock { calls.running -= 1 }
        }
        #expect(calls.indices.sorted() == Array(0..<count))
        #expect(calls.running == 0, "a call still running after run returned")
        #expect(calls.threads.count <= max(1, min(count, threads)))
        // More threads than this machine's cores wait at once when there are as many calls.
        if count >= threads, threads > 2 { #expect(calls.mostAtOnce > 2, "\(calls.mostAtOnce) at once") }
    }
}
