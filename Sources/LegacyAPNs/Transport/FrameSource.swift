import APNsCore
internal import APNsRuntime

/// The hand-over between a producer thread reading ``FrameBatch``es and the connection threads,
/// as ``NotificationSource`` is for notifications: bounded (the producer blocks while it is
/// full), and numbering notifications by position in input order as connections take them. A
/// connection takes a whole batch at a time.
package final class FrameSource: @unchecked Sendable {
    // @unchecked: all mutable state is guarded by `lock`.

    private let lock = ConditionLock()
    /// Notifications queued at most (the producer waits above it).
    private let capacity: Int
    private var batches = Ring<FrameBatch>(capacity: 64)
    private var queued = 0
    private var nextPosition: UInt64 = 1
    private var producerFinished = false
    private var stopped = false
    /// Whether the producer waits for room, and how many takers wait for a batch: a wake-up only
    /// when someone waits, and the producer's only once the queue is down to half (so the two
    /// threads do not trade a wake-up per batch).
    private var producerWaiting = false
    private var takersWaiting = 0

    package init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    /// Adds a batch from a producer thread (never from the cooperative pool), blocking while the
    /// queue is full. Returns false when taking has stopped (the batch is then kept for the report).
    package func pushWaiting(_ batch: FrameBatch) -> Bool {
        guard !batch.isEmpty else { return lock.withLock { !stopped } }
        return lock.withLock {
            // Taken from the caller's input for good: after a stop it is queued all the same, so
            // the report names it (not sent, from ``untaken()``) instead of forgetting it.
            batches.append(batch)
            queued += batch.count
            guard !stopped else { return false }
            if takersWaiting > 0 { lock.broadcast() }
            while queued >= capacity, !stopped {
                producerWaiting = true
                _ = lock.wait(timeout: 1)
                producerWaiting = false
            }
            return !stopped
        }
    }

    /// The producer has no more batches.
    package func finish() {
        lock.withLock {
            producerFinished = true
            lock.broadcast()
        }
    }

    /// No more batches will be taken (cancellation, or a fatal failure).
    package func stop() {
        lock.withLock {
            stopped = true
            lock.broadcast()
        }
    }

    /// What ``take(timeout:)`` found.
    package enum TakeResult {
        /// A batch, whose first notification has this position.
        case taken(FrameBatch, firstPosition: UInt64)
        /// None is queued yet; try again later.
        case empty
        /// None will ever come.
        case finished
    }

    /// The next batch, waiting at most `timeout` seconds for one to arrive.
    package func take(timeout: Double) -> TakeResult {
        lock.withLock {
            if queued == 0, !producerFinished, !stopped, timeout > 0 {
                takersWaiting += 1
                _ = lock.wait(timeout: timeout)
                takersWaiting -= 1
            }
            if stopped { return .finished }
            guard !batches.isEmpty else { return producerFinished ? .finished : .empty }
            let batch = batches.removeFirst()
            let first = nextPosition
            nextPosition += UInt64(batch.count)
            queued -= batch.count
            // Half empty, or down to its last batch (large batches: the taker must not run dry).
            if producerWaiting, queued <= capacity / 2 || batches.count <= 1 { lock.broadcast() }
            return .taken(batch, firstPosition: first)
        }
    }

    /// Notifications pushed but never taken (after a stop), rebuilt, with the positions they would
    /// have had.
    package func untaken() -> [(UInt64, PushNotification)] {
        lock.withLock {
            var result: [(UInt64, PushNotification)] = []
            while !batches.isEmpty {
                batches.removeFirst().forEachRecord { record in
                    result.append((nextPosition, record.notification))
                    nextPosition += 1
                }
            }
            queued = 0
            return result
        }
    }
}
