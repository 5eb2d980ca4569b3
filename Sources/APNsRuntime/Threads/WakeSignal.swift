internal import CFileGuard
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A way to wake a thread that waits on a socket: another thread calls ``signal()``, and a wait
/// given this signal (``Socket/wait(for:timeout:wake:)``) returns at once. A non-blocking
/// eventfd; signals do not pile up (its counter is read back to zero).
///
/// A waiter that goes away for a while (a bridge's idle sender, parked without a thread)
/// ``suspend()``s it: the descriptor is closed (ten thousand parked senders hold no descriptor
/// each for it), a signal meanwhile is kept as a flag, and ``resume()`` opens a new one, already
/// signalled if one came. The descriptor is only closed and opened under the lock that
/// ``signal()`` writes under, so no signal ever reaches a number the kernel has given to
/// another file.
package final class WakeSignal: @unchecked Sendable {
    // @unchecked: the descriptor changes only under `state`'s lock; the waiter reads it on its
    // own thread between resume() and suspend().
    private let state: Mutex<(descriptor: Int32, pending: Bool)>

    package init() {
        state = Mutex((lp_wake_descriptor(), false))
    }

    deinit {
        let descriptor = state.withLock { $0.descriptor }
        if descriptor >= 0 { close(descriptor) }
    }

    /// The descriptor a waiter polls (-1 while suspended).
    var readDescriptor: Int32 { state.withLock { $0.descriptor } }

    /// Wakes the waiter (from any thread).
    package func signal() {
        state.withLock { state in
            guard state.descriptor >= 0 else {
                state.pending = true
                return
            }
            var one: UInt64 = 1
            _ = write(state.descriptor, &one, 8)
        }
    }

    /// Closes the descriptor while nobody waits (signals meanwhile are remembered).
    package func suspend() {
        state.withLock { state in
            guard state.descriptor >= 0 else { return }
            var count: UInt64 = 0
            if read(state.descriptor, &count, 8) == 8, count > 0 { state.pending = true }
            close(state.descriptor)
            state.descriptor = -1
        }
    }

    /// Opens the descriptor again for a waiter, signalled when a signal came while suspended.
    package func resume() {
        state.withLock { state in
            guard state.descriptor < 0 else { return }
            state.descriptor = lp_wake_descriptor()
            if state.pending, state.descriptor >= 0 {
                var one: UInt64 = 1
                _ = write(state.descriptor, &one, 8)
            }
            state.pending = false
        }
    }

    /// Waits (on this thread) until signalled or `timeout` seconds pass; true when signalled.
    /// Clears the signal.
    package func wait(timeout: Double) -> Bool {
        var descriptor = pollfd(fd: readDescriptor, events: Int16(POLLIN), revents: 0)
        let result = Poll.wait(&descriptor, timeout: timeout)
        if result > 0 { clear() }
        return result > 0
    }

    /// Clears pending signals (the waiter, after waking).
    package func clear() {
        let descriptor = readDescriptor
        guard descriptor >= 0 else { return }
        var count: UInt64 = 0
        _ = read(descriptor, &count, 8)
    }
}
