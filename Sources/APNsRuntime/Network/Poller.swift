import APNsCore
import APNsCredentials
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Waits on many descriptors at once, for an event loop that owns many non-blocking connections:
/// the many-socket counterpart of ``Socket/wait(for:timeout:)`` (the one-socket wait). Together
/// they are the only places in the package that wait for connections (both through ``Poll``).
///
/// Each turn the loop lists what it waits for (``watch(_:for:)``), waits once (``wait(timeout:)``),
/// then asks what each descriptor is ready for (``ready(_:)``). Another thread can end a wait early
/// with the ``waker``. Used by one thread; only the waker is shared.
package final class Poller {
    /// Ends a ``Poller/wait(timeout:)`` from any thread.
    package final class Waker: Sendable {
        private let descriptor: Int32
        /// Whether a wake-up byte is already on its way (a burst of wakes writes one byte).
        private let pending = Atomic<Bool>(false)

        fileprivate init(descriptor: Int32) { self.descriptor = descriptor }

        /// Makes the current or next wait return at once.
        package func wake() {
            guard !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(descriptor, &byte, 1)
        }

        fileprivate func reset() { pending.store(false, ordering: .releasing) }
    }

    private var descriptors: [pollfd] = []
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Wakes this poller's waits.
    package let waker: Waker

    /// Creates a poller with its wake-up pipe.
    package init() throws {
        guard let (wakeRead, wakeWrite) = FileDescriptor.makePipe() else {
            throw LegacyAPNsError(.connectionFailed, "cannot create a pipe: \(errnoText())")
        }
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
        waker = Waker(descriptor: wakeWrite)
        descriptors.reserveCapacity(64)
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    /// Starts a new turn: forgets what was watched.
    package func reset() {
        descriptors.removeAll(keepingCapacity: true)
        descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
    }

    /// Watches `descriptor` for `events` this turn; returns the slot to ask ``ready(_:)`` about.
    package func watch(_ descriptor: Int32, for events: Readiness) -> Int {
        descriptors.append(pollfd(fd: descriptor, events: Poll.events(events), revents: 0))
        return descriptors.count - 1
    }

    /// Waits until a watched descriptor is ready, the waker is used, or `timeout` seconds pass.
    package func wait(timeout: Double) {
        if descriptors.isEmpty { reset() }
        if Poll.wait(&descriptors, timeout: timeout) < 0 {
            for index in descriptors.indices { descriptors[index].revents = 0 }
        }
        if descriptors[0].revents != 0 {
            // Drain first, then re-arm: a wake in between finds the loop awake anyway (it looks at
            // its inbox after every wait).
            var scratch = [UInt8](repeating: 0, count: 64)
            while scratch.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
            waker.reset()
        }
    }

    /// What the descriptor in `slot` is ready for after the last wait. A hang-up or an error counts
    /// as both (the next read or write reports it).
    package func ready(_ slot: Int) -> Readiness {
        let events = descriptors[slot].revents
        var ready: Readiness = []
        if events & Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0 { ready.insert(.readable) }
        if events & Int16(POLLOUT | POLLHUP | POLLERR | POLLNVAL) != 0 { ready.insert(.writable) }
        return ready
    }
}
