import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// A connection owned by a ``ServeLoop``: a non-blocking state machine the loop drives whenever
/// its socket is ready, its deadline has come, or it has work that needs no waiting.
protocol LoopConnection: AnyObject {
    /// The connection's number (``SimulatorEvent`` numbering).
    var number: Int { get }
    /// Its socket, to wait on.
    var descriptor: Int32 { get }
    /// What it waits for now (empty: only its deadline).
    var interest: Readiness { get }
    /// When it needs attention whatever the socket does (a timeout, a timer), if ever.
    var deadline: Double? { get }
    /// Whether it has work that needs no waiting (input OpenSSL already holds).
    var hasWork: Bool { get }
    /// Does what can be done now without blocking. Returns false once it is closed.
    func service(ready: Readiness, now: Double) -> Bool
    /// Closes at once: the simulator stops (`evicted` false) or needs the room (`evicted` true).
    func end(evicted: Bool, now: Double)
}

/// One event-loop thread of the simulator: it owns many connections (non-blocking TLS sessions)
/// and waits for all of them in one ``Poller`` (the runtime's many-socket wait; the simulator
/// polls nothing itself). The accept threads hand it connections, and evictions, through
/// ``send(_:)``.
final class ServeLoop: @unchecked Sendable {
    // @unchecked: `inbox` is behind a Mutex and the waker is thread-safe; everything else is
    // touched only by the loop's own thread, inside `run()`.

    enum Message: Sendable {
        /// Serve this accepted socket.
        case adopt(SocketBox, connection: Int, client: String, isFeedback: Bool)
        /// Close this connection to make room (it no longer counts against the limit).
        case evict(Int)
    }

    unowned let simulator: GatewaySimulator
    let index: Int
    private let poller: Poller
    private let inbox = Mutex<[Message]>([])
    private var connections: [Int: any LoopConnection] = [:]
    private var order: [Int] = []
    private var slots: [Int] = []
    /// The read buffer every connection of the loop shares (one read at a time).
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// When the recorder must be flushed (something was recorded since the last flush).
    private var flushDue: Double?

    init(simulator: GatewaySimulator, index: Int) throws {
        self.simulator = simulator
        self.index = index
        self.poller = try Poller()
    }

    deinit { buffer.deallocate() }

    /// Hands the loop a message from another thread.
    func send(_ message: Message) {
        inbox.withLock { $0.append(message) }
        poller.waker.wake()
    }

    /// Makes the loop look at the simulator's state now (it is stopping).
    func wake() { poller.waker.wake() }

    /// A batch was recorded: the recorder is flushed within the configured interval.
    func recorded(now: Double) {
        if flushDue == nil { flushDue = now + simulator.configuration.recorderFlushInterval.inSeconds }
    }

    /// The loop: take messages, wait for every connection at once, serve what is ready.
    func run() {
        while true {
            takeMessages()
            if simulator.isStopping {
                let now = Monotonic.now()
                for connection in connections.values { connection.end(evicted: false, now: now) }
                connections = [:]
                return
            }
            var now = Monotonic.now()
            var timeout = 0.5
            if let flushDue { timeout = Swift.min(timeout, flushDue - now) }
            poller.reset()
            order.removeAll(keepingCapacity: true)
            slots.removeAll(keepingCapacity: true)
            for (number, connection) in connections {
                order.append(number)
                let interest = connection.interest
                slots.append(interest.isEmpty ? -1 : poller.watch(connection.descriptor, for: interest))
                if connection.hasWork { timeout = 0 }
                if let deadline = connection.deadline { timeout = Swift.min(timeout, deadline - now) }
            }
            poller.wait(timeout: Swift.max(0, timeout))
            now = Monotonic.now()
            for (position, number) in order.enumerated() {
                guard let connection = connections[number] else { continue }
                let ready = slots[position] >= 0 ? poller.ready(slots[position]) : []
                let due = connection.deadline.map { $0 <= now } ?? false
                guard !ready.isEmpty || due || connection.hasWork else { continue }
                if !connection.service(ready: ready, now: now) { connections[number] = nil }
            }
            if let due = flushDue, due <= now {
                flushDue = nil
                simulator.configuration.recorder?.flush()
            }
        }
    }

    private func takeMessages() {
        let messages = inbox.withLock { inbox in
            defer { inbox.removeAll(keepingCapacity: true) }
            return inbox
        }
        for message in messages {
            switch message {
            case .adopt(let box, let number, let client, let isFeedback):
                adopt(box.take(), number: number, client: client, isFeedback: isFeedback)
            case .evict(let number):
                connections.removeValue(forKey: number)?.end(evicted: true, now: Monotonic.now())
            }
        }
    }

    private func adopt(_ socket: Socket, number: Int, client: String, isFeedback: Bool) {
        let session: TLSSession
        do {
            session = try TLSSession.beginAccepting(socket, context: simulator.context, peer: client)
        } catch {
            simulator.handshakeFailed(client: client, error: error)
            simulator.release(number)
            return
        }
        let now = Monotonic.now()
        let connection: any LoopConnection =
            isFeedback
            ? FeedbackSession(loop: self, number: number, client: client, session: session, now: now)
            : GatewaySession(loop: self, number: number, client: client, session: session, now: now)
        // Start at once: the ClientHello is often there already.
        if connection.service(ready: .readable, now: now) { connections[number] = connection }
    }
}
