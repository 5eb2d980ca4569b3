internal import APNsRuntime
import CommandLineKit
import GatewaySimulator
import LegacyAPNs

/// `legacy-push serve --http2`: a local stand-in for Apple's HTTP/2 provider API
/// (``ProviderSimulator``), for testing any HTTP/2 sender.
enum ServeHTTP2Command {
    /// How `serve` hands `serve --http2 ...` to this command.
    static var variant: CommandVariant { CommandVariant(flag: Options.http2.name, spec: spec) }

    /// Every option, declared once.
    enum Options {
        static let http2 = Flag("http2", help: "Simulate Apple's HTTP/2 provider API (this command).")
        static let certificate = CredentialOptions.certificate.help(
            "The simulator's server certificate (PEM, or a .p12 holding the key too).")
        static let key = CredentialOptions.key.help("The server's PEM private key, when it is not inside --cert.")
        static let caFile = Option<String>.text(
            "ca-file", "path",
            help: "Client certificates (optional: none means token auth) must chain to a CA in this PEM file.")
        static let host = Option<String>("host", "address", help: "Address to bind.", default: "127.0.0.1") { $0 }
        static let port = Option<UInt16>.integer(
            "port", help: "Port (0: any free port).", range: 0...UInt16.max, default: 2197)
        static let environment = Option<ProviderSimulator.Environment>.choice(
            "environment",
            help: "Which APNs to be: the certificates it accepts, and apns-unique-id in development.",
            ["development": .development, "production": .production], default: .development)
        static let authKey = RepeatedOption<AuthKeyArgument>(
            "auth-key", "keyid:teamid:path",
            help: "Accept provider tokens of this key: a .p8 (or its public key PEM) with its key id and team id."
        ) { text in try AuthKeyArgument(text) }
        static let teamTopic = RepeatedOption<(String, String)>(
            "team-topic", "teamid:bundle-id",
            help: "Token auth: the team may push only to these bundle ids (and their push-type suffixes); "
                + "a team without --team-topic may push to any."
        ) { text in
            guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
                text.index(after: colon) != text.endIndex
            else { throw CLIError.usage("--team-topic expects TEAMID:BUNDLE_ID, got '\(text)'") }
            return (String(text[..<colon]), String(text[text.index(after: colon)...]))
        }
        static let maximumStreams = Option<UInt32>.integer(
            "max-streams",
            help: "SETTINGS_MAX_CONCURRENT_STREAMS once authenticated (token auth: 1 until the first valid token); "
                + "a stream beyond it is answered as --excess-streams says.",
            range: 1...100_000, default: 1000)
        static let excessStreams = Option<ProviderSimulator.ExcessStreams>.choice(
            "excess-streams",
            help: "A stream beyond --max-streams: goaway (as APNs: GOAWAY REFUSED_STREAM \"Maximum active streams "
                + "violated for this endpoint.\" and the connection closes, whether or not the client has "
                + "acknowledged the limit; its open streams go unanswered) or refuse (RFC 9113's leniency: "
                + "RST_STREAM REFUSED_STREAM before the client acknowledged the limit, GOAWAY PROTOCOL_ERROR after).",
            ["goaway": .goaway, "refuse": .refuse], default: .goaway)
        static let failToken = RepeatedOption<(DeviceToken, ProviderReason)>(
            "fail-token", "hex[:reason]",
            help: "Requests to this token fail with the reason (default BadDeviceToken; the status follows it: "
                + "TooManyRequests 429, ServiceUnavailable 503, ...)."
        ) { text in
            let (hex, reason) = split(text)
            return (
                try token(hex, option: "--fail-token"),
                try reason.map { try Options.reason($0, option: "--fail-token") } ?? .badDeviceToken
            )
        }
        static let unregistered = RepeatedOption<(DeviceToken, ProviderFaults.Timestamp)>(
            "unregistered", "hex[:milliseconds]",
            help: "Requests to this token get 410 Unregistered with this timestamp (default: the time of the request)."
        ) { text in
            let (hex, milliseconds) = split(text)
            let timestamp = try milliseconds.map {
                ProviderFaults.Timestamp.milliseconds(
                    try ParsedArguments.parseInteger($0, option: "--unregistered timestamp", as: UInt64.self, in: nil))
            }
            return (try token(hex, option: "--unregistered"), timestamp ?? .now)
        }
        static let failEvery = Option<ProviderFaults.FailEvery>(
            "fail-every", "n[:reason]", help: "Every n-th valid request fails with the reason (default BadDeviceToken)."
        ) { text in
            let (count, reason) = split(text)
            return ProviderFaults.FailEvery(
                count: try ParsedArguments.parseInteger(count, option: "--fail-every", as: Int.self, in: 1...Int.max),
                reason: try reason.map { try Options.reason($0, option: "--fail-every") } ?? .badDeviceToken)
        }
        static let goawayAfter = Option<Int>.integer(
            "goaway-after",
            help: "After n requests on a connection, GOAWAY naming the last processed stream; later streams are not "
                + "processed (the client must send them again).", range: 1...Int.max)
        static let shutdownAfter = Option<Int>.integer(
            "shutdown-after",
            help: "After n requests on a connection, answer the next with 503 Shutdown and say GOAWAY "
                + "{\"reason\":\"Shutdown\"}.", range: 1...Int.max)
        static let resetAfter = Option<Int>.integer(
            "reset-after",
            help: "After n requests on a connection, reset it (TCP RST, no GOAWAY) as the next one arrives: "
                + "requests in flight are never answered.", range: 1...Int.max)
        static let stallToken = RepeatedOption<DeviceToken>(
            "stall-token", "hex", help: "Never answer requests to this token (the stream stays open)."
        ) { try token($0, option: "--stall-token") }
        static let errorDelay = Option<Duration>.seconds(
            "error-delay", help: "Hold every error response back this long.", allowsZero: true)
        static let randomFaults = Option<ProviderFaults.RandomFaults>(
            "random-faults", "spec",
            help: "Random faults per request for soak tests, e.g. seed=7,goaway=0.01,reset=0.01,unavailable=0.02,"
                + "stall=0.01,bad-token=0.05 (rates from 0 to 1)."
        ) { try randomFaults($0) }
        static let clockSkew = Option<Duration>.seconds(
            "clock-skew",
            help: "Run the token clock this many seconds ahead (e.g. 7200): every provider token looks over an "
                + "hour old and gets 403 ExpiredProviderToken, as from a sender whose clock is wrong.")
        static let record = Option<String>.text(
            "record", "path", help: "Append every accepted request to this file as a JSON line, while serving.")
        static let maximumConnections = Option<Int>.integer(
            "max-connections",
            help: "Connections held at once, from the TCP accept on. At the limit, the one longest in its TLS "
                + "handshake, or else one without a request for 5 s and no stream open, is closed to make room; "
                + "a new client is refused only when every one is busy.", range: 1...10_000, default: 128)
        static let firstRequestTimeout = Option<Duration>.seconds(
            "first-request-timeout",
            help: "Close (GOAWAY NO_ERROR) a connection with no complete request this long after its handshake "
                + "(only the preface, or PINGs).", default: .seconds(60))
        static let idleTimeout = Option<Duration>.seconds(
            "idle-timeout", help: "Say GOAWAY {\"reason\":\"IdleTimeout\"} to a connection silent this long.",
            default: .seconds(3600))
        static let newestTLS = Option<TLSConfiguration.Version>.choice(
            "tls-max", help: "Newest TLS version offered (the oldest is 1.2).", ["1.2": .tls12, "1.3": .tls13],
            default: .tls13)
        static let quiet = Flag("quiet", help: "No connection and rejection log on stderr.")
        static let managementPort = Option<UInt16>.integer(
            "management-port",
            help: "Also serve channel management (only) on this port, as Apple's api-manage-broadcast host "
                + "(0: any free port). The main port serves it too.", range: 0...UInt16.max)
        static let maximumChannels = Option<Int>.integer(
            "max-channels", help: "Channels one app may have (Apple: 10,000); one more gets CannotCreateChannelConfig.",
            range: 1...1_000_000, default: 10_000)
        static let channelFailEvery = Option<ProviderFaults.FailEvery>(
            "fail-channel-every", "n[:reason]",
            help: "Every n-th valid channel management or broadcast request fails with the reason (default "
                + "TooManyRequests; e.g. InternalServerError, or \"Service Unavailable\" as Apple's channel "
                + "article spells 503)."
        ) { text in
            let (count, reason) = split(text)
            return ProviderFaults.FailEvery(
                count: try ParsedArguments.parseInteger(
                    count, option: "--fail-channel-every", as: Int.self, in: 1...Int.max),
                reason: try reason.map { try Options.reason($0, option: "--fail-channel-every") } ?? .tooManyRequests)
        }
        static let broadcastDisabled = RepeatedOption<String>(
            "broadcast-disabled", "bundle-id",
            help: "This app has no broadcast capability: its channel and broadcast requests get FeatureNotEnabled."
        ) { $0 }

        static var all: [OptionSpec] {
            [
                http2.spec, certificate.spec, key.spec, CredentialOptions.passphraseEnvironment.spec,
                CredentialOptions.passphraseFile.spec, caFile.spec, host.spec, port.spec, environment.spec,
                authKey.spec, teamTopic.spec, maximumStreams.spec, excessStreams.spec, failToken.spec,
                unregistered.spec, failEvery.spec,
                goawayAfter.spec, shutdownAfter.spec, resetAfter.spec, stallToken.spec, errorDelay.spec,
                randomFaults.spec, clockSkew.spec, record.spec, maximumConnections.spec, firstRequestTimeout.spec,
                idleTimeout.spec,
                newestTLS.spec, MetricsOptions.address.spec, InboxOptions.address.spec, InboxOptions.size.spec,
                InboxOptions.offline.spec, quiet.spec, managementPort.spec, maximumChannels.spec,
                broadcastDisabled.spec, channelFailEvery.spec,
            ]
        }

        /// "VALUE[:SUFFIX]", split at the last colon.
        static func split(_ text: String) -> (String, String?) {
            guard let colon = text.lastIndex(of: ":") else { return (text, nil) }
            return (String(text[..<colon]), String(text[text.index(after: colon)...]))
        }

        static func token(_ hex: String, option: String) throws -> DeviceToken {
            do {
                return try DeviceToken(hexString: hex)
            } catch let error as LegacyAPNsError {
                throw CLIError.usage("\(option): \(error.reason)")
            }
        }

        /// One of Apple's reasons, spelt as Apple does.
        static func reason(_ text: String, option: String) throws -> ProviderReason {
            let reason = ProviderReason(rawValue: text)
            guard reason.isKnown else {
                let names = ProviderReason.allKnown.map(\.rawValue)
                throw CLIError.usage(
                    "\(option): '\(text)' is not one of Apple's reasons (BadDeviceToken, Unregistered, "
                        + "TooManyRequests, ServiceUnavailable, ...)"
                        + suggestion(for: text, among: names))
            }
            return reason
        }

        /// " (did you mean 'BadDeviceToken'?)" for a reason spelt nearly right, in any case.
        static func suggestion(for text: String, among names: [String]) -> String {
            let typed = text.lowercased()
            let scored = names.map { ($0, Suggestion.editDistance(typed, $0.lowercased())) }
            guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 3 else { return "" }
            return " (did you mean '\(best.0)'?)"
        }

        static func randomFaults(_ text: String) throws -> ProviderFaults.RandomFaults {
            var faults = ProviderFaults.RandomFaults(seed: 1)
            for part in text.split(separator: ",") {
                let pieces = part.split(separator: "=", maxSplits: 1).map(String.init)
                guard pieces.count == 2 else {
                    throw CLIError.usage("--random-faults expects name=value pairs, got '\(part)'")
                }
                if pieces[0] == "seed" {
                    faults.seed = try ParsedArguments.parseInteger(
                        pieces[1], option: "--random-faults seed", as: UInt64.self, in: nil)
                    continue
                }
                guard let rate = Double(pieces[1]), rate >= 0, rate <= 1 else {
                    throw CLIError.usage("--random-faults \(pieces[0]) must be a rate from 0 to 1, got '\(pieces[1])'")
                }
                switch pieces[0] {
                case "goaway": faults.goaway = rate
                case "reset": faults.reset = rate
                case "unavailable": faults.serviceUnavailable = rate
                case "stall": faults.stall = rate
                case "bad-token": faults.badDeviceToken = rate
                default:
                    throw CLIError.usage(
                        "--random-faults: unknown fault '\(pieces[0])' (seed, goaway, reset, unavailable, stall, bad-token)"
                    )
                }
            }
            let total = faults.goaway + faults.reset + faults.serviceUnavailable + faults.stall + faults.badDeviceToken
            guard total <= 1 else { throw CLIError.usage("--random-faults rates add up to \(total), more than 1") }
            return faults
        }
    }

    /// `KEYID:TEAMID:PATH`.
    struct AuthKeyArgument: Sendable {
        var keyID: String
        var teamID: String
        var path: String

        init(_ text: String) throws {
            let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, !parts[2].isEmpty else {
                throw CLIError.usage("--auth-key expects KEYID:TEAMID:PATH, got '\(text)'")
            }
            for (value, name) in [(parts[0], "key id"), (parts[1], "team id")]
            where !ProviderToken.isValidIdentifier(value) {
                throw CLIError.usage("--auth-key: \(name) '\(value)' is not 10 characters A-Z and 0-9")
            }
            keyID = parts[0]
            teamID = parts[1]
            path = parts[2]
        }
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "serve",
            abstract: "Run a local HTTP/2 APNs (Apple's provider API) for testing HTTP/2 senders.",
            discussion: """
                A faithful stand-in for api.push.apple.com: TLS with ALPN h2 (clients offering no ALPN get HTTP/2 \
                too), certificate auth when the client presents a certificate chaining to --ca-file (its topics: \
                the subject UID and Apple's topics extension; a certificate for the other --environment gets \
                GOAWAY {"reason":"BadCertificateEnvironment"}, logged with both environments), token auth when it presents none (--auth-key; each refusal logged with the check that refused it; \
                MissingProviderToken, InvalidProviderToken, ExpiredProviderToken after an hour, \
                UnrelatedKeyIdInToken, TooManyProviderTokenUpdates within 20 minutes), \
                SETTINGS_MAX_CONCURRENT_STREAMS 1 until the first valid token, Apple's request rules and \
                statuses, apns-id echoed or made up, and fault injection.

                Without --cert/--key/--ca-file it uses the test certificates in a LegacyAPNs checkout's \
                Fixtures/certs (clients then need --ca-file Fixtures/certs/ca.pem; certificate clients e.g. \
                Fixtures/certs/universal.pem with universal.key, or universal-modern.p12, passphrase "secret").

                Clients cannot hold it: the TLS handshake and then the HTTP/2 preface each have 10 s, the first \
                request --first-request-timeout, a trickled request 10 s; at --max-connections a new client takes \
                the place of the connection longest in its TLS handshake, or else of the one idle longest (no \
                request for 5 s, no stream open), which is closed (logged as cut off: closed to make room).

                Per push type (where Apple names no reason, the simulator's choice is given): background \
                takes priority 5 only and liveactivity 5 or 10 (BadPriority); location and liveactivity need \
                token auth, and a certificate connection gets 400 TopicDisallowed for them; widgets payloads \
                must be {"aps":{"content-changed":true}} and liveactivity payloads need aps.event (else 400 \
                InvalidPushType); a Live Activity's content-state and attributes may have 4096 bytes each (413 \
                PayloadTooLarge); voip takes 5120 bytes. The log names the rule.

                Broadcast channels (iOS 18), as Apple's text says: POST /1/apps/BUNDLE/channels with \
                {"message-storage-policy":0|1,"push-type":"LiveActivity"} answers 201 and apns-channel-id; GET \
                and DELETE the same path with the apns-channel-id header read (200) and delete (204); GET \
                /1/apps/BUNDLE/all-channels lists ({"channels":[...]}); at most --max-channels per app; every \
                answer carries apns-request-id (echoed or made up). POST /4/broadcasts/apps/BUNDLE sends a \
                broadcast (apns-channel-id, apns-push-type liveactivity, apns-priority and apns-expiration \
                required; expiration 0 on a policy-0 channel; 5120 bytes; no start event); each is logged with \
                its channel and policy, and a policy-1 channel keeps its latest. Where Apple contradicts itself \
                (Liveactivity or liveactivity, the sample host api-broadcast.sandbox.push.apple.com) both are \
                accepted and the log says which arrived. --management-port serves the channel API alone, as \
                Apple's separate management host.

                With --inbox, every push is delivered to a simulated device, as Apple's delivery log tells \
                it: a device is offline from the start with --offline TOKEN, or after POST \
                /api/v1/devices/TOKEN/offline on the inbox port (/online brings it back). A push to an \
                offline device is stored, one per app (topic) per device: a newer one replaces it (fate \
                replaced; apns-collapse-id coalesces), apns-expiration discards it when it passes (0: never \
                stored, expired at once), and coming online delivers it. Each push's fate (delivered, stored, \
                replaced, expired) is on the page and in the JSON; GET /api/v1/deliveries/UNIQUE-ID gives \
                the delivery log of the push answered with that apns-unique-id (development).

                Prints "listening on HOST:PORT (HTTP/2)" once ready (and "listening on HOST:PORT (channel \
                management)" with --management-port); stops cleanly on Ctrl-C or SIGTERM with a \
                closing line of counts per reason on stderr. Connections and rejections are logged on stderr \
                unless --quiet.
                """,
            options: Options.all,
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                "legacy-push serve --http2 --auth-key ABC123DEFG:DEF123GHIJ:Fixtures/certs/AuthKey_ABC123DEFG.p8",
                "legacy-push serve --http2 --port 0 --record accepted.jsonl --fail-token "
                    + String(repeating: "0", count: 63) + "1:Unregistered --goaway-after 500",
                "legacy-push serve --http2 --environment production --cert api.pem --key api.key --ca-file clients-ca.pem",
                "curl --http2 --cacert Fixtures/certs/ca.pem --cert Fixtures/certs/universal.pem --key "
                    + "Fixtures/certs/universal.key -H 'apns-topic: com.example.legacy' -d '{\"aps\":{}}' "
                    + "https://127.0.0.1:2197/3/device/" + String(repeating: "ab", count: 32),
            ])
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        // Every option is checked before anything is loaded or printed.
        let port = try arguments.required(Options.port)
        let host = try arguments.required(Options.host)
        var faults = ProviderFaults()
        for (token, reason) in try arguments.values(Options.failToken) { faults.failingTokens[token] = reason }
        for (token, since) in try arguments.values(Options.unregistered) { faults.unregisteredTokens[token] = since }
        faults.stallingTokens = Set(try arguments.values(Options.stallToken))
        faults.failEvery = try arguments.value(Options.failEvery)
        faults.goawayAfter = try arguments.value(Options.goawayAfter)
        faults.shutdownAfter = try arguments.value(Options.shutdownAfter)
        faults.resetAfter = try arguments.value(Options.resetAfter)
        faults.errorDelay = try arguments.value(Options.errorDelay) ?? .zero
        faults.random = try arguments.value(Options.randomFaults)
        faults.channelFailEvery = try arguments.value(Options.channelFailEvery)
        let keyArguments = try arguments.values(Options.authKey)
        var teamTopics: [String: [String]] = [:]
        for (team, topic) in try arguments.values(Options.teamTopic) { teamTopics[team, default: []].append(topic) }
        var limits = ProviderSimulator.Limits()
        limits.maximumConnections = try arguments.required(Options.maximumConnections)
        limits.idleTimeout = try arguments.value(Options.idleTimeout)
        limits.firstRequestTimeout = try arguments.value(Options.firstRequestTimeout)

        let environment = try arguments.required(Options.environment)
        let newestTLS = try arguments.required(Options.newestTLS)
        let maximumStreams = try arguments.required(Options.maximumStreams)
        let recordPath = try arguments.value(Options.record)

        var authKeys: [ProviderSimulator.AuthKey] = []
        for argument in keyArguments {
            let bytes = try Files.read(argument.path, limit: 64 * 1024)
            let publicKey = try CredentialOptions.naming(argument.path) {
                try SigningKey.PublicKey(pemRepresentation: bytes)
            }
            authKeys.append(.init(keyID: argument.keyID, teamID: argument.teamID, publicKey: publicKey))
        }
        let metered = try MetricsOptions.metrics(arguments)
        let inboxed = try InboxOptions.inbox(arguments, simulatesDevices: true)
        let (identity, trust) = try credentials(arguments, console: console)
        var configuration = ProviderSimulator.Configuration(identity: identity, clientTrust: trust)
        configuration.host = host
        configuration.port = port
        configuration.environment = environment
        configuration.maximumTLSVersion = newestTLS
        configuration.authKeys = authKeys
        configuration.teamTopics = teamTopics
        configuration.maximumConcurrentStreams = maximumStreams
        configuration.excessStreams = try arguments.required(Options.excessStreams)
        configuration.faults = faults
        configuration.limits = limits
        configuration.managementPort = try arguments.value(Options.managementPort)
        configuration.channels = ChannelStore(maximumChannelsPerApp: try arguments.required(Options.maximumChannels))
        configuration.broadcastDisabledBundles = Set(try arguments.values(Options.broadcastDisabled))
        if let skew = try arguments.value(Options.clockSkew) { configuration.clock = .system(ahead: skew) }
        let recordDescriptor = try recordPath.map(Files.openForAppending) ?? -1
        defer { if recordDescriptor >= 0 { FileDescriptor.close(recordDescriptor) } }
        if recordDescriptor >= 0 {
            configuration.recorder = JSONLinesProviderRecorder(fileDescriptor: recordDescriptor)
        }
        if !arguments.isSet(Options.quiet) {
            configuration.events = { event in
                if let line = describe(event, environment: environment) { console.diagnostic(line) }
            }
        }
        if authKeys.isEmpty {
            console.diagnostic("no --auth-key given: token-auth requests will get 403 InvalidProviderToken")
        }

        if let metrics = metered?.metrics { configuration.reportMetrics(to: metrics) }
        if let inbox = inboxed?.inbox { configuration.showInInbox(inbox) }

        let simulator = try ProviderSimulator(configuration: configuration)
        let metricsServer = metered.map { metrics, endpoint in
            metrics.observe(simulator)
            return MetricsOptions.server(metrics, at: endpoint)
        }
        try await InterruptWatch.serve(
            console: console, metrics: metricsServer, inbox: inboxed?.server, start: { try await simulator.start() },
            announce: { endpoint in
                console.print("listening on \(endpoint) (HTTP/2)")
                if let management = simulator.managementEndpoint {
                    console.print("listening on \(management) (channel management)")
                }
            },
            stop: { await simulator.stop() })
        console.diagnostic("stopped: \(simulator.statistics.summary)")
        return .success
    }

    /// Server identity and client trust: from the options, or the bundled test certificates.
    static func credentials(_ arguments: ParsedArguments, console: Console) throws -> (ClientIdentity, [Certificate]) {
        let given = arguments.has(Options.certificate) || arguments.has(Options.key) || arguments.has(Options.caFile)
        if !given {
            let directory = try BundledCertificates.require(for: "serve --http2")
            console.diagnostic("using the test certificates in \(directory) (clients: --ca-file \(directory)/ca.pem)")
            let identity = try ClientIdentity(
                pem: Files.read(directory + "/server.pem"), keyPEM: Files.read(directory + "/server.key"),
                passphrase: nil)
            return (identity, Certificate.certificates(pemRepresentation: try Files.read(directory + "/chain.pem")))
        }
        guard arguments.has(Options.certificate), let path = try arguments.value(Options.caFile) else {
            throw CLIError.usage(
                "give --cert (with --key unless it holds the key) and --ca-file together, or none of them")
        }
        let identity = try CredentialOptions.loadIdentity(arguments, console: console)
        let trust = Certificate.certificates(pemRepresentation: try Files.read(path))
        guard !trust.isEmpty else { throw CLIError.usage("'\(path)' holds no PEM certificate") }
        return (identity, trust)
    }

    /// One stderr line per event worth logging; `environment` is the simulator's (for the hint
    /// to a client whose certificate is for the other one).
    static func describe(_ event: ProviderSimulatorEvent, environment: ProviderSimulator.Environment) -> String? {
        switch event {
        case .connected(let connection, let client, let version, let alpn, let authentication):
            let how: String
            switch authentication {
            case .certificate(let subject, _, let environment): how = "certificate \(subject) (\(environment))"
            case .token: how = "token auth"
            }
            return "connection \(connection) from \(client): \(version), ALPN \(alpn.isEmpty ? "none" : alpn), \(how)"
        case .handshakeFailed(let client, let reason):
            return "refused \(client): \(reason)"
        case .refused(let client):
            return "refused \(client): too many connections"
        case .tokenAccepted(let connection, let keyID, let teamID):
            return "connection \(connection): provider token of key \(keyID), team \(teamID) accepted"
        case .tokenUpdated(let connection, let keyID):
            return "connection \(connection): new provider token of key \(keyID)"
        case .rejected(let connection, let stream, let response, let token, let why):
            var line =
                "connection \(connection) stream \(stream): \(response)\(token.map { " token \($0.hexString)" } ?? "")"
            if let why { line += ": " + why }
            if response.reason == .badCertificateEnvironment {
                let other: ProviderSimulator.Environment = environment == .development ? .production : .development
                line +=
                    ": start serve --http2 with --environment \(other) for it, or the client uses a \(environment) "
                    + "(or universal) certificate"
            }
            return line
        case .channelRequest(let connection, let request, let response, let why, let notes):
            var line = "connection \(connection): \(request): \(response)"
            if let id = response.channelID { line += " channel \(id)" }
            if let why { line += ": " + why }
            if !notes.isEmpty { line += " [" + notes.joined(separator: "; ") + "]" }
            return line
        case .stalled(let connection, let stream):
            return "connection \(connection) stream \(stream): stalled (never answered)"
        case .goaway(let connection, let last, let reason):
            return "connection \(connection): GOAWAY after stream \(last)\(reason.map { " (\($0))" } ?? "")"
        case .reset(let connection, _):
            return "connection \(connection): reset"
        case .protocolError(let connection, let reason):
            return "connection \(connection): \(reason)"
        case .cutOff(let connection, let reason):
            return "connection \(connection): cut off: \(reason)"
        case .disconnected(let connection, let accepted, let rejected):
            return "connection \(connection): closed after \(accepted) accepted, \(rejected) rejected"
        }
    }
}
