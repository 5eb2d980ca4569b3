import APNsInput
internal import APNsRuntime
import CommandLineKit
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
        static let hexOut = Flag(
            "hex", help: "Write the frame as hex pairs (16 a line) instead of raw bytes, e.g. for a terminal.")
        static let hexIn = Flag(
            "hex",
            help: "The input is hex text, as the annotated Fixtures/frames/*.hex files and frame encode --hex write "
                + "it: hex pairs, white space, # comments.")
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

                The raw bytes go to stdout, so redirect them to a file (> frame.bin) or a pipe; on a \
                terminal, which cannot show them, the command refuses unless --hex asks for hex text \
                (which frame decode --hex reads back).
                """,
            options: [
                Options.token.spec,
                NotificationOptions.payload.help("The payload JSON, written exactly as given.").spec,
                NotificationOptions.payloadFile.spec, CommonOptions.format.spec, NotificationOptions.identifier.spec,
                NotificationOptions.expiry.spec, NotificationOptions.priority.help("Priority (item format only).").spec,
                CommonOptions.maximumPayload.spec, Options.allowInvalidJSON.spec, Options.hexOut.spec,
            ],
            run: { arguments, console in try encode(arguments, console: console) },
            examples: [
                #"legacy-push frame encode --token 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad --payload '{"aps":{"alert":"Hi"}}' > hi.bin"#,
                "legacy-push frame encode --format frame --id 7 --priority 10 --token <hex> --payload-file p.json",
                #"legacy-push frame encode --hex --token 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad --payload '{}'"#,
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

                Without a path it reads stdin, but not a terminal: give the file, pipe the bytes in, \
                or give - to type (hex, with --hex) into the terminal, ending with Ctrl-D.
                """,
            arguments: [
                ArgumentSpec(
                    name: "path", help: "The file to read, or - for stdin (the default when stdin is not a terminal).",
                    isOptional: true)
            ],
            options: [Options.json.spec, Options.hexIn.spec, CommonOptions.maximumPayload.spec],
            run: { arguments, console in try decode(arguments, console: console) },
            examples: [
                "legacy-push frame decode --json Fixtures/frames/enhanced-basic.bin",
                "legacy-push frame decode --hex Fixtures/frames/enhanced-basic.hex",
                "legacy-push frame encode --token <hex> --payload '{}' | legacy-push frame decode",
            ])
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
        if arguments.isSet(Options.hexOut) {
            console.write(Array(HexText.encode(writer.bytes).utf8))
            return .success
        }
        guard !console.stdoutIsTerminal else {
            throw CLIError.usage(
                "frame encode writes raw bytes, which a terminal cannot show: redirect them to a file "
                    + "(> file.bin) or a pipe, or add --hex for hex text")
        }
        console.write(writer.bytes)
        return .success
    }

    static func decode(_ arguments: ParsedArguments, console: Console) throws -> ExitStatus {
        let path = arguments.positionals.first ?? "-"
        if path == "-", console.stdinIsTerminal {
            guard arguments.positionals.first != nil else {
                throw CLIError.usage(
                    "frame decode reads frames from a file or a pipe, and stdin is a terminal: give the file "
                        + "(frame decode PATH), pipe the bytes in, or give - to type them here")
            }
            console.diagnostic(
                "reading \(arguments.isSet(Options.hexIn) ? "hex text" : "frames") from the terminal; end with Ctrl-D")
        }
        let json = arguments.isSet(Options.json)
        let maximumPayload = try arguments.required(CommonOptions.maximumPayload)
        var decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: maximumPayload, acceptsNotifications: true, acceptsErrorResponses: true))
        if arguments.isSet(Options.hexIn) {
            // Hex text is small (a fixture, a pasted capture): read it whole, then decode its bytes.
            let bytes = try HexText.decode(
                Files.read(path, limit: 64 * 1024 * 1024), name: path == "-" ? "stdin" : "'\(path)'")
            return try decodeStream(path: path, json: json, console: console, decoder: &decoder) { consume in
                try bytes.withUnsafeBytes { try consume($0) }
            }
        }
        let descriptor = try Files.openForReading(path)
        defer { Files.close(descriptor) }
        return try decodeStream(path: path, json: json, console: console, decoder: &decoder) { consume in
            try Files.forEachChunk(descriptor, path: path, consume)
        }
    }

    /// Decodes the chunks `source` hands over, printing each frame.
    static func decodeStream(
        path: String, json: Bool, console: Console, decoder: inout FrameDecoder,
        source: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws -> ExitStatus {
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
            try source { chunk in
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
