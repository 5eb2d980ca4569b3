#if canImport(Glibc)
    import Glibc
#endif

/// A way to wake a thread that waits on a socket: another thread calls ``signal()``, and a wait
/// given this signal (``Socket/wait(for:timeout:wake:)``) returns at once. A non-blocking pipe;
/// signals do not pile up (one pending byte is enough).
package final class WakeSignal: @unchecked Sendable {
    // @unchecked: the descriptors are set once; `pending` is an atomic-like flag guarded by the
    // pipe itself (writes of one byte are atomic; extra signals are harmless).
    let readDescriptor: Int32
    private let writeDescriptor: Int32

    package init() {
        (readDescriptor, writeDescriptor) = FileDescriptor.makePipe() ?? (-1, -1)
    }

    deinit {
        if readDescriptor >= 0 { close(readDescriptor) }
        if writeDescriptor >= 0 { close(writeDescriptor) }
    }

    /// Wakes the waiter (from any thread).
    package func signal() {
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)
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
        var scratch = [UInt8](repeating: 0, count: 64)
        while scratch.withUnsafeMutableBytes({ read(readDescriptor, $0.baseAddress, $0.count) }) > 0 {}
    }
}
