import APNsInput
internal import APNsRuntime
import CommandLineKit
import LegacyAPNs

/// `legacy-push send`: one notification from flags, or many from JSON Lines.
enum SendCommand {
    enum Options {
        static let token = RepeatedOption<DeviceToken>(
            "token", "hex", help: "A device token: 64 hex digits; case, spaces and < > are ignored."
        ) { try DeviceToken(hexString: $0) }
        static let alert = Option<String>.text("alert", "text", help: "Build the payload: aps.alert.")
        static let badge = Option<Int>.integer(
            "badge", help: "Build the payload: aps.badge.", range: 0...Int(Int32.max))
        static let sound = Option<String>.text("sound", "name", help: "Build the payload: aps.sound.")
        static let category = Option<String>.text("category", "name", help: "Build the payload: aps.category.")
        static let threadID = Option<String>.text("thread-id", "id", help: "Build the payload: aps.thread-id.")
        static let contentAvailable = Flag("content-available", help: "Build the payload: aps.content-available = 1.")
        static let mutableContent = Flag("mutable-content", help: "Build the payload: aps.mutable-content = 1.")
        static let identifier = NotificationOptions.identifier.help(
            "Identifier reported back for the first --token (then +1 each).")
        static let input = Option<String>.text("input", "path", help: "JSON Lines to send, or - for stdin.")
        static let fromLine = Option<Int>.integer(
            "from-line", help: "With --input: start at this line (resume a send that stopped; see its summary).",
            range: 1...Int.max)
        static let cache = Option<Int>.integer(
            "cache", help: "Notifications kept for resending per connection; a connection confirms after this many.",
            range: 1...10_000_000, default: DeliveryStateMachine.Configuration.defaultCacheCapacity)
        static let connections = Option<Int>.integer(
            "connections", help: "Parallel gateway connections.", range: 1...64, default: 1)
        static let retries = Option<Int>.integer(
            "retries", help: "Connection failures in a row, without progress, before giving up.", range: 1...100,
            default: ReconnectPolicy().maximumConsecutiveFailures)
        static let timeout = Option<Duration>.seconds(
            "timeout", help: "Seconds to connect, and to wait for the gateway's answer.", default: .seconds(10))
        static let json = Flag(
            "json", help: "Print one JSON line per notification that did not go through, and a summary line.")
        static let gateway = ConnectionOptions.address("gateway", defaultPort: 2195)

        /// The flags a JSON Lines input carries in its lines.
        static let perNotification = [
            "token", "payload", "payload-file", "alert", "badge", "sound", "category", "thread-id", "id",
        ]
        static let builder = [
            "alert", "badge", "sound", "category", "thread-id", "content-available", "mutable-content",
        ]
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "send",
            abstract: "Send notifications through a binary gateway (--http2: the HTTP/2 API), accounting for each.",
            discussion: """
                Give --token (repeatable) with a payload, or --input with JSON Lines, one notification a line: \
                {"token":"<hex>","payload":{...},"id":7,"expiry":0,"priority":10}. The whole input is checked \
                before anything is sent.

                Every notification ends in exactly one bucket: accepted (the gateway confirmed it), rejected \
                (with the gateway's status), unconfirmed (written, then the connection was lost before a \
                verdict: it may or may not have been delivered), or not sent (certainly not delivered). \
                Success is never assumed: the end of a send is confirmed with a deliberately invalid frame \
                whose error response proves everything before it was accepted. When a send stops early \
                (Ctrl-C, a gateway that stays unreachable), the summary names the line to resume from with \
                --from-line.

                Ctrl-C (or SIGTERM) settles: nothing more is taken or resent, the notifications in flight \
                get their verdict, and the report follows. A second Ctrl-C abandons what is still in flight \
                (reported unconfirmed). With --json every notification not sent is named: one \
                {"event":"notSent","fromLine":A,"toLine":B,"count":N} per run of input lines.

                Exit status: 0 when the gateway confirmed every notification; 1 when some were rejected, \
                unconfirmed or not sent; 2 for bad input; 3 when the connection or TLS failed; 130 when \
                interrupted.
                """,
            options: [
                Options.token.spec, NotificationOptions.payload.spec, NotificationOptions.payloadFile.spec,
                Options.alert.spec, Options.badge.spec, Options.sound.spec, Options.category.spec,
                Options.threadID.spec, Options.contentAvailable.spec, Options.mutableContent.spec,
                Options.identifier.spec, NotificationOptions.expiry.spec, NotificationOptions.priority.spec,
                Options.input.spec, Options.fromLine.spec, CommonOptions.format.spec, Options.cache.spec,
                Options.connections.spec, CommonOptions.maximumPayload.spec, Options.retries.spec,
                Options.timeout.spec, Options.json.spec, CommonOptions.quiet.spec,
            ] + HTTP2Options.specs + CredentialOptions.all + [
                ConnectionOptions.sandbox.spec, Options.gateway.spec, ConnectionOptions.caFile.spec,
            ],
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                "legacy-push send --gateway 127.0.0.1:2195 --ca-file Fixtures/certs/ca.pem --cert Fixtures/certs/universal-modern.p12 --passphrase-file Fixtures/certs/passphrase.txt --token 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad --alert Hello",
                "legacy-push send --gateway 127.0.0.1:2195 --ca-file ca.pem --cert client.p12 --passphrase-env P12_PASS --input batch.jsonl --json",
                "legacy-push send ... --input batch.jsonl --from-line 40001",
            ])
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        if arguments.isSet(HTTP2Options.http2) { return try await runHTTP2(arguments, console: console) }
        if let option = arguments.given(HTTP2Options.http2Only).first {
            throw CLIError.usage("--\(option) applies to the HTTP/2 API: add --http2")
        }
        // Options first, so a typo never costs a passphrase prompt or a connection.
        let format = try arguments.required(CommonOptions.format)
        let maximumPayload = try arguments.required(CommonOptions.maximumPayload)
        let encoder = FrameEncoder(maximumPayloadSize: maximumPayload)
        let endpoint = try gatewayEndpoint(arguments)
        let connections = try arguments.required(Options.connections)
        let cache = try arguments.required(Options.cache)
        let retries = try arguments.required(Options.retries)
        let timeout = try arguments.required(Options.timeout)
        let json = arguments.isSet(Options.json)

        // The input next: nothing connects until the whole input is known to be good.
        let input = try await self.input(
            arguments, perNotification: Options.perNotification, validation: .binary(encoder: encoder, format: format)
        ) { try notificationsFromFlags(arguments, encoder: encoder, format: format) }

        let identity = try CredentialOptions.loadIdentity(arguments, console: console)
        var configuration = PushClient.Configuration(
            gateway: .custom(host: endpoint.host, port: endpoint.port),
            tls: TLSConfiguration(identity: identity, trust: try ConnectionOptions.trust(arguments)))
        configuration.format = format
        configuration.maximumPayloadSize = maximumPayload
        configuration.connections = connections
        configuration.connectTimeout = timeout
        configuration.verdictTimeout = timeout
        configuration.delivery = DeliveryStateMachine.Configuration(
            cacheCapacity: cache, reconnect: ReconnectPolicy(maximumConsecutiveFailures: retries))

        return try await deliver(
            arguments, console: console, total: input.count,
            output: SendOutput(console: console, json: json, input: input), endpoint: endpoint,
            makeClient: { try PushClient(configuration: configuration, events: $0) }
        ) { client in
            switch input {
            case .list(let notifications): await client.send(notifications)
            case .file(let file): await client.send(frames: file.frameBatches())
            }
        }
    }

    /// `--gateway`, or the reason there is none: Apple's binary gateways are gone.
    static func gatewayEndpoint(_ arguments: ParsedArguments) throws -> Endpoint {
        if let endpoint = try arguments.value(Options.gateway) {
            if arguments.isSet(ConnectionOptions.sandbox) {
                throw CLIError.usage("give either --gateway or --sandbox, not both")
            }
            return endpoint
        }
        let retired = arguments.isSet(ConnectionOptions.sandbox) ? Gateway.sandbox : Gateway.production
        throw CLIError.usage(
            "Apple switched off the binary gateway (\(retired.endpoint)) on 2021-03-31: "
                + "send through the HTTP/2 API with 'legacy-push send --http2' (the same certificate works), "
                + "keep a legacy sender working with 'legacy-push bridge', "
                + "or give --gateway HOST:PORT for a gateway of your own")
    }

    typealias Input = SendInput<PushNotification>

    /// `--token` (repeatable) with `--payload`, `--payload-file` or the payload builder flags.
    static func notificationsFromFlags(_ arguments: ParsedArguments, encoder: FrameEncoder, format: FrameFormat) throws
        -> [PushNotification]
    {
        let tokens = try arguments.values(Options.token)
        guard !tokens.isEmpty else { throw CLIError.usage("missing --token (or --input with JSON Lines)") }
        let payload = try payload(arguments)
        var template = PushNotification(token: tokens[0], payload: payload)
        template.expiration = try arguments.value(NotificationOptions.expiry).map(Expiration.init(rawValue:))
        template.priority = try NotificationOptions.priority(arguments, http2: false)
        let firstID = try arguments.value(Options.identifier)
        return try tokens.enumerated().map { index, token in
            var notification = template
            notification.token = token
            notification.identifier = firstID.map { $0 &+ UInt32(index) } ?? UInt32(index + 1)
            try encoder.validate(notification, format: format)
            return notification
        }
    }

    static func payload(_ arguments: ParsedArguments) throws -> Payload {
        let usesBuilder = !arguments.given(Options.builder).isEmpty
        if arguments.has(NotificationOptions.payload) || arguments.has(NotificationOptions.payloadFile) {
            if usesBuilder {
                throw CLIError.usage(
                    "give either --payload/--payload-file or the payload flags (--alert, --badge, ...)")
            }
            return try Payload(json: NotificationOptions.payloadBytes(arguments))
        }
        guard usesBuilder else {
            throw CLIError.usage("missing payload: give --payload, --payload-file, or --alert/--badge/--sound/...")
        }
        var builder = PayloadBuilder()
        builder.alert = try arguments.value(Options.alert).map { .text($0) }
        builder.badge = try arguments.value(Options.badge)
        builder.sound = try arguments.value(Options.sound)
        builder.category = try arguments.value(Options.category)
        builder.threadID = try arguments.value(Options.threadID)
        builder.contentAvailable = arguments.isSet(Options.contentAvailable)
        builder.mutableContent = arguments.isSet(Options.mutableContent)
        return try builder.build()
    }
}
