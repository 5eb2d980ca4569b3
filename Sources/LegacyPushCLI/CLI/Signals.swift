internal import APNsRuntime
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

extension InterruptWatch {
    /// Runs a server until SIGINT or SIGTERM (`serve`, `serve --http2`, `bridge`): the signals are
    /// watched before `start`, so a script that signals as soon as it reads the line `announce`
    /// prints is never missed (nor killed by the default action); then `stop` runs.
    static func serve<Endpoints>(
        start: () async throws -> Endpoints, announce: (Endpoints) -> Void, stop: () async -> Void
    ) async throws {
        let interrupted = Handoff<Void>()
        let watch = InterruptWatch { interrupted.put(()) }
        let endpoints: Endpoints
        do {
            endpoints = try await start()
        } catch {
            watch.cancel()
            throw error
        }
        announce(endpoints)
        await interrupted.take()
        watch.cancel()
        await stop()
    }
}
