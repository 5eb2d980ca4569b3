import APNsRuntime
import FeedbackClient
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// A gateway simulator on a free loopback port with the fixture certificates, and clients for it.
struct TestGateway {
    let simulator: GatewaySimulator
    let endpoints: GatewaySimulator.Endpoints
    let recorder: MemoryRecorder
    let events: Locked<[SimulatorEvent]>

    static let serverIdentity = try! ClientIdentity(
        pem: Fixtures.bytes(Fixtures.certs("server.pem")), keyPEM: Fixtures.bytes(Fixtures.certs("server.key")),
        passphrase: nil)
    static let ca = Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs("ca.pem")))
    static let clientIdentity = try! ClientIdentity(
        pkcs12: Fixtures.bytes(Fixtures.certs("universal-modern.p12")), passphrase: "secret")

    /// Starts a simulator with the fixture certificates on free ports. Prefer
    /// ``withTestGateway(faults:feedback:maximumPayloadSize:configure:isolation:_:)``, which also
    /// stops it.
    static func start(
        faults: SimulatorFaults = SimulatorFaults(), feedback: [FeedbackRecord] = [], maximumPayloadSize: Int = 2048,
        configure: (inout GatewaySimulator.Configuration) -> Void = { _ in },
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> TestGateway {
        var configuration = GatewaySimulator.Configuration(identity: Self.serverIdentity, clientTrust: Self.ca)
        configuration.port = 0
        configuration.feedbackPort = 0
        configuration.faults = faults
        configuration.feedback = feedback
        configuration.maximumPayloadSize = maximumPayloadSize
        configuration.drainTimeout = .seconds(2)
        let recorder = MemoryRecorder()
        let events = Locked<[SimulatorEvent]>([])
        configuration.recorder = recorder
        configuration.events = { event in events.update { $0.append(event) } }
        configure(&configuration)
        let simulator = try GatewaySimulator(configuration: configuration)
        let endpoints = try await simulator.start()
        return TestGateway(simulator: simulator, endpoints: endpoints, recorder: recorder, events: events)
    }

    /// A client configuration for this gateway, tuned for fast tests (short backoff).
    func clientConfiguration(identity: ClientIdentity = TestGateway.clientIdentity) -> PushClient.Configuration {
        var configuration = PushClient.Configuration(
            gateway: .custom(host: endpoints.gateway.host, port: endpoints.gateway.port),
            tls: TLSConfiguration(identity: identity, trust: .certificates(Self.ca)))
        configuration.delivery = DeliveryStateMachine.Configuration(
            cacheCapacity: 100_000, maximumAttempts: 3,
            reconnect: ReconnectPolicy(
                initialDelay: .milliseconds(10), multiplier: 2, maximumDelay: .milliseconds(100),
                maximumConsecutiveFailures: 4))
        configuration.connectTimeout = .seconds(5)
        configuration.verdictTimeout = .seconds(5)
        // The default: no barrier when a loaded machine starves the producer for a moment.
        configuration.idleConfirmationDelay = .seconds(1)
        return configuration
    }

    /// Stops the simulator (again, if it was stopped already).
    func stop() async { await simulator.stop() }

    /// `count` distinct indexes in 1...`range`, chosen reproducibly from `seed`, and a gateway that
    /// rejects their tokens with status 8 after sitting on each error for 50 ms (the client keeps
    /// writing meanwhile), for the duration of `body`.
    static func withBadTokens<Result>(
        _ count: Int, in range: Int, seed: UInt64, isolation: isolated (any Actor)? = #isolation,
        _ body: (TestGateway, Set<Int>) async throws -> Result
    ) async throws -> Result {
        var generator = SplitMix64(seed: seed)
        var bad = Set<Int>()
        while bad.count < count { bad.insert(Int(generator.next() % UInt64(range)) + 1) }
        var faults = SimulatorFaults()
        for index in bad { faults.failingTokens[notification(index).token] = .invalidToken }
        faults.errorResponseDelay = .milliseconds(50)
        return try await withTestGateway(faults: faults) { gateway in try await body(gateway, bad) }
    }

    /// A notification to a deterministic token for `index` (the token's last 8 bytes are `index`).
    static func notification(_ index: Int, identifier: UInt32? = nil) -> PushNotification {
        var bytes = [UInt8](repeating: 0xAB, count: 32)
        bytes[24..<32] = ArraySlice(withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) })
        return PushNotification(
            token: try! DeviceToken(bytes: bytes),
            payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"message \#(index)"}}"#.utf8)),
            identifier: identifier ?? UInt32(index))
    }

    /// The index encoded by ``notification(_:identifier:)``.
    static func index(of notification: PushNotification) -> Int {
        notification.token.withUnsafeBytes {
            Int(UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }
    }
}

/// Runs `body` with a started ``TestGateway`` and stops it however `body` ends: the scoped fixture
/// every simulator test uses.
func withTestGateway<Result>(
    faults: SimulatorFaults = SimulatorFaults(), feedback: [FeedbackRecord] = [], maximumPayloadSize: Int = 2048,
    configure: (inout GatewaySimulator.Configuration) -> Void = { _ in }, isolation: isolated (any Actor)? = #isolation,
    _ body: (TestGateway) async throws -> Result
) async throws -> Result {
    let gateway = try await TestGateway.start(
        faults: faults, feedback: feedback, maximumPayloadSize: maximumPayloadSize, configure: configure)
    do {
        let result = try await body(gateway)
        await gateway.stop()
        return result
    } catch {
        await gateway.stop()
        throw error
    }
}
