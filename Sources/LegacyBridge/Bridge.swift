import APNsCore
import APNsCredentials
internal import APNsRuntime
import HTTP2Client
import Synchronization

/// Lets an unmodified legacy sender deliver through Apple's HTTP/2 provider API: it listens like
/// the retired binary gateway (port 2195) and feedback service (2196), forwards each notification
/// over HTTP/2, answers the sender with binary error responses, and serves the tokens HTTP/2
/// reported unregistered on the feedback port.
///
/// ```swift
/// var upstream = ProviderClient.Configuration(
///     server: .production, credentials: .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
/// var configuration = Bridge.Configuration(
///     identity: bridgeIdentity, senderCAs: [legacyCA], upstream: upstream, storePath: "bridge.sqlite")
/// configuration.events = { print($0) }
/// let bridge = try Bridge(configuration: configuration)
/// try await bridge.withRunning { endpoints in
///     // point the old sender at endpoints.gateway and endpoints.feedback ...
/// }
/// ```
///
/// What the bridge promises a sender, and how (see ``BridgeSenderMachine``):
/// - the binary protocol as Apple's gateway spoke it: commands 0, 1 and 2 over TLS 1.2 with a
///   client certificate (chained to ``Configuration/senderCAs`` or pinned by fingerprint, expired
///   pinned ones included), one error response naming the first bad notification and then the
///   close, status 10 naming the last delivered one when the trouble is upstream;
/// - pipelining with a bounded window, and the first failure in sender order answered only after
///   every notification before it is known delivered; notifications after it that were already
///   delivered are remembered (by content) and acknowledged without a second delivery when the
///   sender sends them again;
/// - 410 is not an error: the token is stored durably (``FeedbackStore``) before the notification
///   is let go, and served once on the feedback port;
/// - nothing accepted from a sender disappears: each notification is delivered, rejected to the
///   sender, or reported as a ``BridgeEvent/notDelivered(connection:identifier:token:reason:)``.
public final class Bridge: Sendable {
    /// Everything about the bridge.
    public struct Configuration: Sendable {
        /// The certificate and key the bridge shows senders.
        public var identity: ClientIdentity
        /// Senders' certificates must chain to one of these (`--client-ca`)...
        public var senderCAs: [Certificate]
        /// ...or have one of these SHA-256 fingerprints (`--client-fingerprint`; expired ones pass).
        public var pinnedFingerprints: [[UInt8]] = []
        /// The HTTP/2 side: server, credentials (a `.p8` key or a certificate), trust, connections.
        public var upstream: ProviderClient.Configuration
        /// The topic of every request (default: each sender's certificate topic, or its route's
        /// ``BridgeRoutes/Route/apnsTopic``).
        public var topic: String?
        /// One bridge for many apps: each sender's route (the first that matches its certificate)
        /// names the credential and topic it delivers with; a sender no route matches is refused.
        /// With routes, ``upstream``'s credentials are not used (its server, trust, connections and
        /// proxy apply to every route's pool), and the CAs and fingerprints the routes name admit
        /// senders as ``senderCAs`` and ``pinnedFingerprints`` do. Nil (the default): one route,
        /// ``upstream``'s credentials, for every sender. ``Bridge/reload(routes:)`` replaces them.
        public var routes: BridgeRoutes?
        /// Where 410 tokens are kept until served, and the resend memory: an SQLite file
        /// (created if missing; one bridge), or a PostgreSQL connection URI
        /// (`postgresql://...`) or libpq `key=value` string, the shared store of a fleet of
        /// bridges (``PostgresStore``).
        public var storePath: String
        /// Address to listen on; 127.0.0.1 unless you mean otherwise.
        public var host = "127.0.0.1"
        /// The gateway port; 0 (the default) picks a free one, reported by ``Bridge/start()``
        /// (`legacy-push bridge` asks for Apple's 2195).
        public var port: UInt16 = 0
        /// The feedback port (0, the default, picks a free one), or nil for none
        /// (`legacy-push bridge` asks for Apple's 2196).
        public var feedbackPort: UInt16? = 0
        /// The newest TLS version offered to senders (TLS 1.2, as Apple's gateway; at least 1.2).
        public var maximumTLSVersion = TLSConfiguration.Version.tls12
        /// 80 secret bytes (``sessionTicketKeyLength``) that seal senders' TLS session tickets, the
        /// same for every bridge of a fleet: a sender answered by one bridge that reconnects through
        /// the load balancer to another resumes its session there instead of repeating the
        /// certificate handshake (a fleet's senders reconnect after every error response). Nil,
        /// the default: sessions stay in this process's cache and resume only here. Whoever holds
        /// the key can open the tickets: keep it as secret as the private key, and replace it (a
        /// restart of every bridge) now and then.
        public var sessionTicketKey: [UInt8]?
        /// The length of ``sessionTicketKey``.
        public static let sessionTicketKeyLength = TLSContext.sessionTicketKeyLength
        /// Notifications of one sender connection in flight upstream (sent or queued, without a
        /// verdict) at most. By default ``streamsPerUpstreamConnection`` for each upstream
        /// connection: one sender can keep every upstream stream busy, and no more.
        ///
        /// A sender holds at most this many payloads in the bridge, and at most
        /// ``BridgeSenderMachine/Configuration/backlogFactor`` times as many small records (token
        /// and resend key) of notifications with a verdict waiting for an earlier one's.
        public var window: Int {
            get { chosenWindow ?? Self.streamsPerUpstreamConnection * Swift.max(1, upstream.connections) }
            set { chosenWindow = newValue }
        }
        private var chosenWindow: Int?
        /// The default window's share per upstream connection: the concurrent streams Apple's
        /// servers have allowed one connection (SETTINGS_MAX_CONCURRENT_STREAMS 1,000).
        public static let streamsPerUpstreamConnection = 1000
        /// One notification in flight per sender connection (`--strict-order`), for senders that
        /// need their notifications delivered in order.
        public var strictOrder = false
        /// Sender connections (gateway and feedback together) served at once, counted from the TCP
        /// accept on. At the limit a new sender takes the place of the connection longest in its
        /// TLS handshake (whatever its age: connections that never complete one cannot hold the
        /// bridge), or else of the sender idle longest (no complete frame for ``evictableAfter``,
        /// nothing in flight), which is closed to make room; a new sender is refused only when
        /// every one is a busy sender.
        public var maximumConnections = 256
        /// How long a sender must have completed no frame, with nothing in flight, before it may be
        /// closed to make room for a new one at ``maximumConnections``.
        public var evictableAfter: Duration = .seconds(5)
        /// A sender connection with nothing in flight that has sent nothing for this long waits
        /// without a thread of its own (its TLS buffers freed) until it sends again, is evicted,
        /// times out or the bridge stops: thousands of idle senders cost about 40 KB each and
        /// one thread between them (`legacy-push bridge --park-after`). Nil (the default for now:
        /// two reload tests have failed under heavy load with it on, not yet understood): every
        /// connection keeps its thread.
        public var parkAfter: Duration?
        /// Time a sender may take for the TLS handshake.
        public var handshakeTimeout: Duration = .seconds(10)
        /// Time a started frame may take to complete (trickling senders are closed).
        public var frameTimeout: Duration = .seconds(30)
        /// A sender with nothing in flight that sends nothing for this long is closed.
        public var idleTimeout: Duration = .seconds(300)
        /// On stop: time the notifications in flight get to reach their verdicts.
        public var drainTimeout: Duration = .seconds(10)
        /// Bounds of the resend memory.
        public var resendMemory = BridgeResendMemory.Configuration()
        /// In a fleet (a PostgreSQL ``storePath``): how long the verdict of a notification a
        /// bridge claimed before forwarding it answers a resend of it, at any bridge
        /// (``PostgresStore/claimLifetime``). Longer than a sender takes to reconnect and resend;
        /// a sender repeating the same notification on purpose within it is answered from the
        /// window (the resend key names sender, identifier, token, payload, expiry and priority).
        public var claimLifetime: Duration = PostgresStore.defaultClaimLifetime
        /// Caps the store's file (tests: a full store without a full disk).
        package var storeMaximumPages: Int?
        /// While this answers true, the store's deletions fail (tests: a full disk after the
        /// tuples were stored).
        package var storeRefusesDeletes: (@Sendable () -> Bool)?
        /// Called for every ``BridgeEvent``, from the bridge's threads.
        public var events: (@Sendable (BridgeEvent) -> Void)?
        /// Called for every event of the upstream client, verdicts included (which ``events`` does
        /// not carry: the bridge turns them into its own), before the bridge acts on it, from the
        /// upstream connection threads: keep it quick. For metrics
        /// (``reportMetrics(to:)``: latency, answers per status and reason).
        public var upstreamEvents: (@Sendable (ProviderEvent) -> Void)?
        /// Shows every notification a sender sent in this inbox (`bridge --inbox`), with its
        /// sender, the request it went upstream as, and its verdict (accepted upstream, or the
        /// status and reason it got, and the binary status the sender was answered). Nil, the
        /// default: nothing is kept. Each sender's notifications go in a batch per turn of its
        /// connection's loop, built only when this is set.
        public var inbox: PushInbox?

        /// Creates a configuration with the documented defaults.
        public init(
            identity: ClientIdentity, senderCAs: [Certificate], upstream: ProviderClient.Configuration,
            storePath: String
        ) {
            self.identity = identity
            self.senderCAs = senderCAs
            self.upstream = upstream
            self.storePath = storePath
        }
    }

    /// Where the bridge listens.
    public struct Endpoints: Hashable, Sendable {
        /// The binary gateway.
        public var gateway: Endpoint
        /// The feedback service, if any.
        public var feedback: Endpoint?
    }

    /// The configuration the bridge was created with.
    public var configuration: Configuration { core.configuration }
    private let core: BridgeCore
    private let state = Mutex(RunState())
    private let threads = ThreadGroup()

    private struct RunState {
        var listeners: [Listener] = []
        var activeConnections = 0
        /// Connections accepted whose TLS handshake has not ended (some may have ended since:
        /// ``PendingHandshake/isPending`` says), removed when their thread ends.
        var handshakes: [ObjectIdentifier: PendingHandshake] = [:]
    }

    /// Opens the store and prepares TLS; nothing listens until ``start()``.
    ///
    /// - Throws: ``LegacyAPNsError``: the store is locked, corrupt, unwritable or on a full disk;
    ///   no sender CA and no pinned fingerprint; TLS cannot be configured.
    public init(configuration: Configuration) throws {
        // No store is opened for a configuration that admits no sender.
        _ = try BridgeCore.senderContext(configuration, routes: configuration.routes)
        let store: any BridgeStorage
        var claims: (any BridgeStorage)?
        if PostgresStore.isConnectionString(configuration.storePath) {
            let shared = try PostgresStore(
                connection: configuration.storePath, claimLifetime: configuration.claimLifetime)
            store = shared
            claims = try PostgresStore(sameBridgeAs: shared)
        } else {
            let file = try FeedbackStore(path: configuration.storePath, maximumPages: configuration.storeMaximumPages)
            file.refusesDeletes = configuration.storeRefusesDeletes
            store = file
        }
        self.core = try BridgeCore(configuration: configuration, store: store, claims: claims)
    }

    // Its threads hold the bridge, so this runs once they have ended (or it never started):
    // nothing can call back into the core any more. The store's thread runs from the start (and
    // holds the store's file): it ends here if `stop()` did not end it (a bridge never started).
    deinit {
        core.store?.stop()
        core.detach()
    }

    /// Statistics so far.
    public var statistics: BridgeStatistics { core.statistics.withLock { $0 } }

    /// Sender connections waiting without a thread (``Configuration/parkAfter``).
    package var parkedConnections: Int { core.idleSenders?.count ?? 0 }
    /// The bridge's threads now (accept loops, the parker, one per sender connection not parked).
    package var activeThreads: Int { threads.count }

    /// Sender sessions registered (tests: none is kept once its connection and verdicts are over).
    package var registeredSessions: Int { core.allSessions.count }

    /// Sender connections being served now (gateway and feedback, those in their TLS handshake too).
    public var openConnections: Int { state.withLock { $0.activeConnections } }

    /// The upstream's queue depth and notifications in flight now (every route's pool together).
    public var upstreamOccupancy: ProviderStream.Occupancy {
        .total(core.allUpstreams.map(\.occupancy))
    }

    /// Replaces the routes (``Configuration/routes``) while the bridge runs, as `SIGHUP` does for
    /// `legacy-push bridge --routes`: a renewed certificate, a new key, a route added or removed.
    /// Senders connected before keep the route (and pool) they chose at their handshake, and
    /// nothing in flight is touched; new senders get the new routes. A pool whose credential is
    /// unchanged (the same ``BridgeRoutes/Route/poolKey``) is kept with its connections; one no
    /// route uses any more is *retired*: once the last sender served through it has gone, it gets
    /// the verdicts of what it has in flight (nothing is given up) and closes its connections, so a
    /// revoked key or an old certificate stops being used as soon as its senders reconnect.
    ///
    /// - Throws: ``LegacyAPNsError`` when a credential cannot make a client or the senders' TLS
    ///   context cannot be made; the old routes then stay, unchanged.
    @discardableResult
    public func reload(routes: BridgeRoutes) throws -> BridgeReload {
        try core.reload(routes)
    }

    /// Whether the bridge can serve a new sender now: nil when it can, else why not. Ready means it
    /// is listening and not stopping, the store answers, and an upstream connection is up or can be
    /// had within `timeout` (the first check starts one, as the first sender would; nobody is
    /// counted as refused). For a readiness probe (`GET /readyz`, `MetricsServer`): it blocks the
    /// calling thread, at most about `timeout` plus a store query, so call it from a thread of your
    /// own, never from async code.
    public func readiness(timeout: Duration = .seconds(2)) -> String? {
        guard !core.isStopping else { return "the bridge is stopping" }
        guard state.withLock({ !$0.listeners.isEmpty }) else { return "the bridge is not listening" }
        _ = core.store.count()
        for upstream in core.routing.withLock({ $0.currentUpstreams }) {
            if let failure = upstream.readiness(timeout: timeout.inSeconds, countsRefusal: false) {
                return "no upstream connection: \(failure.reason)"
            }
        }
        return nil
    }

    /// Tuples waiting in the store for the feedback service, counted on the calling thread
    /// (blocking it for one store query: for metrics sampled on a thread of their own).
    package func storedFeedbackCountNow() -> Int { core.store.count() }

    /// Tuples waiting in the store for the feedback service.
    public func storedFeedbackCount() async -> Int {
        let core = self.core
        return await OSThread.run(name: "apns-bridge-count") { core.store.count() }
    }

    /// Starts listening; returns the endpoints (free ports when 0 was asked).
    public func start() async throws -> Endpoints {
        let gateway = try Listener(host: configuration.host, port: configuration.port)
        let feedback = try configuration.feedbackPort.map { try Listener(host: configuration.host, port: $0) }
        state.withLock { $0.listeners = [gateway] + (feedback.map { [$0] } ?? []) }
        if let parker = core.idleSenders {
            startThread { [self] in
                parker.run(isStopping: { core.isStopping }) { connection in
                    self.startThread {
                        if !connection.session.resume(connection) { self.connectionEnded() }
                    }
                }
            }
        }
        startThread { self.acceptLoop(gateway, isFeedback: false) }
        if let feedback { startThread { self.acceptLoop(feedback, isFeedback: true) } }
        return Endpoints(gateway: gateway.endpoint, feedback: feedback?.endpoint)
    }

    /// Stops: no new senders; each connected sender's notifications in flight get up to
    /// ``Configuration/drainTimeout`` to reach their verdicts, then the sender gets status 10
    /// naming the last one delivered (as Apple's gateway before maintenance); the upstream
    /// finishes, and what it has not answered after another ``Configuration/drainTimeout`` is
    /// given up (`unconfirmed`, possibly delivered); the store commits what it holds. Suspends
    /// (never blocks) the caller.
    public func stop() async {
        core.stopping.store(true, ordering: .relaxed)
        // Released here, so each closes when its accept loop lets go of it: a sender that
        // reconnects to a stopped bridge is refused at once, not left in the backlog.
        let listeners: [Listener] = state.withLock { state in
            defer { state.listeners = [] }
            return state.listeners
        }
        for listener in listeners { listener.wake() }
        for session in core.allSessions { session.poke() }
        core.idleSenders?.wake()
        let drain = configuration.drainTimeout.inSeconds
        await OSThread.run(name: "apns-bridge-stop") { [self] in
            _ = threads.join(timeout: .seconds(drain + 5))
        }
        // The last verdicts, bounded: what does not come in time is given up (and reported).
        let upstreams = core.allUpstreams
        let timer = Task {
            try await Task.sleep(for: .seconds(drain))
            for upstream in upstreams { upstream.abandon(LegacyAPNsError(.cancelled, "the bridge stopped")) }
        }
        await withTaskGroup(of: Void.self) { group in
            for upstream in upstreams { group.addTask { await upstream.finish() } }
        }
        timer.cancel()
        let store = core.store
        await OSThread.run(name: "apns-bridge-store-stop") { store?.stop() }
    }

    /// Starts, runs `body` with the endpoints, and stops however `body` ends.
    public func withRunning<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Endpoints) async throws -> Result
    ) async throws -> Result {
        try await withStarted(start: { try await start() }, stop: { await stop() }, body)
    }

    // MARK: - Threads

    private func startThread(_ body: @escaping @Sendable () -> Void) {
        threads.start(name: "apns-bridge", body)
    }

    private func acceptLoop(_ listener: Listener, isFeedback: Bool) {
        let core = self.core
        while !core.isStopping {
            guard let (socket, client) = listener.accept(timeout: 0.5) else { continue }
            // A gateway session waits on its wake signal from the start, so an eviction in its
            // handshake ends it at once; a feedback session's handshake looks every tenth of a second.
            let pending = PendingHandshake(wake: isFeedback ? nil : WakeSignal())
            guard admit(pending) else {
                core.count { $0.refusedConnections += 1 }
                core.emit(
                    .senderRefused(
                        client: client,
                        reason: "\(configuration.maximumConnections) connections are being served, none of them idle"))
                socket.close()
                continue
            }
            let box = SocketBox(socket)
            startThread {
                if isFeedback {
                    BridgeFeedbackSession(core: core, client: client).run(box.take(), pending: pending)
                } else {
                    let session = core.register { id, connection in
                        SenderSession(id: id, connection: connection, client: client, core: core, handshake: pending)
                    }
                    if session.run(box.take()) {
                        // Parked: still open, counted until a resumed thread ends it.
                        self.state.withLock { _ = $0.handshakes.removeValue(forKey: ObjectIdentifier(pending)) }
                        return
                    }
                }
                self.state.withLock {
                    $0.activeConnections -= 1
                    $0.handshakes[ObjectIdentifier(pending)] = nil
                }
            }
        }
    }

    /// A parked connection that was resumed has ended.
    private func connectionEnded() {
        state.withLock { $0.activeConnections -= 1 }
    }

    /// Counts a new connection against ``Configuration/maximumConnections``. At the limit it makes
    /// room: the connection longest in its TLS handshake is closed (a sender's handshake takes
    /// milliseconds; one that has not completed it holds nothing), or else the sender idle
    /// longest (``longestIdleSender()``); the new one is served meanwhile, at most
    /// ``evictionSlack`` over the limit while evicted ones finish closing. False when every
    /// connection is a sender that is busy or not idle long enough.
    private func admit(_ pending: PendingHandshake) -> Bool {
        let limit = configuration.maximumConnections
        func take(_ state: inout RunState) {
            state.activeConnections += 1
            state.handshakes[ObjectIdentifier(pending)] = pending
        }
        let admitted: Bool = state.withLock { state in
            if state.activeConnections < limit {
                take(&state)
                return true
            }
            guard state.activeConnections < limit + Self.evictionSlack,
                PendingHandshake.evictOldest(state.handshakes.values) != nil
            else { return false }
            take(&state)
            return true
        }
        if admitted { return true }
        guard let idle = longestIdleSender() else { return false }
        // The idle one closes gently; the new one is served meanwhile.
        let room: Bool = state.withLock { state in
            guard state.activeConnections < limit + Self.evictionSlack else { return false }
            take(&state)
            return true
        }
        if room { idle.evict() }
        return room
    }
}

extension Bridge {
    /// Connections over the limit while evicted senders finish closing.
    static let evictionSlack = 16

    /// The sender that has gone longest without a frame (and at least ``Configuration/evictableAfter``)
    /// with nothing in flight, if any.
    fileprivate func longestIdleSender() -> SenderSession? {
        let now = Monotonic.now()
        let bound = configuration.evictableAfter.inSeconds
        var best: (SenderSession, Double)?
        for session in core.allSessions {
            guard let idle = session.idleness(now: now), idle >= bound else { continue }
            if best == nil || idle > best!.1 { best = (session, idle) }
        }
        return best?.0
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
