import APNsInput
internal import APNsRuntime
import CommandLineKit
import FeedbackClient
import GatewaySimulator
import LegacyAPNs

/// `legacy-push serve`: the gateway simulator, for testing any legacy sender.
enum ServeCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "serve",
            abstract: "Run a local gateway simulator (binary protocol and feedback service; --http2: the HTTP/2 API).",
            discussion: """
                A faithful stand-in for Apple's retired gateway: TLS with required client certificates, strict \
                decoding, error responses with Apple's status codes followed by a gentle close (so clients really \
                receive them), and fault injection. Without --cert/--key/--ca-file it uses the test certificates \
                in a LegacyAPNs checkout's Fixtures/certs (clients then need --ca-file Fixtures/certs/ca.pem and a \
                client certificate such as Fixtures/certs/universal-modern.p12, passphrase "secret").

                Prints "listening on HOST:PORT" (and "feedback on HOST:PORT") once ready; stops cleanly on \
                Ctrl-C or SIGTERM. Connections and rejections are logged on stderr (a sender's confirmation \
                barrier, an enhanced frame with neither token nor payload, gets status 2 as from Apple and is \
                logged and counted as a barrier, not as a rejection). With --record, accepted \
                notifications reach the file within 100 ms, and before the client learns of a verdict.

                Nobody can hold the simulator: a client has --handshake-timeout seconds for the TLS handshake, \
                a frame must be complete --frame-timeout seconds after its first byte (so trickling bytes does \
                not keep a connection), and at --max-connections the connection idle longest (no complete \
                frame for 5 s) is closed to make room for a new client; a new client is refused only when \
                every connection is an active sender.
                """,
            options: Options.all,
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                "legacy-push serve",
                "legacy-push serve --port 0 --record accepted.jsonl --fail-token "
                    + "00000000000000000000000000000000000000000000000000000000000000bd:8 --shutdown-after 500",
                "legacy-push serve --cert gateway.pem --key gateway.key --ca-file clients-ca.pem --host 0.0.0.0",
            ],
            environment: [(BundledCertificates.environmentVariable, BundledCertificates.environmentHelp)],
            variants: [ServeHTTP2Command.variant])
    }

    /// Every option, declared once (parsing, checking and help).
    enum Options {
        static let certificate = CredentialOptions.certificate.help(
            "The simulator's server certificate (PEM, or a .p12 holding the key too).")
        static let key = CredentialOptions.key.help("The server's PEM private key, when it is not inside --cert.")
        static let caFile = Option<String>.text(
            "ca-file", "path", help: "Client certificates must chain to a CA in this PEM file.")
        static let host = Option<String>("host", "address", help: "Address to bind.", default: "127.0.0.1") { $0 }
        static let port = Option<UInt16>.integer(
            "port", help: "Gateway port (0: any free port).", range: 0...UInt16.max, default: 2195)
        static let feedbackPort = Option<UInt16>.integer(
            "feedback-port", help: "Feedback service port (0: any free port).", range: 0...UInt16.max, default: 2196)
        static let noFeedback = Flag("no-feedback", help: "Do not run the feedback service.")
        static let feedbackFile = Option<String>.text(
            "feedback-file", "path",
            help: #"Tuples served once on the feedback port: JSON Lines {"time":N,"token":"<hex>"}, or raw tuples "#
                + "as 'feedback --save' writes them (told apart by content).")
        static let record = Option<String>.text(
            "record", "path", help: "Append every accepted notification to this file as a JSON line, while serving.")
        static let failToken = RepeatedOption<(DeviceToken, StatusCode)>(
            "fail-token", "hex[:status]", help: "Reject notifications to this token (status 8 unless given)."
        ) { text in
            let (hex, status) = try splitStatus(text, option: "--fail-token")
            return (try token(hex), status)
        }
        static let failEvery = Option<(count: Int, status: StatusCode)>(
            "fail-every", "n[:status]", help: "Reject every n-th notification received (status 8 unless given)."
        ) { text in
            let (count, status) = try splitStatus(text, option: "--fail-every")
            return (
                try ParsedArguments.parseInteger(count, option: "--fail-every", as: Int.self, in: 1...Int.max), status
            )
        }
        static let closeAfter = Option<Int>.integer(
            "close-after", help: "Close silently after n notifications on a connection.", range: 1...Int.max)
        static let shutdownAfter = Option<Int>.integer(
            "shutdown-after", help: "Answer status 10 (shutdown) after n notifications on a connection.",
            range: 1...Int.max)
        static let errorDelay = Option<Duration>.seconds(
            "error-delay", help: "Keep reading for this long before sending an error response.", allowsZero: true)
        static let splitErrors = Flag("split-errors", help: "Send error responses one byte per TLS record.")
        static let maximumConnections = Option<Int>.integer(
            "max-connections", help: "Connections held at once (idle ones make room).", range: 1...10_000,
            default: 1024)
        static let idleTimeout = Option<Duration>.seconds(
            "idle-timeout", help: "Close connections that send nothing for this long.", default: .seconds(300))
        static let handshakeTimeout = Option<Duration>.seconds(
            "handshake-timeout", help: "Time a client may take for the TLS handshake.", default: .seconds(10))
        static let frameTimeout = Option<Duration>.seconds(
            "frame-timeout", help: "Close a connection whose frame is incomplete this long.", default: .seconds(10))
        static let newestTLS = Option<TLSConfiguration.Version>.choice(
            "tls-max", help: "Newest TLS version offered (Apple's gateway spoke 1.2; default: 1.2, or --tls-min).",
            ["1.2": .tls12, "1.3": .tls13])
        static let oldestTLS = Option<TLSConfiguration.Version>.choice(
            "tls-min", help: "Oldest TLS version accepted (1.3 refuses TLS 1.2 clients, and offers 1.3).",
            ["1.2": .tls12, "1.3": .tls13], default: .tls12)
        static let environment = Option<CertificateEnvironment>.choice(
            "environment", help: "Close right after the handshake with certificates of the other environment.",
            ["production": .production, "development": .development])
        static let topic = RepeatedOption<String>(
            "topic", "bundle-id", help: "Close right after the handshake with certificates lacking every such topic."
        ) { $0 }
        static let quiet = Flag("quiet", help: "Do not log connections and rejections.")
        static let http2 = Flag(
            "http2", help: "Simulate Apple's HTTP/2 provider API instead (see 'legacy-push serve --http2 --help').")

        static var all: [OptionSpec] {
            [
                certificate.spec, key.spec, caFile.spec, CredentialOptions.passphraseEnvironment.spec,
                CredentialOptions.passphraseFile.spec, host.spec, port.spec, feedbackPort.spec, noFeedback.spec,
                feedbackFile.spec, record.spec, failToken.spec, failEvery.spec, closeAfter.spec, shutdownAfter.spec,
                CommonOptions.maximumPayload.spec, errorDelay.spec, splitErrors.spec, maximumConnections.spec,
                idleTimeout.spec, handshakeTimeout.spec, frameTimeout.spec, newestTLS.spec, oldestTLS.spec,
                environment.spec, topic.spec, MetricsOptions.address.spec, InboxOptions.address.spec,
                InboxOptions.size.spec, quiet.spec, http2.spec,
            ]
        }

        /// A binary gateway token: 32 bytes (the only length commands 0 and 1 carry, and the only
        /// one Apple's gateway accepted), so a fault that can never match is refused.
        static func token(_ hex: String) throws -> DeviceToken {
            let token: DeviceToken
            do {
                token = try DeviceToken(hexString: hex)
            } catch let error as LegacyAPNsError {
                throw CLIError.usage("--fail-token: \(error.reason)")
            }
            guard token.count == 32 else {
                throw CLIError.usage(
                    "--fail-token: expected 64 hex digits (32 bytes, a device token), got \(token.count * 2): "
                        + "it could never match")
            }
            return token
        }
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        // Every option is checked before anything is loaded or printed.
        let port = try arguments.required(Options.port)
        let feedbackPort = arguments.isSet(Options.noFeedback) ? nil : try arguments.required(Options.feedbackPort)
        let maximumPayload = try arguments.required(CommonOptions.maximumPayload)
        let maximumConnections = try arguments.required(Options.maximumConnections)
        let idleTimeout = try arguments.required(Options.idleTimeout)
        let handshakeTimeout = try arguments.required(Options.handshakeTimeout)
        let frameTimeout = try arguments.required(Options.frameTimeout)
        let oldestTLS = try arguments.required(Options.oldestTLS)
        // --tls-min 1.3 alone offers 1.3; with an explicit --tls-max 1.2 it makes no sense.
        let newestTLS = try arguments.value(Options.newestTLS) ?? oldestTLS
        if oldestTLS == .tls13, newestTLS == .tls12 {
            throw CLIError.usage("--tls-min 1.3 needs --tls-max 1.3 (or no --tls-max)")
        }
        let environment = try arguments.value(Options.environment)
        let topics = try arguments.values(Options.topic)
        let host = try arguments.required(Options.host)
        let faults = try faults(arguments)
        var feedback: [FeedbackRecord] = []
        if let path = try arguments.value(Options.feedbackFile) {
            if arguments.isSet(Options.noFeedback) {
                throw CLIError.usage("--feedback-file needs the feedback service (drop --no-feedback)")
            }
            feedback = try FeedbackFile.records(path)
        }
        let recordPath = try arguments.value(Options.record)
        let metered = try MetricsOptions.metrics(arguments)
        let inboxed = try InboxOptions.inbox(arguments)
        let (identity, trust) = try credentials(arguments, console: console)
        var configuration = GatewaySimulator.Configuration(identity: identity, clientTrust: trust)
        configuration.host = host
        configuration.port = port
        configuration.feedbackPort = feedbackPort
        configuration.maximumPayloadSize = maximumPayload
        configuration.maximumConnections = maximumConnections
        configuration.idleTimeout = idleTimeout
        configuration.handshakeTimeout = handshakeTimeout
        configuration.frameTimeout = frameTimeout
        configuration.minimumTLSVersion = oldestTLS
        configuration.maximumTLSVersion = newestTLS
        configuration.environment = environment
        configuration.topics = topics
        configuration.faults = faults
        configuration.feedback = feedback
        let recordDescriptor = try recordPath.map(Files.openForAppending) ?? -1
        defer { if recordDescriptor >= 0 { FileDescriptor.close(recordDescriptor) } }
        if recordDescriptor >= 0 { configuration.recorder = JSONLinesRecorder(fileDescriptor: recordDescriptor) }
        if !arguments.isSet(Options.quiet) {
            configuration.events = { event in
                if let line = describe(event) { console.diagnostic(line) }
            }
        }

        if let metrics = metered?.metrics { configuration.reportMetrics(to: metrics) }
        if let inbox = inboxed?.inbox { configuration.showInInbox(inbox) }

        FileDescriptor.raiseLimit(to: maximumConnections + 256)
        let simulator = try GatewaySimulator(configuration: configuration)
        let metricsServer = metered.map { metrics, endpoint in
            metrics.observe(simulator)
            return MetricsOptions.server(metrics, at: endpoint)
        }
        try await InterruptWatch.serve(
            console: console, metrics: metricsServer, inbox: inboxed?.server, start: { try await simulator.start() },
            announce: { endpoints in
                console.print("listening on \(endpoints.gateway)")
                if let feedback = endpoints.feedback { console.print("feedback on \(feedback)") }
            },
            stop: { await simulator.stop() })
        let statistics = simulator.statistics
        var stopped =
            "stopped: \(counted(statistics.connections, "connection")), \(statistics.accepted) accepted, "
            + "\(statistics.rejected) rejected, \(counted(statistics.shutdowns, "shutdown")), "
            + counted(statistics.silentCloses, "silent close")
        if statistics.confirmationBarriers > 0 {
            stopped += ", \(counted(statistics.confirmationBarriers, "confirmation barrier")) answered"
        }
        console.diagnostic(stopped)
        return .success
    }

    /// Server identity and client trust: from the options, or the bundled test certificates.
    static func credentials(_ arguments: ParsedArguments, console: Console) throws -> (ClientIdentity, [Certificate]) {
        let caPath = try arguments.value(Options.caFile)
        if !arguments.has(Options.certificate), !arguments.has(Options.key), caPath == nil {
            let directory = try BundledCertificates.require(for: "serve")
            console.diagnostic("using the test certificates in \(directory) (clients: --ca-file \(directory)/ca.pem)")
            let identity = try ClientIdentity(
                pem: Files.read(directory + "/server.pem"), keyPEM: Files.read(directory + "/server.key"),
                passphrase: nil)
            // The test root and its WWDR-like intermediate, as Apple's gateway knew its own WWDR CA:
            // clients that present only their leaf certificate are accepted too.
            return (identity, Certificate.certificates(pemRepresentation: try Files.read(directory + "/chain.pem")))
        }
        guard arguments.has(Options.certificate), let caPath else {
            throw CLIError.usage(
                "give --cert (with --key unless it holds the key) and --ca-file together, or none of them")
        }
        let identity = try CredentialOptions.loadIdentity(arguments, console: console)
        let trust = Certificate.certificates(pemRepresentation: try Files.read(caPath))
        guard !trust.isEmpty else { throw CLIError.usage("'\(caPath)' holds no PEM certificate") }
        return (identity, trust)
    }

    static func faults(_ arguments: ParsedArguments) throws -> SimulatorFaults {
        var faults = SimulatorFaults()
        for (token, status) in try arguments.values(Options.failToken) { faults.failingTokens[token] = status }
        faults.failEvery = try arguments.value(Options.failEvery)
        faults.closeAfter = try arguments.value(Options.closeAfter)
        faults.shutdownAfter = try arguments.value(Options.shutdownAfter)
        faults.errorResponseDelay = try arguments.value(Options.errorDelay) ?? .zero
        faults.splitErrorResponses = arguments.isSet(Options.splitErrors)
        return faults
    }

    /// "VALUE[:STATUS]" with the status defaulting to 8.
    static func splitStatus(_ text: String, option: String) throws -> (String, StatusCode) {
        guard let colon = text.lastIndex(of: ":") else { return (text, .invalidToken) }
        let status = try ParsedArguments.parseInteger(
            String(text[text.index(after: colon)...]), option: "\(option) status", as: UInt8.self, in: nil)
        return (String(text[..<colon]), StatusCode(rawValue: status))
    }

    static func describe(_ event: SimulatorEvent) -> String? {
        switch event {
        case .connected(let connection, let client, let subject, let version):
            "connection \(connection) from \(client): \(version), \(subject)"
        case .handshakeFailed(let client, let reason):
            "refused \(client): \(reason)"
        case .rejected(let connection, let response, let token, let reason):
            "connection \(connection): rejected id \(response.identifier)\(token.map { " token \($0.hexString)" } ?? ""): status \(response.status): \(reason)"
        case .shutdown(let connection, let identifier):
            "connection \(connection): shutdown after id \(identifier) (status 10)"
        case .confirmationAnswered(let connection, let identifier, let accepted):
            "connection \(connection): confirmation barrier id \(identifier) answered (status 2, as Apple's gateway did) "
                + "after \(counted(accepted, "notification")), all accepted"
        case .closedSilently(let connection, let accepted):
            "connection \(connection): closed silently after \(counted(accepted, "notification"))"
        case .disconnected(let connection, let accepted):
            "connection \(connection): closed by the client after \(counted(accepted, "notification"))"
        case .idleTimeout(let connection, let accepted):
            "connection \(connection): closed after sending nothing for the idle timeout (\(counted(accepted, "notification")))"
        case .progressTimeout(let connection, let accepted):
            "connection \(connection): closed: a frame stayed incomplete for the frame timeout (\(counted(accepted, "notification")))"
        case .evicted(let connection, let accepted):
            "connection \(connection): closed to make room for a new client (idle; \(counted(accepted, "notification")))"
        case .certificateRefused(let connection, let client, let reason):
            "connection \(connection) from \(client): closed right after the handshake: \(reason)"
        case .feedbackServed(let client, let count):
            "feedback: \(counted(count, "tuple")) to \(client)"
        case .refused(let client):
            "refused \(client): too many connections, all of them active"
        }
    }
}
