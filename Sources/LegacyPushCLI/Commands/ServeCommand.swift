internal import APNsRuntime
import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs

/// `legacy-push serve`: the gateway simulator, for testing any legacy sender.
enum ServeCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "serve",
            abstract: "Run a local gateway simulator (binary protocol and feedback service).",
            discussion: """
                A faithful stand-in for Apple's retired gateway: TLS with required client certificates, strict \
                decoding, error responses with Apple's status codes followed by a gentle close (so clients really \
                receive them), and fault injection. Without --cert/--key/--ca-file it uses the test certificates \
                in a LegacyAPNs checkout's Fixtures/certs (clients then need --ca-file Fixtures/certs/ca.pem and a \
                client certificate such as Fixtures/certs/universal-modern.p12, passphrase "secret").

                Prints "listening on HOST:PORT" (and "feedback on HOST:PORT") once ready; stops cleanly on \
                Ctrl-C or SIGTERM. Connections and rejections are logged on stderr.
                """,
            options: [
                .value("cert", "path", "The simulator's server certificate (PEM, or a .p12 holding the key too)."),
                .value("key", "path", "The server's PEM private key, when it is not inside --cert."),
                .value("ca-file", "path", "Client certificates must chain to a CA in this PEM file."),
                .value("passphrase-env", "name", "Passphrase for --cert/--key from this environment variable."),
                .value("passphrase-file", "path", "Passphrase for --cert/--key from this file."),
                .value("host", "address", "Address to bind.", default: "127.0.0.1"),
                .value("port", "n", "Gateway port (0: any free port).", default: "2195"),
                .value("feedback-port", "n", "Feedback service port (0: any free port).", default: "2196"),
                .flag("no-feedback", "Do not run the feedback service."),
                .value(
                    "feedback-file", "path", #"JSON Lines {"time":N,"token":"<hex>"} served once on the feedback port."#
                ),
                .value("record", "path", "Append every accepted notification to this file as a JSON line."),
                .repeated("fail-token", "hex[:status]", "Reject notifications to this token (status 8 unless given)."),
                .value("fail-every", "n[:status]", "Reject every n-th notification received (status 8 unless given)."),
                .value("close-after", "n", "Close silently after n notifications on a connection."),
                .value("shutdown-after", "n", "Answer status 10 (shutdown) after n notifications on a connection."),
                .value("max-payload", "bytes", "Largest payload accepted (larger: status 7).", default: "2048"),
                .value("error-delay", "seconds", "Keep reading for this long before sending an error response."),
                .flag("split-errors", "Send error responses one byte per TLS record."),
                .value("max-connections", "n", "Connections served at once.", default: "64"),
                .value("idle-timeout", "seconds", "Close connections that send nothing for this long.", default: "300"),
                .value(
                    "tls-max", "1.2|1.3", "Newest TLS version offered (Apple's gateway spoke 1.2).",
                    default: "1.2"),
                .flag("quiet", "Do not log connections and rejections."),
                .flag(
                    "http2", "Simulate Apple's HTTP/2 provider API instead (see 'legacy-push serve --http2 --help')."),
            ],
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                "legacy-push serve",
                "legacy-push serve --port 0 --record accepted.jsonl --fail-token 0000...0001:8 --shutdown-after 500",
                "legacy-push serve --cert gateway.pem --key gateway.key --ca-file clients-ca.pem --host 0.0.0.0",
            ],
            variants: [ServeHTTP2Command.variant])
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        // Every option is checked before anything is loaded or printed.
        let port = try arguments.integer("port", as: UInt16.self) ?? 2195
        let feedbackPort =
            arguments.flag("no-feedback") ? nil : try arguments.integer("feedback-port", as: UInt16.self) ?? 2196
        let maximumPayload = try arguments.integer("max-payload", in: 1...65535) ?? Payload.defaultMaximumSize
        let maximumConnections = try arguments.integer("max-connections", in: 1...10_000) ?? 64
        let idleTimeout = try arguments.seconds("idle-timeout") ?? 300
        let newestTLS: TLSConfiguration.Version =
            try arguments.choice("tls-max", from: ["1.2", "1.3"]) == "1.3" ? .tls13 : .tls12
        let faults = try faults(arguments)
        var feedback: [FeedbackRecord] = []
        if let path = arguments.value("feedback-file") {
            if arguments.flag("no-feedback") {
                throw CLIError.usage("--feedback-file needs the feedback service (drop --no-feedback)")
            }
            feedback = try FeedbackFile.records(path)
        }
        let (identity, trust) = try credentials(arguments, console: console)
        var configuration = GatewaySimulator.Configuration(identity: identity, clientTrust: trust)
        configuration.host = arguments.value("host") ?? "127.0.0.1"
        configuration.port = port
        configuration.feedbackPort = feedbackPort
        configuration.maximumPayloadSize = maximumPayload
        configuration.maximumConnections = maximumConnections
        configuration.idleTimeout = .seconds(fractional: idleTimeout)
        configuration.maximumTLSVersion = newestTLS
        configuration.faults = faults
        configuration.feedback = feedback
        var recordDescriptor: Int32 = -1
        if let path = arguments.value("record") {
            recordDescriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard recordDescriptor >= 0 else {
                throw CLIError.usage("cannot write '\(path)': \(Files.errnoDescription())")
            }
            configuration.recorder = JSONLinesRecorder(fileDescriptor: recordDescriptor)
        }
        defer { if recordDescriptor >= 0 { close(recordDescriptor) } }
        if !arguments.flag("quiet") {
            configuration.events = { event in
                if let line = describe(event) { console.diagnostic(line) }
            }
        }

        let simulator = try GatewaySimulator(configuration: configuration)
        let endpoints = try await simulator.start()
        console.print("listening on \(endpoints.gateway)")
        if let feedback = endpoints.feedback { console.print("feedback on \(feedback)") }
        console.flush()

        let interrupted = Handoff<Void>()
        let watch = InterruptWatch { interrupted.put(()) }
        await interrupted.take()
        watch.cancel()
        await simulator.stop()
        let statistics = simulator.statistics
        console.diagnostic(
            "stopped: \(statistics.connections) connections, \(statistics.accepted) accepted, \(statistics.rejected) rejected, "
                + "\(statistics.shutdowns) shutdowns, \(statistics.silentCloses) silent closes")
        return .success
    }

    /// Server identity and client trust: from the options, or the bundled test certificates.
    static func credentials(_ arguments: ParsedArguments, console: Console) throws -> (ClientIdentity, [Certificate]) {
        let given = ["cert", "key", "ca-file"].filter { arguments.has($0) }
        if given.isEmpty {
            let directory = try BundledCertificates.require(for: "serve")
            console.diagnostic("using the test certificates in \(directory) (clients: --ca-file \(directory)/ca.pem)")
            let identity = try ClientIdentity(
                pem: Files.read(directory + "/server.pem"), keyPEM: Files.read(directory + "/server.key"),
                passphrase: nil)
            // The test root and its WWDR-like intermediate, as Apple's gateway knew its own WWDR CA:
            // clients that present only their leaf certificate are accepted too.
            return (identity, Certificate.certificates(pemRepresentation: try Files.read(directory + "/chain.pem")))
        }
        guard arguments.has("cert"), arguments.has("ca-file") else {
            throw CLIError.usage(
                "give --cert (with --key unless it holds the key) and --ca-file together, or none of them")
        }
        let identity = try CredentialOptions.loadIdentity(arguments, console: console)
        let path = arguments.value("ca-file")!
        let trust = Certificate.certificates(pemRepresentation: try Files.read(path))
        guard !trust.isEmpty else { throw CLIError.usage("'\(path)' holds no PEM certificate") }
        return (identity, trust)
    }

    static func faults(_ arguments: ParsedArguments) throws -> SimulatorFaults {
        var faults = SimulatorFaults()
        for text in arguments.allValues("fail-token") {
            let (hex, status) = try splitStatus(text, option: "--fail-token")
            let token: DeviceToken
            do {
                token = try DeviceToken(hexString: hex)
            } catch let error as LegacyAPNsError {
                throw CLIError.usage("--fail-token: \(error.reason)")
            }
            faults.failingTokens[token] = status
        }
        if let text = arguments.value("fail-every") {
            let (count, status) = try splitStatus(text, option: "--fail-every")
            faults.failEvery = (
                try ParsedArguments.parseInteger(count, option: "--fail-every", as: Int.self, in: 1...Int.max), status
            )
        }
        faults.closeAfter = try arguments.integer("close-after", in: 1...Int.max)
        faults.shutdownAfter = try arguments.integer("shutdown-after", in: 1...Int.max)
        faults.errorResponseDelay = .seconds(fractional: try arguments.seconds("error-delay") ?? 0)
        faults.splitErrorResponses = arguments.flag("split-errors")
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
        case .closedSilently(let connection, let accepted):
            "connection \(connection): closed silently after \(accepted) notifications"
        case .disconnected(let connection, let accepted):
            "connection \(connection): closed by the client after \(accepted) notifications"
        case .idleTimeout(let connection, let accepted):
            "connection \(connection): closed after sending nothing for the idle timeout (\(accepted) notifications)"
        case .feedbackServed(let client, let count):
            "feedback: \(count) tuples to \(client)"
        case .refused(let client):
            "refused \(client): too many connections"
        }
    }
}
