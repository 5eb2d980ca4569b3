internal import APNsRuntime
import CommandLineKit
import Synchronization

/// Turns SIGINT and SIGTERM into a callback, so long-running commands (`serve`, `send`,
/// `feedback --interval`) can finish cleanly. A second signal runs `again` when one is given
/// (`send`: abandon what is still settling, then print the report); otherwise, and for a signal
/// after that or after ``cancel()``, the process ends at once, as the default action would, after
/// `lastWords` (``Console/flush()``: what stdout buffered is written, not lost).
///
/// The signals go through ``SignalRelay`` (a handler that writes to a pipe, read by a thread of
/// its own), not through Dispatch: a Dispatch signal source on Linux lost a SIGINT sent right
/// after the bridge printed its listening line, about once in ten to thirty starts (the bridge
/// then never stopped).
final class InterruptWatch: Sendable {
    private let id: UInt64

    /// Starts watching; `handler` runs once, on the relay's thread, and `again` (if given) on the
    /// second signal. `lastWords` runs before a signal ends the process.
    init(
        _ handler: @escaping @Sendable () -> Void, again: (@Sendable () -> Void)? = nil,
        lastWords: (@Sendable () -> Void)? = nil
    ) {
        id = SignalRelay.shared.watch(handler, again: again, lastWords: lastWords)
    }

    /// Stops watching: a signal from now on has its default action.
    func cancel() {
        SignalRelay.shared.unwatch(id)
    }
}

/// The process's one relay from SIGINT and SIGTERM to Swift code. The signals arrive through
/// APNsRuntime's `SignalPipe` (a handler that writes the signal's number to a pipe, read by a
/// thread of its own with both signals unblocked); that thread runs the current watch's handler,
/// or, with no watch (or a second signal), ends the process with the default action.
final class SignalRelay: Sendable {
    static let shared = SignalRelay()

    private struct Watch {
        var id: UInt64
        var handler: @Sendable () -> Void
        var again: (@Sendable () -> Void)?
        var lastWords: (@Sendable () -> Void)?
        /// Signals delivered to this watch so far.
        var fired = 0
    }

    private struct State {
        var nextID: UInt64 = 1
        var current: Watch?
        /// What runs before a signal ends the process (kept after ``unwatch(_:)``: the output is
        /// still buffered then).
        var lastWords: (@Sendable () -> Void)?
        /// What SIGHUP runs (every time), with its id; without one SIGHUP ends the process.
        var hangup: (id: UInt64, handler: @Sendable () -> Void)?
    }

    private let state = Mutex(State())

    private init() {
        SignalPipe.start { [self] number in deliver(number) }
    }

    /// Makes `handler` the one a signal runs (replacing any other); returns its id.
    func watch(
        _ handler: @escaping @Sendable () -> Void, again: (@Sendable () -> Void)? = nil,
        lastWords: (@Sendable () -> Void)? = nil
    ) -> UInt64 {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.current = Watch(id: id, handler: handler, again: again, lastWords: lastWords)
            if let lastWords { state.lastWords = lastWords }
            return id
        }
    }

    /// Removes watch `id` if it is still the current one.
    func unwatch(_ id: UInt64) {
        state.withLock { state in
            if state.current?.id == id { state.current = nil }
        }
    }

    /// Makes `handler` what every SIGHUP runs (on the relay's thread); returns its id.
    func watchHangups(_ handler: @escaping @Sendable () -> Void) -> UInt64 {
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.hangup = (id, handler)
            return id
        }
        SignalPipe.relayHangups()
        return id
    }

    /// Removes hangup watch `id` if it is still the current one: SIGHUP ends the process again.
    func unwatchHangups(_ id: UInt64) {
        state.withLock { state in
            if state.hangup?.id == id { state.hangup = nil }
        }
    }

    private func deliver(_ number: Int32) {
        if number == SignalPipe.hangup {
            let (handler, lastWords) = state.withLock { ($0.hangup?.handler, $0.lastWords) }
            if let handler { return handler() }
            lastWords?()
            SignalPipe.endProcess(as: number)
        }
        let (handler, lastWords): ((@Sendable () -> Void)?, (@Sendable () -> Void)?) = state.withLock { state in
            guard let current = state.current else { return (nil, state.lastWords) }
            state.current?.fired += 1
            switch current.fired {
            case 0: return (current.handler, nil)
            case 1 where current.again != nil: return (current.again, nil)
            default: return (nil, state.lastWords)
            }
        }
        if let handler {
            handler()
            return
        }
        // No watch, or an impatient further signal: the default action, now (this thread has the
        // signal unblocked, so raise ends the process here), after writing what stdout holds.
        lastWords?()
        SignalPipe.endProcess(as: number)
    }
}

/// Runs a callback on every SIGHUP until cancelled (`bridge --routes` reloads on it); without a
/// watch SIGHUP ends the process, as its default action does.
final class HangupWatch: Sendable {
    private let id: UInt64

    /// Starts watching; `handler` runs on the relay's thread, once per signal.
    init(_ handler: @escaping @Sendable () -> Void) {
        id = SignalRelay.shared.watchHangups(handler)
    }

    /// Stops watching.
    func cancel() {
        SignalRelay.shared.unwatchHangups(id)
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
        await stop()
        watch.cancel()
    }
}

extension InterruptWatch {
    /// Ctrl-C (or SIGTERM) during a send. The first says so at once (`stopping: settling N in
    /// flight (Ctrl-C again to abandon)`) and settles: nothing more is taken or resent, and what
    /// is in flight gets its verdict. The second abandons: what is still in flight is reported
    /// unconfirmed, and the report follows at once. A third ends the process, after writing what
    /// stdout holds (the rejection lines already known are never lost).
    static func send(
        console: Console, progress: ProgressLine?, inFlight: @escaping @Sendable () -> Int,
        settle: @escaping @Sendable () -> Void, abandon: @escaping @Sendable () -> Void
    ) -> InterruptWatch {
        InterruptWatch(
            {
                let count = inFlight()
                progress?.stopping()
                console.diagnostic(
                    "stopping: settling \(count) in flight (Ctrl-C again to abandon)")
                settle()
            },
            again: {
                progress?.stopping()
                console.diagnostic(
                    "abandoning: what is still in flight is reported unconfirmed (Ctrl-C again to quit at once)")
                abandon()
            },
            lastWords: { console.flush() })
    }
}
