import Synchronization

/// A value handed over once, from any thread, to one waiting task: the package's one bridge
/// from its OS threads (connection loops, helpers, signal handlers) into async code.
///
/// ``put(_:)`` never blocks and never resumes the waiter under the lock; only the first put
/// counts, so a result and a cancellation can race to put and exactly one wins. ``take()``
/// suspends (it never blocks a cooperative thread) until a value is there.
package final class Handoff<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, Never>)
        case full(Value)
        case taken
    }

    private let state = Mutex(State.empty)

    package init() {}

    /// Hands `value` over. Returns false when a value was already put (this one is dropped).
    @discardableResult
    package func put(_ value: Value) -> Bool {
        let (waiter, accepted): (CheckedContinuation<Value, Never>?, Bool) = state.withLock { state in
            switch state {
            case .empty:
                state = .full(value)
                return (nil, true)
            case .waiting(let continuation):
                state = .taken
                return (continuation, true)
            case .full, .taken:
                return (nil, false)
            }
        }
        waiter?.resume(returning: value)
        return accepted
    }

    /// Whether a value has been put.
    package var isFilled: Bool {
        state.withLock { state in
            switch state {
            case .empty, .waiting: false
            case .full, .taken: true
            }
        }
    }

    /// The value, suspending until it has been put. Call it once.
    package func take() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let ready: Value? = state.withLock { state in
                switch state {
                case .empty:
                    state = .waiting(continuation)
                    return nil
                case .full(let value):
                    state = .taken
                    return value
                case .waiting, .taken:
                    preconditionFailure("Handoff.take() called twice")
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

extension OSThread {
    /// Runs blocking `body` (sockets, OpenSSL, file I/O, waits) on an OS thread of its own and
    /// returns its result, suspending the caller instead of blocking a cooperative thread.
    package static func run<Value: Sendable>(name: String, _ body: @escaping @Sendable () -> Value) async -> Value {
        let handoff = Handoff<Value>()
        start(name: name) { handoff.put(body()) }
        return await handoff.take()
    }
}
