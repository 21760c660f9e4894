#if canImport(Glibc)
import Glibc
#endif

/// glibc's malloc, set for a long-running projector: at most two arenas, and a fixed
/// 256 KiB threshold above which a block is its own mapping, given back when freed.
///
/// Why (BENCHMARKS.md, "Issue 26: memory at 4M/128, part 2"): by default glibc makes an
/// arena per thread that allocates (librdkafka's, the commit workers', the poll loop's)
/// and raises its mmap threshold each time a large block is freed, so later 1 MiB fetch
/// buffers and grown staged arrays are carved from arenas that keep their pages. The peak
/// RSS then creeps up with the run: 258–275 MiB at 4M events over 128 partitions against
/// 225–230 MiB with these two settings (either alone did not hold the floor).
///
/// A `GLIBC_TUNABLES` that names any `glibc.malloc` setting wins: nothing is changed, so
/// an operator's own tuning stands. Does nothing where the C library is not glibc.
public enum MallocSettings {
    /// The number of arenas and the mmap threshold `apply()` sets.
    public static let arenas: Int32 = 2
    public static let mmapThreshold: Int32 = 256 << 10

    /// Sets both, unless the environment tunes malloc itself. Call it first thing in a
    /// process, before other threads start. Returns whether it changed anything.
    @discardableResult
    public static func apply(environment: [String: String]) -> Bool {
        #if canImport(Glibc)
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.") { return false }
        // `mallopt` is declared in <malloc.h>, which the Glibc module does not import: found
        // by name in the process's own symbols (a glibc always has it; anything else, no-op).
        guard let process = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(process) }
        guard let symbol = dlsym(process, "mallopt") else { return false }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        let arenasSet = mallopt(Self.arenaMaxParameter, arenas) == 1
        let thresholdSet = mallopt(Self.mmapThresholdParameter, mmapThreshold) == 1
        return arenasSet && thresholdSet
        #else
        return false
        #endif
    }

    /// glibc's `M_ARENA_MAX` and `M_MMAP_THRESHOLD` (<malloc.h>, fixed in its ABI).
    static let arenaMaxParameter: Int32 = -8
    static let mmapThresholdParameter: Int32 = -3
}
