internal import APNsRuntime
import CommandLineKit
import FeedbackClient
import GatewaySimulator
import LegacyAPNs
import Synchronization

/// `legacy-push demo`: the whole story on a fresh checkout, with no Apple account.
enum DemoCommand {
    static let countOption = Option<Int>.integer(
        "count", help: "How many notifications to send (one of them is rejected).", range: 2...100_000, default: 6)

    static var spec: CommandSpec {
        CommandSpec(
            name: "demo",
            abstract:
                "Watch a send against a local gateway (a rejection, the resend, feedback), then through the bridge to HTTP/2.",
            discussion: """
                Starts the gateway simulator in this process with the test certificates, sends a handful of \
                notifications with a Keychain-style .p12 (one of them to a token the gateway rejects), \
                narrates what happens on the wire, then polls the feedback service. Then the migration: the same \
                sender, unchanged, through the bridge to a local HTTP/2 APNs (a rejection becomes the binary error \
                response, the resend is acknowledged without a second delivery, a 410 comes back as feedback). \
                Needs no arguments, no network and no Apple account.

                The test certificates come from $LEGACY_PUSH_FIXTURES, else Fixtures/certs next to the \
                binary or in the current checkout; when there is none (a binary copied elsewhere), a \
                throwaway CA, gateway and provider certificate are generated into a temporary folder and \
                removed afterwards.
                """,
            options: [countOption.spec],
            run: { arguments, console in try await run(arguments, console: console) },
            examples: ["legacy-push demo", "swift run legacy-push demo"],
            environment: [(BundledCertificates.environmentVariable, BundledCertificates.environmentHelp)])
    }

    static let badToken = try! DeviceToken(hexString: String(repeating: "0", count: 62) + "bd")

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        let count = try arguments.required(countOption)
        let location = try BundledCertificates.locate(for: "demo")
        defer { if location.source == .generated { BundledCertificates.removeGenerated() } }
        let directory = location.path
        func say(_ line: String = "") { console.print(line) }

        say("LegacyAPNs demo: Apple's binary push protocol, end to end on 127.0.0.1.")
        if location.source == .generated {
            say("(No Fixtures/certs found: using a throwaway test CA and certificates generated in \(directory).)")
        }
        say()

        // 1. The gateway.
        let serverIdentity = try ClientIdentity(
            pem: Files.read(directory + "/server.pem"), keyPEM: Files.read(directory + "/server.key"), passphrase: nil)
        let ca = Certificate.certificates(pemRepresentation: try Files.read(directory + "/ca.pem"))
        let clientTrust = Certificate.certificates(pemRepresentation: try Files.read(directory + "/chain.pem"))
        var simulatorConfiguration = GatewaySimulator.Configuration(identity: serverIdentity, clientTrust: clientTrust)
        simulatorConfiguration.port = 0
        simulatorConfiguration.feedbackPort = 0
        simulatorConfiguration.faults.failingTokens[badToken] = .invalidToken
        simulatorConfiguration.feedback = [
            FeedbackRecord(timestamp: 1_769_860_800, token: badToken),
            FeedbackRecord(
                timestamp: 1_769_947_200, token: try DeviceToken(hexString: String(repeating: "5a", count: 32))),
        ]
        let recorder = MemoryRecorder()
        simulatorConfiguration.recorder = recorder
        let inbox = PushInbox()
        simulatorConfiguration.showInInbox(inbox)
        let inboxServer = InboxServer(inbox: inbox, port: 0)
        let inboxEndpoint = try await inboxServer.start()
        let simulator = try GatewaySimulator(configuration: simulatorConfiguration)
        let status: ExitStatus
        do {
            status = try await run(simulator)
        } catch {
            await inboxServer.stop()
            throw error
        }
        await inboxServer.stop()
        return status

        func run(_ simulator: GatewaySimulator) async throws -> ExitStatus {
            try await simulator.withRunning { endpoints -> ExitStatus in
                say(
                    "1. Gateway simulator listening on \(endpoints.gateway), feedback service on \(endpoints.feedback!)."
                )
                say("   What it receives is on its inbox page at http://\(inboxEndpoint)/ while the demo runs.")
                say("   Like Apple's gateway it requires a client certificate from its CA, answers a bad frame with a")
                say("   6-byte error response (command 8, status, identifier), and then closes the connection.")
                say()

                // 2. The provider certificate, Keychain style.
                let p12 = directory + "/universal-legacy.p12"
                let identity = try ClientIdentity(pkcs12: Files.read(p12), passphrase: BundledCertificates.passphrase)
                let summary = CertificateSummary(
                    certificate: identity.certificate, privateKey: identity.privateKey, now: Host.unixTime())
                say("2. Provider certificate \(p12)")
                say("   (RC2-40 + 3DES encrypted, like a Keychain export; opened via OpenSSL's legacy provider)")
                say(
                    "   topic \(summary.topic ?? "?"), environment \(summary.environment.rawValue), \(summary.daysLeft) days left"
                )
                say()

                // 3. The send.
                let badPosition = (count + 1) / 2
                say(
                    "3. Sending \(count) notifications over one TLS connection; #\(badPosition) goes to a token the gateway rejects."
                )
                say("   The gateway never says \"accepted\": only its answer to a later frame proves earlier ones went")
                say("   through, so the client ends with a deliberately invalid frame and waits for that answer.")
                var configuration = PushClient.Configuration(
                    gateway: .custom(host: endpoints.gateway.host, port: endpoints.gateway.port),
                    tls: TLSConfiguration(identity: identity, trust: .certificates(ca)))
                configuration.idleConfirmationDelay = .milliseconds(50)
                let narration = Mutex<[String]>([])
                let client = try PushClient(configuration: configuration) { event in
                    if let line = narrate(event) { narration.withLock { $0.append(line) } }
                }
                let notifications = (1...count).map { index in
                    PushNotification(
                        token: index == badPosition ? badToken : demoToken(index),
                        payload: try! PayloadBuilder(alert: .text("Hello #\(index)"), badge: index).build(),
                        identifier: UInt32(index))
                }
                let report = await client.send(notifications)
                for line in narration.withLock({ $0 }) { say("   " + line) }
                say(
                    "   Result: \(report.accepted) accepted, \(report.rejected.count) rejected, \(report.unconfirmed.count) unconfirmed, "
                        + "\(report.resent) resent, \(report.possibleDuplicates) possible duplicates, in \(SendOutput.format3(report.seconds)) s."
                )
                say("   The gateway recorded \(recorder.count) notifications, each once.")
                say()

                // 4. Feedback.
                say("4. Polling the feedback service (tokens of uninstalled apps; the list is cleared once read):")
                let reader = try FeedbackReader(
                    configuration: .init(
                        service: .custom(host: endpoints.feedback!.host, port: endpoints.feedback!.port),
                        tls: TLSConfiguration(identity: identity, trust: .certificates(ca))))
                let feedback = await reader.read()
                for record in feedback.records { say("   \(record.textLine)") }
                if let failure = feedback.failure { say("   feedback failed: \(failure.reason)") }
                say()

                // 5. The migration.
                let migration = try await migration(
                    count: count, directory: directory, identity: identity, serverIdentity: serverIdentity, ca: ca,
                    clientTrust: clientTrust, say: say)

                let expected =
                    report.failure == nil && report.accepted == count - 1 && report.rejected.count == 1
                    && feedback.failure == nil && feedback.records.count == 2
                    && migration.report.failure == nil && migration.report.accepted == count - 1
                    && migration.report.rejected.count == 1 && migration.delivered == count - 2
                    && migration.deliveredOnce
                    && migration.feedback.map(\.token) == [demoToken(count)]
                if expected {
                    say("Done: every notification has a verdict; nothing was lost or silently sent twice.")
                    say(
                        "Next: 'legacy-push serve' to test your own sender, 'legacy-push bridge --help' to keep it working,"
                    )
                    say("'legacy-push help send' to send for real (--http2 for Apple's HTTP/2 API).")
                    return .success
                }
                console.error("the demo did not go as expected (see above)")
                return .refused
            }
        }
    }

    static func demoToken(_ index: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0x74, count: 32)
        bytes[31] = UInt8(truncatingIfNeeded: index)
        bytes[30] = UInt8(truncatingIfNeeded: index >> 8)
        return try! DeviceToken(bytes: bytes)
    }

    static func narrate(_ event: PushEvent) -> String? {
        switch event {
        case .connected(_, let attempt):
            return attempt == 1
                ? "connected (TLS, client certificate accepted)" : "connected again (connection \(attempt))"
        case .rejected(_, let rejection):
            return "rejected  #\(rejection.identifier ?? 0) token \(rejection.token.hexString.prefix(16))...: "
                + "status \(rejection.status.rawValue) (\(rejection.status.reason))"
        case .resent(_, let count, .errorResponse(let response)):
            return "the gateway discarded everything after id \(response.identifier) and closed: resending \(count)"
        case .resent(_, let count, .shutdown(let identifier)):
            return "the gateway shut down after id \(identifier): resending \(count)"
        case .resent(_, let count, .silentClose):
            return "the connection closed without an answer: resending \(count) (they may arrive twice)"
        case .confirmed(_, let count):
            return "accepted  \(count) (proved by the gateway's answer to a later frame)"
        case .closed(_, let reason):
            return reason == "closed after the gateway's verdict" ? nil : "closed: \(reason)"
        case .unconfirmed(_, let unconfirmed):
            return "unconfirmed #\(unconfirmed.position)"
        case .unknownIdentifier(_, let response):
            return "the gateway named unknown identifier \(response.identifier)"
        case .reconnecting(_, let delay, let reason):
            return "reconnecting in \(delay) s: \(reason)"
        }
    }
}
