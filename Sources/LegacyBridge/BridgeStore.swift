import APNsCore
internal import APNsRuntime

/// The bridge's one thread that owns the store (a ``BridgeStorage``: ``FeedbackStore`` or
/// ``PostgresStore``): 410 tuples from the upstream threads
/// are committed in batches (one transaction, one sync to disk for many), and only then are their
/// notifications let go; the feedback service's reads and deletions queue behind them.
///
/// The resend memory's changes (``BridgeResendMemory/Change``) are committed here too, in the
/// order they were queued, many in one transaction; a session about to answer a sender waits for
/// those its answer relies on (``waitForWindow(_:)``).
///
/// Tuples written to a reader whose deletion does not commit (a full disk) are remembered as
/// served (up to ``maximumRemembered``): no later read returns them, and their deletion is tried
/// again, at most once a second and when the bridge stops, until it commits.
final class BridgeStore: @unchecked Sendable {
    // @unchecked: the queues are guarded by `lock`; `store` and `remembered` are used only on the
    // store thread.
    struct Addition: Sendable {
        var topic: String
        var record: FeedbackRecord
        /// Whose notification it was (the sender session's tag), to be let go once stored.
        var tag: UInt64
    }

    /// What became of tuples written to a reader (``forget(_:topic:)``).
    enum ForgetOutcome: Sendable {
        /// Deleted from the store.
        case forgotten
        /// Not deleted (the store takes no writes): remembered as served, never served again,
        /// deleted later. `failure` is the store's error the first time since the store last took
        /// a deletion (to be logged once), nil after.
        case remembered(failure: LegacyAPNsError?)
        /// Neither deleted nor remembered (the memory is full): they may be served again.
        case failed(LegacyAPNsError)
    }

    /// Identifies queued window changes: they are committed once ``committedWindow`` reaches it.
    typealias WindowTicket = UInt64

    /// How long a session waits for its window to commit before answering anyway (logged).
    static let windowWait = 5.0

    /// Tuples remembered as served at most (about 100 bytes each).
    static let maximumRemembered = 200_000

    private enum Request {
        case read(topic: String, limit: Int, reply: Reply<Result<[FeedbackRecord], LegacyAPNsError>>)
        case forget([FeedbackRecord], topic: String, reply: Reply<ForgetOutcome>)
        case count(reply: Reply<Int>)
        case giveBack([FeedbackRecord], topic: String)
        case claim([BridgeResendKey], reply: Reply<Result<[BridgeResendKey: SharedWindowEntry]?, LegacyAPNsError>>)
    }

    /// Served tuples whose deletion has not committed, by topic and token: the time served.
    private var remembered: [String: [DeviceToken: UInt32]] = [:]
    private var rememberedCount = 0
    /// Whether the failure behind `remembered` was reported (once, until a deletion commits).
    private var deletionFailureReported = false
    /// When the remembered deletions were last tried (monotonic seconds).
    private var lastDeletionAttempt = 0.0

    private let lock = ConditionLock()
    private var additions: [Addition] = []
    private var windowChanges: [BridgeWindowChange] = []
    /// The ticket of the last window change queued, and of the last one committed (or failed).
    private var queuedWindow: WindowTicket = 0
    private var committedWindow: WindowTicket = 0
    /// Why the last window commit failed (reported once per outage), nil while they succeed.
    private var windowFailure: LegacyAPNsError?
    /// When expired window entries were last deleted (monotonic seconds; store thread only).
    private var lastWindowSweep = 0.0
    /// When the store was last told this bridge is alive (monotonic seconds; store thread only).
    private var lastHeartbeat = 0.0
    private var requests: [Request] = []
    private var stopping = false
    private var finished = false
    private let store: any BridgeStorage
    /// Called on the store thread after each batch: stored (nil) or the reason it was not.
    private let stored: @Sendable ([Addition], LegacyAPNsError?) -> Void

    /// Called on the store thread when window changes could not be committed (once per outage).
    private let windowFailed: @Sendable (LegacyAPNsError) -> Void
    /// How long the store keeps window entries (the resend memory's lifetime).
    private let windowLifetime: Duration

    init(
        store: any BridgeStorage, claims: (any BridgeStorage)? = nil, windowLifetime: Duration,
        stored: @escaping @Sendable ([Addition], LegacyAPNsError?) -> Void,
        windowFailed: @escaping @Sendable (LegacyAPNsError) -> Void
    ) {
        self.store = store
        self.stored = stored
        self.windowFailed = windowFailed
        self.windowLifetime = windowLifetime
        self.isShared = store is PostgresStore
        self.claimLane = claims.map { ClaimLane(store: $0, windowLifetime: windowLifetime) }
        OSThread.start(name: "apns-bridge-store") { self.run() }
    }

    /// Queues a tuple (from any thread); ``stored`` is called once it is on disk.
    func add(_ addition: Addition) {
        lock.withLock {
            additions.append(addition)
            lock.broadcast()
        }
    }

    /// Queues changes of the resend memory (from any thread, under the memory's lock: they are
    /// committed in the order queued). Returns the ticket to wait for.
    func window(_ changes: [BridgeResendMemory.Change]) -> WindowTicket {
        lock.withLock {
            for change in changes { windowChanges.append(.memory(change)) }
            queuedWindow += 1
            lock.broadcast()
            return queuedWindow
        }
    }

    /// Queues what became of a notification this bridge claimed in a shared store (from any
    /// thread; committed in order with the memory's changes, nobody waits for it).
    func claim(_ change: BridgeWindowChange) {
        lock.withLock {
            windowChanges.append(change)
            lock.broadcast()
        }
    }

    /// Waits (blocking the calling thread, up to ``windowWait``) until the window changes of
    /// `ticket` are committed, or their commit failed (the failure is reported by the store
    /// thread; the in-process memory still holds them, so only a crash would cost duplicates).
    /// Returns true when this wait ran out and begins a slow spell (report it once; later waits
    /// that run out before one succeeds are the same spell).
    func waitForWindow(_ ticket: WindowTicket) -> Bool {
        let deadline = Monotonic.now() + Self.windowWait
        return lock.withLock {
            while committedWindow < ticket, !finished {
                let left = deadline - Monotonic.now()
                guard left > 0 else {
                    defer { windowLate = true }
                    return !windowLate
                }
                _ = lock.wait(timeout: left)
            }
            windowLate = false
            return false
        }
    }

    /// Whether the last wait for a window commit ran out (a slow spell already reported).
    private var windowLate = false

    /// Up to `limit` tuples of `topic` (blocks the calling thread, never a cooperative one).
    func read(topic: String, limit: Int) -> Result<[FeedbackRecord], LegacyAPNsError> {
        let reply = Reply<Result<[FeedbackRecord], LegacyAPNsError>>()
        guard enqueue(.read(topic: topic, limit: limit, reply: reply)) else {
            return .failure(LegacyAPNsError(.cancelled, "the bridge is stopping"))
        }
        return reply.wait()
    }

    /// Forgets tuples written to a sender completely (blocks the calling thread): deletes them,
    /// or, when the store takes no writes, remembers them as served.
    func forget(_ records: [FeedbackRecord], topic: String) -> ForgetOutcome {
        let reply = Reply<ForgetOutcome>()
        guard enqueue(.forget(records, topic: topic, reply: reply)) else {
            return .failed(LegacyAPNsError(.cancelled, "the bridge is stopping"))
        }
        return reply.wait()
    }

    /// Returns tuples a reader was handed but could not be written (queued; nothing to wait for).
    func giveBack(_ records: [FeedbackRecord], topic: String) {
        guard !records.isEmpty else { return }
        _ = enqueue(.giveBack(records, topic: topic))
    }

    /// Claims `keys` in a shared store before they are forwarded, or learns what it knows of
    /// them (``BridgeStorage/claim(_:lifetime:)``; blocks the calling thread): nil for a store
    /// only this bridge uses. The claims of every session waiting at once go in one statement.
    /// `firstFailure`: this failure begins an outage (report it; later ones until a claim
    /// succeeds are the same outage).
    func claim(_ keys: [BridgeResendKey]) -> (
        result: Result<[BridgeResendKey: SharedWindowEntry]?, LegacyAPNsError>, firstFailure: Bool
    ) {
        guard isShared else { return (.success(nil), false) }
        let reply = Reply<Result<[BridgeResendKey: SharedWindowEntry]?, LegacyAPNsError>>()
        let queued = claimLane?.enqueue(keys, reply: reply) ?? enqueue(.claim(keys, reply: reply))
        guard queued else {
            return (.failure(LegacyAPNsError(.cancelled, "the bridge is stopping")), false)
        }
        // Bounded: a slow or silent database costs senders status 10 for what cannot be looked
        // up, not a session held for as long as the database takes.
        let result =
            reply.wait(seconds: Self.lookupWait)
            ?? .failure(
                LegacyAPNsError(
                    .timedOut, "the shared store did not answer within \(Int(Self.lookupWait)) s"))
        let first: Bool = lock.withLock {
            guard case .failure = result else {
                lookupOutage = false
                return false
            }
            defer { lookupOutage = true }
            return !lookupOutage
        }
        return (result, first)
    }

    /// How long a session waits for a lookup in the shared store.
    static let lookupWait = 5.0

    /// Whether the last lookup failed (an outage already reported).
    private var lookupOutage = false

    /// Whether other bridges use the store too (its window must be asked about unknown frames).
    let isShared: Bool
    /// Claims on a database connection and thread of their own, when there is a second
    /// connection: a session's claim then does not wait behind the window commits (each a
    /// transaction of several round trips) queued on this thread.
    private let claimLane: ClaimLane?

    /// Tuples held (blocks the calling thread).
    func count() -> Int {
        let reply = Reply<Int>()
        guard enqueue(.count(reply: reply)) else { return 0 }
        return reply.wait()
    }

    /// Commits what is queued, then ends the thread (blocks until it has).
    func stop() {
        claimLane?.stop()
        lock.withLock {
            stopping = true
            lock.broadcast()
            while !finished { _ = lock.wait(timeout: 1) }
        }
    }

    private func enqueue(_ request: Request) -> Bool {
        lock.withLock {
            guard !stopping else { return false }
            requests.append(request)
            lock.broadcast()
            return true
        }
    }

    private func run() {
        while true {
            let (batch, pending, window, ticket, done):
                ([Addition], [Request], [BridgeWindowChange], WindowTicket, Bool) = lock.withLock {
                    while additions.isEmpty, requests.isEmpty, windowChanges.isEmpty, !stopping, !deletionRetryIsDue,
                        !heartbeatIsDue
                    {
                        _ = lock.wait(timeout: 1)
                    }
                    let batch = additions
                    let pending = requests
                    let window = windowChanges
                    additions.removeAll(keepingCapacity: true)
                    requests.removeAll(keepingCapacity: true)
                    windowChanges.removeAll(keepingCapacity: true)
                    let done = stopping && batch.isEmpty && pending.isEmpty && window.isEmpty
                    return (batch, pending, window, queuedWindow, done)
                }
            if !window.isEmpty { commitWindow(window, ticket: ticket) }
            if done {
                retryRemembered()  // a last try: what is still remembered is served again after a restart
                break
            }
            if deletionRetryIsDue { retryRemembered() }
            if heartbeatIsDue {
                lastHeartbeat = Monotonic.now()
                try? store.heartbeat()  // a bridge silent for long has its pending entries orphaned
            }
            if !batch.isEmpty {
                do {
                    try store.add(batch.map { ($0.topic, $0.record) })
                    stored(batch, nil)
                } catch {
                    stored(batch, (error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)"))
                }
            }
            claimAll(pending)
            for request in pending {
                switch request {
                case .read(let topic, let limit, let reply):
                    do {
                        reply.put(.success(try unserved(topic: topic, limit: limit)))
                    } catch {
                        reply.put(.failure((error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)")))
                    }
                case .forget(let records, let topic, let reply):
                    reply.put(forgetOrRemember(records, topic: topic))
                case .count(let reply):
                    reply.put((try? store.count()) ?? 0)
                case .giveBack(let records, let topic):
                    try? store.giveBack(records, topic: topic)  // else the claim lapses by itself
                case .claim:
                    break  // answered together, above
                }
            }
        }
        // Closed here, on every way out: the process may end before the store object goes
        // away, and only a closed database checkpoints its WAL and removes the -wal file.
        store.close()
        lock.withLock {
            finished = true
            lock.broadcast()
        }
    }
}

extension BridgeStore {
    // MARK: - The resend window (store thread only)

    /// Commits window changes (and, once a minute, deletes the entries past their lifetime), then
    /// lets the sessions waiting for `ticket` go on.
    private func commitWindow(_ changes: [BridgeWindowChange], ticket: WindowTicket) {
        let now = Monotonic.now()
        let sweep = now - lastWindowSweep >= 60
        var failure: LegacyAPNsError?
        do {
            try store.commit(changes, expiring: sweep ? windowLifetime : nil)
            if sweep { lastWindowSweep = now }
        } catch {
            failure = (error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)")
        }
        let report: LegacyAPNsError? = lock.withLock {
            committedWindow = Swift.max(committedWindow, ticket)
            lock.broadcast()
            defer { windowFailure = failure }
            return windowFailure == nil ? failure : nil
        }
        if let report { windowFailed(report) }
    }

    /// Answers every session's claim queued at once with one statement (one round trip for
    /// all of them: the senders of a fleet with bad tokens reconnect and resend all the time).
    private func claimAll(_ requests: [Request]) {
        var replies: [ClaimLane.Asked] = []
        for case .claim(let asked, let reply) in requests { replies.append((reply, asked)) }
        Self.claimAll(replies, in: store, windowLifetime: windowLifetime)
    }

    /// Answers claims asked at once with one statement on `store`.
    static func claimAll(_ replies: [ClaimLane.Asked], in store: any BridgeStorage, windowLifetime: Duration) {
        var keys: [BridgeResendKey] = []
        for (_, asked) in replies { keys += asked }
        guard !replies.isEmpty else { return }
        let result: Result<[BridgeResendKey: SharedWindowEntry]?, LegacyAPNsError>
        do {
            result = .success(try store.claim(keys, lifetime: windowLifetime))
        } catch {
            result = .failure((error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)"))
        }
        guard replies.count > 1, case .success(let found?) = result else {
            for (reply, _) in replies { reply.put(result) }
            return
        }
        // A key two sessions asked for at once is claimed once: the first forwards it, the
        // others wait for its verdict as for any copy in flight.
        var handedOut = Set<BridgeResendKey>()
        for (reply, asked) in replies {
            var mine: [BridgeResendKey: SharedWindowEntry] = [:]
            for key in asked {
                guard var entry = found[key] else { continue }
                if entry == .claimed || entry == .orphaned, !handedOut.insert(key).inserted, mine[key] == nil {
                    entry = .pending
                }
                mine[key] = entry
            }
            reply.put(.success(mine))
        }
    }

    // MARK: - Served but not deleted (store thread only)

    private var heartbeatIsDue: Bool { isShared && Monotonic.now() - lastHeartbeat >= 1 }

    private var deletionRetryIsDue: Bool {
        rememberedCount > 0 && Monotonic.now() - lastDeletionAttempt >= 1
    }

    /// Up to `limit` stored tuples of `topic`, without those remembered as served.
    private func unserved(topic: String, limit: Int) throws -> [FeedbackRecord] {
        guard let served = remembered[topic], !served.isEmpty else {
            return try store.tuples(topic: topic, limit: limit)
        }
        let found = try store.tuples(topic: topic, limit: limit + served.count)
        // A tuple updated since it was served (a later 410) is news: served again.
        return Array(
            found.lazy.filter { record in served[record.token].map { record.timestamp > $0 } ?? true }.prefix(limit))
    }

    private func forgetOrRemember(_ records: [FeedbackRecord], topic: String) -> ForgetOutcome {
        do {
            try store.forget(records, topic: topic)
            return .forgotten
        } catch {
            let failure = (error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)")
            guard rememberedCount + records.count <= Self.maximumRemembered else { return .failed(failure) }
            var served = remembered[topic] ?? [:]
            for record in records where served.updateValue(record.timestamp, forKey: record.token) == nil {
                rememberedCount += 1
            }
            remembered[topic] = served
            lastDeletionAttempt = Monotonic.now()
            defer { deletionFailureReported = true }
            return .remembered(failure: deletionFailureReported ? nil : failure)
        }
    }

    /// Tries the remembered deletions again; those that commit are forgotten for good.
    private func retryRemembered() {
        lastDeletionAttempt = Monotonic.now()
        for (topic, served) in remembered {
            let records = served.map { FeedbackRecord(timestamp: $0.value, token: $0.key) }
            guard (try? store.forget(records, topic: topic)) != nil else { return }
            remembered[topic] = nil
            rememberedCount -= records.count
        }
        deletionFailureReported = false  // the store takes deletions again: a new failure is news
    }
}

/// A value one thread waits for and another puts (blocking; for OS threads only).
final class Reply<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is guarded by `lock`.
    private let lock = ConditionLock()
    private var value: Value?

    func put(_ newValue: Value) {
        lock.withLock {
            value = newValue
            lock.broadcast()
        }
    }

    func wait() -> Value {
        lock.withLock {
            while value == nil { _ = lock.wait(timeout: 1) }
            return value!
        }
    }

    /// The value, or nil when none came within `seconds` (a later one is dropped).
    func wait(seconds: Double) -> Value? {
        let deadline = Monotonic.now() + seconds
        return lock.withLock {
            while value == nil {
                let left = deadline - Monotonic.now()
                guard left > 0 else { return nil }
                _ = lock.wait(timeout: Swift.min(left, 1))
            }
            return value
        }
    }
}

/// The claims of a fleet's bridge on a connection and thread of their own (``BridgeStore``).
final class ClaimLane: @unchecked Sendable {
    // @unchecked: `asked` and `stopping` are guarded by `lock`; `store` is the lane thread's.
    typealias Asked = (
        reply: Reply<Result<[BridgeResendKey: SharedWindowEntry]?, LegacyAPNsError>>, keys: [BridgeResendKey]
    )
    private let store: any BridgeStorage
    private let windowLifetime: Duration
    private let lock = ConditionLock()
    private var asked: [Asked] = []
    private var stopping = false
    private var finished = false

    init(store: any BridgeStorage, windowLifetime: Duration) {
        self.store = store
        self.windowLifetime = windowLifetime
        OSThread.start(name: "apns-bridge-claims") { self.run() }
    }

    func enqueue(
        _ keys: [BridgeResendKey], reply: Reply<Result<[BridgeResendKey: SharedWindowEntry]?, LegacyAPNsError>>
    )
        -> Bool
    {
        lock.withLock {
            guard !stopping else { return false }
            asked.append((reply, keys))
            lock.broadcast()
            return true
        }
    }

    func stop() {
        lock.withLock {
            stopping = true
            lock.broadcast()
            while !finished { _ = lock.wait(timeout: 1) }
        }
    }

    private func run() {
        while true {
            let (batch, done): ([Asked], Bool) = lock.withLock {
                while asked.isEmpty, !stopping { _ = lock.wait(timeout: 1) }
                defer { asked.removeAll(keepingCapacity: true) }
                return (asked, stopping && asked.isEmpty)
            }
            BridgeStore.claimAll(batch, in: store, windowLifetime: windowLifetime)
            if done || (stopping && batch.isEmpty) { break }
        }
        store.close()
        lock.withLock {
            finished = true
            lock.broadcast()
        }
    }
}
