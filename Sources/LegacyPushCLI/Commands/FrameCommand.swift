internal import APNsRuntime
import LegacyAPNs

/// `legacy-push frame encode` and `legacy-push frame decode`: byte-level work on frames.
enum FrameCommand {
    enum Options {
        static let token = Option<DeviceToken>(
            "token", "hex",
            help: "The device token: 64 hex digits (up to 200 for --format frame); case, spaces and < > are ignored.",
            required: true
        ) { try DeviceToken(hexString: $0) }
        static let allowInvalidJSON = Flag(
            "allow-invalid-json", help: "Encode a payload even if it is not valid JSON (for testing gateways).")
        static let json = Flag("json", help: "Print one JSON object per frame.")
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "frame",
            abstract: "Encode or decode raw binary-protocol frames.",
            subcommands: [encodeSpec, decodeSpec])
    }

    static var encodeSpec: CommandSpec {
        CommandSpec(
            name: "encode",
            abstract: "Write one notification frame's raw bytes to stdout.",
            discussion: """
                Defaults: enhanced format, identifier 0, expiry 0. With --format frame (command 2) \
                items 1 (token) and 2 (payload) are always written and items 3, 4, 5 only when \
                --id, --expiry, --priority are given, in ascending item order. The payload goes \
                into the frame byte for byte.
                """,
            options: [
                Options.token.spec,
                NotificationOptions.payload.help("The payload JSON, written exactly as given.").spec,
                NotificationOptions.payloadFile.spec, CommonOptions.format.spec, NotificationOptions.identifier.spec,
                NotificationOptions.expiry.spec, NotificationOptions.priority.help("Priority (item format only).").spec,
                CommonOptions.maximumPayload.spec, Options.allowInvalidJSON.spec,
            ],
            run: { arguments, console in try encode(arguments, console: console) },
            examples: [
                #"legacy-push frame encode --token 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad --payload '{"aps":{"alert":"Hi"}}' > hi.bin"#,
                "legacy-push frame encode --format frame --id 7 --priority 10 --token <hex> --payload-file p.json",
            ])
    }

    static var decodeSpec: CommandSpec {
        CommandSpec(
            name: "decode",
            abstract: "Decode a stream of frames (notifications and error responses).",
            discussion: """
                Reads the whole stream and prints one line per frame. A malformed or truncated \
                stream prints the frames before the problem, then one error line naming the byte \
                offset and the status a gateway would answer, and exits 2.
                """,
            arguments: [ArgumentSpec(name: "path", help: "The file to read, or - for stdin.", isOptional: true)],
            options: [Options.json.spec, CommonOptions.maximumPayload.spec],
            run: { arguments, console in try decode(arguments, console: console) },
            examples: ["legacy-push frame decode --json Fixtures/frames/enhanced-basic.bin"])
    }

    static func encode(_ arguments: ParsedArguments, console: Console) throws -> ExitStatus {
        let format = try arguments.required(CommonOptions.format)
        let maximumPayload = try arguments.required(CommonOptions.maximumPayload)
        let token = try arguments.required(Options.token)
        let payloadBytes = try NotificationOptions.payloadBytes(arguments)
        let payload =
            arguments.isSet(Options.allowInvalidJSON)
            ? Payload(unvalidatedBytes: payloadBytes) : try Payload(json: payloadBytes)

        var notification = PushNotification(token: token, payload: payload)
        if let id = try arguments.value(NotificationOptions.identifier) {
            guard format != .simple else {
                throw CLIError.usage("--id needs --format enhanced or frame (simple frames carry no identifier)")
            }
            notification.identifier = id
        }
        if let expiry = try arguments.value(NotificationOptions.expiry) {
            guard format != .simple else { throw CLIError.usage("--expiry needs --format enhanced or frame") }
            notification.expiration = Expiration(rawValue: expiry)
        }
        if let priority = try NotificationOptions.priority(arguments, http2: false) {
            guard format == .itemized else {
                throw CLIError.usage("--priority needs --format frame (only item frames carry a priority)")
            }
            notification.priority = priority
        }
        if format == .enhanced {
            notification.identifier = notification.identifier ?? 0
            notification.expiration = notification.expiration ?? .doNotStore
        }
        var writer = ByteWriter(capacity: 128 + payload.count)
        try FrameEncoder(maximumPayloadSize: maximumPayload).encode(notification, as: format, into: &writer)
        console.write(writer.bytes)
        return .success
    }

    static func decode(_ arguments: ParsedArguments, console: Console) throws -> ExitStatus {
        let path = arguments.positionals.first ?? "-"
        let json = arguments.isSet(Options.json)
        let maximumPayload = try arguments.required(CommonOptions.maximumPayload)
        var decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: maximumPayload, acceptsNotifications: true, acceptsErrorResponses: true))
        let descriptor = try Files.openForReading(path)
        defer { Files.close(descriptor) }
        var count = 0
        var line: [UInt8] = []
        func drain() throws(FrameDecodingError) {
            while true {
                let offset = decoder.consumedByteCount
                guard let frame = try decoder.next() else { return }
                count += 1
                line.removeAll(keepingCapacity: true)
                if json {
                    frame.appendJSON(to: &line)
                } else {
                    line.append(contentsOf: describe(frame, offset: offset).utf8)
                }
                line.append(0x0A)
                console.write(line)
            }
        }
        do {
            try Files.forEachChunk(descriptor, path: path) { chunk in
                decoder.append(chunk)
                try drain()
            }
            try decoder.finish()
        } catch let error as FrameDecodingError {
            let frameNumber = count + 1
            throw CLIError.usage("frame \(frameNumber) at byte \(error.frameOffset): \(error.description)")
        }
        if count == 0 { console.diagnostic("no frames in \(path == "-" ? "stdin" : "'\(path)'")") }
        return .success
    }

    /// One human line per frame.
    static func describe(_ frame: Frame, offset: Int) -> String {
        switch frame {
        case .errorResponse(let response):
            return "byte \(offset): error response, status \(response.status), id \(response.identifier)"
        case .notification(let notification, let command):
            var parts = ["byte \(offset): \(command)"]
            if let id = notification.identifier { parts.append("id \(id)") }
            if let expiry = notification.expiration { parts.append("expiry \(expiry)") }
            if let priority = notification.priority { parts.append("priority \(priority)") }
            parts.append("token \(notification.token.hexString)")
            parts.append("payload (\(notification.payload.count) bytes) \(notification.payload.string)")
            return parts.joined(separator: ", ")
        }
    }
}
