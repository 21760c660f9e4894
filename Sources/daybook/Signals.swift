#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// SIGINT/SIGTERM turned into a flag that long-running commands check.
enum Shutdown {
    static let requested = Atomic<Bool>(false)

    static func install() {
        // A parent may have spawned us with these blocked (libdispatch worker threads block
        // signals, and posix_spawn children inherit the mask): unblock them.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        signal(SIGINT) { _ in Shutdown.requested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in Shutdown.requested.store(true, ordering: .relaxed) }
    }

    static var isRequested: Bool { requested.load(ordering: .relaxed) }
}

/// Progress for long work: a live line on a terminal, a line every few seconds otherwise.
struct ProgressReporter {
    private let live = isatty(2) == 1
    private var last = ContinuousClock.now
    private let started = ContinuousClock.now
    private var shown = false

    /// Seconds since the reporter was made.
    var elapsed: Double {
        (ContinuousClock.now - started).inSeconds
    }

    /// Shows `text()` if enough time has passed since the last report.
    mutating func update(_ text: @autoclosure () -> String) {
        let now = ContinuousClock.now
        guard now - last >= (live ? .milliseconds(250) : .seconds(5)) else { return }
        last = now
        if live {
            printError("\r\u{1B}[K" + text(), newline: false)
            shown = true
        } else {
            printError(text())
        }
    }

    /// Ends a live line so that the next output starts on its own line.
    mutating func finish() {
        if shown { printError("\r\u{1B}[K", newline: false) }
        shown = false
    }
}
