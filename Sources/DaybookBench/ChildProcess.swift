import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A child process for the pipeline bench, started with posix_spawn, its peak resident set
/// size sampled from /proc while it runs (see `peakBytes`), and reaped with wait4.
///
/// Every live child is in `ChildProcess.live`, so that an interrupt (`BenchInterrupts`) can
/// stop them all. A child is waited for without being reaped first (waitid with WNOWAIT), so
/// a watchdog can never signal a process that reused a reaped child's pid.
final class ChildProcess: Sendable {
    /// Where the child's standard output goes.
    enum Output {
        case null
        /// A file, created or truncated.
        case file(String)
        /// An open descriptor of ours (the write end of a pipe); the child gets a copy as fd 1.
        case descriptor(Int32)
    }

    /// How a child ended.
    struct Outcome {
        /// The exit code, or nil when a signal ended the child.
        var exitCode: Int32?
        var signal: Int32?
        /// Wall time from just before the spawn to the child's exit.
        var seconds: Double
        /// Peak resident set size (VmHWM, sampled while it ran), in bytes.
        var peakRSSBytes: Int
        /// True when the signal that ended it was ours (a watchdog or `stop`).
        var stoppedByUs: Bool
        var timedOut: Bool
        /// CPU time the child used, user and system, all its threads (wait4's rusage).
        var cpuSeconds: Double = 0

        var peakRSSMegabytes: Double { Double(peakRSSBytes) / 1_048_576 }

        var description: String {
            if timedOut { return "timed out and was stopped" }
            if let exitCode { return "exited with \(exitCode)" }
            return "was killed by signal \(signal ?? 0)\(stoppedByUs ? " (ours)" : "")"
        }
    }

    private struct State {
        /// The child has exited (it may still be a zombie until `wait` reaps it).
        var exited = false
        var signalled = false
        var timedOut = false
    }

    let pid: pid_t
    /// What the child is, for messages ("daybook publish", "kcat -G").
    let name: String
    let stderrPath: String?
    private let started: ContinuousClock.Instant
    private let state = Mutex(State())

    /// Children started and not yet reaped.
    static let live = Mutex<[ChildProcess]>([])

    /// Starts `executable` with `arguments` (argv[1...]); standard input is /dev/null,
    /// standard error goes to `stderrPath` (else /dev/null). Signals are unblocked and
    /// SIGINT, SIGTERM and SIGPIPE have their default action in the child.
    init(name: String, executable: String, arguments: [String], stdout: Output = .null, stderrPath: String?) throws {
        self.name = name
        self.stderrPath = stderrPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        switch stdout {
        case .null: posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, 1)
        }
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGPIPE, SIGHUP] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child = pid_t()
        started = ContinuousClock.now
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard rc == 0 else {
            throw BenchError(.failed, "cannot start \(name) (\(executable)): \(String(cString: strerror(rc)))")
        }
        pid = child
        ChildProcess.live.withLock { $0.append(self) }
        samplePeakMemory()
        // An interrupt that came between the spawn and the registration above missed it.
        if BenchInterrupts.isRequested { signal(SIGTERM) }
    }

    /// The child's own peak RSS (VmHWM of /proc/<pid>/status), sampled every 20 ms while it
    /// runs. Not wait4's ru_maxrss: posix_spawn starts the child with vfork, and at exec Linux
    /// folds the high-water mark of the memory it shared — the bench's — into ru_maxrss
    /// (a restart of 40 MiB read as 118). VmHWM never decreases, so the last sample before
    /// exit misses at most 20 ms of growth.
    private let peakBytes = Mutex<Int>(0)

    private func samplePeakMemory() {
        let path = "/proc/\(pid)/status"
        DispatchQueue.global().async { [self] in
            while !state.withLock({ $0.exited }) {
                if let text = try? String(contentsOfFile: path, encoding: .utf8),
                   let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                   let kb = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") {
                    peakBytes.withLock { $0 = max($0, kb * 1_024) }
                }
                usleep(20_000)
            }
        }
    }

    /// Sends `signal` unless the child has exited (its pid may then be reused once reaped).
    func signal(_ signal: Int32, timedOut: Bool = false) {
        state.withLock { s in
            guard !s.exited else { return }
            s.signalled = true
            if timedOut { s.timedOut = true }
            kill(pid, signal)
        }
    }

    /// SIGTERM now, SIGKILL after `grace` seconds if it is still running.
    func stop(grace: Double = 10) {
        signal(SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [self] in signal(SIGKILL) }
    }

    /// A watchdog: if the child still runs after `seconds`, it is stopped and reported as
    /// timed out.
    func limit(seconds: Double) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            let running = state.withLock { !$0.exited }
            guard running else { return }
            signal(SIGTERM, timedOut: true)
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { [self] in signal(SIGKILL) }
        }
    }

    /// True once the child has exited (without reaping it).
    var hasExited: Bool {
        var info = siginfo_t()
        let rc = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT)
        return rc == 0 && info._sifields._sigchld.si_pid == pid
    }

    /// Waits for the child to exit, then reaps it with its resource usage.
    func wait() -> Outcome {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        let ended = ContinuousClock.now
        let (signalled, timedOut) = state.withLock { s in
            s.exited = true
            return (s.signalled, s.timedOut)
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        ChildProcess.live.withLock { $0.removeAll { $0 === self } }
        let termination = status & 0x7F
        let seconds = (ended - started).inSeconds
        return Outcome(exitCode: termination == 0 ? (status >> 8) & 0xFF : nil,
                       signal: termination == 0 ? nil : termination,
                       seconds: seconds, peakRSSBytes: peakBytes.withLock { $0 },
                       stoppedByUs: signalled && termination != 0, timedOut: timedOut,
                       cpuSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_stime.tv_sec)
                           + (Double(usage.ru_utime.tv_usec) + Double(usage.ru_stime.tv_usec)) / 1e6)
    }

    /// The last `lines` lines of the child's standard error, indented, for failure messages
    /// (as the child wrote them: whoever shows them on a terminal escapes them).
    func stderrTail(lines: Int = 15) -> String {
        guard let stderrPath, let text = try? String(contentsOfFile: stderrPath, encoding: .utf8) else { return "" }
        let tail = text.split(separator: "\n", omittingEmptySubsequences: true).suffix(lines)
        guard !tail.isEmpty else { return "  (nothing on its standard error)" }
        return tail.map { "  | " + String($0.prefix(300)) }.joined(separator: "\n")
    }

    /// A pipe whose both ends close on exec (a child gets only the copy it is given); nil on failure.
    static func pipe() -> [Int32]? {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fds
    }

    /// Stops every live child (an interrupt): SIGTERM and SIGKILL 5 s later — a projector
    /// whose broker was stopped by the same Ctrl-C can take long to shut down — or SIGKILL
    /// at once when `hard`.
    static func signalAll(hard: Bool) {
        for child in live.withLock({ $0 }) {
            if hard { child.signal(SIGKILL) } else { child.stop(grace: 5) }
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP during the bench: the first stops every child (SIGTERM, then
/// SIGKILL after 5 s), the second kills them; the bench then removes its files and ends by the same signal, as an
/// interrupted program should (so that a calling shell or loop sees the interrupt).
public enum BenchInterrupts {
    private static let requested = Atomic<Bool>(false)
    private static let count = Atomic<Int>(0)
    private static let wakeUp = Atomic<Int32>(-1)
    private static let received = Atomic<Int32>(SIGINT)

    static var isRequested: Bool { requested.load(ordering: .relaxed) }

    /// The error that unwinds the bench (running its clean-up) after an interrupt.
    public struct Interrupted: Error {}

    /// Ends the process by the signal that interrupted it (default action), after the
    /// clean-up has run.
    public static func dieOfTheSignal() -> Never {
        let s = received.load(ordering: .relaxed)
        Glibc.signal(s, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, s)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(s)
        exit(128 + s)
    }

    static func install() {
        guard let fds = ChildProcess.pipe() else { return }
        wakeUp.store(fds[1], ordering: .relaxed)
        let readEnd = fds[0]
        // The handler only writes a byte (async-signal-safe); this thread does the rest.
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                guard n == 1 else { return }
                ChildProcess.signalAll(hard: count.load(ordering: .relaxed) > 1)
            }
        }
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, s) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        for s in [SIGINT, SIGTERM, SIGHUP] {
            Glibc.signal(s) { number in
                BenchInterrupts.received.store(number, ordering: .relaxed)
                BenchInterrupts.requested.store(true, ordering: .relaxed)
                BenchInterrupts.count.add(1, ordering: .relaxed)
                var byte: UInt8 = 1
                _ = write(BenchInterrupts.wakeUp.load(ordering: .relaxed), &byte, 1)
            }
        }
    }
}
