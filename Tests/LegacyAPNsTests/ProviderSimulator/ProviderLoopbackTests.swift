import APNsCore
import APNsCredentials
import APNsRuntime
import GatewaySimulator
import TestSupport
import Testing

/// The embedded simulator over real TLS with our own client session: ALPN h2 or none, TLS 1.2
/// and 1.3, certificate auth with its topics, refusals in the handshake.
@Suite struct ProviderLoopbackTests {
    static func context(identity: ClientIdentity? = nil, protocols: [String] = ["h2"]) throws -> TLSContext {
        try TLSContext.client(
            TLSConfiguration(identity: identity, trust: .certificates(TestGateway.ca)), applicationProtocols: protocols)
    }

    static func send(_ request: ProviderRequest, to endpoint: Endpoint, context: TLSContext) async throws
        -> ProviderResponse
    {
        try await OSThread.run(name: "h2-client") {
            Result {
                let tls = try TLSSession.connect(to: endpoint, context: context, timeout: 10)
                return try HTTP2LoopbackTests.send(request, over: tls)
            }
        }.get()
    }

    @Test func aClientOfferingNoALPNGetsHTTP2AndOneOfferingOnlyHTTP1IsRefused() async throws {
        try await withProviderSimulator { fixture in
            let request = ProviderPair.request(1)
            let none = try await Self.send(
                request, to: fixture.endpoint,
                context: Self.context(identity: TestGateway.clientIdentity, protocols: []))
            #expect(none.status == 200)
            await #expect(throws: LegacyAPNsError.self) {
                _ = try await Self.send(request, to: fixture.endpoint, context: Self.context(protocols: ["http/1.1"]))
            }
            let alpn = fixture.events.get().compactMap { event -> String? in
                if case .connected(_, _, _, let alpn, _) = event { return alpn }
                return nil
            }
            #expect(alpn == [""])
            #expect(
                try await ProviderHostileClientTests.eventually { fixture.simulator.statistics.handshakeFailures == 1 })
        }
    }

    @Test(arguments: [TLSConfiguration.Version.tls12, .tls13])
    func certificateAuthWorksOverTLS12And13(_ version: TLSConfiguration.Version) async throws {
        try await withProviderSimulator {
            $0.maximumTLSVersion = version
        } _: { fixture in
            let response = try await Self.send(
                ProviderPair.request(1), to: fixture.endpoint,
                context: Self.context(identity: TestGateway.clientIdentity))
            #expect(response.status == 200)
            let versions = fixture.events.get().compactMap { event -> String? in
                if case .connected(_, _, let tls, _, .certificate(_, let topics, .both)) = event {
                    #expect(topics == ProviderPair.universalTopics)
                    return tls
                }
                return nil
            }
            #expect(versions == [version == .tls12 ? "TLSv1.2" : "TLSv1.3"])
            #expect(fixture.recorder.accepted.map(\.request.deviceToken) == [ProviderPair.request(1).deviceToken])
        }
    }

    @Test func anUntrustedClientCertificateIsRefusedInTheHandshake() async throws {
        try await withProviderSimulator {
            $0.maximumTLSVersion = .tls12
        } _: { fixture in
            let untrusted = try ClientIdentity(
                pkcs12: Fixtures.bytes(Fixtures.certs("untrusted.p12")), passphrase: "secret")
            await #expect(throws: LegacyAPNsError.self) {
                _ = try await Self.send(
                    ProviderPair.request(1), to: fixture.endpoint, context: Self.context(identity: untrusted))
            }
            #expect(
                try await ProviderHostileClientTests.eventually { fixture.simulator.statistics.handshakeFailures == 1 })
        }
    }
}
