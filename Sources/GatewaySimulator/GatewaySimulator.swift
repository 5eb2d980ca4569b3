import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

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
/// - Accepted notifications go to a ``NotificationRecorder`` in batches, and reach it within
///   ``Configuration/recorderFlushInterval`` and before every connection ends (see the protocol).
/// - The feedback port serves the configured tuples once, then forgets them, as Apple did.
/// - Refusals Apple's gateway made: client certificates of the other environment or without an
///   allowed topic (closed right after the handshake), TLS versions below the minimum.
///
/// ## Connections
/// A small fixed pool of event loops (one per core, at most four) owns every connection as a
/// non-blocking TLS session, so idle connections cost a descriptor and a little memory, not a
/// thread. Nobody can hold the simulator:
/// - **Handshake deadline:** a client has ``Configuration/handshakeTimeout`` to complete the TLS
///   handshake.
/// - **Progress rule:** a frame must be complete ``Configuration/frameTimeout`` after its first
///   byte arrived (10 s; a real sender's frame arrives in one write, at most split across two TLS
///   records). A client trickling bytes never completes a frame in time and is closed, however
///   often it sends; a connection that sends nothing at all is closed after
///   ``Configuration/idleTimeout``.
/// - **Idle connections make room:** ``Configuration/maximumConnections`` bounds what clients can
///   hold, not who gets in. When a new client arrives at the limit, the connection that has made no
///   progress (no completed frame, nor its handshake) for longest is closed to make room, provided
///   that is at least ``Configuration/evictableAfter``; only when every connection is an active
///   sender is the new client refused (``SimulatorEvent/refused(client:)``).
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
        /// The oldest TLS version accepted: 1.2, or 1.3 to refuse TLS 1.2 clients (they get a
        /// protocol_version alert). Raise ``maximumTLSVersion`` with it.
        public var minimumTLSVersion = TLSConfiguration.Version.tls12
        /// The newest TLS version offered.
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
        /// Gateway port; 0 (the default) picks a free one, reported by ``GatewaySimulator/start()``
        /// (`legacy-push serve` asks for Apple's 2195).
        public var port: UInt16 = 0
        /// Feedback port (0, the default, picks a free one), or nil for no feedback service
        /// (`legacy-push serve` asks for Apple's 2196).
        public var feedbackPort: UInt16? = 0
        /// Payloads larger than this get status 7.
        public var maximumPayloadSize = Payload.defaultMaximumSize
        /// Misbehaviour to inject (none by default).
        public var faults = SimulatorFaults()
        /// Tuples the feedback service hands out (once).
        public var feedback: [FeedbackRecord] = []
        /// Bytes per TLS record when serving feedback (nil: as many as fit); small values test
        /// clients' reassembly.
        public var feedbackChunkSize: Int?
        /// Connections held at once (both ports; those closing after a verdict not counted). A new
        /// client at the limit takes the place of the connection idle longest, if one has been idle
        /// for ``evictableAfter``; otherwise it is closed at once. Mind the process's descriptor
        /// limit (`ulimit -n`): each connection is one descriptor.
        public var maximumConnections = 1024
        /// How long a connection must have made no progress (completed no frame, nor its
        /// handshake) before it may be closed to make room for a new client at the limit. Longer
        /// than a sender's pause between batches with nothing in flight (LegacyAPNs's `PushClient` confirms
        /// what is in flight after one second of pause).
        public var evictableAfter: Duration = .seconds(5)
        /// Bytes a connection may have received but not yet decoded before it counts as hostile.
        public var maximumBufferedBytes = 1 << 20
        /// Time a client may take for the TLS handshake, from its TCP connection on.
        public var handshakeTimeout: Duration = .seconds(10)
        /// The progress rule: time a frame may take from its first byte to its last. A connection
        /// with a frame incomplete for longer is closed without a response
        /// (``SimulatorEvent/progressTimeout(connection:accepted:)``), so trickling bytes cannot
        /// keep a connection alive.
        public var frameTimeout: Duration = .seconds(10)
        /// Time to keep reading after an error response, before closing.
        public var drainTimeout: Duration = .seconds(1)
        /// Time a connection may send nothing before the simulator closes it (nil: never).
        public var idleTimeout: Duration? = .seconds(300)
        /// Where accepted notifications are recorded, if anywhere.
        public var recorder: (any NotificationRecorder)?
        /// The longest a recorded batch waits before the simulator calls the recorder's
        /// ``NotificationRecorder/flush()``.
        public var recorderFlushInterval: Duration = .milliseconds(100)
        /// The APNs environment this gateway stands for (``CertificateEnvironment/production`` or
        /// ``CertificateEnvironment/development``), or nil for any. A client certificate not marked
        /// for it (a development certificate at a production gateway, one with no marker) is
        /// refused by closing the connection right after the handshake, as Apple's gateway did;
        /// universal certificates (``CertificateEnvironment/both``) pass.
        public var environment: CertificateEnvironment?
        /// Topics (bundle ids) this gateway accepts, or empty for any. A client certificate whose
        /// topics (``Certificate/topics``) include none of them is refused by closing the
        /// connection right after the handshake.
        public var topics: [String] = []
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
        /// Notifications decoded, per command (0, 1, 2), before faults decide on them.
        public var receivedByCommand = CommandCounts()
        /// Notifications accepted (and recorded).
        public var accepted = 0
        /// Notifications or frames refused with an error response (or a close, for command 0).
        public var rejected = 0
        /// Confirmation barriers answered (not in ``rejected``).
        public var confirmationBarriers = 0
        /// Status 10 answers sent.
        public var shutdowns = 0
        /// Connections closed without an error response (fault injection).
        public var silentCloses = 0
        /// Clients refused during the TLS handshake.
        public var handshakeFailures = 0
        /// Feedback tuples handed out.
        public var feedbackServed = 0
        /// Idle connections closed to make room for a new client.
        public var evictions = 0
        /// Connections closed by the progress rule (a frame incomplete for ``Configuration/frameTimeout``).
        public var progressTimeouts = 0
        /// Connections closed right after the handshake because of the client certificate's
        /// environment or topics.
        public var refusedCertificates = 0
    }

    /// A connection counted against the limit.
    struct Tracked {
        var loop: Int
        /// When it last made progress: accepted, finished its handshake, completed a frame.
        var lastProgress: Double
    }

    struct State {
        var listeners: [Listener] = []
        var loops: [ServeLoop] = []
        var running = false
        var nextConnection = 0
        /// Connections counted against ``Configuration/maximumConnections``, by number.
        var connections: [Int: Tracked] = [:]
        /// Connections per loop, for placing new ones.
        var loopLoad: [Int] = []
        var statistics = Statistics()
        var received = 0
        var random = SplitMix64(seed: 0)
        var feedback: [FeedbackRecord] = []
    }

    let configuration: Configuration
    let context: TLSContext
    let state: Mutex<State>
    let stopping = Atomic<Bool>(false)
    private let threads = ThreadGroup()

    /// Prepares the simulator (loads the TLS identity); nothing listens until ``start()``.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        guard configuration.minimumTLSVersion != .tls13 || configuration.maximumTLSVersion == .tls13 else {
            throw LegacyAPNsError(
                .tlsConfiguration, "the newest TLS version (1.2) is older than the oldest one accepted (1.3)")
        }
        self.context = try TLSContext.server(
            identity: configuration.identity, clientTrust: configuration.clientTrust,
            minimum: configuration.minimumTLSVersion, maximum: configuration.maximumTLSVersion)
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
        let loops = try (0..<Self.loopCount).map { try ServeLoop(simulator: self, index: $0) }
        state.withLock { state in
            state.listeners = [gateway] + (feedback.map { [$0] } ?? [])
            state.loops = loops
            state.loopLoad = Array(repeating: 0, count: loops.count)
            state.running = true
        }
        for loop in loops { startThread { loop.run() } }
        startThread { self.acceptLoop(gateway, isFeedback: false) }
        if let feedback { startThread { self.acceptLoop(feedback, isFeedback: true) } }
        return Endpoints(gateway: gateway.endpoint, feedback: feedback?.endpoint)
    }

    /// Stops listening, ends every connection, and waits for the simulator's threads to finish
    /// (the event loops are woken at once; the wait gives up after ``stopTimeout``), then flushes
    /// the recorder. The caller is suspended, not blocked, meanwhile.
    public func stop() async {
        requestStop()
        await OSThread.run(name: "apns-sim-stop") { [self] in
            threads.join(timeout: Self.stopTimeout)
            configuration.recorder?.flush()
        }
    }

    /// Starts the simulator, runs `body` with its endpoints, and stops it however `body` ends:
    /// the scoped form of ``start()`` and ``stop()``.
    public func withRunning<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Endpoints) async throws -> Result
    ) async throws -> Result {
        try await withStarted(start: { try await start() }, stop: { await stop() }, body)
    }

    /// The longest ``stop()`` waits for connection threads.
    public static let stopTimeout = Duration.seconds(5)

    /// Event loops: one per core, at most four (each serves many connections).
    static let loopCount = Swift.min(4, Host.processorCount)

    /// Tells every thread to stop, without waiting.
    private func requestStop() {
        let (listeners, loops): ([Listener], [ServeLoop]) = state.withLock { state in
            defer { state.listeners = [] }
            state.running = false
            return (state.listeners, state.loops)
        }
        stopping.store(true, ordering: .sequentiallyConsistent)
        for listener in listeners { listener.wake() }
        for loop in loops { loop.wake() }
    }

    /// Counters so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Connections served now, on both ports (counted against the connection limit).
    public var openConnections: Int { state.withLock { $0.connections.count } }

    /// Replaces the tuples the feedback service will hand out next.
    public func setFeedback(_ records: [FeedbackRecord]) {
        state.withLock { $0.feedback = records }
    }

    // MARK: - Threads

    func startThread(_ body: @escaping @Sendable () -> Void) {
        threads.start(name: "apns-sim", body)
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    func emit(_ event: SimulatorEvent) {
        configuration.events?(event)
    }

    private func acceptLoop(_ listener: Listener, isFeedback: Bool) {
        while !isStopping {
            guard let (socket, client) = listener.accept(timeout: 0.5) else { continue }
            guard let (connection, loop, victim) = admit() else {
                emit(.refused(client: client))
                socket.close()
                continue
            }
            if let (victim, victimLoop) = victim { victimLoop.send(.evict(victim)) }
            loop.send(.adopt(SocketBox(socket), connection: connection, client: client, isFeedback: isFeedback))
        }
    }

    /// Counts a new connection against the limit, making room by evicting the connection idle
    /// longest when needed. Returns its number, the loop that serves it, and the connection to
    /// evict (with its loop) if any; nil when every connection is an active sender.
    private func admit() -> (Int, ServeLoop, (Int, ServeLoop)?)? {
        let now = Monotonic.now()
        let grace = configuration.evictableAfter.inSeconds
        return state.withLock { state in
            var victim: (Int, ServeLoop)?
            if state.connections.count >= configuration.maximumConnections {
                guard let idlest = state.connections.min(by: { $0.value.lastProgress < $1.value.lastProgress }),
                    now - idlest.value.lastProgress >= grace
                else { return nil }
                state.connections[idlest.key] = nil
                state.loopLoad[idlest.value.loop] -= 1
                victim = (idlest.key, state.loops[idlest.value.loop])
            }
            state.nextConnection += 1
            let loop = state.loopLoad.indices.min { state.loopLoad[$0] < state.loopLoad[$1] } ?? 0
            state.loopLoad[loop] += 1
            state.connections[state.nextConnection] = Tracked(loop: loop, lastProgress: now)
            return (state.nextConnection, state.loops[loop], victim)
        }
    }

    /// The connection no longer counts against the limit (it ended, or it only drains now).
    func release(_ connection: Int) {
        state.withLock { state in
            guard let tracked = state.connections.removeValue(forKey: connection) else { return }
            state.loopLoad[tracked.loop] -= 1
        }
    }

    func handshakeFailed(client: String, error: any Error) {
        state.withLock { $0.statistics.handshakeFailures += 1 }
        emit(.handshakeFailed(client: client, reason: (error as? LegacyAPNsError)?.reason ?? "\(error)"))
    }
}

/// Moves a non-Sendable socket into the thread that will own it.
final class SocketBox: @unchecked Sendable {
    // @unchecked: handed over exactly once, from the accept thread to the event loop.
    private var socket: Socket?
    init(_ socket: Socket) { self.socket = socket }
    func take() -> Socket {
        defer { socket = nil }
        return socket!
    }
}
