import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

@testable import LegacyAPNs

/// Gateways that refuse the TLS version, the certificate's environment or its topic: the send
/// stops at once (the version) or at the second connection (the refusal rule), with a message
/// that names the likely cause, instead of spending every retry on "connection reset by peer".
@Suite struct GatewayRefusalTests {
    static func identity(_ file: String) throws -> ClientIdentity {
        try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: "secret")
    }

    static let refusalCause =
        "it probably refuses this certificate's environment (production/sandbox) or its topic"

    @Test func aGatewayRefusingTheCertificatesEnvironmentStopsTheSendAtTheSecondConnection() async throws {
        try await withTestGateway(configure: { $0.environment = .production }) { gateway in
            let client = try PushClient(
                configuration: gateway.clientConfiguration(identity: try Self.identity("development.p12")))
            let report = await client.send((1...20).map { TestGateway.notification($0) })
            let failure = try #require(report.failure)
            #expect(failure.code == .certificateRejected)
            #expect(
                failure.reason.hasPrefix("the gateway ended every connection right after the TLS handshake (2 in a row")
            )
            #expect(failure.reason.contains(Self.refusalCause))
            #expect(report.accepted == 0)
            #expect(report.unconfirmed.count == 20)
            #expect(gateway.simulator.statistics.refusedCertificates == 2)  // the budget (4) was not spent
            #expect(
                gateway.events.get().contains { event in
                    guard case .certificateRefused(_, _, let reason) = event else { return false }
                    return reason == "the client certificate is for development and this gateway is production"
                })
        }
    }

    @Test func aGatewayRefusingTheCertificatesTopicStopsTheSendAtTheSecondConnection() async throws {
        try await withTestGateway(configure: { $0.topics = ["com.example.other"] }) { gateway in
            let client = try PushClient(configuration: gateway.clientConfiguration())
            let report = await client.send((1...5).map { TestGateway.notification($0) })
            #expect(report.failure?.code == .certificateRejected)
            #expect(report.failure?.reason.contains(Self.refusalCause) == true)
            #expect(gateway.simulator.statistics.refusedCertificates == 2)
            #expect(gateway.recorder.count == 0)
        }
    }

    @Test(arguments: [
        ("universal-modern.p12", CertificateEnvironment.production), ("universal-modern.p12", .development),
        ("production.p12", .production), ("development.p12", .development),
    ])
    func certificatesForTheGatewaysEnvironmentAndTopicAreServed(file: String, environment: CertificateEnvironment)
        async throws
    {
        try await withTestGateway(configure: {
            $0.environment = environment
            $0.topics = ["com.example.other", "com.example.legacy"]
        }) { gateway in
            let client = try PushClient(configuration: gateway.clientConfiguration(identity: try Self.identity(file)))
            let report = await client.send((1...5).map { TestGateway.notification($0) })
            #expect(report.isCompleteSuccess)
            #expect(gateway.simulator.statistics.refusedCertificates == 0)
        }
    }

    /// The gateway shares no TLS version with the client: one attempt, and a reason for people.
    @Test func aGatewayRefusingTheOfferedTLSVersionsStopsAtOnce() async throws {
        try await withTestGateway { gateway in  // TLS 1.2 only, as Apple's gateway
            var configuration = gateway.clientConfiguration()
            configuration.tls.minimumVersion = .tls13
            let client = try PushClient(configuration: configuration)
            let report = await client.send((1...5).map { TestGateway.notification($0) })
            let failure = try #require(report.failure)
            #expect(failure.code == .protocolRefused)
            #expect(failure.reason.hasPrefix("the gateway \(gateway.endpoints.gateway) refused TLS 1.3: "))
            #expect(report.connections == 0)
            #expect(gateway.simulator.statistics.handshakeFailures == 1)  // no retry
        }
    }

    @Test func aGatewayWithTLSMinimum13RefusesTLS12ClientsAndServesTLS13Ones() async throws {
        try await withTestGateway(configure: {
            $0.minimumTLSVersion = .tls13
            $0.maximumTLSVersion = .tls13
        }) { gateway in
            let certs = Fixtures.root + "/certs/"
            let refused = try OpenSSLTool.run([
                "s_client", "-connect", "\(gateway.endpoints.gateway)", "-tls1_2", "-CAfile", certs + "ca.pem",
                "-cert", certs + "universal.pem", "-key", certs + "universal.key",
            ])
            #expect(refused.status != 0)
            #expect(refused.error.contains("alert protocol version"))
            #expect(
                gateway.events.get().contains { event in
                    guard case .handshakeFailed(_, let reason) = event else { return false }
                    return reason.contains("speaks no TLS version this gateway accepts (TLS 1.3)")
                })
            let client = try PushClient(configuration: gateway.clientConfiguration())
            let report = await client.send((1...5).map { TestGateway.notification($0) })
            #expect(report.isCompleteSuccess)
            let versions = gateway.events.get().compactMap { event -> String? in
                if case .connected(_, _, _, let version) = event { return version }
                return nil
            }
            #expect(versions == ["TLSv1.3"])
        }
    }
}

/// The same refusals through the command line: `serve` with the new flags, `send` against it.
@Suite struct ServeRefusalCommandTests {
    @Test func sendAgainstServeForTheOtherEnvironmentExits3NamingTheCause() throws {
        let server = try ChildProcess(["serve", "--port", "0", "--no-feedback", "--environment", "production"])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") })
        let certs = SendCommandTests.certs
        let send = try CLIRunner.runBinary([
            "send", "--gateway", String(listening.dropFirst("listening on ".count)), "--ca-file", certs + "ca.pem",
            "--cert", certs + "development.p12", "--passphrase-file", certs + "passphrase.txt", "--token",
            TestGateway.notification(1).token.hexString, "--alert", "hello",
        ])
        #expect(send.status == 3)
        #expect(send.stderr.contains(GatewayRefusalTests.refusalCause))
        #expect(server.interruptAndWait() == 0)
        #expect(
            server.stderr.contains(
                "closed right after the handshake: the client certificate is for development and this gateway is production"
            ))
    }

    @Test(arguments: [
        (["serve", "--tls-min", "1.3", "--tls-max", "1.2"], "--tls-min 1.3 needs --tls-max 1.3 (or no --tls-max)"),
        (["serve", "--environment", "sandbox"], "--environment must be one of production, development, got 'sandbox'"),
    ])
    func badRefusalOptionsAreExit2(_ arguments: [String], _ message: String) async {
        let result = await CLIRunner.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.hasSuffix("legacy-push: error: \(message)\n"))
    }
}
