internal import APNsRuntime
import CommandLineKit
import FeedbackClient
import GatewaySimulator
import HTTP2Client
import LegacyAPNs
import LegacyBridge
import Synchronization

extension DemoCommand {
    /// What the migration step saw, for the demo's verdict.
    struct MigrationOutcome {
        var report: SendReport
        var delivered: Int
        var deliveredOnce: Bool
        var feedback: [FeedbackRecord]
    }

    /// Step 5: the same legacy sender, unchanged, through `legacy-push bridge` to a local HTTP/2
    /// APNs (the `.p8` signing key when the fixtures have one, else the same `.p12`): a rejection
    /// becomes the binary error response, the resend is acknowledged without a second delivery,
    /// and a 410 comes back as feedback.
    static func migration(
        count: Int, directory: String, identity: ClientIdentity, serverIdentity: ClientIdentity, ca: [Certificate],
        clientTrust: [Certificate], say: (String) -> Void
    ) async throws -> MigrationOutcome {
        let badPosition = (count + 1) / 2
        let gonePosition = count
        let uninstalled = demoToken(gonePosition)
        var upstreamConfiguration = ProviderSimulator.Configuration(identity: serverIdentity, clientTrust: clientTrust)
        upstreamConfiguration.faults.failingTokens[badToken] = .badDeviceToken
        upstreamConfiguration.faults.unregisteredTokens[uninstalled] = .milliseconds(1_769_990_400_000)
        upstreamConfiguration.recordingInterval = .zero
        let recorder = MemoryProviderRecorder()
        upstreamConfiguration.recorder = recorder
        let keyPath = directory + "/AuthKey_ABC123DEFG.p8"
        let credentials: ProviderCredentials
        let credentialText: String
        if FileSystem.isReadable(keyPath) {
            let key = try SigningKey(pemRepresentation: Files.read(keyPath))
            upstreamConfiguration.authKeys = [
                .init(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", publicKey: key.publicKey)
            ]
            credentials = .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
            credentialText = "a provider token signed with the .p8 key AuthKey_ABC123DEFG.p8"
        } else {
            credentials = .certificate(identity)
            credentialText = "the same .p12 as its client certificate"
        }
        let upstream = try ProviderSimulator(configuration: upstreamConfiguration)
        return try await upstream.withRunning { upstreamEndpoint in
            let folder = try Files.makeTemporaryFolder(prefix: "legacy-push-demo-", for: "the bridge's store")
            defer {
                for suffix in ["", "-wal", "-shm", "-journal"] { FileSystem.remove(folder + "/bridge.sqlite" + suffix) }
                FileSystem.removeDirectory(folder)
            }
            var upstreamClient = ProviderClient.Configuration(
                server: .custom(upstreamEndpoint), credentials: credentials)
            upstreamClient.trust = .certificates(ca)
            var configuration = Bridge.Configuration(
                identity: serverIdentity, senderCAs: clientTrust, upstream: upstreamClient,
                storePath: folder + "/bridge.sqlite")
            configuration.port = 0
            configuration.feedbackPort = 0
            let bridge = try Bridge(configuration: configuration)
            return try await bridge.withRunning { endpoints in
                say("5. The road on: Apple switched the binary gateway off on 2021-03-31. The bridge keeps this")
                say("   sender working unchanged: binary on \(endpoints.gateway) (feedback on \(endpoints.feedback!)),")
                say("   HTTP/2 to a local APNs on \(upstreamEndpoint),")
                say("   with \(credentialText).")
                say(
                    "   Sending the \(count) notifications again, to the bridge: HTTP/2 rejects #\(badPosition) (BadDeviceToken),"
                )
                say("   and #\(gonePosition)'s app was uninstalled (410).")
                var client = PushClient.Configuration(
                    gateway: .custom(host: endpoints.gateway.host, port: endpoints.gateway.port),
                    tls: TLSConfiguration(identity: identity, trust: .certificates(ca)))
                client.idleConfirmationDelay = .milliseconds(50)
                let narration = Mutex<[String]>([])
                let sender = try PushClient(configuration: client) { event in
                    if let line = narrate(event) { narration.withLock { $0.append(line) } }
                }
                let notifications = (1...count).map { index in
                    PushNotification(
                        token: index == badPosition ? badToken : demoToken(index),
                        payload: try! PayloadBuilder(alert: .text("Hello again #\(index)"), badge: index).build(),
                        identifier: UInt32(index))
                }
                let report = await sender.send(notifications)
                for line in narration.withLock({ $0 }) { say("   " + line) }
                let statistics = bridge.statistics
                say(
                    "   The bridge turned HTTP/2's 400 BadDeviceToken into status 8 for #\(badPosition). Of the \(report.resent) resent,"
                )
                say(
                    "   \(statistics.acknowledgedResends) had already been delivered: the bridge acknowledged them without a second delivery."
                )
                var counts: [DeviceToken: Int] = [:]
                for accepted in recorder.accepted { counts[accepted.request.deviceToken, default: 0] += 1 }
                say(
                    "   Result: \(report.accepted) accepted, \(report.rejected.count) rejected, \(report.unconfirmed.count) unconfirmed. "
                        + "HTTP/2 APNs received \(recorder.count), each once;")
                say(
                    "   #\(gonePosition) got 410, which is not an error for a legacy sender: it went to the bridge's store."
                )
                say("   Polling the bridge's feedback port, as the old feedback job does:")
                let reader = try FeedbackReader(
                    configuration: .init(
                        service: .custom(host: endpoints.feedback!.host, port: endpoints.feedback!.port),
                        tls: TLSConfiguration(identity: identity, trust: .certificates(ca))))
                let feedback = await reader.read()
                for record in feedback.records { say("   \(record.textLine)   (410 Unregistered, timestamp / 1000)") }
                if let failure = feedback.failure { say("   feedback failed: \(failure.reason)") }
                say("")
                return MigrationOutcome(
                    report: report, delivered: recorder.count, deliveredOnce: counts.values.allSatisfy { $0 == 1 },
                    feedback: feedback.records)
            }
        }
    }
}
