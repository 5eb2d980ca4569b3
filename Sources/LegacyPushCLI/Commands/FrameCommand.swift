internal import APNsRuntime
import LegacyAPNs

/// `legacy-push frame encode` and `legacy-push frame decode`: byte-level work on frames.
enum FrameCommand {
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
                .value(
                    "token", "hex",
                    "The device token: 64 hex digits (up to 200 for --format frame); case, spaces and < > are ignored."),
                .value("payload", "json", "The payload JSON, written exactly as given."),
                .value("payload-file", "path", "Read the payload from a file instead."),
                .value("format", "format", "simple (command 0), enhanced (1) or frame (2).", default: "enhanced"),
                .value("id", "n", "The notification identifier (0...4294967295)."),
                .value("expiry", "unix-seconds", "Expiry in UNIX seconds; 0 means do not store."),
                .value("priority", "10|5", "Priority (item format only)."),
                .value("max-payload", "bytes", "Largest payload to accept.", default: "2048"),
                .flag("allow-invalid-json", "Encode a payload even if it is not valid JSON (for testing gateways)."),
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
            options: [
                .flag("json", "Print one JSON object per frame."),
                .value("max-payload", "bytes", "Largest payload a valid frame may carry.", default: "2048"),
            ],
            run: { arguments, console in try decode(arguments, console: console) },
            examples: ["legacy-push frame decode --json Fixtures/frames/enhanced-basic.bin"])
    }

    static func format(_ arguments: ParsedArguments) throws -> FrameFormat {
        switch try arguments.choice("format", from: ["simple", "enhanced", "frame"]) {
        case "simple": .simple
        case "frame": .itemized
        default: .enhanced
        }
    }

    static func encode(_ arguments: ParsedArguments, console: Console) throws -> ExitStatus {
        let format = try format(arguments)
        let maximumPayload = try arguments.integer("max-payload", in: 1...65535) ?? Payload.defaultMaximumSize
        let token = try DeviceToken(hexString: arguments.required("token"))
        let payloadBytes = try PayloadInput.bytes(arguments)
        let payload =
            arguments.flag("allow-invalid-json")
            ? Payload(unvalidatedBytes: payloadBytes) : try Payload(json: payloadBytes)

        var notification = PushNotification(token: token, payload: payload)
        if let id = try arguments.integer("id", as: UInt32.self) {
            guard format != .simple else {
                throw CLIError.usage("--id needs --format enhanced or frame (simple frames carry no identifier)")
            }
            notification.identifier = id
        }
        if let expiry = try arguments.integer("expiry", as: UInt32.self) {
            guard format != .simple else { throw CLIError.usage("--expiry needs --format enhanced or frame") }
            notification.expiration = Expiration(rawValue: expiry)
        }
        if let priorityText = arguments.value("priority") {
            guard format == .itemized else {
                throw CLIError.usage("--priority needs --format frame (only item frames carry a priority)")
            }
            let value = try ParsedArguments.parseInteger(priorityText, option: "--priority", as: Int.self, in: nil)
            notification.priority = try Priority(validating: value)
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
        let json = arguments.flag("json")
        let maximumPayload = try arguments.integer("max-payload", in: 1...65535) ?? Payload.defaultMaximumSize
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

/// `--payload` / `--payload-file`, shared by `frame encode` and `send`.
enum PayloadInput {
    static func bytes(_ arguments: ParsedArguments) throws -> [UInt8] {
        switch (arguments.value("payload"), arguments.value("payload-file")) {
        case (let text?, nil): return Array(text.utf8)
        case (nil, let path?): return try Files.read(path, limit: 1024 * 1024)
        case (.some, .some): throw CLIError.usage("give either --payload or --payload-file, not both")
        case (nil, nil): throw CLIError.usage("missing --payload or --payload-file")
        }
    }
}
