internal import APNsRuntime

/// The work of one HTTP/2 send, shared by the pool's connection threads: the caller's input
/// (bounded, so a long input never fills memory), the notifications waiting to be sent again
/// (any connection may take them: a stream that stalled on one connection is retried on another),
/// and the count of notifications still without a verdict, which tells the connections when the
/// send is over.
final class ProviderWorkQueue: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `lock`.

    /// What a connection gets when it asks for work.
    enum Take {
        /// Notifications to send (retries that are due first, then new input).
        case entries([ProviderEntry])
        /// Nothing is due now; a retry becomes due at `retryAt`, and new input may come any time.
        case nothing(retryAt: Duration?)
        /// The input is finished and every notification has its verdict.
        case exhausted
        /// The send was stopped.
        case stopped(LegacyAPNsError)
    }

    private let lock = ConditionLock()
    private let capacity: Int
    private var input = Ring<ProviderRequest>(capacity: 256)
    private var retries: [ProviderEntry] = []
    private var nextPosition: UInt64 = 1
    /// Entries handed out or waiting as retries, without a final verdict.
    private var outstanding = 0
    private var producerFinished = false
    private var stopped: LegacyAPNsError?
    private var spaceWaiter: Handoff<Void>?
    private var random = SystemRandomNumberGenerator()

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    /// Notifications taken from the input so far.
    var taken: Int { lock.withLock { Int(nextPosition - 1) } }

    // MARK: Producer

    /// Adds a request from a producer thread, blocking while the queue is full. False once the
    /// send has stopped.
    func pushWaiting(_ request: ProviderRequest) -> Bool {
        lock.withLock {
            guard stopped == nil else { return false }
            input.append(request)
            lock.broadcast()
            while input.count >= capacity, stopped == nil { _ = lock.wait(timeout: 1) }
            return stopped == nil
        }
    }

    /// Adds a request from async code, suspending (not blocking) while the queue is full.
    func push(_ request: ProviderRequest) async -> Bool {
        let waiter: Handoff<Void>? = lock.withLock {
            guard stopped == nil else { return nil }
            input.append(request)
            lock.broadcast()
            guard input.count >= capacity else { return nil }
            let waiter = Handoff<Void>()
            spaceWaiter = waiter
            return waiter
        }
        await waiter?.take()
        return lock.withLock { stopped == nil }
    }

    /// The input has no more requests.
    func finish() {
        lock.withLock {
            producerFinished = true
            lock.broadcast()
        }
    }

    /// No more work is handed out (cancellation, credentials that cannot succeed).
    func stop(_ error: LegacyAPNsError) {
        let waiter: Handoff<Void>? = lock.withLock {
            if stopped == nil { stopped = error }
            lock.broadcast()
            defer { spaceWaiter = nil }
            return spaceWaiter
        }
        waiter?.put(())
    }

    // MARK: Connections

    /// Up to `maximum` notifications that are due at `now`: retries first, then input.
    func take(maximum: Int, now: Duration) -> Take {
        var waiter: Handoff<Void>?
        let result: Take = lock.withLock {
            if let stopped { return .stopped(stopped) }
            var entries: [ProviderEntry] = []
            var index = 0
            while index < retries.count, entries.count < maximum {
                if (retries[index].notBefore ?? .zero) <= now {
                    entries.append(retries.remove(at: index))
                } else {
                    index += 1
                }
            }
            while entries.count < maximum, !input.isEmpty {
                var request = input.removeFirst()
                if request.apnsID == nil { request.apnsID = .random(using: &random) }
                entries.append(ProviderEntry(position: nextPosition, request: request))
                nextPosition += 1
                outstanding += 1
            }
            if !entries.isEmpty {
                if input.count < capacity, spaceWaiter != nil {
                    waiter = spaceWaiter
                    spaceWaiter = nil
                }
                lock.broadcast()
                return .entries(entries)
            }
            if producerFinished, outstanding == 0 { return .exhausted }
            return .nothing(retryAt: retries.compactMap(\.notBefore).min())
        }
        waiter?.put(())
        return result
    }

    /// Entries to send again (by any connection, once due).
    func requeue(_ entries: [ProviderEntry]) {
        guard !entries.isEmpty else { return }
        lock.withLock {
            retries.append(contentsOf: entries)
            retries.sort { $0.position < $1.position }
            lock.broadcast()
        }
    }

    /// `count` notifications got their final verdict.
    func finalized(_ count: Int) {
        guard count > 0 else { return }
        lock.withLock {
            outstanding -= count
            lock.broadcast()
        }
    }

    /// Waits (on a connection thread) until work may be there, the send ends, or `timeout` passes.
    func waitForWork(timeout: Double) {
        lock.withLock {
            if input.isEmpty, retries.isEmpty, stopped == nil, !(producerFinished && outstanding == 0) {
                _ = lock.wait(timeout: timeout)
            }
        }
    }

    /// What no connection will send any more (after every connection has finished): retries
    /// still waiting, and input never taken (with the positions it would have had).
    func leftovers() -> (retries: [ProviderEntry], untaken: [ProviderEntry]) {
        lock.withLock {
            let left = retries
            retries = []
            var untaken: [ProviderEntry] = []
            while !input.isEmpty {
                untaken.append(ProviderEntry(position: nextPosition, request: input.removeFirst()))
                nextPosition += 1
            }
            return (left, untaken)
        }
    }
}
