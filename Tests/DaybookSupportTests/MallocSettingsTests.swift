import DaybookSupport
import Testing

/// `MallocSettings`: set unless the environment tunes malloc itself.
@Suite struct MallocSettingsTests {
    @Test func anOperatorsMallocTunablesWinAndOtherwiseBothSettingsAreMade() {
        // glibc's tunables for malloc: left alone, nothing set.
        #expect(!MallocSettings.apply(environment: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=4"]))
        #expect(!MallocSettings.apply(environment: ["GLIBC_TUNABLES": "glibc.rtld.nns=2:glibc.malloc.mmap_threshold=131072"]))
        // Tunables of something else, or none: both set (mallopt answers 1 for each).
        #if canImport(Glibc)
        #expect(MallocSettings.apply(environment: ["GLIBC_TUNABLES": "glibc.rtld.nns=2"]))
        #expect(MallocSettings.apply(environment: [:]))
        #endif
        #expect(MallocSettings.arenas == 2 && MallocSettings.mmapThreshold == 262_144)
    }
}
