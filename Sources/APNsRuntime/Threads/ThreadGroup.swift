import APNsCore

/// Threads started for one server and joined together with a deadline: the accept loops, event
/// loops and connection threads of the simulators and the bridge. `join` waits for the last one to
/// end (woken by it, not polling), or until the deadline.
package final class ThreadGroup: @unchecked Sendable {
    // @unchecked: `running` is only read and written with `lock` held.

    private let lock = ConditionLock()
    private var running = 0

    package init() {}

    /// Threads started and not yet ended.
    package var count: Int { lock.withLock { running } }

    /// Runs `body` on a new OS thread named `name`, counted until it returns.
    package func start(name: String, _ body: @escaping @Sendable () -> Void) {
        lock.withLock { running += 1 }
        OSThread.start(name: name) {
            body()
            self.lock.withLock {
                self.running -= 1
                if self.running == 0 { self.lock.broadcast() }
            }
        }
    }

    /// Blocks the calling thread (never a cooperative one: call it through `OSThread.run`) until
    /// every thread of the group has ended or `timeout` has passed; returns whether they all ended.
    @discardableResult
    package func join(timeout: Duration) -> Bool {
        let deadline = Monotonic.now() + timeout.inSeconds
        return lock.withLock {
            while running > 0 {
                let left = deadline - Monotonic.now()
                if left <= 0 { return false }
                _ = lock.wait(timeout: left)
            }
            return true
        }
    }
}
