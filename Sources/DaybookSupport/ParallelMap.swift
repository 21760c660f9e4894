import Dispatch
import Foundation

extension Collection {
    /// The results of `transform` on each element, in the collection's order, computed on
    /// several threads at once (`DispatchQueue.concurrentPerform`).
    ///
    /// ```swift
    /// let lengths = lines.parallelMap(slices: 8) { $0.utf8.count }
    /// ```
    ///
    /// `transform` is called concurrently for distinct elements, and the compiler does not
    /// check that this is safe (neither the elements nor the results need be `Sendable`): each
    /// call must touch only what its element owns (a partition's worker and shard, one
    /// line's bytes) and state that is itself safe to share. The results are written each to
    /// its own slot, so no two threads write the same memory.
    ///
    /// Every element is transformed, also after one has thrown: a failure does not stop the
    /// others (a commit that has begun finishes). Then the error of the failed element with
    /// the lowest position is thrown and the other results are dropped; to keep every
    /// element's outcome, return a `Result` instead.
    ///
    /// - Parameters:
    ///   - slices: nil (the default) to make each element a task of its own, taken by the
    ///     threads as they come free: for coarse work of uneven size (one partition's batch).
    ///     A number, to cut the collection into that many contiguous slices of equal length
    ///     (the last shorter), one task each: for fine work (one line's decode), where
    ///     scheduling every element would cost more than the work.
    ///   - transform: called once per element, from any thread.
    /// - Complexity: O(*n*) calls of `transform`, spread over the cores.
    public func parallelMap<T, E: Error>(slices: Int? = nil, _ transform: (Element) throws(E) -> T) throws(E) -> [T] {
        let elements = Array(self)
        let n = elements.count
        guard n > 0 else { return [] }
        let tasks = Swift.max(1, Swift.min(slices ?? n, n))
        let per = (n + tasks - 1) / tasks
        // Per task: the first error it met, and every position it left uninitialized.
        var failures = [(first: E, failed: [Int])?](repeating: nil, count: tasks)
        var thrown: E?
        let results = [T](unsafeUninitializedCapacity: n) { buffer, count in
            guard let base = buffer.baseAddress else { return }
            failures.withUnsafeMutableBufferPointer { failureSlots in
                // Each task writes only its own positions of `base` and its own failure slot.
                nonisolated(unsafe) let out = base
                nonisolated(unsafe) let failureOut = failureSlots
                nonisolated(unsafe) let input = elements
                nonisolated(unsafe) let body = transform
                DispatchQueue.concurrentPerform(iterations: tasks) { task in
                    var failure: (first: E, failed: [Int])?
                    for i in (task * per)..<Swift.min(n, (task + 1) * per) {
                        do throws(E) {
                            (out + i).initialize(to: try body(input[i]))
                        } catch {
                            if failure == nil { failure = (error, []) }
                            failure?.failed.append(i)
                        }
                    }
                    failureOut[task] = failure
                }
            }
            // Tasks cover ascending ranges: the first one that failed holds the lowest position.
            guard let firstFailure = failures.first(where: { $0 != nil }) ?? nil else {
                count = n
                return
            }
            var initialized = [Bool](repeating: true, count: n)
            for case let f? in failures { for i in f.failed { initialized[i] = false } }
            for i in 0..<n where initialized[i] { (base + i).deinitialize(count: 1) }
            thrown = firstFailure.first
            count = 0
        }
        if let thrown { throw thrown }
        return results
    }
}

/// Work that mostly waits (files created and synced, databases closed), spread over more
/// threads than there are cores, so that one thread's wait overlaps another's.
public enum WaitingWork {
    /// `transform(i)` for every `i` in `0..<count`, in order, each computed once on one of
    /// `min(count, threads)` threads of their own (each takes every `threads`-th index);
    /// returns when all are.
    ///
    /// `transform` runs concurrently for distinct indices, and the compiler does not check
    /// that this is safe (as `parallelMap`): each call must touch only what its index owns
    /// (a slot of a buffer, one partition's shard) and state safe to share.
    public static func map<T>(_ count: Int, threads: Int, _ transform: @escaping (Int) -> T) -> [T] {
        guard count > 0 else { return [] }
        let n = Swift.max(1, Swift.min(count, threads))
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            // Each thread initializes only its own positions of `base`.
            nonisolated(unsafe) let out = base
            nonisolated(unsafe) let body = transform
            let done = DispatchSemaphore(value: 0)
            for t in 0..<n {
                // A `Thread` of its own: `concurrentPerform` keeps to one thread a core. (Its
                // block outlives the call, so `transform` must be escaping.)
                Thread.detachNewThread {
                    for i in stride(from: t, to: count, by: n) { (out + i).initialize(to: body(i)) }
                    done.signal()
                }
            }
            for _ in 0..<n { done.wait() }
            initialized = count
        }
    }

    /// `body(i)` for every `i` in `0..<count`, as `map` calls it.
    public static func run(_ count: Int, threads: Int, _ body: @escaping (Int) -> Void) {
        _ = map(count, threads: threads, body)
    }
}
