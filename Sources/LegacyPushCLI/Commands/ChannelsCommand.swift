internal import APNsRuntime
import CommandLineKit
import HTTP2Client

/// `legacy-push channels create|read|list|delete`: broadcast channels through Apple's channel
/// management API (``ChannelClient``).
enum ChannelsCommand {
    enum Options {
        static let topic = SendCommand.HTTP2Options.topic.help("The app's bundle id (no suffix).")
        static let storagePolicy = Option<MessageStoragePolicy>.choice(
            "storage-policy",
            help: "0: no message stored (a higher budget; broadcasts need --expiry 0); 1: the most recent message "
                + "kept up to 8 hours. Fixed for the channel's life.",
            ["0": .noMessageStored, "1": .mostRecentMessageStored])
        static let channel = SendCommand.LiveActivityOptions.channel.help(
            "The channel id (channels create printed it).")
        static let requestID = Option<APNsID>(
            "request-id", "uuid", help: "apns-request-id for the request (echoed in the answer; default: APNs's)."
        ) { text in
            guard let id = APNsID(text) else { throw CLIError.usage("--request-id expects a UUID, got '\(text)'") }
            return id
        }
        static let json = Flag("json", help: "Print JSON: one object a line.")
        static let gateway = ConnectionOptions.address("gateway", defaultPort: 2195)

        static var common: [OptionSpec] {
            [
                topic.spec, requestID.spec, json.spec, SendCommand.HTTP2Options.authKey.spec,
                SendCommand.HTTP2Options.keyID.spec, SendCommand.HTTP2Options.teamID.spec,
            ] + CredentialOptions.all + [
                ConnectionOptions.sandbox.spec,
                gateway.help(
                    "Connect here instead of Apple's management host (api-manage-broadcast.push.apple.com:2196, "
                        + "with --sandbox api-manage-broadcast.sandbox.push.apple.com:2195), e.g. serve --http2's "
                        + "port or its --management-port."
                ).spec,
                ConnectionOptions.caFile.spec, SendCommand.Options.timeout.spec, ProxyOptions.url.spec,
            ]
        }
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "channels",
            abstract: "Create, read, list and delete broadcast channels (iOS 18 Live Activity broadcast).",
            discussion: """
                Apple's channel management API: the channel id travels in the apns-channel-id header, the list \
                is /all-channels, and every answer carries apns-request-id. Send a broadcast on a channel with \
                'send --http2 --channel ID --topic BUNDLE'. Exit status: 0 done, 1 refused by APNs (the reason \
                is printed), 2 bad input, 3 connection or TLS failure.
                """,
            subcommands: [
                command(
                    "create", "Create a channel; prints its id.", [Options.storagePolicy.spec],
                    examples: [
                        "legacy-push channels create --gateway 127.0.0.1:2197 --ca-file Fixtures/certs/ca.pem "
                            + "--auth-key Fixtures/certs/AuthKey_ABC123DEFG.p8 --team-id DEF123GHIJ "
                            + "--topic com.example.legacy --storage-policy 1"
                    ]
                ) { arguments, client, bundleID, requestID, console in
                    let policy = try arguments.required(Options.storagePolicy)
                    let result = try await client.create(
                        bundleID: bundleID, storagePolicy: policy, requestID: requestID)
                    return report(result, channel: nil, arguments, console) { id in
                        print(id, extra: [:], arguments, console, human: id.rawValue)
                    }
                },
                command("read", "Print a channel's storage policy and push type.", [Options.channel.spec]) {
                    arguments, client, bundleID, requestID, console in
                    let id = try arguments.required(Options.channel)
                    let result = try await client.read(id, bundleID: bundleID, requestID: requestID)
                    return report(result, channel: id, arguments, console) { configuration in
                        print(
                            id, extra: ["messageStoragePolicy": "\(configuration.storagePolicy.rawValue)"],
                            pushType: configuration.pushType, arguments, console,
                            human:
                                "\(id): message-storage-policy \(configuration.storagePolicy), push-type \(configuration.pushType)"
                        )
                    }
                },
                command("list", "Print the app's channels, one id a line.", []) {
                    arguments, client, bundleID, requestID, console in
                    let result = try await client.list(bundleID: bundleID, requestID: requestID)
                    return report(result, channel: nil, arguments, console) { ids in
                        for id in ids { print(id, extra: [:], arguments, console, human: id.rawValue) }
                    }
                },
                command("delete", "Delete a channel (irreversible).", [Options.channel.spec]) {
                    arguments, client, bundleID, requestID, console in
                    let id = try arguments.required(Options.channel)
                    let result = try await client.delete(id, bundleID: bundleID, requestID: requestID)
                    return report(result, channel: id, arguments, console) { _ in
                        print(id, extra: ["deleted": "true"], arguments, console, human: "deleted \(id)")
                    }
                },
            ])
    }

    typealias Body = @Sendable (ParsedArguments, ChannelClient, String, APNsID?, Console) async throws -> ExitStatus

    /// One subcommand: the common options plus `extra`, and a body given a connected client.
    static func command(
        _ name: String, _ abstract: String, _ extra: [OptionSpec], examples: [String] = [], _ body: @escaping Body
    ) -> CommandSpec {
        CommandSpec(
            name: name, abstract: abstract, options: extra + Options.common,
            run: { arguments, console in
                guard let bundleID = try arguments.value(Options.topic) else {
                    throw CLIError.usage("give --topic BUNDLE_ID (the app's bundle id)")
                }
                if let suffix = BroadcastRequest.topicSuffix(of: bundleID) {
                    throw CLIError.usage("--topic is the bundle id without '\(suffix)'")
                }
                let requestID = try arguments.value(Options.requestID)
                let endpoint = try SendCommand.http2Endpoint(
                    arguments, sandbox: ChannelServer.sandbox.endpoint, production: ChannelServer.production.endpoint)
                var configuration = ChannelClient.Configuration(
                    server: .custom(endpoint),
                    credentials: try SendCommand.http2Credentials(arguments, console: console))
                configuration.trust = try ConnectionOptions.trust(arguments)
                configuration.timeout = try arguments.required(SendCommand.Options.timeout)
                configuration.proxy = try ProxyOptions.resolve(arguments, for: endpoint.host)
                let client = try ChannelClient(configuration: configuration)
                let status = try await body(arguments, client, bundleID, requestID, console)
                await client.close()
                return status
            }, examples: examples)
    }

    /// One result line: `human`, or with `--json` `{"channelId":"...",...}`.
    private static func print(
        _ id: ChannelID, extra: KeyValuePairs<String, String>, pushType: String? = nil, _ arguments: ParsedArguments,
        _ console: Console, human: String
    ) {
        guard arguments.isSet(Options.json) else {
            console.print(human)
            return
        }
        var line = JSONLine()
        line.add("channelId", id.rawValue)
        for (key, value) in extra {
            if let number = Int(value) {
                line.add(key, number)
            } else if let flag = Bool(value) {
                line.add(key, flag)
            } else {
                line.add(key, value)
            }
        }
        if let pushType { line.add("pushType", pushType) }
        console.print(line.text)
    }

    /// A request's result: `success` prints it (exit 0), a refusal is printed (exit 1).
    private static func report<Value>(
        _ result: Result<Value, ChannelRefusal>, channel: ChannelID?, _ arguments: ParsedArguments,
        _ console: Console, success: (Value) -> Void
    ) -> ExitStatus {
        switch result {
        case .success(let value):
            success(value)
            return .success
        case .failure(let refusal):
            printRefusal(refusal, channel: channel, json: arguments.isSet(Options.json), console: console)
            return .refused
        }
    }

    /// A refusal: `{"event":"rejected","status":400,"reason":"...","requestId":"..."}` with
    /// `--json`, else a line on stderr.
    static func printRefusal(_ refusal: ChannelRefusal, channel: ChannelID?, json: Bool, console: Console) {
        let response = refusal.response
        if json {
            var line = JSONLine("rejected")
            if let channel { line.add("channelId", channel.rawValue) }
            line.add("status", response.status)
            line.add("reason", response.reason?.rawValue ?? "HTTP \(response.status)")
            if let id = response.requestID { line.add("requestId", id.description) }
            console.print(line.text)
        } else {
            console.diagnostic(
                "refused: \(refusal)\(channel.map { " (channel \($0))" } ?? "")"
                    + (response.requestID.map { ", apns-request-id \($0)" } ?? ""))
        }
    }
}
