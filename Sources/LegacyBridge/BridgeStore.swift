import APNsCore
internal import APNsRuntime

/// The bridge's one thread that owns the ``FeedbackStore``: 410 tuples from the upstream threads
/// are committed in batches (one transaction, one sync to disk for many), and only then are their
/// notifications let go; the feedback service's reads and deletions queue behind them.
final class BridgeStore: @unchecked Sendable {
    // @unchecked: the queues are guarded by `lock`; `store` is used only on the store thread.
    struct Addition: Sendable {
        var topic: String
        var record: FeedbackRecord
        /// Whose notification it was (the sender session's tag), to be let go once stored.
        var tag: UInt64
    }

    private enum Request {
        case read(topic: String, limit: Int, reply: Reply<Result<[FeedbackRecord], LegacyAPNsError>>)
        case forget([FeedbackRecord], topic: String, reply: Reply<LegacyAPNsError?>)
        case count(reply: Reply<Int>)
    }

    private let lock = ConditionLock()
    private var additions: [Addition] = []
    private var requests: [Request] = []
    private var stopping = false
    private var finished = false
    private let store: FeedbackStore
    /// Called on the store thread after each batch: stored (nil) or the reason it was not.
    private let stored: @Sendable ([Addition], LegacyAPNsError?) -> Void

    init(store: FeedbackStore, stored: @escaping @Sendable ([Addition], LegacyAPNsError?) -> Void) {
        self.store = store
        self.stored = stored
        OSThread.start(name: "apns-bridge-store") { self.run() }
    }

    /// Queues a tuple (from any thread); ``stored`` is called once it is on disk.
    func add(_ addition: Addition) {
        lock.withLock {
            additions.append(addition)
            lock.broadcast()
        }
    }

    /// Up to `limit` tuples of `topic` (blocks the calling thread, never a cooperative one).
    func read(topic: String, limit: Int) -> Result<[FeedbackRecord], LegacyAPNsError> {
        let reply = Reply<Result<[FeedbackRecord], LegacyAPNsError>>()
        guard enqueue(.read(topic: topic, limit: limit, reply: reply)) else {
            return .failure(LegacyAPNsError(.cancelled, "the bridge is stopping"))
        }
        return reply.wait()
    }

    /// Forgets tuples written to a sender completely (blocks the calling thread).
    func forget(_ records: [FeedbackRecord], topic: String) -> LegacyAPNsError? {
        let reply = Reply<LegacyAPNsError?>()
        guard enqueue(.forget(records, topic: topic, reply: reply)) else {
            return LegacyAPNsError(.cancelled, "the bridge is stopping")
        }
        return reply.wait()
    }

    /// Tuples held (blocks the calling thread).
    func count() -> Int {
        let reply = Reply<Int>()
        guard enqueue(.count(reply: reply)) else { return 0 }
        return reply.wait()
    }

    /// Commits what is queued, then ends the thread (blocks until it has).
    func stop() {
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
            let (batch, pending, done): ([Addition], [Request], Bool) = lock.withLock {
                while additions.isEmpty, requests.isEmpty, !stopping { _ = lock.wait(timeout: 1) }
                let batch = additions
                let pending = requests
                additions.removeAll(keepingCapacity: true)
                requests.removeAll(keepingCapacity: true)
                return (batch, pending, stopping && batch.isEmpty && pending.isEmpty)
            }
            if done { break }
            if !batch.isEmpty {
                do {
                    try store.add(batch.map { ($0.topic, $0.record) })
                    stored(batch, nil)
                } catch {
                    stored(batch, (error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)"))
                }
            }
            for request in pending {
                switch request {
                case .read(let topic, let limit, let reply):
                    do {
                        reply.put(.success(try store.tuples(topic: topic, limit: limit)))
                    } catch {
                        reply.put(.failure((error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)")))
                    }
                case .forget(let records, let topic, let reply):
                    do {
                        try store.forget(records, topic: topic)
                        reply.put(nil)
                    } catch {
                        reply.put((error as? LegacyAPNsError) ?? LegacyAPNsError(.fileError, "\(error)"))
                    }
                case .count(let reply):
                    reply.put((try? store.count()) ?? 0)
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
}
