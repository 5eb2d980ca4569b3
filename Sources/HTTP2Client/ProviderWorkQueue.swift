internal import APNsRuntime
import Synchronization

/// The work of one HTTP/2 send, shared by the pool's connection threads: the caller's input
/// (bounded, so a long input never fills memory), the notifications waiting to be sent again
/// (any connection may take them: a stream that stalled on one connection is retried on another),
/// and the count of notifications still without a verdict, which tells the connections when the
/// send is over.
final class ProviderWorkQueue: @unchecked Sendable {
    // @unchecked: every stored property but the atomic `abandonedFlag` is guarded by `lock`.

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
    /// Entries pushed and not yet handed out (their positions are assigned when pushed).
    private var input = Ring<ProviderEntry>(capacity: 256)
    private var retries: [ProviderEntry] = []
    private var nextPosition: UInt64 = 1
    /// Entries handed out or waiting as retries, without a final verdict.
    private var outstanding = 0
    private var producerFinished = false
    private var stopped: LegacyAPNsError?
    /// Async producers suspended while the input is full.
    private var spaceWaiters: [Handoff<Void>] = []
    /// Connections waiting on their sockets with nothing to send, in the order they went to
    /// sleep: new work wakes the last one (see ``wakeOneSleeper()``), the end of the send all.
    private var sleepers: [WakeSignal] = []
    private var random = BufferedRandom()
    /// Set by ``abandon(_:)``; read by the connections at every wait, without the lock.
    private let abandonedFlag = Atomic<Bool>(false)

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    /// Notifications pushed so far.
    var pushed: Int { lock.withLock { Int(nextPosition - 1) } }

    /// Notifications handed to a connection or waiting to be retried, without a final verdict.
    var unsettled: Int { lock.withLock { outstanding } }

    /// Notifications waiting for a connection (new ones and retries), and those a connection holds.
    var occupancy: ProviderStream.Occupancy {
        lock.withLock {
            ProviderStream.Occupancy(queued: input.count + retries.count, inFlight: outstanding - retries.count)
        }
    }

    /// Numbers a new request and gives it an apns-id if it has none (under the lock).
    private func entry(for request: ProviderRequest, tag: UInt64) -> ProviderEntry {
        var request = request
        if request.apnsID == nil { request.apnsID = .random(using: &random) }
        defer { nextPosition += 1 }
        return ProviderEntry(position: nextPosition, request: request, tag: tag)
    }

    /// Wakes one connection sleeping on its socket, the one that went to sleep last (under the
    /// lock): new input goes to one connection, which takes what its free streams allow, and
    /// ``take(maximum:now:)`` wakes the next one only when work is left over.
    ///
    /// Waking every sleeper for every push made all of them race for one burst, and the losers
    /// woke for nothing (a bridge relaying bursts of ~100 notifications made ~14 % more context
    /// switches that way). The last to sleep is the one whose caches are warm. Under load the
    /// bursts still spread over the connections: a busy connection is not asleep, so the next
    /// burst wakes another.
    private func wakeOneSleeper() {
        sleepers.popLast()?.signal()
    }

    /// Wakes the connections that sleep on their sockets (under the lock).
    private func wakeSleepers() {
        guard !sleepers.isEmpty else { return }
        for sleeper in sleepers { sleeper.signal() }
        sleepers.removeAll(keepingCapacity: true)
    }

    // MARK: Producer

    /// Adds a request from a producer thread, blocking while the queue is full. Returns its
    /// position, or nil once the send has stopped (the request was not taken).
    @discardableResult
    func pushWaiting(_ request: ProviderRequest, tag: UInt64 = 0) -> UInt64? {
        lock.withLock {
            guard stopped == nil else { return nil }
            let entry = entry(for: request, tag: tag)
            input.append(entry)
            lock.broadcast()
            wakeOneSleeper()
            while input.count >= capacity, stopped == nil { _ = lock.wait(timeout: 1) }
            return entry.position
        }
    }

    /// Adds requests with their tags from a producer thread in one go (one lock for the lot),
    /// blocking while the queue is full afterwards. Returns the first one's position (the rest
    /// follow in order), or nil once the send has stopped. Then none of them is taken, unless
    /// `evenIfStopped`: a producer that took them from its caller's input for good (a sequence)
    /// has them numbered all the same, so they are reported (as not sent) instead of vanishing.
    func pushWaiting(contentsOf requests: [(request: ProviderRequest, tag: UInt64)], evenIfStopped: Bool) -> UInt64? {
        lock.withLock {
            guard stopped == nil || evenIfStopped else { return nil }
            let first = nextPosition
            for (request, tag) in requests { input.append(entry(for: request, tag: tag)) }
            guard stopped == nil else { return nil }
            lock.broadcast()
            wakeOneSleeper()
            while input.count >= capacity, stopped == nil { _ = lock.wait(timeout: 1) }
            return stopped == nil ? first : nil
        }
    }

    /// Adds a request from async code, suspending (not blocking) while the queue is full. Returns
    /// its position, or nil once the send has stopped.
    @discardableResult
    func push(_ request: ProviderRequest, tag: UInt64 = 0) async -> UInt64? {
        let (position, waiter): (UInt64?, Handoff<Void>?) = lock.withLock {
            guard stopped == nil else { return (nil, nil) }
            let entry = entry(for: request, tag: tag)
            input.append(entry)
            lock.broadcast()
            wakeOneSleeper()
            guard input.count >= capacity else { return (entry.position, nil) }
            let waiter = Handoff<Void>()
            spaceWaiters.append(waiter)
            return (entry.position, waiter)
        }
        await waiter?.take()
        return position
    }

    /// The input has no more requests.
    func finish() {
        lock.withLock {
            producerFinished = true
            lock.broadcast()
            wakeSleepers()
        }
    }

    /// No more work is handed out (cancellation, credentials that cannot succeed).
    func stop(_ error: LegacyAPNsError) {
        let waiters: [Handoff<Void>] = lock.withLock {
            if stopped == nil { stopped = error }
            lock.broadcast()
            wakeSleepers()
            defer { spaceWaiters = [] }
            return spaceWaiters
        }
        for waiter in waiters { waiter.put(()) }
    }

    /// Stops as ``stop(_:)`` does, and tells the connections to give up what is in flight too.
    func abandon(_ error: LegacyAPNsError) {
        abandonedFlag.store(true, ordering: .releasing)
        stop(error)
    }

    /// Whether ``abandon(_:)`` was called.
    var isAbandoned: Bool { abandonedFlag.load(ordering: .acquiring) }

    /// Whether the send was stopped, and why.
    var stopReason: LegacyAPNsError? { lock.withLock { stopped } }

    /// Registers `wake` to be signalled when work arrives (input, a retry, the end of the send or
    /// a stop), unless input is already waiting or the send was stopped: then false, and the
    /// caller should look at the queue instead of sleeping. A caller whose wait ends for another
    /// reason calls ``awake(_:)``.
    func sleep(_ wake: WakeSignal) -> Bool {
        lock.withLock {
            guard input.isEmpty, stopped == nil else { return false }
            if !sleepers.contains(where: { $0 === wake }) { sleepers.append(wake) }
            return true
        }
    }

    /// `wake`'s connection stopped sleeping (its socket had something): work that arrives now
    /// goes to a connection still asleep, not to this busy one (which looks at the queue next
    /// anyway).
    func awake(_ wake: WakeSignal) {
        lock.withLock {
            if let index = sleepers.lastIndex(where: { $0 === wake }) { sleepers.remove(at: index) }
        }
    }

    /// `wake`'s connection closes or broke: it takes nothing now, so input it may have been woken
    /// for goes to another sleeper.
    func departing(_ wake: WakeSignal) {
        lock.withLock {
            if let index = sleepers.lastIndex(where: { $0 === wake }) { sleepers.remove(at: index) }
            if !input.isEmpty { wakeOneSleeper() }
        }
    }

    // MARK: Connections

    /// Up to `maximum` notifications that are due at `now`: retries first, then input.
    func take(maximum: Int, now: Duration) -> Take {
        var waiters: [Handoff<Void>] = []
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
                entries.append(input.removeFirst())
                outstanding += 1
            }
            if !entries.isEmpty {
                // More than this connection could take: the next sleeper takes its share.
                if !input.isEmpty { wakeOneSleeper() }
                if input.count < capacity, !spaceWaiters.isEmpty {
                    waiters = spaceWaiters
                    spaceWaiters = []
                }
                lock.broadcast()
                return .entries(entries)
            }
            if producerFinished, outstanding == 0 { return .exhausted }
            return .nothing(retryAt: retries.compactMap(\.notBefore).min())
        }
        for waiter in waiters { waiter.put(()) }
        return result
    }

    /// Entries to send again (by any connection, once due).
    func requeue(_ entries: [ProviderEntry]) {
        guard !entries.isEmpty else { return }
        lock.withLock {
            retries.append(contentsOf: entries)
            retries.sort { $0.position < $1.position }
            lock.broadcast()
            wakeSleepers()
        }
    }

    /// `count` notifications got their final verdict.
    func finalized(_ count: Int) {
        guard count > 0 else { return }
        lock.withLock {
            outstanding -= count
            lock.broadcast()
            if producerFinished, outstanding == 0 { wakeSleepers() }
        }
    }

    /// Waits (on a connection thread pausing before it reconnects) until the send is stopped or
    /// over (the input finished and every notification has its verdict), or `timeout` passes.
    /// Returns how it ended. Work waiting in the queue does not end the wait: a pause with input
    /// queued used to return at once and spin for the whole backoff.
    func waitForStopOrEnd(timeout: Double) -> PauseEnd {
        lock.withLock {
            if stopped == nil, !isOver { _ = lock.wait(timeout: timeout) }
            if stopped != nil { return .stopped }
            return isOver ? .over : .timedOut
        }
    }

    /// How ``waitForStopOrEnd(timeout:)`` ended.
    enum PauseEnd {
        case stopped, over, timedOut
    }

    /// The input is finished, none of it waits to be taken, and nothing taken is left without a
    /// verdict (under the lock).
    private var isOver: Bool { producerFinished && input.isEmpty && outstanding == 0 && retries.isEmpty }

    /// What no connection will send any more (after every connection has finished): retries
    /// still waiting, and input never taken.
    func leftovers() -> (retries: [ProviderEntry], untaken: [ProviderEntry]) {
        lock.withLock {
            let left = retries
            retries = []
            var untaken: [ProviderEntry] = []
            while !input.isEmpty { untaken.append(input.removeFirst()) }
            return (left, untaken)
        }
    }
}
