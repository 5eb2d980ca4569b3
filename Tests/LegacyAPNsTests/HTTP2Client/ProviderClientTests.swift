import APNsCore
import APNsRuntime
import Foundation
import HTTP2Client
import TestSupport
import Testing

/// The HTTP/2 client over real TLS and nghttp2 on loopback: against a small APNs-validating test
/// server (certificate and token auth), and against `nghttpd`, the C reference server, for
/// framing and flow control with large payloads.
@Suite struct ProviderClientTests {
    static let ca = TestGateway.ca

    static func request(_ index: Int, payloadSize: Int = 0, topic: String? = nil) -> ProviderRequest {
        var bytes = [UInt8](repeating: 0x42, count: 32)
        withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        let filler = String(repeating: "x", count: payloadSize)
        return try! ProviderRequest(
            deviceToken: DeviceToken(bytes: bytes),
            payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"h2 \#(index)"},"f":"\#(filler)"}"#.utf8)),
            topic: topic)
    }

    static func index(of request: ProviderRequest) -> Int {
        request.deviceToken.withUnsafeBytes {
            Int(UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }
    }

    static func configuration(_ endpoint: Endpoint, credentials: ProviderCredentials) -> ProviderClient.Configuration {
        var configuration = ProviderClient.Configuration(server: .custom(endpoint), credentials: credentials)
        configuration.trust = .certificates(ca)
        configuration.delivery.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(10), maximumConsecutiveFailures: 3)
        return configuration
    }

    @Test func withTheLegacyP12EveryNotificationIsAcceptedOnce() async throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        // The same .p12 the binary gateway took: its topic (subject UID) is the default topic.
        let identity = TestGateway.clientIdentity
        let client = try ProviderClient(
            configuration: Self.configuration(server.endpoint, credentials: .certificate(identity)))
        let report = await client.send((1...500).map { Self.request($0) })
        await client.shutdown()  // the client keeps its connection until then
        #expect(report.failure == nil)
        #expect(report.accepted == 500)
        #expect(report.isCompleteSuccess)
        #expect(report.connections == 1)
        let recorded = server.finishedConnections(1).flatMap(\.requests).map(Self.index(of:))
        #expect(recorded.sorted() == Array(1...500))
        #expect(server.finishedConnections(1).first?.peerTopics?.contains(identity.certificate.topic ?? "") == true)
    }

    @Test func withASigningKeyEveryRequestCarriesATokenPyJWTAccepts() async throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let key = try SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("AuthKey_ABC123DEFG.p8")))
        var configuration = Self.configuration(
            server.endpoint, credentials: .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
        configuration.topic = "com.example.app"
        let client = try ProviderClient(configuration: configuration)
        let report = await client.send((1...20).map { Self.request($0) })
        await client.shutdown()  // the client keeps its connection until then
        #expect(report.accepted == 20)
        let requests = server.finishedConnections(1).flatMap(\.requests)
        #expect(requests.count == 20)
        let tokens = Set(requests.compactMap(\.authorizationToken))
        #expect(tokens.count == 1)  // one token per connection
        let token = try #require(tokens.first)
        let verdict = try PythonTools.run(
            """
            import jwt, sys
            claims = jwt.decode(sys.argv[1], open(sys.argv[2]).read(), algorithms=["ES256"])
            print(jwt.get_unverified_header(sys.argv[1])["kid"], claims["iss"])
            """, arguments: [token, Fixtures.certs("AuthKey_ABC123DEFG.pub.pem")])
        #expect(verdict.status == 0, "\(verdict.stderr)")
        #expect(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ABC123DEFG DEF123GHIJ")
    }

    @Test func aRequestAPNsWouldRefuseIsRejectedWithoutARoundTrip() async throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let client = try ProviderClient(
            configuration: Self.configuration(server.endpoint, credentials: .certificate(TestGateway.clientIdentity)))
        var background = Self.request(2)
        background.pushType = .background
        background.priority = .immediate
        let report = await client.send([Self.request(1, payloadSize: 5000), background, Self.request(3)])
        await client.shutdown()  // the client keeps its connection until then
        #expect(report.accepted == 1)
        #expect(report.rejected.map(\.reason) == [.payloadTooLarge, .badPriority])
        #expect(report.rejected.allSatisfy { $0.isLocal })
        #expect(server.finishedConnections(1).flatMap(\.requests).map(Self.index(of:)) == [3])
    }

    @Test func largePayloadsFlowThroughNghttpdOnTwoConnections() async throws {
        guard let nghttpd = ExternalProgram.nghttpd.locate() else { return }
        let port = try Listener(host: "127.0.0.1", port: 0).endpoint.port
        let root = try ScratchDirectory()
        let daemon = try BackgroundProgram(
            nghttpd,
            [
                "--echo-upload", "-d", root.path, String(port), Fixtures.certs("server.key"),
                Fixtures.certs("server.pem"),
            ])
        defer { daemon.stop() }
        try #require(Self.waitUntilListening(port), "nghttpd did not start: \(daemon.standardError)")
        var configuration = Self.configuration(
            Endpoint(host: "127.0.0.1", port: port), credentials: .certificate(TestGateway.clientIdentity))
        configuration.connections = 2
        let client = try ProviderClient(configuration: configuration)
        // 1,000 bodies of ~4 KB: far more than the 64 KiB initial flow-control windows.
        let report = await client.send((1...1000).map { Self.request($0, payloadSize: 4000) })
        #expect(report.failure == nil, "\(report.failure?.reason ?? "")")
        #expect(report.accepted == 1000)
        #expect(report.connections == 2)
    }

    /// Whether something accepts TCP connections on `port` within a few seconds (nghttpd prints
    /// nothing when it is ready unless verbose).
    static func waitUntilListening(_ port: UInt16) -> Bool {
        let deadline = Monotonic.now() + 10
        while Monotonic.now() < deadline {
            if (try? Socket.connect(host: "127.0.0.1", port: port, timeout: 1)) != nil { return true }
            Monotonic.sleep(0.02)
        }
        return false
    }

    /// A sequence slow to start: its first batch reaches the client only after every connection
    /// has given up. Those notifications were taken from the sequence, so the report names them
    /// (not sent) instead of forgetting them.
    @Test func aBatchHandedOverAfterTheSendStoppedIsReportedNotSent() async throws {
        struct SlowStart: Sequence, Sendable {
            let requests: [ProviderRequest]
            func makeIterator() -> Array<ProviderRequest>.Iterator {
                Monotonic.sleep(0.3)  // the connections give up within ~30 ms
                return requests.makeIterator()
            }
        }
        let port = try Listener(host: "127.0.0.1", port: 0).endpoint.port
        let client = try ProviderClient(
            configuration: Self.configuration(
                Endpoint(host: "127.0.0.1", port: port), credentials: .certificate(TestGateway.clientIdentity)))
        let report = await client.send(SlowStart(requests: (1...50).map { Self.request($0) }))
        #expect(report.failure?.code == .connectionFailed)
        #expect(report.sent == 50)
        #expect(report.notSent.map(\.position) == Array(1...50))
    }

    /// A stream finished while its connection backs off (five minutes here) ends at once: there is
    /// nothing left to connect for (a stopping bridge used to wait the backoff out).
    @Test(.timeLimit(.minutes(1))) func finishingDuringABackoffDoesNotWaitItOut() async throws {
        let port = try Listener(host: "127.0.0.1", port: 0).endpoint.port
        var configuration = Self.configuration(
            Endpoint(host: "127.0.0.1", port: port), credentials: .certificate(TestGateway.clientIdentity))
        configuration.delivery.reconnect = ReconnectPolicy(
            initialDelay: .seconds(300), multiplier: 1, maximumDelay: .seconds(300), maximumConsecutiveFailures: 5)
        let stream = try ProviderClient(configuration: configuration).openStream()
        try await Task.sleep(for: .milliseconds(200))  // the first attempt fails; the backoff begins
        let report = await stream.finish()
        #expect(report.sent == 0)
        #expect(report.failure == nil)
    }

    @Test func nothingListeningGivesUpAndEverythingIsNotSent() async throws {
        let port = try Listener(host: "127.0.0.1", port: 0).endpoint.port
        let client = try ProviderClient(
            configuration: Self.configuration(
                Endpoint(host: "127.0.0.1", port: port), credentials: .certificate(TestGateway.clientIdentity)))
        let report = await client.send((1...50).map { Self.request($0) })
        #expect(report.failure?.code == .connectionFailed)
        #expect(report.sent == 50)
        #expect(report.notSent.count == 50)
        #expect(report.accepted + report.rejected.count + report.unconfirmed.count == 50)
    }

    @Test func anUntrustedServerStopsAtOnce() async throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        var configuration = Self.configuration(server.endpoint, credentials: .certificate(TestGateway.clientIdentity))
        configuration.trust = try .pem(Fixtures.bytes(Fixtures.certs("untrusted-ca.pem")))
        let client = try ProviderClient(configuration: configuration)
        let report = await client.send([Self.request(1)])
        #expect(report.failure?.code == .serverUntrusted)
        #expect(report.connections == 0)
        #expect(report.notSent.count == 1)
    }
}
