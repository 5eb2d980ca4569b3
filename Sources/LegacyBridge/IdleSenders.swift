import APNsCore
internal import APNsRuntime
import Synchronization

/// Sender connections that sit idle, held by one thread instead of one thread each.
///
/// A sender with nothing in flight, nothing buffered and no bytes for ``Bridge/Configuration/parkAfter``
/// hands its connection here and its thread ends (its TLS buffers are freed first). The one thread
/// of this type waits on every parked connection at once (``Poller``) and gives a connection back
/// to a new session thread (``SenderSession/resume(_:)``) as soon as there is anything for it to
/// do: bytes (or a hang-up) from the sender, an eviction to make room, its idle timeout, or the
/// bridge stopping. Every decision stays the session's: this type only waits.
final class IdleSenders: @unchecked Sendable {
    // @unchecked: `arrivals` is behind its mutex; `parked` and `poller` are the parker thread's.
    /// A parked connection. @unchecked Sendable: handed from the session thread to the parker
    /// and on to the next session thread, used by one of them at a time.
    struct Parked: @unchecked Sendable {
        let session: SenderSession
        let transport: TLSSession
        /// When the sender last sent bytes (monotonic seconds): its idle timeout runs from here.
        let lastActivity: Double
    }

    /// Connections handed over since the parker last looked, and whether it has ended.
    private let arrivals = Mutex<(connections: [Parked], ended: Bool)>(([], false))
    private var parked: [Parked] = []
    private var slots: [Int] = []
    private let poller: Poller
    private let idleTimeout: Double

    /// Parked connections (any thread; for tests and metrics).
    var count: Int { parkedCount.load(ordering: .relaxed) }
    private let parkedCount = Atomic<Int>(0)

    init(idleTimeout: Duration) throws {
        poller = try Poller()
        self.idleTimeout = idleTimeout.inSeconds
    }

    /// Takes an idle connection (from its session thread, which then ends); false once the
    /// parker has ended (the bridge stopped): the thread keeps serving it.
    func park(_ connection: Parked) -> Bool {
        let taken: Bool = arrivals.withLock { arrivals in
            guard !arrivals.ended else { return false }
            arrivals.connections.append(connection)
            return true
        }
        guard taken else { return false }
        parkedCount.add(1, ordering: .relaxed)
        poller.waker.wake()
        return true
    }

    /// Makes the parker look at its connections now (an eviction, the bridge stopping).
    func wake() { poller.waker.wake() }

    /// The parker thread: returns once the bridge stops and every parked connection was handed
    /// back. `resume` starts a session thread for a connection.
    func run(isStopping: () -> Bool, resume: (Parked) -> Void) {
        while true {
            let stopping = isStopping()
            let done: Bool = arrivals.withLock { arrivals in
                parked += arrivals.connections
                arrivals.connections.removeAll(keepingCapacity: true)
                if stopping, parked.isEmpty { arrivals.ended = true }
                return arrivals.ended
            }
            if done { return }
            poller.reset()
            slots.removeAll(keepingCapacity: true)
            for connection in parked {
                slots.append(poller.watch(connection.transport.socket.descriptor, for: .readable))
            }
            if !stopping {
                let now = Monotonic.now()
                var nextDeadline = Double.infinity
                for connection in parked {
                    nextDeadline = Swift.min(nextDeadline, connection.lastActivity + idleTimeout)
                }
                poller.wait(timeout: Swift.max(0, Swift.min(0.5, nextDeadline - now)))
            }
            let now = Monotonic.now()
            var kept = 0
            for index in parked.indices {
                let connection = parked[index]
                let due =
                    stopping || !poller.ready(slots[index]).isEmpty || connection.session.isEvictionRequested
                    || now - connection.lastActivity >= idleTimeout
                if due {
                    parkedCount.subtract(1, ordering: .relaxed)
                    resume(connection)
                } else {
                    parked[kept] = connection
                    kept += 1
                }
            }
            parked.removeLast(parked.count - kept)
        }
    }
}
