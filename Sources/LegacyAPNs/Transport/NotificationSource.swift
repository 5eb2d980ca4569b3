import APNsCore
import APNsCredentials
internal import APNsRuntime

/// The hand-over between the caller's input and the connection threads.
///
/// A producer thread (for a `Sequence`) pushes batches and blocks while the queue is full; an
/// asynchronous input pushes element by element and is suspended, not blocked, meanwhile. Either
/// way memory stays bounded however long the input is. Connection threads take notifications in small
/// batches and number them: the position (1-based, in input order) is the notification's identity
/// for the whole send.
package final class NotificationSource: @unchecked Sendable {
    // @unchecked: all mutable state is guarded by `lock`.

    private let lock = ConditionLock()
    private let capacity: Int
    private var batches = Ring<[PushNotification]>(capacity: 64)
    private var offsetInFirst = 0
    private var queued = 0
    private var nextPosition: UInt64 = 1
    private var producerFinished = false
    private var stopped = false
    private var spaceWaiter: Handoff<Void>?

    package init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    /// Adds a batch from a producer thread (never from the cooperative pool), blocking while the
    /// queue is full. Returns false when taking has stopped (the batch is then kept for the report).
    package func pushWaiting(_ batch: [PushNotification]) -> Bool {
        lock.withLock {
            // Taken from the caller's input for good: after a stop it is queued all the same, so
            // the report names it (not sent, from ``untaken()``) instead of forgetting it.
            batches.append(batch)
            queued += batch.count
            guard !stopped else { return false }
            lock.broadcast()
            while queued >= capacity, !stopped { _ = lock.wait(timeout: 1) }
            return !stopped
        }
    }

    /// Adds one notification, visible to the connection threads at once (an asynchronous input
    /// may pause after any element, so nothing waits for a batch to fill); suspends while the
    /// queue is full. Returns false when taking has stopped.
    package func push(_ notification: PushNotification) async -> Bool {
        let accepted: Bool = lock.withLock {
            guard !stopped else { return false }
            if let last = batches.last, last.count < Self.batchSize {
                batches.modifyLast { $0.append(notification) }
            } else {
                var batch: [PushNotification] = []
                batch.reserveCapacity(Self.batchSize)
                batch.append(notification)
                batches.append(batch)
            }
            queued += 1
            lock.broadcast()
            return true
        }
        return accepted ? await waitForSpace() : false
    }

    /// Suspends while the queue is full; false when taking has stopped.
    private func waitForSpace() async -> Bool {
        let waiter: Handoff<Void>? = lock.withLock {
            if queued < capacity || stopped { return nil }
            let waiter = Handoff<Void>()
            spaceWaiter = waiter
            return waiter
        }
        await waiter?.take()
        return lock.withLock { !stopped }
    }

    /// Notifications per queued batch.
    package static let batchSize = 256

    /// The producer has no more notifications.
    package func finish() {
        lock.withLock {
            producerFinished = true
            lock.broadcast()
        }
    }

    /// No more notifications will be taken (cancellation, or a fatal failure).
    package func stop() {
        let waiter: Handoff<Void>? = lock.withLock {
            stopped = true
            lock.broadcast()
            defer { spaceWaiter = nil }
            return spaceWaiter
        }
        waiter?.put(())
    }

    package enum TakeResult {
        /// Some notifications were appended.
        case taken
        /// None are queued yet; try again later.
        case empty
        /// None will ever come.
        case finished
    }

    /// Appends up to `maximum` notifications with their positions to `buffer`, waiting at most
    /// `timeout` seconds for some to arrive.
    package func take(into buffer: inout [(UInt64, PushNotification)], maximum: Int, timeout: Double) -> TakeResult {
        var waiter: Handoff<Void>?
        let result: TakeResult = lock.withLock {
            if queued == 0, !producerFinished, !stopped, timeout > 0 {
                _ = lock.wait(timeout: timeout)
            }
            if stopped { return .finished }
            if queued == 0 { return producerFinished ? .finished : .empty }
            var taken = 0
            while taken < maximum, let first = batches.first {
                let available = first.count - offsetInFirst
                let count = Swift.min(available, maximum - taken)
                for index in offsetInFirst..<(offsetInFirst + count) {
                    buffer.append((nextPosition, first[index]))
                    nextPosition += 1
                }
                taken += count
                offsetInFirst += count
                if offsetInFirst == first.count {
                    _ = batches.removeFirst()
                    offsetInFirst = 0
                }
            }
            queued -= taken
            lock.broadcast()  // a producer thread may be waiting for space
            if queued < capacity, spaceWaiter != nil {
                waiter = spaceWaiter
                spaceWaiter = nil
            }
            return .taken
        }
        waiter?.put(())
        return result
    }

    /// Notifications pushed but never taken (after a stop), with the positions they would have had.
    package func untaken() -> [(UInt64, PushNotification)] {
        lock.withLock {
            var result: [(UInt64, PushNotification)] = []
            while let first = batches.first {
                for index in offsetInFirst..<first.count {
                    result.append((nextPosition, first[index]))
                    nextPosition += 1
                }
                _ = batches.removeFirst()
                offsetInFirst = 0
            }
            queued = 0
            return result
        }
    }
}
