import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A faithful local stand-in for Apple's retired binary gateway (port 2195) and feedback
/// service (port 2196), for testing any legacy sender.
///
/// - TLS with a required client certificate that must chain to the configured CA.
/// - Strict decoding with the same ``FrameDecoder`` as everything else; a bad frame gets the
///   6-byte error response with the status Apple used, then the connection closes **gently**
///   (close_notify, FIN, a bounded drain of what the client still sends, then close), so the
///   client really receives the response instead of losing it to a TCP reset. A bad command 0
///   frame closes the connection without a response, as Apple did.
/// - Fault injection (``SimulatorFaults``): failing tokens, every n-th notification, silent
///   closes, status 10 shutdowns, delayed or split error responses, slow reads, random faults.
/// - Accepted notifications go to a ``NotificationRecorder`` in batches.
/// - The feedback port serves the configured tuples once, then forgets them, as Apple did.
///
/// ```swift
/// let configuration = GatewaySimulator.Configuration(identity: serverIdentity, clientTrust: [ca])
/// let simulator = try GatewaySimulator(configuration: configuration)
/// let endpoints = try await simulator.start()   // free ports, reported here
/// // ... point a sender at endpoints.gateway (PushClient: Gateway(endpoints.gateway)) ...
/// await simulator.stop()
/// ```
public final class GatewaySimulator: Sendable {
    /// Everything about the simulator: identity, ports, limits, faults, recording.
    public struct Configuration: Sendable {
        /// The server certificate and key the simulator presents.
        public var identity: ClientIdentity
        /// Client certificates must chain to one of these.
        public var clientTrust: [Certificate]
        /// The newest TLS version offered (the oldest is always 1.2).
        ///
        /// TLS 1.2 by default, as Apple's binary gateway spoke it: the public reports of its last
        /// years show it refusing TLS 1.0 from 2019 and clients fixing that by asking for TLS 1.2,
        /// and none of TLS 1.3. It is also what makes rejections cheap: every error response ends a
        /// connection, and with OpenSSL 3.0 resuming a TLS 1.2 session costs less than half the CPU
        /// of resuming a TLS 1.3 one (no new key exchange, fewer key derivations). Choose
        /// ``TLSConfiguration/Version/tls13`` to test a sender's TLS 1.3 path.
        public var maximumTLSVersion = TLSConfiguration.Version.tls12
        /// Address to bind; 127.0.0.1 unless you really mean otherwise.
        public var host = "127.0.0.1"
        /// Gateway port; 0 picks a free one.
        public var port: UInt16 = 2195
        /// Feedback port (0 picks a free one), or nil for no feedback service.
        public var feedbackPort: UInt16? = 2196
        /// Payloads larger than this get status 7.
        public var maximumPayloadSize = Payload.defaultMaximumSize
        /// Misbehaviour to inject (none by default).
        public var faults = SimulatorFaults()
        /// Tuples the feedback service hands out (once).
        public var feedback: [FeedbackRecord] = []
        /// Bytes per TLS record when serving feedback (nil: as many as fit); small values test
        /// clients' reassembly.
        public var feedbackChunkSize: Int?
        /// Connections served at once; more are closed at once.
        public var maximumConnections = 64
        /// Bytes a connection may have received but not yet decoded before it counts as hostile.
        public var maximumBufferedBytes = 1 << 20
        /// Time a client may take for the TLS handshake.
        public var handshakeTimeout: Duration = .seconds(10)
        /// Time to keep reading after an error response, before closing.
        public var drainTimeout: Duration = .seconds(1)
        /// Time a connection may send nothing before the simulator closes it (nil: never).
        public var idleTimeout: Duration? = .seconds(300)
        /// Where accepted notifications are recorded, if anywhere.
        public var recorder: (any NotificationRecorder)?
        /// Called for every ``SimulatorEvent``, from the connection threads.
        public var events: (@Sendable (SimulatorEvent) -> Void)?

        /// Creates a configuration with the server identity and the CAs client certificates must chain to.
        public init(identity: ClientIdentity, clientTrust: [Certificate]) {
            self.identity = identity
            self.clientTrust = clientTrust
        }
    }

    /// Where the simulator listens once started.
    public struct Endpoints: Hashable, Sendable {
        /// The binary gateway's address.
        public var gateway: Endpoint
        /// The feedback service's address, if it runs.
        public var feedback: Endpoint?
    }

    /// Counters since start.
    public struct Statistics: Hashable, Sendable {
        /// Gateway connections that completed the TLS handshake.
        public var connections = 0
        /// Of those, the ones that resumed an earlier TLS session (no certificates exchanged).
        public var resumedConnections = 0
        /// Notifications accepted (and recorded).
        public var accepted = 0
        /// Notifications or frames refused with an error response (or a close, for command 0).
        public var rejected = 0
        /// Status 10 answers sent.
        public var shutdowns = 0
        /// Connections closed without an error response (fault injection).
        public var silentCloses = 0
        /// Clients refused during the TLS handshake.
        public var handshakeFailures = 0
        /// Feedback tuples handed out.
        public var feedbackServed = 0
    }

    struct State {
        var listeners: [Listener] = []
        var running = false
        var activeThreads = 0
        var activeConnections = 0
        var nextConnection = 0
        var statistics = Statistics()
        var received = 0
        var random = SplitMix64(seed: 0)
        var feedback: [FeedbackRecord] = []
    }

    let configuration: Configuration
    let context: TLSContext
    let state: Mutex<State>
    let stopping = Atomic<Bool>(false)
    private let threadsDone = ConditionLock()

    /// Prepares the simulator (loads the TLS identity); nothing listens until ``start()``.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.context = try TLSContext.server(
            identity: configuration.identity, clientTrust: configuration.clientTrust,
            maximum: configuration.maximumTLSVersion)
        var initial = State()
        initial.feedback = configuration.feedback
        initial.random = SplitMix64(seed: configuration.faults.random?.seed ?? 0)
        self.state = Mutex(initial)
    }

    deinit { requestStop() }

    /// Binds the ports and starts serving.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/connectionFailed`` when a port is taken.
    @discardableResult
    public func start() async throws -> Endpoints {
        let gateway = try Listener(host: configuration.host, port: configuration.port)
        let feedback = try configuration.feedbackPort.map { try Listener(host: configuration.host, port: $0) }
        state.withLock { state in
            state.listeners = [gateway] + (feedback.map { [$0] } ?? [])
            state.running = true
        }
        startThread { self.acceptLoop(gateway, isFeedback: false) }
        if let feedback { startThread { self.acceptLoop(feedback, isFeedback: true) } }
        return Endpoints(gateway: gateway.endpoint, feedback: feedback?.endpoint)
    }

    /// Stops listening, ends every connection, and waits for the connection threads to finish
    /// (each notices within a tenth of a second; the wait gives up after ``stopTimeout``), then
    /// flushes the recorder. The caller is suspended, not blocked, meanwhile.
    public func stop() async {
        requestStop()
        await OSThread.run(name: "apns-sim-stop") { [self] in
            let deadline = Monotonic.now() + Self.stopTimeout.inSeconds
            threadsDone.withLock {
                while state.withLock({ $0.activeThreads }) > 0, Monotonic.now() < deadline {
                    _ = threadsDone.wait(timeout: 0.05)
                }
            }
            configuration.recorder?.flush()
        }
    }

    /// Starts the simulator, runs `body` with its endpoints, and stops it however `body` ends:
    /// the scoped form of ``start()`` and ``stop()``.
    public func withRunning<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Endpoints) async throws -> Result
    ) async throws -> Result {
        let endpoints = try await start()
        do {
            let result = try await body(endpoints)
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }

    /// The longest ``stop()`` waits for connection threads.
    public static let stopTimeout = Duration.seconds(5)

    /// Tells every thread to stop, without waiting.
    private func requestStop() {
        let listeners: [Listener] = state.withLock { state in
            defer { state.listeners = [] }
            state.running = false
            return state.listeners
        }
        stopping.store(true, ordering: .sequentiallyConsistent)
        for listener in listeners { listener.wake() }
    }

    /// Counters so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Replaces the tuples the feedback service will hand out next.
    public func setFeedback(_ records: [FeedbackRecord]) {
        state.withLock { $0.feedback = records }
    }

    // MARK: - Threads

    func startThread(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.activeThreads += 1 }
        OSThread.start(name: "apns-sim") {
            body()
            self.state.withLock { $0.activeThreads -= 1 }
            self.threadsDone.withLock { self.threadsDone.broadcast() }
        }
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    func emit(_ event: SimulatorEvent) {
        configuration.events?(event)
    }

    private func acceptLoop(_ listener: Listener, isFeedback: Bool) {
        while !isStopping {
            guard let (socket, client) = listener.accept(timeout: 0.5) else { continue }
            let slot: Int? = state.withLock { state in
                guard state.activeConnections < configuration.maximumConnections else { return nil }
                state.activeConnections += 1
                state.nextConnection += 1
                return state.nextConnection
            }
            guard let connection = slot else {
                emit(.refused(client: client))
                socket.close()
                continue
            }
            let box = SocketBox(socket)
            startThread {
                if isFeedback {
                    self.serveFeedback(box.take(), client: client)
                } else {
                    GatewaySession(simulator: self, connection: connection, client: client).run(box.take())
                }
                self.state.withLock { $0.activeConnections -= 1 }
            }
        }
    }

    private func serveFeedback(_ socket: Socket, client: String) {
        let session: TLSSession
        do {
            session = try TLSSession.accept(
                socket, context: context, peer: client, timeout: configuration.handshakeTimeout.inSeconds,
                drainTimeout: configuration.drainTimeout.inSeconds)
        } catch {
            handshakeFailed(client: client, error: error)
            return
        }
        let records: [FeedbackRecord] = state.withLock { state in
            defer { state.feedback = [] }
            return state.feedback
        }
        var writer = ByteWriter(capacity: records.count * 38)
        for record in records { record.encode(into: &writer) }
        let chunk = configuration.feedbackChunkSize ?? 16 * 1024
        var offset = 0
        let bytes = writer.bytes
        while offset < bytes.count, !isStopping {
            let end = Swift.min(bytes.count, offset + chunk)
            guard session.writeAll(Array(bytes[offset..<end]), timeout: GatewaySession.writeTimeout) == nil else {
                break
            }
            offset = end
        }
        state.withLock { $0.statistics.feedbackServed += records.count }
        emit(.feedbackServed(client: client, count: records.count))
        session.closeGently(drainTimeout: configuration.drainTimeout.inSeconds)
    }

    func handshakeFailed(client: String, error: any Error) {
        state.withLock { $0.statistics.handshakeFailures += 1 }
        emit(.handshakeFailed(client: client, reason: (error as? LegacyAPNsError)?.reason ?? "\(error)"))
    }
}

/// Moves a non-Sendable socket into the thread that will own it.
private final class SocketBox: @unchecked Sendable {
    // @unchecked: handed over exactly once, from the accept thread to the connection thread.
    private var socket: Socket?
    init(_ socket: Socket) { self.socket = socket }
    func take() -> Socket {
        defer { socket = nil }
        return socket!
    }
}
