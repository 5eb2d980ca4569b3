#if canImport(Glibc)
    import Glibc
#endif

/// The one call of `poll(2)` in the package. Every wait for a descriptor comes here: a
/// connection's wait (``Socket/wait(for:timeout:)``), an event loop's (``Poller``), an accept
/// (``Listener/accept(timeout:)``) and a thread's wait for a wake-up (``WakeSignal/wait(timeout:)``).
package enum Poll {
    /// Waits until one of `descriptors` is ready or `timeout` seconds pass (`.infinity`: no
    /// limit), retrying after a signal. Returns how many are ready (their `revents` set), 0 after
    /// the timeout, or -1 when `poll(2)` failed otherwise (`errno` says why).
    package static func wait(_ descriptors: UnsafeMutableBufferPointer<pollfd>, timeout: Double) -> Int32 {
        let milliseconds = milliseconds(timeout)
        while true {
            let result = poll(descriptors.baseAddress, nfds_t(descriptors.count), milliseconds)
            if result < 0, errno == EINTR { continue }
            return result
        }
    }

    /// Waits for one descriptor like the buffer's `wait(_:timeout:)`.
    package static func wait(_ descriptor: inout pollfd, timeout: Double) -> Int32 {
        withUnsafeMutablePointer(to: &descriptor) {
            wait(UnsafeMutableBufferPointer(start: $0, count: 1), timeout: timeout)
        }
    }

    /// Waits for the descriptors of an array like the buffer's `wait(_:timeout:)`.
    package static func wait(_ descriptors: inout [pollfd], timeout: Double) -> Int32 {
        descriptors.withUnsafeMutableBufferPointer { wait($0, timeout: timeout) }
    }

    /// The `poll(2)` events for `readiness`.
    package static func events(_ readiness: Readiness) -> Int16 {
        var events: Int16 = 0
        if readiness.contains(.readable) { events |= Int16(POLLIN) }
        if readiness.contains(.writable) { events |= Int16(POLLOUT) }
        return events
    }

    /// `timeout` seconds as `poll(2)` takes them: rounded up to a millisecond, at most a day, -1
    /// for no limit.
    private static func milliseconds(_ timeout: Double) -> Int32 {
        timeout.isInfinite ? -1 : Int32(Swift.max(0, Swift.min(timeout * 1000, 86_400_000)).rounded(.up))
    }
}
