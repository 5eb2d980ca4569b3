import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// A faithful local stand-in for Apple's HTTP/2 provider API (`api.push.apple.com`), for testing
/// any HTTP/2 sender: curl, aioapns, Pushy, APNSwift, our own.
///
/// - TLS 1.2 or later with ALPN `h2` (a client offering no ALPN is served HTTP/2 too, as by APNs;
///   one offering only other protocols is refused with the `no_application_protocol` alert).
/// - **Certificate authentication** when the client presents a certificate chaining to
///   ``Configuration/clientTrust``: it may push to its subject UID and the topics of Apple's
///   extension 1.2.840.113635.100.6.3.6. A certificate for the other environment gets 403 and
///   GOAWAY `{"reason":"BadCertificateEnvironment"}` on its first request (a universal
///   certificate suits both; one without environment markers gets 403 BadCertificate).
/// - **Token authentication** when it presents none: every request needs a provider token of one
///   of ``Configuration/authKeys`` (the rules below), the stream limit is 1
///   until the first valid token and ``Configuration/maximumConcurrentStreams`` after it, topics
///   are limited by ``Configuration/teamTopics`` when the team has an entry.
/// - A stream beyond the limit ends the connection as APNs does, with GOAWAY "Maximum active
///   streams violated for this endpoint." (``Configuration/excessStreams``, ``ExcessStreams``).
/// - Apple's request rules in a documented order (APNsCore's `ProviderRequestValidator`), every status
///   and reason of Apple's table reachable (by validation, or on demand through
///   ``ProviderFaults``), `apns-id` echoed or made up, `apns-unique-id` in development.
/// - Streams over the limit: nghttp2 refuses them with RST_STREAM REFUSED_STREAM while the client
///   has not yet acknowledged the limit, and ends the connection with GOAWAY PROTOCOL_ERROR when a
///   client exceeds a limit it acknowledged (a persistent violator, as APNs' GOAWAY "Maximum active
///   streams violated for this endpoint." ends it).
/// - Apple's **channel management** API (`/1/apps/<bundle id>/channels` and `/all-channels`: create,
///   read, delete, list) on its port and, with ``Configuration/managementPort``, on a port of its
///   own, and **broadcasts** (`POST /4/broadcasts/apps/<bundle id>`), in a ``ChannelStore``
///   (APNsCore's `ChannelRequestValidator` has the rules and their order). Where Apple contradicts
///   itself both forms are accepted and the event names which arrived.
/// - Accepted requests go to a ``ProviderRecorder`` in batches (within
///   ``Configuration/recordingInterval``, and when a connection closes); counters in
///   ``statistics``; typed ``ProviderSimulatorEvent``s to ``Configuration/events``.
/// - Hostile clients (stream floods, oversized headers, never reading, trickling) are cut off
///   within ``Limits``, on their own thread, with bounded memory; everyone else is served.
///
/// **Token rules**, checked in this order on every request of a token connection (the same token
/// again costs a byte comparison; a signature is verified once per token per connection):
///
/// | check | answer |
/// |---|---|
/// | no `authorization`, or `bearer` without a token | 403 MissingProviderToken |
/// | not a well-formed ES256 provider token, a `kid` of no configured key, an `iss` not the key's team, a bad signature | 403 InvalidProviderToken |
/// | another key than the connection's first valid token | 403 UnrelatedKeyIdInToken |
/// | a key limited to the other environment (``AuthKey/environment``) | 403 BadEnvironmentKeyIdInToken |
/// | `iat` more than an hour before the ``Configuration/clock`` | 403 ExpiredProviderToken |
/// | `iat` more than a minute after it (a sender clock ahead) | 403 InvalidProviderToken |
/// | a new valid token less than 20 minutes after the connection's current one was accepted | 429 TooManyProviderTokenUpdates (the current token stays in force) |
///
/// Topics with token auth: those of ``Configuration/teamTopics`` for the token's team (each bundle
/// id with its push-type suffixes), or any topic when the team has no entry.
///
/// ```swift
/// var configuration = ProviderSimulator.Configuration(identity: serverIdentity, clientTrust: [ca])
/// configuration.authKeys = [.init(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", publicKey: key.publicKey)]
/// let simulator = try ProviderSimulator(configuration: configuration)
/// try await simulator.withRunning { endpoint in
///     // ... point an HTTP/2 sender at endpoint (https://127.0.0.1:<port>) ...
/// }
/// print(simulator.statistics.summary)
/// ```
public final class ProviderSimulator: Sendable {
    struct State {
        var listener: Listener?
        var managementListener: Listener?
        var managementEndpoint: Endpoint?
        /// The connections counted against ``Limits/maximumConnections``, by number (one evicted
        /// to make room no longer counts while it closes).
        var connections: [Int: ProviderConnectionActivity] = [:]
        var nextConnection = 0
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    let policy: ProviderPolicy
    let context: TLSContext
    private let state = Mutex(State())
    private let threads = ThreadGroup()

    /// Prepares the simulator (loads the TLS identity); nothing listens until ``start()``.
    ///
    /// - Throws: ``LegacyAPNsError`` when the identity or the trusted CAs cannot be used.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        context = try TLSContext.server(
            identity: configuration.identity, clientTrust: configuration.clientTrust,
            maximum: configuration.maximumTLSVersion, clientCertificates: .optional, applicationProtocols: ["h2"])
        policy = ProviderPolicy(configuration)
    }

    deinit { requestStop() }

    /// Binds the port and starts serving; returns the address (the real port when 0 was asked for).
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/connectionFailed`` when the port is taken.
    @discardableResult
    public func start() async throws -> Endpoint {
        let listener = try Listener(host: configuration.host, port: configuration.port)
        let management = try configuration.managementPort.map { try Listener(host: configuration.host, port: $0) }
        state.withLock {
            $0.listener = listener
            $0.managementListener = management
            $0.managementEndpoint = management?.endpoint
        }
        policy.stopping.store(false, ordering: .sequentiallyConsistent)
        startThread(name: "apns-h2-accept") { self.acceptLoop(listener) }
        if let management {
            startThread(name: "apns-h2-accept-management") { self.acceptLoop(management, servesPushes: false) }
        }
        return listener.endpoint
    }

    /// The address of the management port (``Configuration/managementPort``) once started.
    public var managementEndpoint: Endpoint? { state.withLock { $0.managementEndpoint } }

    /// The broadcast channels and the broadcasts sent on them (``Configuration/channels``).
    public var channels: ChannelStore { configuration.channels }

    /// Stops listening, says GOAWAY `{"reason":"Shutdown"}` on every connection, waits for the
    /// connection threads (each notices within a tenth of a second and gets a second to say
    /// goodbye; the wait gives up after ``stopTimeout``), then flushes the recorder. The caller is
    /// suspended, not blocked, meanwhile.
    public func stop() async {
        requestStop()
        await OSThread.run(name: "apns-h2-stop") { [self] in
            threads.join(timeout: Self.stopTimeout)
            configuration.recorder?.flush()
        }
    }

    /// Starts the simulator, runs `body` with its address, and stops it however `body` ends: the
    /// scoped form of ``start()`` and ``stop()``.
    public func withRunning<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Endpoint) async throws -> Result
    ) async throws -> Result {
        try await withStarted(start: { try await start() }, stop: { await stop() }, body)
    }

    /// The longest ``stop()`` waits for connection threads.
    public static let stopTimeout = Duration.seconds(5)

    /// Counters so far (see ``Statistics/summary`` for the closing line).
    public var statistics: Statistics { policy.statistics }

    /// Connections served now (counted against the connection limit).
    public var openConnections: Int { state.withLock { $0.connections.count } }

    private func requestStop() {
        let listeners = state.withLock { state in
            defer {
                state.listener = nil
                state.managementListener = nil
            }
            return [state.listener, state.managementListener]
        }
        policy.stopping.store(true, ordering: .sequentiallyConsistent)
        for listener in listeners { listener?.wake() }
    }

    // MARK: - Threads

    private func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
        threads.start(name: name, body)
    }

    private func acceptLoop(_ listener: Listener, servesPushes: Bool = true) {
        while !policy.isStopping {
            guard let (socket, client) = listener.accept(timeout: 0.5) else { continue }
            let activity = ProviderConnectionActivity()
            let limits = configuration.limits
            let now = Monotonic.now()
            let number: Int? = state.withLock { state in
                if state.connections.count >= limits.maximumConnections {
                    // Make room: the connection longest in its handshake, or else the one idle longest.
                    guard
                        let victim = ProviderConnectionActivity.makeRoom(
                            in: state.connections, now: now, grace: limits.evictableAfter.inSeconds)
                    else { return nil }
                    state.connections[victim] = nil
                }
                state.nextConnection += 1
                state.connections[state.nextConnection] = activity
                return state.nextConnection
            }
            guard let number else {
                policy.update { $0.refusedConnections += 1 }
                policy.emit(.refused(client: client))
                socket.close()
                continue
            }
            let handOver = ProviderSocketHandOver(socket)
            var configured = ProviderConnectionLoop(
                policy: policy, context: context, number: number, client: client, activity: activity)
            configured.servesPushes = servesPushes
            let loop = configured
            startThread(name: "apns-h2-connection") {
                loop.run(handOver.take())
                self.state.withLock { state in
                    if state.connections[number] === activity { state.connections[number] = nil }
                }
            }
        }
    }
}

/// Moves a non-Sendable socket into the thread that will own it.
private final class ProviderSocketHandOver: @unchecked Sendable {
    // @unchecked: handed over exactly once, from the accept thread to the connection thread.
    private var socket: Socket?
    init(_ socket: Socket) { self.socket = socket }
    func take() -> Socket {
        defer { socket = nil }
        return socket!
    }
}
