internal import CFileGuard

#if canImport(Glibc)
    import Glibc
#endif

/// A way to wake a thread that waits on a socket: another thread calls ``signal()``, and a wait
/// given this signal (``Socket/wait(for:timeout:wake:)``) returns at once. A non-blocking
/// eventfd (one descriptor: a bridge holding ten thousand idle senders holds one per sender, not
/// a pipe's two); signals do not pile up (its counter is read back to zero).
package final class WakeSignal: @unchecked Sendable {
    // @unchecked: the descriptor is set once; the kernel's counter is the shared state.
    let readDescriptor: Int32
    private var writeDescriptor: Int32 { readDescriptor }

    package init() {
        readDescriptor = lp_wake_descriptor()
    }

    deinit {
        if readDescriptor >= 0 { close(readDescriptor) }
    }

    /// Wakes the waiter (from any thread).
    package func signal() {
        var one: UInt64 = 1
        _ = write(writeDescriptor, &one, 8)
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
        var count: UInt64 = 0
        _ = read(readDescriptor, &count, 8)
    }
}
