internal import APNsRuntime
import CommandLineKit
import HTTP2Client

/// `send --http2 --live-activity start|update|end` (the payload of a Live Activity push) and
/// `send --http2 --channel ID` (a broadcast on a channel).
extension SendCommand {
    enum LiveActivityOptions {
        static let liveActivity = Option<LiveActivityPayload.Event>.choice(
            "live-activity",
            help: "HTTP/2: build a Live Activity payload for this event (push type liveactivity, topic + "
                + ".push-type.liveactivity, token auth); --content-state is required, and for start --alert, "
                + "--attributes-type and --attributes too.",
            ["start": .start, "update": .update, "end": .end])
        static let contentState = Option<String>.text(
            "content-state", "json", help: "Live Activity: aps.content-state, a JSON object (4096 bytes at most).")
        static let timestamp = Option<Int64>.integer(
            "timestamp", "unix-seconds", help: "Live Activity: aps.timestamp (default: now).", range: 0...Int64.max)
        static let staleDate = Option<Int64>.integer(
            "stale-date", "unix-seconds", help: "Live Activity: aps.stale-date.", range: 0...Int64.max)
        static let dismissalDate = Option<Int64>.integer(
            "dismissal-date", "unix-seconds",
            help: "Live Activity (end): aps.dismissal-date; one in the past dismisses at once.", range: 0...Int64.max)
        static let relevanceScore = Option<Double>(
            "relevance-score", "number", help: "Live Activity: aps.relevance-score."
        ) { text in
            guard let value = Double(text), value.isFinite else {
                throw CLIError.usage("--relevance-score expects a number, got '\(text)'")
            }
            return value
        }
        static let attributesType = Option<String>.text(
            "attributes-type", "name", help: "Live Activity (start): aps.attributes-type, the ActivityAttributes type.")
        static let attributes = Option<String>.text(
            "attributes", "json", help: "Live Activity (start): aps.attributes, a JSON object (4096 bytes at most).")
        static let inputPushToken = Flag(
            "input-push-token", help: "Live Activity (start): aps.input-push-token 1 (the activity hands out a token).")
        static let inputPushChannel = Option<String>.text(
            "input-push-channel", "channel-id", help: "Live Activity (start): subscribe it to this broadcast channel.")
        static let channel = Option<ChannelID>(
            "channel", "channel-id",
            help: "HTTP/2: send a broadcast on this channel (POST /4/broadcasts/apps/<--topic>) instead of "
                + "pushing to --token; the payload from --payload or --live-activity (no start), --priority "
                + "(default 10) and --expiry (default 0) its headers."
        ) { text in
            guard let id = ChannelID(text) else {
                throw CLIError.usage(
                    "--channel expects a channel id (base64, as channels create printed), got '\(text)'")
            }
            return id
        }

        static var specs: [OptionSpec] {
            [
                liveActivity.spec, contentState.spec, timestamp.spec, staleDate.spec, dismissalDate.spec,
                relevanceScore.spec, attributesType.spec, attributes.spec, inputPushToken.spec, inputPushChannel.spec,
                channel.spec,
            ]
        }

        /// Options of a Live Activity payload (besides `--live-activity` and `--alert`).
        static let builder = [
            "content-state", "timestamp", "stale-date", "dismissal-date", "relevance-score", "attributes-type",
            "attributes", "input-push-token", "input-push-channel",
        ]
        static let all = ["live-activity", "channel"] + builder
    }

    /// The payload of `send --http2`: from `--live-activity` and its options, or as for the
    /// binary protocol.
    static func http2Payload(_ arguments: ParsedArguments, forBroadcast: Bool = false) throws -> Payload {
        guard let event = try arguments.value(LiveActivityOptions.liveActivity) else {
            if let option = arguments.given(LiveActivityOptions.builder).first {
                throw CLIError.usage("--\(option) belongs to a Live Activity: add --live-activity start|update|end")
            }
            return try payload(arguments)
        }
        if arguments.has(NotificationOptions.payload) || arguments.has(NotificationOptions.payloadFile) {
            throw CLIError.usage("give either --payload/--payload-file or --live-activity, not both")
        }
        if let option = arguments.given(Options.builder.filter { $0 != "alert" }).first {
            throw CLIError.usage("--\(option) does not belong to a Live Activity payload")
        }
        func json(_ option: Option<String>) throws -> JSONValue? {
            guard let text = try arguments.value(option) else { return nil }
            do {
                return try JSONValue(parsing: Array(text.utf8))
            } catch let error as LegacyAPNsError {
                throw CLIError.usage("--\(option.name): \(error.reason)")
            }
        }
        guard let state = try json(LiveActivityOptions.contentState) else {
            throw CLIError.usage("--live-activity needs --content-state JSON (the activity's ContentState)")
        }
        var activity = LiveActivityPayload(
            event: event,
            timestamp: try arguments.value(LiveActivityOptions.timestamp)
                ?? SystemProviderClock().unixTime(), contentState: state)
        activity.staleDate = try arguments.value(LiveActivityOptions.staleDate)
        activity.dismissalDate = try arguments.value(LiveActivityOptions.dismissalDate)
        activity.relevanceScore = try arguments.value(LiveActivityOptions.relevanceScore)
        activity.alert = try arguments.value(Options.alert).map { .text($0) }
        activity.attributesType = try arguments.value(LiveActivityOptions.attributesType)
        activity.attributes = try json(LiveActivityOptions.attributes)
        activity.inputPushToken = arguments.isSet(LiveActivityOptions.inputPushToken)
        activity.inputPushChannel = try arguments.value(LiveActivityOptions.inputPushChannel)
        do {
            return try activity.build(forBroadcast: forBroadcast)
        } catch let error as LegacyAPNsError {
            throw CLIError.usage(error.reason)
        }
    }

    /// `send --http2 --channel ID --topic BUNDLE`: one broadcast.
    static func runBroadcast(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        let conflicting = ["token", "input", "from-line", "collapse-id", "apns-id", "push-type", "connections", "id"]
        if let option = arguments.given(conflicting).first {
            throw CLIError.usage("--\(option) does not apply to a broadcast (--channel)")
        }
        let channel = try arguments.required(LiveActivityOptions.channel)
        guard let bundleID = try arguments.value(HTTP2Options.topic) else {
            throw CLIError.usage("a broadcast needs --topic BUNDLE_ID (the app's bundle id, without a suffix)")
        }
        let payload = try http2Payload(arguments, forBroadcast: true)
        let priority = try NotificationOptions.priority(arguments, http2: true) ?? .immediate
        let expiration = Expiration(rawValue: try arguments.value(NotificationOptions.expiry) ?? 0)
        let request = BroadcastRequest(
            bundleID: bundleID, channelID: channel, payload: payload, priority: priority, expiration: expiration)
        if let (_, explanation) = request.problem() { throw CLIError.usage(explanation) }
        let endpoint = try http2Endpoint(
            arguments, sandbox: BroadcastServer.sandbox.endpoint, production: BroadcastServer.production.endpoint)
        var configuration = BroadcastClient.Configuration(
            server: .custom(endpoint), credentials: try http2Credentials(arguments, console: console))
        configuration.trust = try ConnectionOptions.trust(arguments)
        configuration.timeout = try arguments.required(Options.timeout)
        configuration.proxy = try ProxyOptions.resolve(arguments, for: endpoint.host)
        let client = try BroadcastClient(configuration: configuration)
        let result = try await client.send(request)
        await client.close()
        let json = arguments.isSet(Options.json)
        switch result {
        case .success(let response):
            if json {
                var line = JSONLine("broadcast")
                line.add("channelId", channel.rawValue)
                line.add("status", response.status)
                if let id = response.requestID { line.add("requestId", id.description) }
                if let id = response.uniqueID { line.add("uniqueId", id.description) }
                console.print(line.text)
            } else {
                console.print(
                    "broadcast on channel \(channel) to \(endpoint): accepted"
                        + (response.requestID.map { ", apns-request-id \($0)" } ?? "")
                        + (response.uniqueID.map { ", apns-unique-id \($0)" } ?? ""))
            }
            return .success
        case .failure(let refusal):
            ChannelsCommand.printRefusal(refusal, channel: channel, json: json, console: console)
            return .refused
        }
    }

    /// `--gateway`, or Apple's host for `--sandbox` / production.
    static func http2Endpoint(
        _ arguments: ParsedArguments, sandbox: Endpoint, production: Endpoint
    ) throws -> Endpoint {
        if let given = try arguments.value(Options.gateway) {
            if arguments.isSet(ConnectionOptions.sandbox) {
                throw CLIError.usage("give either --gateway or --sandbox, not both")
            }
            return given
        }
        return arguments.isSet(ConnectionOptions.sandbox) ? sandbox : production
    }
}
