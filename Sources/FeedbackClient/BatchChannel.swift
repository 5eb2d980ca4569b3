import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Hands record batches from a connection thread to one asynchronous consumer, with back
/// pressure: the thread blocks while `limit` records wait, so a slow consumer slows the read
/// (and the service's TCP window) instead of filling memory.
final class BatchChannel: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `lock`.

    enum Item {
        case records([FeedbackRecord])
        /// The stream ended, cleanly (nil) or with a failure.
        case end(LegacyAPNsError?)
    }

    private let lock = ConditionLock()
    private let limit: Int
    private var queue: [[FeedbackRecord]] = []
    private var queuedRecords = 0
    private var ending: LegacyAPNsError?? = nil
    private var cancelled = false
    private var waiter: Handoff<Item>?

    init(limit: Int) {
        self.limit = Swift.max(1, limit)
    }

    /// Producer side (the connection thread): queues a non-empty batch, blocking while the
    /// consumer is `limit` records behind. Returns false once the consumer has gone away.
    func push(_ batch: [FeedbackRecord]) -> Bool {
        enum Step {
            case handed(Handoff<Item>)
            case queued
            case cancelled
        }
        let step: Step = lock.withLock {
            while !cancelled, waiter == nil, queuedRecords >= limit { _ = lock.wait(timeout: 1) }
            if cancelled { return .cancelled }
            if let waiter {
                self.waiter = nil
                return .handed(waiter)
            }
            queue.append(batch)
            queuedRecords += batch.count
            return .queued
        }
        switch step {
        case .handed(let waiter):
            waiter.put(.records(batch))
            return true
        case .queued: return true
        case .cancelled: return false
        }
    }

    /// Producer side: no more batches.
    func finish(_ failure: LegacyAPNsError?) {
        let waiter: Handoff<Item>? = lock.withLock {
            if ending == nil { ending = .some(failure) }
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.put(.end(failure))
    }

    /// Consumer side: the next batch, or the end. Cancelling the task ends the stream.
    func next() async -> Item {
        let handoff = Handoff<Item>()
        return await withTaskCancellationHandler {
            let ready: Item? = lock.withLock {
                if !queue.isEmpty {
                    let batch = queue.removeFirst()
                    queuedRecords -= batch.count
                    lock.broadcast()
                    return .records(batch)
                }
                if let ending { return .end(ending) }
                if cancelled { return .end(FeedbackConnection.cancelled) }
                waiter = handoff
                return nil
            }
            if let ready { return ready }
            return await handoff.take()
        } onCancel: {
            cancel()
            handoff.put(.end(FeedbackConnection.cancelled))
        }
    }

    /// Consumer side: stop; the producer's next ``push(_:)`` returns false and a waiting
    /// ``next()`` returns ``Item/end(_:)`` with ``LegacyAPNsError/Code-swift.struct/cancelled``.
    func cancel() {
        let waiter: Handoff<Item>? = lock.withLock {
            cancelled = true
            lock.broadcast()
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.put(.end(FeedbackConnection.cancelled))
    }
}
