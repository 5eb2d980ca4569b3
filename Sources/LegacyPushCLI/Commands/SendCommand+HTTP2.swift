import APNsInput
internal import APNsRuntime
import CommandLineKit
import HTTP2Client

/// `legacy-push send --http2`: the same input forms as the binary `send`, through Apple's HTTP/2
/// provider API (or a local one), with the same `.p12` or a `.p8` signing key.
extension SendCommand {
    enum HTTP2Options {
        static let http2 = Flag(
            "http2",
            help: "Send through Apple's HTTP/2 provider API (or a local one, serve --http2) instead of the "
                + "binary gateway. The same .p12 works; or give --auth-key with --team-id.")
        static let authKey = Option<String>.text(
            "auth-key", "path", help: "HTTP/2 token auth: the .p8 signing key (AuthKey_<KEYID>.p8).")
        static let keyID = Option<String>.text(
            "key-id", "id", help: "HTTP/2 token auth: the key's 10-character id (default: from the file name).")
        static let teamID = Option<String>.text(
            "team-id", "id", help: "HTTP/2 token auth: your 10-character team id.")
        static let topic = Option<String>.text(
            "topic", "bundle-id",
            help: "HTTP/2: apns-topic (required with --auth-key; default with a certificate: its topic).")
        static let pushType = Option<PushType>(
            "push-type", "type",
            help: "HTTP/2: apns-push-type (default: background when aps holds only content-available, else alert). "
                + "A JSON Lines pushType must be one Apple documents too (else exit 2 naming the line)."
        ) { text in
            let type = PushType(rawValue: text)
            if let problem = PushType.unknownTypeProblem(type, named: "--push-type") { throw CLIError.usage(problem) }
            return type
        }

        static let collapseID = Option<String>.text(
            "collapse-id", "id", help: "HTTP/2: apns-collapse-id (64 bytes at most).")
        static let apnsID = Option<APNsID>("apns-id", "uuid", help: "HTTP/2: the apns-id (one notification only).") {
            text in
            guard let id = APNsID(text) else {
                throw CLIError.usage(
                    "--apns-id expects a UUID such as 123e4567-e89b-12d3-a456-426614174000, got '\(text)'")
            }
            return id
        }
        static var specs: [OptionSpec] {
            [
                http2.spec, authKey.spec, keyID.spec, teamID.spec, topic.spec, pushType.spec, collapseID.spec,
                apnsID.spec, ProxyOptions.url.spec,
            ] + LiveActivityOptions.specs
        }

        /// Options of the binary protocol only.
        static let binaryOnly = ["format", "cache", "max-payload"]
        /// Options of the HTTP/2 API only.
        static let http2Only =
            ["auth-key", "key-id", "team-id", "topic", "push-type", "collapse-id", "apns-id", "proxy"]
            + LiveActivityOptions.all
    }

    static func runHTTP2(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        if let option = arguments.given(HTTP2Options.binaryOnly).first {
            throw CLIError.usage("--\(option) applies to the binary protocol, not to --http2")
        }
        if arguments.has(LiveActivityOptions.channel) { return try await runBroadcast(arguments, console: console) }
        let liveActivity = arguments.has(LiveActivityOptions.liveActivity)
        let endpoint = try http2Endpoint(
            arguments, sandbox: ProviderServer.sandbox.endpoint, production: ProviderServer.production.endpoint)
        let connections = try arguments.required(Options.connections)
        let retries = try arguments.required(Options.retries)
        let timeout = try arguments.required(Options.timeout)
        let json = arguments.isSet(Options.json)
        let credentials = try http2Credentials(arguments, console: console)
        var topic = try arguments.value(HTTP2Options.topic) ?? credentials.certificateTopic
        if credentials.usesTokens, topic == nil, !arguments.has(Options.input) {
            throw CLIError.usage("token authentication needs --topic BUNDLE_ID (one .p8 key serves every app)")
        }
        var pushType = try arguments.value(HTTP2Options.pushType)
        if liveActivity {
            if let pushType, pushType != .liveActivity {
                throw CLIError.usage("--live-activity pushes are of type liveactivity, not \(pushType)")
            }
            pushType = .liveActivity
        }
        if pushType == .liveActivity { topic = PushType.liveActivityTopic(topic) }

        // The input, checked whole before anything connects.
        let input = try await self.input(
            arguments, perNotification: Options.perNotification + ["apns-id", "collapse-id"] + LiveActivityOptions.all,
            validation: .http2(topic: topic, pushType: pushType, usesTokens: credentials.usesTokens)
        ) { try http2RequestsFromFlags(arguments, topic: topic, pushType: pushType, credentials: credentials) }

        var configuration = ProviderClient.Configuration(server: .custom(endpoint), credentials: credentials)
        configuration.trust = try ConnectionOptions.trust(arguments)
        configuration.topic = topic
        configuration.connections = connections
        configuration.connectTimeout = timeout
        configuration.proxy = try ProxyOptions.resolve(arguments, for: endpoint.host)
        configuration.delivery.reconnect = ReconnectPolicy(maximumConsecutiveFailures: retries)

        return try await deliver(
            arguments, console: console, total: input.count,
            output: SendHTTP2Output(console: console, json: json, input: input), endpoint: endpoint,
            makeClient: { try ProviderClient(configuration: configuration, events: $0) },
            send: { client in
                let report =
                    switch input {
                    case .list(let requests): await client.send(requests)
                    case .file(let file): await client.send(file.requests())
                    }
                // One send, then the connection it kept open closes (GOAWAY, close_notify).
                await client.shutdown()
                return report
            }
        ) { report in
            if let failure = report.failure, failure.code == .certificateRejected,
                let hint = report.rejected.lazy.compactMap({
                    credentialHint(for: $0.reason, credentials: credentials, endpoint: endpoint)
                }).first
            {
                report.failure = LegacyAPNsError(
                    failure.code, failure.reason + ": " + hint, underlying: failure.underlying)
            }
        }
    }

    /// `--auth-key` (with `--key-id`, `--team-id`) for token auth, else `--cert` for certificate auth.
    static func http2Credentials(_ arguments: ParsedArguments, console: Console) throws -> ProviderCredentials {
        guard let path = try arguments.value(HTTP2Options.authKey) else {
            if let option = arguments.given(["key-id", "team-id"]).first {
                throw CLIError.usage("--\(option) needs --auth-key (token authentication)")
            }
            guard arguments.has(CredentialOptions.certificate) else {
                throw CLIError.usage(
                    "give --cert PATH (the provider certificate, e.g. the old .p12) or --auth-key AuthKey_<KEYID>.p8 "
                        + "with --team-id")
            }
            return .certificate(try CredentialOptions.loadIdentity(arguments, console: console))
        }
        if arguments.has(CredentialOptions.certificate) {
            throw CLIError.usage("give either --cert (certificate auth) or --auth-key (token auth), not both")
        }
        return try tokenCredentials(path, arguments)
    }

    /// `--auth-key PATH` with `--key-id` (default: from the file name) and `--team-id`, checked by
    /// signing once (the bridge uses this too, where `--cert` means its own identity).
    static func tokenCredentials(_ path: String, _ arguments: ParsedArguments) throws -> ProviderCredentials {
        let key = try CredentialOptions.naming(path) { try SigningKey(pemRepresentation: Files.read(path)) }
        let fileName = String(path.split(separator: "/").last ?? "")
        guard let keyID = try arguments.value(HTTP2Options.keyID) ?? SigningKey.keyID(fromFileName: fileName) else {
            throw CLIError.usage(
                "give --key-id: '\(fileName)' is not named AuthKey_<KEYID>.p8, so the key id is unknown")
        }
        guard let teamID = try arguments.value(HTTP2Options.teamID) else {
            throw CLIError.usage("token authentication needs --team-id (your 10-character team id)")
        }
        // The signer checks both ids' shape; sign once now so a bad id is an input error here.
        _ = try key.signProviderToken(keyID: keyID, teamID: teamID, issuedAt: 0)
        return .token(key, keyID: keyID, teamID: teamID)
    }

    /// `--token` (repeatable) with a payload, as HTTP/2 requests, each checked as APNs would.
    static func http2RequestsFromFlags(
        _ arguments: ParsedArguments, topic: String?, pushType: PushType?, credentials: ProviderCredentials
    ) throws -> [ProviderRequest] {
        let tokens = try arguments.values(Options.token)
        guard !tokens.isEmpty else { throw CLIError.usage("missing --token (or --input with JSON Lines)") }
        let apnsID = try arguments.value(HTTP2Options.apnsID)
        if apnsID != nil, tokens.count > 1 {
            throw CLIError.usage("--apns-id names one notification: give one --token with it")
        }
        let payload = try http2Payload(arguments)
        let firstID = try arguments.value(Options.identifier)
        let priority = try NotificationOptions.priority(arguments, http2: true)
        let expiration = try arguments.value(NotificationOptions.expiry).map(Expiration.init(rawValue:))
        let collapseID = try arguments.value(HTTP2Options.collapseID)
        return try tokens.enumerated().map { index, token in
            var request = try ProviderRequest(
                deviceToken: token, payload: payload, topic: topic, pushType: pushType ?? .inferred(for: payload),
                apnsID: apnsID, expiration: expiration, priority: priority, collapseID: collapseID,
                identifier: firstID.map { $0 &+ UInt32(index) } ?? UInt32(index + 1))
            if let (_, explanation) = request.problem(usesTokens: credentials.usesTokens) {
                throw CLIError.usage(explanation)
            }
            if request.pushType == .liveActivity, let problem = LiveActivityPayload.problem(inPayload: payload) {
                throw CLIError.usage(problem)
            }
            request.pushType = pushType
            return request
        }
    }

    typealias HTTP2Input = SendInput<ProviderRequest>
}

/// What `send --http2` prints, in the shapes of `docs/cli-contract.md`.
struct SendHTTP2Output: SendPrinter {
    let console: Console
    let json: Bool
    let input: SendCommand.HTTP2Input

    func reportedID(identifier: UInt32?, position: UInt64) -> UInt64 {
        input.reportedID(identifier: identifier, position: position)
    }

    func rejected(_ rejection: ProviderRejection) {
        let id = reportedID(identifier: rejection.identifier, position: rejection.position)
        let reason = rejection.reason?.rawValue ?? "HTTP \(rejection.status)"
        if json {
            var line = JSONLine("rejected")
            line.add("id", id)
            line.add("token", rejection.token.hexString)
            line.add("status", rejection.status)
            line.add("reason", reason)
            line.add("apnsId", rejection.apnsID.description)
            if let timestamp = rejection.timestamp { line.add("timestamp", timestamp) }
            if let number = input.line(of: rejection.position) { line.add("line", number) }
            if rejection.isLocal { line.add("local", true) }
            if rejection.mayHaveBeenDelivered { line.add("mayHaveBeenDelivered", true) }
            console.print(line.text)
        } else {
            var text =
                "rejected: id \(id), token \(rejection.token.hexString), \(rejection.status) \(reason)"
                + (rejection.timestamp.map { " (since \($0) ms)" } ?? "")
            if rejection.isLocal { text += " (refused before sending)" }
            if rejection.mayHaveBeenDelivered { text += " (an earlier attempt may have delivered it)" }
            console.print(text)
        }
    }

    func summary(_ report: ProviderSendReport, endpoint: Endpoint) {
        let total = input.count
        let unknown = report.unknownFate
        let runs = NotSentRuns(
            notWritten: report.notSent.map { Int($0.position) }, firstUntaken: report.sent + 1, total: total)
        let notSent = runs.count
        let sent = total - notSent
        if json {
            for entry in unknown { console.print(event("unconfirmed", entry)) }
            for event in runs.events(naming: input, reportedID: reportedID) { console.print(event) }
            for duplicate in report.possiblyDuplicated {
                var line = JSONLine("possibleDuplicate")
                line.add("id", reportedID(identifier: duplicate.identifier, position: duplicate.position))
                line.add("token", duplicate.token.hexString)
                console.print(line.text)
            }
            var line = JSONLine("summary")
            line.add("sent", sent)
            line.add("accepted", report.accepted)
            line.add("rejected", report.rejected.count)
            line.add("unconfirmed", unknown.count)
            line.add("notSent", notSent)
            line.add("retried", report.retried)
            line.add("possibleDuplicates", report.possibleDuplicates)
            line.add("connections", report.connections)
            line.add("seconds", (report.seconds * 1000).rounded() / 1000)
            if let start = runs.resumeFrom, let number = input.line(of: UInt64(start)) {
                line.add("resumeFromLine", number)
            }
            if let failure = report.failure { line.add("failure", failure.reason) }
            console.print(line.text)
            return
        }
        let rate = report.seconds > 0 ? Int(Double(report.accepted) / report.seconds) : 0
        var lines = [
            "sent \(sent) of \(total) notification\(total == 1 ? "" : "s") to \(endpoint) (HTTP/2) in "
                + "\(SendOutput.format3(report.seconds)) s over \(report.connections) connection"
                + "\(report.connections == 1 ? "" : "s")\(rate > 0 ? " (\(rate) accepted/s)" : "")",
            "  accepted     \(report.accepted)",
            "  rejected     \(report.rejected.count)",
        ]
        if !unknown.isEmpty { lines.append("  unconfirmed  \(unknown.count) (sent, answer lost: \(unknown[0].why))") }
        if notSent > 0 { lines.append(runs.summaryLine { input.line(of: $0) }) }
        if report.retried > 0 { lines.append("  retried      \(report.retried)") }
        if report.possibleDuplicates > 0 {
            lines.append(
                "  \(report.possiblyDuplicated.count) sent again after an attempt was lost: devices may see them twice")
        }
        for line in lines { console.print(line) }
    }

    private func event(_ event: String, _ entry: ProviderUnconfirmed) -> String {
        var line = JSONLine(event)
        line.add("id", reportedID(identifier: entry.request.identifier, position: entry.position))
        line.add("token", entry.request.deviceToken.hexString)
        line.add("why", entry.why)
        if let number = input.line(of: entry.position) { line.add("line", number) }
        return line.text
    }
}
