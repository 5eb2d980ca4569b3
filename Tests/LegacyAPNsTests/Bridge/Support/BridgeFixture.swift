import APNsCore
import APNsRuntime
import FeedbackClient
import GatewaySimulator
import HTTP2Client
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// A ``Bridge`` on free loopback ports in front of an embedded ``ProviderSimulator`` (token
/// authentication with the fixture `.p8` key), with the fixture certificates on the sender side
/// and a store in a scratch directory: the whole path a legacy sender takes, over real TLS.
struct BridgeFixture: Sendable {
    let bridge: Bridge
    let endpoints: Bridge.Endpoints
    /// The simulator behind the bridge (nil when the test gives the bridge no upstream).
    let upstream: ProviderFixture?
    let events: Locked<[BridgeEvent]>

    static let signingKey = ProviderPair.keyA

    /// The upstream configuration: token auth against `endpoint`, the test CA, quick reconnects.
    static func upstream(_ endpoint: Endpoint) -> ProviderClient.Configuration {
        var configuration = ProviderClient.Configuration(
            server: .custom(endpoint), credentials: .token(signingKey, keyID: "ABC123DEFG", teamID: ProviderPair.teamID)
        )
        configuration.trust = .certificates(TestGateway.ca)
        configuration.delivery.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(10), multiplier: 2, maximumDelay: .milliseconds(100),
            maximumConsecutiveFailures: 4)
        return configuration
    }

    /// A bridge configuration with the fixture identity, the test CA for senders, free ports.
    static func configuration(upstream: Endpoint, store: String) -> Bridge.Configuration {
        var configuration = Bridge.Configuration(
            identity: TestGateway.serverIdentity, senderCAs: ProviderFixture.chain, upstream: Self.upstream(upstream),
            storePath: store)
        configuration.port = 0
        configuration.feedbackPort = 0
        configuration.drainTimeout = .seconds(3)
        return configuration
    }

    /// A binary client (our own `PushClient`) for the bridge, tuned for quick tests.
    func client(identity: ClientIdentity = TestGateway.clientIdentity) throws -> PushClient {
        try PushClient(configuration: Self.clientConfiguration(gateway: endpoints.gateway, identity: identity))
    }

    /// The configuration of ``client(identity:)`` for a bridge at `gateway`; `failures`: the
    /// reconnects in a row it takes before giving up.
    static func clientConfiguration(
        gateway: Endpoint, identity: ClientIdentity = TestGateway.clientIdentity, failures: Int = 4
    ) -> PushClient.Configuration {
        var configuration = PushClient.Configuration(
            gateway: .custom(host: gateway.host, port: gateway.port),
            tls: TLSConfiguration(identity: identity, trust: .certificates(TestGateway.ca)))
        configuration.delivery = DeliveryStateMachine.Configuration(
            cacheCapacity: 100_000, maximumAttempts: 3,
            reconnect: ReconnectPolicy(
                initialDelay: .milliseconds(10), multiplier: 2, maximumDelay: .milliseconds(100),
                maximumConsecutiveFailures: failures))
        configuration.connectTimeout = .seconds(5)
        configuration.verdictTimeout = .seconds(10)
        return configuration
    }

    /// The bridge's feedback port as a service.
    var feedbackService: FeedbackService {
        .custom(host: endpoints.feedback!.host, port: endpoints.feedback!.port)
    }

    /// Tokens the simulator accepted, by the index ``TestGateway/notification(_:identifier:)`` put
    /// in them, with how often each was accepted.
    func deliveries() -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for accepted in upstream?.recorder.accepted ?? [] {
            counts[BridgeFixture.index(of: accepted.request.deviceToken), default: 0] += 1
        }
        return counts
    }

    static func index(of token: DeviceToken) -> Int {
        token.withUnsafeBytes { Int(UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self))) }
    }
}

/// Runs `body` with a started simulator and a started bridge in front of it; stops both however
/// `body` ends. `store` defaults to a fresh file in a scratch directory.
func withBridge<Result>(
    faults: ProviderFaults = ProviderFaults(), store: String? = nil,
    configureUpstream: (inout ProviderSimulator.Configuration) -> Void = { _ in },
    configure: (inout Bridge.Configuration) -> Void = { _ in }, isolation: isolated (any Actor)? = #isolation,
    _ body: (BridgeFixture) async throws -> Result
) async throws -> Result {
    let scratch = try ScratchDirectory()
    return try await withProviderSimulator(configure: {
        $0.faults = faults
        configureUpstream(&$0)
    }) { upstream in
        var configuration = BridgeFixture.configuration(
            upstream: upstream.endpoint, store: store ?? scratch.file("bridge.sqlite"))
        let events = Locked<[BridgeEvent]>([])
        configuration.events = { event in events.update { $0.append(event) } }
        configure(&configuration)
        let bridge = try Bridge(configuration: configuration)
        return try await bridge.withRunning { endpoints in
            try await body(BridgeFixture(bridge: bridge, endpoints: endpoints, upstream: upstream, events: events))
        }
    }
}

/// Runs `body` with a started bridge whose upstream is `upstream`, with no simulator of the
/// fixture's there (nothing, or one the test starts itself): the fixture's `upstream` is nil.
func withBridge<Result>(
    upstreamAt upstream: Endpoint, isolation: isolated (any Actor)? = #isolation,
    _ body: (BridgeFixture) async throws -> Result
) async throws -> Result {
    let scratch = try ScratchDirectory()
    var configuration = BridgeFixture.configuration(upstream: upstream, store: scratch.file("bridge.sqlite"))
    let events = Locked<[BridgeEvent]>([])
    configuration.events = { event in events.update { $0.append(event) } }
    let bridge = try Bridge(configuration: configuration)
    return try await bridge.withRunning { endpoints in
        try await body(BridgeFixture(bridge: bridge, endpoints: endpoints, upstream: nil, events: events))
    }
}

/// Polls `condition` every 10 ms for up to `limit`: for counts another thread updates just after
/// the event a test waited for.
func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
