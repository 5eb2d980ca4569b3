import APNsMetrics
internal import APNsRuntime
import CommandLineKit
import LegacyBridge

/// `legacy-push bridge`: an unmodified legacy sender delivers through the HTTP/2 API.
enum BridgeCommand {
    enum Options {
        static let host = Option<String>.text("host", "address", help: "Address to listen on.").defaulting("127.0.0.1")
        static let port = Option<UInt16>.integer(
            "port", help: "The binary gateway port senders connect to (0: any free port).", range: 0...65535,
            default: 2195)
        static let feedbackPort = Option<UInt16>.integer(
            "feedback-port", help: "The feedback service port (0: any free port).", range: 0...65535, default: 2196)
        static let noFeedback = Flag("no-feedback", help: "Do not run the feedback service.")
        static let certificate = Option<String>.text(
            "cert", "path",
            help: "The certificate the bridge shows senders (PEM or .p12; default: the test certificates).")
        static let key = Option<String>.text("key", "path", help: "Its PEM private key, when it is not inside --cert.")
        static let clientCA = Option<String>.text(
            "client-ca", "path", help: "Senders' certificates must chain to a CA in this PEM file.")
        static let clientFingerprint = RepeatedOption<[UInt8]>(
            "client-fingerprint", "sha256hex",
            help: "Accept the sender certificate with this SHA-256 fingerprint (64 hex digits, colons allowed), "
                + "even when expired. Repeatable."
        ) { text in
            let hex = text.filter { $0 != ":" }
            guard hex.count == 64, let bytes = try? DeviceToken(hexString: hex).bytes else {
                throw CLIError.usage(
                    "--client-fingerprint expects a SHA-256 fingerprint (64 hex digits, as `inspect` prints it), "
                        + "got '\(text)'")
            }
            return bytes
        }
        static let upstream = Option<Endpoint>.endpoint(
            "upstream", help: "The HTTP/2 API to deliver to (default: api.push.apple.com:443, or the sandbox).",
            examplePort: 443)
        static let sandbox = Flag("sandbox", help: "Deliver to api.sandbox.push.apple.com:443.")
        static let upstreamCAFile = Option<String>.text(
            "upstream-ca-file", "path",
            help: "Trust the CAs in this PEM file for the upstream (a local serve --http2) instead of the system store."
        )
        static let upstreamCertificate = Option<String>.text(
            "upstream-cert", "path", help: "Upstream certificate auth: the provider certificate (.p12 or PEM).")
        static let upstreamKey = Option<String>.text(
            "upstream-key", "path", help: "Its PEM private key, when it is not inside --upstream-cert.")
        static let routes = Option<String>.text(
            "routes", "path",
            help: "One bridge for many apps: a JSON routes file (see above) naming each sender's upstream "
                + "credential; SIGHUP reloads it.")
        static let topic = Option<String>.text(
            "topic", "bundle-id", help: "The apns-topic of every request (default: each sender certificate's topic).")
        static let store = Option<String>.text(
            "store", "path",
            help: "The SQLite file holding tokens HTTP/2 reported unregistered until the feedback service has served "
                + "them, and the resend memory (created mode 0600; both survive restarts and crashes); or "
                + "postgresql://user@host:port/db (any libpq URI or key=value string; PG* variables apply), the "
                + "shared store of a fleet of bridges behind a load balancer."
        ).defaulting("legacy-push-bridge.sqlite")
        static let sessionTicketKey = Option<String>.text(
            "session-ticket-key", "path",
            help: "A file of 80 random bytes (head -c 80 /dev/urandom), readable by its owner only, the same for "
                + "every bridge of a fleet: senders' TLS sessions travel in tickets sealed with it, so a sender that "
                + "reconnects to another bridge resumes instead of repeating the handshake. Replace it by a restart.")
        static let window = Option<Int>.integer(
            "window",
            help: "Notifications of one sender connection in flight upstream at most (default: 1000 per upstream "
                + "connection).", range: 1...100_000)
        static let strictOrder = Flag(
            "strict-order", help: "One notification in flight per sender connection (delivered in the order sent).")
        static let upstreamConnections = Option<Int>.integer(
            "upstream-connections", help: "HTTP/2 connections upstream.", range: 1...64, default: 2)
        static let maximumConnections = Option<Int>.integer(
            "max-connections",
            help: "Sender connections held at once, from the TCP accept on. At the limit, the one longest in its "
                + "TLS handshake, or else a sender idle for 5 s, is closed to make room; a new sender is refused "
                + "only when every one is busy.", range: 1...100_000,
            default: 256)
        static let idleTimeout = Option<Duration>.seconds(
            "idle-timeout", help: "Close a sender with nothing in flight that sends nothing for this long.",
            default: .seconds(300))
        static let drainTimeout = Option<Duration>.seconds(
            "drain-timeout", help: "On Ctrl-C or SIGTERM: time the notifications in flight get to reach a verdict.",
            default: .seconds(10))
        static let parkAfter = Option<Duration>.seconds(
            "park-after",
            help: "Hold a sender connection that has sent nothing for this long, with nothing in flight, without a "
                + "thread of its own (its TLS buffers freed) until it sends again: ten thousand idle senders cost "
                + "about 40 KB each and one thread. Off by default.")
        static let claimLifetime = Option<Duration>.seconds(
            "claim-lifetime",
            help: "With a PostgreSQL --store: how long the verdict of a notification a bridge of the fleet "
                + "delivered answers a resend of it at any bridge (longer than a sender takes to reconnect and "
                + "resend; the same notification sent again on purpose within it is answered, not delivered).",
            default: .seconds(60))
        static let tlsMaximum = Option<TLSConfiguration.Version>.choice(
            "tls-max", help: "Newest TLS version offered to senders (Apple's gateway spoke 1.2).",
            ["1.2": .tls12, "1.3": .tls13], default: .tls12)
        static let json = Flag(
            "json",
            help: "Print every event as one JSON line on stdout, written out as it happens (a kill loses none logged).")
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "bridge",
            abstract: "Let a legacy binary sender deliver through Apple's HTTP/2 API (binary in, HTTP/2 out).",
            discussion: """
                Listens like Apple's retired gateway (TLS 1.2 with a client certificate, commands 0, 1 and 2) \
                and feedback service, forwards each notification over HTTP/2 with a .p8 key (--auth-key, \
                --key-id, --team-id) or a certificate (--upstream-cert), and answers the sender as the gateway \
                did: nothing for a delivered notification; for the first failure on a connection, once every \
                notification before it is known delivered, the 6-byte error response naming it and the close. \
                The sender resends what followed it; those the bridge had already delivered are recognised (by \
                content, not only identifier) and acknowledged without a second delivery.

                Statuses: BadDeviceToken and DeviceTokenNotForTopic are 8, PayloadTooLarge 7, PayloadEmpty 4, \
                MissingTopic 3, BadTopic and TopicDisallowed 6; an upstream that stays unreachable, refuses the \
                credentials or answers 5xx after every retry is status 10 naming the last notification delivered \
                (the sender reconnects and resends); other refusals are 1. What APNs would refuse (token length, \
                payload size, an empty payload) is answered without a round trip.

                410 (Unregistered, ExpiredToken) is not an error for the sender, as Apple's gateway accepted \
                notifications to uninstalled apps: the token is stored in --store (SQLite, synced to disk before \
                the notification counts as delivered) and served once, with the time 410 gave, to the next sender \
                of that topic that connects to the feedback port.

                The store also keeps what the bridge remembers for senders' resends (the notifications after \
                an error response it already delivered, or still has upstream), committed before the error \
                response goes out: a bridge killed and restarted on the same store delivers none of them twice; \
                one that was still upstream when it died is sent again and logged as a possible duplicate.

                A fleet: several bridges with the same --store postgresql://... behind a TCP load balancer \
                (HAProxy, mode tcp). A sender answered by one bridge and resending through another is answered \
                from what the first remembered; any bridge's feedback port serves the 410s any bridge stored, \
                each to one reader. A database that cannot be reached at start is one error (exit 3); one lost \
                later gets senders status 10 for what cannot be looked up, until it answers again.

                Senders must present a certificate chained to --client-ca or pinned by --client-fingerprint \
                (pinned certificates may be expired). The topic is the sender certificate's unless --topic is \
                given. --cert/--key is the identity shown to senders; without them (and without --client-ca or \
                --client-fingerprint) the bundled test certificates are used, for local trials. The passphrase \
                options apply to whichever of --cert, --key, --upstream-cert, --upstream-key is encrypted.

                Prints "listening on HOST:PORT (binary, bridging to UPSTREAM)" and "feedback on HOST:PORT" once \
                ready. Every notification not delivered and not told to its sender (it disconnected first) is \
                logged as "not delivered". Ctrl-C or SIGTERM stops: senders get status 10 after --drain-timeout.

                Many apps: --routes PATH, a JSON file {"routes":[ROUTE, ...]}, replaces --auth-key and \
                --upstream-cert. The first route that matches a sender's certificate is its route: \
                "senderTopic" (its certificate's topic), "senderFingerprint" (SHA-256 hex) or "senderCA" (a PEM \
                file of CAs its certificate must chain to, a root or an intermediate, through the intermediates \
                it presents or the bridge trusts; the bridge accepts the senders of that CA, as a route's \
                fingerprint pins its certificate). Each route names its upstream credential: "authKey" (a .p8) \
                with "keyId" and "teamId", or "cert" (.p12 or PEM) with optional "key" and "passphraseFile"; and \
                optionally "apnsTopic" (the topic of its requests, default the sender's). Relative paths are \
                relative to the routes file. Routes with the same credential share one upstream pool. A sender \
                no route matches is refused with a line saying why. SIGHUP reloads the file (a renewed \
                certificate, a new key, a route added or removed): connected senders keep the route they \
                have, nothing in flight is touched; a pool no route uses any more closes once its last sender \
                has left; a file that does not load keeps the old routes and says why.

                --metrics HOST:PORT serves GET /metrics (Prometheus), /healthz and /readyz (200 while it \
                listens, the store answers and an upstream connection can be had; 503 otherwise); see \
                docs/operations.md. --proxy http://[user:pass@]host:port (or HTTPS_PROXY, minus NO_PROXY) \
                tunnels the upstream connections through an HTTP proxy with CONNECT. --inbox HOST:PORT serves \
                a page and a JSON API (/api/v1, as serve --inbox) listing what senders sent: each notification \
                with its sender, the request it went upstream as and its verdict (accepted, or the binary \
                status the sender was answered and why, e.g. "8 HTTP/2 400 BadDeviceToken").
                """,
            options: [
                Options.host.spec, Options.port.spec, Options.feedbackPort.spec, Options.noFeedback.spec,
                Options.certificate.spec, Options.key.spec, Options.clientCA.spec, Options.clientFingerprint.spec,
                Options.upstream.spec, Options.sandbox.spec,
                Options.upstreamCAFile.spec, SendCommand.HTTP2Options.authKey.spec, SendCommand.HTTP2Options.keyID.spec,
                SendCommand.HTTP2Options.teamID.spec, Options.upstreamCertificate.spec, Options.upstreamKey.spec,
                Options.routes.spec, Options.topic.spec, Options.store.spec, Options.sessionTicketKey.spec,
                Options.claimLifetime.spec, Options.parkAfter.spec, Options.window.spec,
                Options.strictOrder.spec,
                Options.upstreamConnections.spec, Options.maximumConnections.spec, Options.idleTimeout.spec,
                Options.drainTimeout.spec, Options.tlsMaximum.spec, ProxyOptions.url.spec, MetricsOptions.address.spec,
                InboxOptions.address.spec, InboxOptions.size.spec, Options.json.spec, CommonOptions.quiet.spec,
            ] + CredentialOptions.passphraseOnly,
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                // From the package root, with `legacy-push serve --http2 --auth-key
                // ABC123DEFG:DEF123GHIJ:Fixtures/certs/AuthKey_ABC123DEFG.p8` running on 2197.
                "legacy-push bridge --upstream 127.0.0.1:2197 --upstream-ca-file Fixtures/certs/ca.pem "
                    + "--auth-key Fixtures/certs/AuthKey_ABC123DEFG.p8 --team-id DEF123GHIJ",
                "P12_PASS=secret legacy-push bridge --upstream 127.0.0.1:2197 --upstream-ca-file Fixtures/certs/ca.pem "
                    + "--upstream-cert Fixtures/certs/universal-modern.p12 --passphrase-env P12_PASS",
                "legacy-push bridge --cert Fixtures/certs/server.pem --key Fixtures/certs/server.key "
                    + "--client-ca Fixtures/certs/chain.pem --client-fingerprint "
                    + "87:6C:E4:F8:20:7E:DC:D1:E9:0A:90:75:DA:77:9A:FF:F5:C5:66:C2:D7:84:DF:84:A6:48:1C:F8:B6:54:B5:26 "
                    + "--upstream 127.0.0.1:2197 --upstream-ca-file Fixtures/certs/ca.pem "
                    + "--auth-key Fixtures/certs/AuthKey_ABC123DEFG.p8 --team-id DEF123GHIJ --topic com.example.legacy",
                // In production: your gateway identity, your senders' CA, your team's key.
                "legacy-push bridge --cert gateway.pem --key gateway.key --client-ca legacy-ca.pem "
                    + "--auth-key AuthKey_ABC123DEFG.p8 --team-id DEF123GHIJ",
            ])
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        // Every option is checked before anything is loaded, opened or printed.
        let host = try arguments.required(Options.host)
        let port = try arguments.required(Options.port)
        let feedbackPort = arguments.isSet(Options.noFeedback) ? nil : try arguments.required(Options.feedbackPort)
        let window = try arguments.value(Options.window)
        let storePath = try arguments.required(Options.store)
        let upstreamEndpoint: Endpoint
        if let given = try arguments.value(Options.upstream) {
            if arguments.isSet(Options.sandbox) {
                throw CLIError.usage("give either --upstream or --sandbox, not both")
            }
            upstreamEndpoint = given
        } else {
            upstreamEndpoint = (arguments.isSet(Options.sandbox) ? ProviderServer.sandbox : .production).endpoint
        }
        let fingerprints = try arguments.values(Options.clientFingerprint)
        let json = arguments.isSet(Options.json)
        let quiet = arguments.isSet(CommonOptions.quiet)
        let proxy = try ProxyOptions.resolve(arguments, for: upstreamEndpoint.host)
        let metered = try MetricsOptions.metrics(arguments)
        let inboxed = try InboxOptions.inbox(arguments)

        let routesPath = try arguments.value(Options.routes)
        let routes = try routesPath.map { try loadRoutes($0) }
        let credentials =
            try routes.map { routes in
                if let option = arguments.given(["auth-key", "key-id", "team-id", "upstream-cert", "upstream-key"])
                    .first
                {
                    throw CLIError.usage("--routes names each route's upstream credential: leave out --\(option)")
                }
                return routes.routes[0].credentials
            } ?? upstreamCredentials(arguments, console: console)
        let (identity, senderCAs) = try senderSide(
            arguments, console: console, pinned: !fingerprints.isEmpty, routed: routes != nil)
        var upstream = ProviderClient.Configuration(server: .custom(upstreamEndpoint), credentials: credentials)
        if let path = try arguments.value(Options.upstreamCAFile) {
            let bytes = try Files.read(path, limit: 16 * 1024 * 1024)
            do {
                upstream.trust = try .pem(bytes)
            } catch {
                throw CLIError.usage("'\(path)' holds no PEM certificate (--upstream-ca-file wants the CA in PEM)")
            }
        }
        upstream.connections = try arguments.required(Options.upstreamConnections)
        upstream.proxy = proxy
        upstream.topic = nil  // each sender's topic, unless --topic

        var configuration = Bridge.Configuration(
            identity: identity, senderCAs: senderCAs, upstream: upstream, storePath: storePath)
        configuration.pinnedFingerprints = fingerprints
        configuration.topic = try arguments.value(Options.topic)
        configuration.routes = routes
        configuration.host = host
        configuration.port = port
        configuration.feedbackPort = feedbackPort
        if let window { configuration.window = window }
        configuration.strictOrder = arguments.isSet(Options.strictOrder)
        configuration.maximumConnections = try arguments.required(Options.maximumConnections)
        configuration.idleTimeout = try arguments.required(Options.idleTimeout)
        configuration.drainTimeout = try arguments.required(Options.drainTimeout)
        configuration.claimLifetime = try arguments.required(Options.claimLifetime)
        configuration.parkAfter = try arguments.value(Options.parkAfter)
        configuration.maximumTLSVersion = try arguments.required(Options.tlsMaximum)
        configuration.sessionTicketKey = try arguments.value(Options.sessionTicketKey).map(Self.sessionTicketKey)
        let log = BridgeLog(console: console, json: json, quiet: quiet)
        configuration.events = { log.record($0) }
        if let metrics = metered?.metrics { configuration.reportMetrics(to: metrics) }
        configuration.inbox = inboxed?.inbox

        let bridge = try Bridge(configuration: configuration)
        let metricsServer = metered.map { metrics, endpoint in
            metrics.observe(bridge)
            return MetricsOptions.server(metrics, at: endpoint) { bridge.readiness() }
        }
        // SIGHUP reloads the routes file; a file that does not load keeps the routes running.
        let hangups = routesPath.map { path in
            HangupWatch {
                do {
                    let reload = try bridge.reload(routes: loadRoutes(path))
                    log.line("routes reloaded from \(path): \(reload)")
                } catch {
                    log.line("routes not reloaded, the old ones stay: \(reloadFailure(error))")
                }
            }
        }
        defer { hangups?.cancel() }
        try await InterruptWatch.serve(
            start: {
                try await MetricsOptions.start(inboxed?.server) {
                    try await MetricsOptions.start(metricsServer) { try await bridge.start() }
                }
            },
            announce: { started in
                let ((endpoints, metricsEndpoint), inboxEndpoint) = started
                let through = proxy.map { " through \($0)" } ?? ""
                log.line("listening on \(endpoints.gateway) (binary, bridging to \(upstreamEndpoint)\(through))")
                if let feedback = endpoints.feedback { log.line("feedback on \(feedback)") }
                if let metricsEndpoint { log.line(MetricsOptions.announcement(metricsEndpoint)) }
                if let inboxEndpoint { log.line(InboxOptions.announcement(inboxEndpoint)) }
                console.flush()
            },
            stop: {
                if !quiet {
                    // Senders with notifications in flight hold the stop for up to the drain.
                    console.diagnostic(
                        "stopping: up to \(Option<Duration>.formatSeconds(configuration.drainTimeout)) s for the "
                            + "senders' last verdicts (signal again to stop at once)")
                }
                await bridge.stop()
                await metricsServer?.stop()
                await inboxed?.server.stop()
            })
        let statistics = bridge.statistics
        if json {
            console.print(BridgeLog.summaryJSON(statistics))
        } else {
            console.diagnostic("stopped: \(statistics)")
        }
        return .success
    }

    /// The routes file at `path` (relative paths in it are relative to its folder).
    /// The session ticket key in `path`: exactly 80 bytes, in a file no one but its owner can read.
    static func sessionTicketKey(_ path: String) throws -> [UInt8] {
        let bytes = try Files.read(path, limit: 4096)
        guard bytes.count == Bridge.Configuration.sessionTicketKeyLength else {
            throw CLIError.usage(
                "'\(path)' holds \(bytes.count) bytes; a session ticket key is "
                    + "\(Bridge.Configuration.sessionTicketKeyLength) (make one with: head -c 80 /dev/urandom > \(path))"
            )
        }
        let mode = FileSystem.permissions(of: path) ?? 0
        guard mode & 0o077 == 0 else {
            throw CLIError.usage(
                "'\(path)' can be read by others (mode \(String(mode & 0o777, radix: 8))): whoever reads the session "
                    + "ticket key can open senders' sessions; chmod 600 it")
        }
        return bytes
    }

    static func loadRoutes(_ path: String) throws -> BridgeRoutes {
        let bytes = try Files.read(path, limit: 16 * 1024 * 1024)
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return try BridgeRoutes(json: bytes, source: path) { named in
            let full = named.hasPrefix("/") || !path.contains("/") ? named : folder + "/" + named
            do {
                return try Files.read(full, limit: 16 * 1024 * 1024)
            } catch let error as CLIError {
                throw LegacyAPNsError(.fileError, error.message)
            }
        }
    }

    /// Why a reload failed, in one line.
    private static func reloadFailure(_ error: any Error) -> String {
        if let error = error as? LegacyAPNsError { return error.reason }
        if let error = error as? CLIError { return error.message }
        return "\(error)"
    }

    /// `--auth-key` (token auth) or `--upstream-cert` (certificate auth).
    static func upstreamCredentials(_ arguments: ParsedArguments, console: Console) throws -> ProviderCredentials {
        let hasKey = arguments.has(SendCommand.HTTP2Options.authKey)
        let hasCertificate = arguments.has(Options.upstreamCertificate)
        if hasKey, hasCertificate {
            throw CLIError.usage("give either --auth-key (token auth) or --upstream-cert (certificate auth), not both")
        }
        if hasCertificate {
            let path = try arguments.required(Options.upstreamCertificate)
            let keyPath = try arguments.value(Options.upstreamKey)
            let loaded = try CredentialOptions.loadCredentials(
                path, keyPath: keyPath, arguments: arguments, console: console)
            return .certificate(try CredentialOptions.identity(loaded, certPath: path, keyPath: keyPath))
        }
        if arguments.has(Options.upstreamKey) { throw CLIError.usage("--upstream-key needs --upstream-cert") }
        guard hasKey else {
            if let option = arguments.given(["key-id", "team-id"]).first {
                throw CLIError.usage("--\(option) needs --auth-key (token authentication)")
            }
            throw CLIError.usage(
                "the bridge needs upstream credentials: --auth-key AuthKey_<KEYID>.p8 with --team-id (token auth), "
                    + "or --upstream-cert PATH (the provider certificate)")
        }
        return try SendCommand.tokenCredentials(try arguments.required(SendCommand.HTTP2Options.authKey), arguments)
    }

    /// The identity shown to senders and the CAs their certificates must chain to.
    static func senderSide(_ arguments: ParsedArguments, console: Console, pinned: Bool, routed: Bool = false) throws
        -> (ClientIdentity, [Certificate])
    {
        let givenCA = try arguments.value(Options.clientCA)
        if !arguments.has(Options.certificate) {
            if arguments.has(Options.key) { throw CLIError.usage("--key needs --cert") }
            guard givenCA == nil, !pinned else {
                throw CLIError.usage(
                    "give --cert (with --key unless it holds the key): the identity the bridge shows senders")
            }
            let directory = try BundledCertificates.require(for: "bridge")
            console.diagnostic(
                "using the test certificates in \(directory) (senders: --ca-file \(directory)/ca.pem and a client "
                    + "certificate from there)")
            let identity = try ClientIdentity(
                pem: Files.read(directory + "/server.pem"), keyPEM: Files.read(directory + "/server.key"),
                passphrase: nil)
            return (identity, Certificate.certificates(pemRepresentation: try Files.read(directory + "/chain.pem")))
        }
        guard givenCA != nil || pinned || routed else {
            throw CLIError.usage(
                "give --client-ca PATH or --client-fingerprint SHA256: which senders may connect (never anyone)")
        }
        let path = try arguments.required(Options.certificate)
        let keyPath = try arguments.value(Options.key)
        let loaded = try CredentialOptions.loadCredentials(
            path, keyPath: keyPath, arguments: arguments, console: console)
        let identity = try CredentialOptions.identity(loaded, certPath: path, keyPath: keyPath)
        var trust: [Certificate] = []
        if let givenCA {
            trust = Certificate.certificates(pemRepresentation: try Files.read(givenCA))
            guard !trust.isEmpty else { throw CLIError.usage("'\(givenCA)' holds no PEM certificate (--client-ca)") }
        }
        return (identity, trust)
    }
}
