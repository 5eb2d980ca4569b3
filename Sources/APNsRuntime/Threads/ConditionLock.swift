import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A mutex with a condition variable (monotonic clock), for handing work between threads.
package final class ConditionLock: @unchecked Sendable {
    // @unchecked: the pthread objects are only touched through pthread calls, which synchronise.

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a signal for at most `timeout` seconds; call with the lock held (inside
    /// `withLock`). Returns false on timeout.
    package func wait(timeout: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = Int(timeout * 1e9)
        var deadline = timespec(
            tv_sec: now.tv_sec + nanoseconds / 1_000_000_000, tv_nsec: now.tv_nsec + nanoseconds % 1_000_000_000)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        return pthread_cond_timedwait(condition, mutex, &deadline) == 0
    }

    /// Wakes every waiter.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
