import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// `strerror(errno)`.
package func errnoText(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}

package func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

/// A monotonic clock in seconds, for deadlines on connection threads.
package enum Monotonic {
    package static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Sleeps `seconds` (not on the cooperative pool: connection threads only).
    package static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }
}
