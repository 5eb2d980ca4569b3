package import APNsRuntime
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Turns SIGINT and SIGTERM into a callback, so long-running commands (`serve`, `send`,
/// `feedback --interval`) can finish cleanly. A second signal ends the process at once.
final class InterruptWatch: @unchecked Sendable {
    // @unchecked: `sources` is set once in init; DispatchSource is thread-safe.
    private let sources: [any DispatchSourceSignal]

    /// Starts watching; `handler` runs once, on a background queue.
    init(_ handler: @escaping @Sendable () -> Void) {
        let fired = Latch()
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if fired.trip() {
                    handler()
                } else {
                    // Impatient: a second signal stops everything now.
                    signal(number, SIG_DFL)
                    raise(number)
                }
            }
            source.resume()
            return source
        }
    }

    /// Stops watching and restores the default signal actions.
    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

/// A one-way flag: `trip()` returns true the first time only.
final class Latch: Sendable {
    private let state = Mutex(false)

    func trip() -> Bool {
        state.withLock { tripped in
            defer { tripped = true }
            return !tripped
        }
    }
}

/// An event that happens once; `wait()` returns as soon as it has happened (before or after).
final class OneShot: Sendable {
    private struct State {
        var fired = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func fire() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = state.withLock { state in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
