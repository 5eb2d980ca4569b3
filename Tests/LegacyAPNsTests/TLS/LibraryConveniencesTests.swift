import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// Issue #14: the library as a new package uses it: `Data`, file URLs, endpoints, printable reports.
@Suite struct LibraryConveniencesTests {
    let certs = URL(filePath: Fixtures.root + "/certs", directoryHint: .isDirectory)

    /// The library's simulator picks free ports by default, so two tests (or two worktrees)
    /// never collide; only the CLI asks for Apple's 2195/2196.
    @Test func simulatorsWithDefaultConfigurationsRunSideBySide() async throws {
        let configuration = GatewaySimulator.Configuration(
            identity: TestGateway.serverIdentity, clientTrust: TestGateway.ca)
        let first = try GatewaySimulator(configuration: configuration)
        let second = try GatewaySimulator(configuration: configuration)
        try await first.withRunning { one in
            try await second.withRunning { two in
                #expect(one.gateway.port != two.gateway.port)
                #expect(one.feedback != nil && two.feedback != nil && one.feedback != two.feedback)
                #expect(one.gateway.port != 2195 && two.gateway.port != 2195)
            }
        }
    }

    @Test func credentialsTakeDataAsTheyTakeByteArrays() throws {
        let p12 = try Data(contentsOf: certs.appending(path: "universal-legacy.p12"))
        let fromData = try ClientIdentity(pkcs12: p12, passphrase: "secret")
        let fromArray = try ClientIdentity(pkcs12: Array(p12), passphrase: "secret")
        #expect(fromData.certificate == fromArray.certificate)

        let pem = try Data(contentsOf: certs.appending(path: "universal.pem"))
        let key = try Data(contentsOf: certs.appending(path: "universal.key"))
        #expect(try ClientIdentity(pem: pem, keyPEM: key, passphrase: nil).certificate == fromData.certificate)
        #expect(try Certificate(pemRepresentation: pem) == fromData.certificate)
        #expect(Certificate.certificates(pemRepresentation: pem).count == 1)
        #expect(try PrivateKey(pemRepresentation: key).matches(fromData.certificate))
        #expect(try Credentials(p12, passphrase: "secret").certificate == fromData.certificate)
        let ca = try Data(contentsOf: certs.appending(path: "ca.pem"))
        guard case .certificates(let trusted) = try TLSConfiguration.Trust.pem(ca) else {
            Issue.record("expected certificates")
            return
        }
        #expect(trusted.count == 1)
        let der = try Data(contentsOf: certs.appending(path: "universal.cer"))
        #expect(try Certificate(derRepresentation: der) == fromData.certificate)
    }

    @Test func filesLoadCredentialsAndNameTheFileInErrors() throws {
        let identity = try ClientIdentity(
            pkcs12File: certs.appending(path: "universal-legacy.p12").path, passphrase: "secret")
        #expect(identity.certificate.topic == "com.example.legacy")
        let fromPEM = try ClientIdentity(
            pemFile: certs.appending(path: "universal.pem").path,
            keyFile: certs.appending(path: "universal.key").path,
            passphrase: nil)
        #expect(fromPEM.certificate == identity.certificate)
        guard
            case .certificates(let trusted) = try TLSConfiguration.Trust.pem(file: certs.appending(path: "ca.pem").path)
        else {
            Issue.record("expected certificates")
            return
        }
        #expect(trusted.count == 1)
        #expect(try Certificate.certificates(pemFile: certs.appending(path: "chain.pem").path).count == 2)

        let missing = certs.appending(path: "nonexistent.p12").path
        #expect(
            throws: LegacyAPNsError(.fileError, "cannot read '\(missing)': No such file or directory")
        ) { try ClientIdentity(pkcs12File: missing, passphrase: nil) }
        let p12 = certs.appending(path: "universal-legacy.p12").path
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "\(p12): wrong passphrase for the PKCS#12 file")) {
            try ClientIdentity(pkcs12File: p12, passphrase: "nope")
        }
    }

    @Test func simulatorEndpointsAreWhatTheClientsTake() async throws {
        let endpoint = Endpoint(host: "127.0.0.1", port: 2295)
        #expect(Gateway(endpoint) == .custom(host: "127.0.0.1", port: 2295))
        #expect(Gateway.custom(endpoint) == Gateway(endpoint))
        #expect(Gateway(endpoint).endpoint == endpoint)
        #expect(FeedbackService(endpoint) == .custom(host: "127.0.0.1", port: 2295))
        #expect(FeedbackService.custom(endpoint).endpoint == endpoint)

        try await withTestGateway(feedback: FeedbackSamples.records(2)) { gateway in
            var configuration = PushClient.Configuration(
                gateway: Gateway(gateway.endpoints.gateway),
                tls: TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
            configuration.idleConfirmationDelay = .milliseconds(50)
            let client = try PushClient(configuration: configuration)
            let token = try DeviceToken(hexString: String(repeating: "ab", count: 32))
            let report = await client.send([
                PushNotification(token: token, payload: try PayloadBuilder(alert: "Message \(1)").build())
            ])
            #expect(
                report.description.hasPrefix("1 sent: 1 accepted, 0 rejected, 0 unconfirmed, 0 resent, 1 connection, "))

            let reader = try FeedbackSamples.reader(FeedbackService(gateway.endpoints.feedback!))
            let result = await reader.read()
            #expect(result.records.count == 2)
            #expect(result.description.hasPrefix("2 tuples, complete, "))
        }
    }

    @Test func aFailedFeedbackResultSaysWhy() {
        let result = FeedbackResult(
            records: FeedbackSamples.records(1), failure: LegacyAPNsError(.timedOut, "too slow"), seconds: 2)
        #expect(result.description == "1 tuple, then failed after 2 s: too slow")
    }
}
