internal import APNsRuntime
import LegacyAPNs
import Synchronization

/// `legacy-push send`: one notification from flags, or many from JSON Lines.
enum SendCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "send",
            abstract: "Send notifications through a legacy binary gateway and account for every one.",
            discussion: """
                Give --token (repeatable) with a payload, or --input with JSON Lines, one notification a line: \
                {"token":"<hex>","payload":{...},"id":7,"expiry":0,"priority":10}. The whole input is checked \
                before anything is sent.

                Exit status: 0 when the gateway confirmed every notification; 1 when some were rejected or \
                could not be confirmed; 2 for bad input; 3 when the connection or TLS failed. Success is never \
                assumed: the end of a send is confirmed with a deliberately invalid frame whose error \
                response proves everything before it was accepted.
                """,
            options: [
                .repeated("token", "hex", "A device token: 64 hex digits; case, spaces and < > are ignored."),
                .value("payload", "json", "The payload, sent byte for byte as given (must be valid JSON)."),
                .value("payload-file", "path", "Read the payload from a file."),
                .value("alert", "text", "Build the payload: aps.alert."),
                .value("badge", "n", "Build the payload: aps.badge."),
                .value("sound", "name", "Build the payload: aps.sound."),
                .value("category", "name", "Build the payload: aps.category."),
                .value("thread-id", "id", "Build the payload: aps.thread-id."),
                .flag("content-available", "Build the payload: aps.content-available = 1."),
                .flag("mutable-content", "Build the payload: aps.mutable-content = 1."),
                .value("id", "n", "Identifier reported back for the first --token (then +1 each)."),
                .value("expiry", "unix-seconds", "Expiry; 0 means do not store."),
                .value("priority", "10|5", "Priority (written in item frames)."),
                .value("input", "path", "JSON Lines to send, or - for stdin."),
                .value("format", "format", "simple (command 0), enhanced (1) or frame (2).", default: "enhanced"),
                .value(
                    "cache", "n",
                    "Notifications kept for resending per connection; a connection confirms after this many.",
                    default: String(DeliveryStateMachine.Configuration.defaultCacheCapacity)),
                .value("connections", "n", "Parallel gateway connections.", default: "1"),
                .value("max-payload", "bytes", "Largest payload (256 for gateways before iOS 8).", default: "2048"),
                .value("retries", "n", "Connection failures in a row before giving up.", default: "4"),
                .value(
                    "timeout", "seconds", "Seconds to connect, and to wait for the gateway's answer.", default: "10"),
                .flag("json", "Print one JSON line per rejected notification and a summary line."),
                .flag("quiet", "No progress bar."),
            ] + CredentialOptions.all + ConnectionOptions.options(addressOption: "gateway", defaultPort: 2195),
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                "legacy-push send --cert push.p12 --passphrase-env P12_PASS --token <hex> --alert 'Hello'",
                "legacy-push send --gateway 127.0.0.1:2195 --ca-file ca.pem --cert client.p12 --input batch.jsonl --json",
            ])
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        let format = try FrameCommand.format(arguments)
        let maximumPayload = try arguments.integer("max-payload", in: 1...65535) ?? Payload.defaultMaximumSize
        let encoder = FrameEncoder(maximumPayloadSize: maximumPayload)
        let endpoint = try ConnectionOptions.endpoint(
            arguments, addressOption: "gateway", production: Gateway.production.endpoint,
            sandbox: Gateway.sandbox.endpoint)
        let connections = try arguments.integer("connections", in: 1...64) ?? 1
        let cache =
            try arguments.integer("cache", in: 1...10_000_000)
            ?? DeliveryStateMachine.Configuration.defaultCacheCapacity
        let retries = try arguments.integer("retries", in: 1...100) ?? 4
        let timeout = try arguments.seconds("timeout") ?? 10

        // Input first: nothing connects until the whole input is known to be good.
        let input: Input
        if let path = arguments.value("input") {
            for conflicting in [
                "token", "payload", "payload-file", "alert", "badge", "sound", "category", "thread-id", "id",
            ]
            where arguments.has(conflicting) {
                throw CLIError.usage("--\(conflicting) cannot be combined with --input (the lines carry it)")
            }
            input = .file(try JSONLinesFile.open(path, encoder: encoder, format: format))
        } else {
            input = .list(try notificationsFromFlags(arguments, encoder: encoder, format: format))
        }
        defer { if case .file(let file) = input { file.close() } }

        let identity = try CredentialOptions.loadIdentity(arguments, console: console)
        var configuration = PushClient.Configuration(
            gateway: .custom(host: endpoint.host, port: endpoint.port),
            tls: TLSConfiguration(identity: identity, trust: try ConnectionOptions.trust(arguments)))
        configuration.format = format
        configuration.maximumPayloadSize = maximumPayload
        configuration.connections = connections
        configuration.connectTimeout = .seconds(fractional: timeout)
        configuration.verdictTimeout = .seconds(fractional: timeout)
        configuration.delivery = DeliveryStateMachine.Configuration(
            cacheCapacity: cache, reconnect: ReconnectPolicy(maximumConsecutiveFailures: retries))

        let json = arguments.flag("json")
        let progress =
            console.stderrIsTerminal && !json && !arguments.flag("quiet")
            ? ProgressLine(console: console, total: input.count) : nil
        let client = try PushClient(configuration: configuration) { event in
            progress?.observe(event)
            if case .rejected(_, let rejection) = event {
                if json {
                    console.print(SendOutput.rejectedJSON(rejection))
                } else {
                    progress?.clear()
                    console.print(SendOutput.rejectedLine(rejection))
                }
            }
        }
        progress?.start()
        let task = Task { () -> SendReport in
            switch (input, progress) {
            case (.list(let notifications), nil): return await client.send(notifications)
            case (.file(let file), nil): return await client.send(file.notifications())
            case (.list(let notifications), let progress?): return await client.send(progress.counting(notifications))
            case (.file(let file), let progress?): return await client.send(progress.counting(file.notifications()))
            }
        }
        let interrupt = InterruptWatch { task.cancel() }
        let report = await task.value
        interrupt.cancel()
        progress?.finish()

        if json {
            for unconfirmed in report.unconfirmed { console.print(SendOutput.unconfirmedJSON(unconfirmed)) }
            console.print(SendOutput.summaryJSON(report))
        } else {
            for line in SendOutput.summaryLines(report, endpoint: endpoint) { console.print(line) }
        }
        if let failure = report.failure {
            console.error(failure.reason)
            return LegacyPush.exitStatus(for: failure) == .connection ? .connection : .refused
        }
        return report.isCompleteSuccess ? .success : .refused
    }

    enum Input: Sendable {
        case list([PushNotification])
        case file(JSONLinesFile)

        var count: Int {
            switch self {
            case .list(let list): list.count
            case .file(let file): file.count
            }
        }
    }

    /// `--token` (repeatable) with `--payload`, `--payload-file` or the payload builder flags.
    static func notificationsFromFlags(_ arguments: ParsedArguments, encoder: FrameEncoder, format: FrameFormat) throws
        -> [PushNotification]
    {
        let tokens = arguments.allValues("token")
        guard !tokens.isEmpty else { throw CLIError.usage("missing --token (or --input with JSON Lines)") }
        let payload = try payload(arguments)
        var template = PushNotification(token: try DeviceToken(hexString: tokens[0]), payload: payload)
        if let expiry = try arguments.integer("expiry", as: UInt32.self) {
            template.expiration = Expiration(rawValue: expiry)
        }
        if let text = arguments.value("priority") {
            template.priority = try Priority(
                validating: ParsedArguments.parseInteger(text, option: "--priority", as: Int.self, in: nil))
        }
        let firstID = try arguments.integer("id", as: UInt32.self)
        return try tokens.enumerated().map { index, text in
            var notification = template
            notification.token = try DeviceToken(hexString: text)
            notification.identifier = firstID.map { $0 &+ UInt32(index) } ?? UInt32(index + 1)
            try encoder.validate(notification, format: format)
            return notification
        }
    }

    static func payload(_ arguments: ParsedArguments) throws -> Payload {
        let builderFlags = ["alert", "badge", "sound", "category", "thread-id", "content-available", "mutable-content"]
        let usesBuilder = builderFlags.contains { arguments.has($0) }
        if arguments.has("payload") || arguments.has("payload-file") {
            if usesBuilder {
                throw CLIError.usage(
                    "give either --payload/--payload-file or the payload flags (--alert, --badge, ...)")
            }
            return try Payload(json: PayloadInput.bytes(arguments))
        }
        guard usesBuilder else {
            throw CLIError.usage("missing payload: give --payload, --payload-file, or --alert/--badge/--sound/...")
        }
        var builder = PayloadBuilder()
        builder.alert = arguments.value("alert").map { .text($0) }
        builder.badge = try arguments.integer("badge", in: 0...Int(Int32.max))
        builder.sound = arguments.value("sound")
        builder.category = arguments.value("category")
        builder.threadID = arguments.value("thread-id")
        builder.contentAvailable = arguments.flag("content-available")
        builder.mutableContent = arguments.flag("mutable-content")
        return try builder.build()
    }
}

/// The words and JSON shapes `send` prints.
enum SendOutput {
    static func reportedID(_ rejection: Rejection) -> UInt64 {
        rejection.identifier.map(UInt64.init) ?? rejection.position
    }

    static func rejectedJSON(_ rejection: Rejection) -> String {
        var bytes: [UInt8] = []
        bytes.append(contentsOf: #"{"event":"rejected","id":"#.utf8)
        bytes.append(contentsOf: String(reportedID(rejection)).utf8)
        bytes.append(contentsOf: #","token":""#.utf8)
        bytes.append(contentsOf: rejection.token.hexString.utf8)
        bytes.append(contentsOf: #"","status":"#.utf8)
        bytes.append(contentsOf: String(rejection.status.rawValue).utf8)
        bytes.append(contentsOf: #","reason":""#.utf8)
        bytes.append(contentsOf: rejection.status.reason.utf8)
        bytes.append(UInt8(ascii: "\""))
        if rejection.mayHaveBeenDelivered { bytes.append(contentsOf: #","mayHaveBeenDelivered":true"#.utf8) }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    static func unconfirmedJSON(_ unconfirmed: UnconfirmedNotification) -> String {
        let id = unconfirmed.notification.identifier.map(UInt64.init) ?? unconfirmed.position
        return
            #"{"event":"unconfirmed","id":\#(id),"token":"\#(unconfirmed.notification.token.hexString)","written":\#(unconfirmed.wasWritten)}"#
    }

    static func summaryJSON(_ report: SendReport) -> String {
        let seconds = (report.seconds * 1000).rounded() / 1000
        var line =
            #"{"event":"summary","sent":\#(report.sent),"accepted":\#(report.accepted),"rejected":\#(report.rejected.count),"resent":\#(report.resent),"connections":\#(report.connections),"seconds":\#(seconds),"unconfirmed":\#(report.unconfirmed.count),"possibleDuplicates":\#(report.possibleDuplicates)"#
        if let failure = report.failure {
            var escaped: [UInt8] = []
            appendJSONStringForCLI(failure.reason, to: &escaped)
            line += #","failure":"# + String(decoding: escaped, as: UTF8.self)
        }
        return line + "}"
    }

    static func rejectedLine(_ rejection: Rejection) -> String {
        "rejected: id \(reportedID(rejection)), token \(rejection.token.hexString), status \(rejection.status.rawValue) (\(rejection.status.reason))"
            + (rejection.mayHaveBeenDelivered ? " (an earlier connection may have delivered it)" : "")
    }

    static func summaryLines(_ report: SendReport, endpoint: Endpoint) -> [String] {
        let seconds = String(format3(report.seconds))
        var lines = [
            "sent \(report.sent) notification\(report.sent == 1 ? "" : "s") to \(endpoint) in \(seconds) s over \(report.connections) connection\(report.connections == 1 ? "" : "s")",
            "  accepted     \(report.accepted)",
            "  rejected     \(report.rejected.count)",
        ]
        if !report.unconfirmed.isEmpty {
            let written = report.unconfirmed.filter(\.wasWritten).count
            lines.append(
                "  unconfirmed  \(report.unconfirmed.count) (\(written) written but never confirmed, \(report.unconfirmed.count - written) not sent)"
            )
            for unconfirmed in report.unconfirmed.prefix(20) {
                let id = unconfirmed.notification.identifier.map(UInt64.init) ?? unconfirmed.position
                lines.append(
                    "    id \(id), token \(unconfirmed.notification.token.hexString)\(unconfirmed.wasWritten ? "" : " (not sent)")"
                )
            }
            if report.unconfirmed.count > 20 {
                lines.append("    ... \(report.unconfirmed.count - 20) more (use --json for all)")
            }
        }
        if report.resent > 0 { lines.append("  resent       \(report.resent)") }
        if report.possibleDuplicates > 0 {
            lines.append(
                "  \(report.possibleDuplicates) resent after a connection closed without an answer: devices may see them twice"
            )
        }
        return lines
    }

    static func format3(_ value: Double) -> String {
        let milliseconds = Int((value * 1000).rounded())
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// JSON string escaping for the CLI's own output.
func appendJSONStringForCLI(_ text: String, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "\""))
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": bytes.append(contentsOf: [0x5C, 0x22])
        case "\\": bytes.append(contentsOf: [0x5C, 0x5C])
        case "\n": bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            bytes.append(
                contentsOf: Array("\\u".utf8) + Array((String(repeating: "0", count: 4 - hex.count) + hex).utf8))
        default: bytes.append(contentsOf: String(scalar).utf8)
        }
    }
    bytes.append(UInt8(ascii: "\""))
}

/// A one-line progress display on stderr (terminals only): handed to the client, confirmed,
/// rejected, and the rate, redrawn five times a second.
final class ProgressLine: Sendable {
    private struct State {
        var accepted = 0
        var rejected = 0
        var visible = false
        var running = true
    }

    private let console: Console
    private let total: Int
    private let state = Mutex(State())
    private let handedOver = Atomic<Int>(0)
    private let started = Monotonic.now()

    init(console: Console, total: Int) {
        self.console = console
        self.total = total
    }

    func observe(_ event: PushEvent) {
        state.withLock { state in
            switch event {
            case .confirmed(_, let count): state.accepted += count
            case .rejected: state.rejected += 1
            default: break
            }
        }
    }

    /// Counts `notifications` as they are taken by the client.
    func counting<Base: Sequence & Sendable>(_ notifications: Base) -> CountingSequence<Base> {
        CountingSequence(base: notifications, progress: self)
    }

    func start() {
        OSThread.start(name: "progress") { [self] in
            while draw() { Monotonic.sleep(0.2) }
        }
    }

    /// Draws the line; false once ``finish()`` was called. The terminal write happens under the
    /// lock, so no redraw can follow the final erase.
    private func draw() -> Bool {
        state.withLock { state in
            guard state.running else { return false }
            state.visible = true
            let sent = handedOver.load(ordering: .relaxed)
            let elapsed = max(0.001, Monotonic.now() - started)
            let width = 30
            let filled = total > 0 ? min(width, sent * width / total) : 0
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let rate = Int(Double(sent) / elapsed)
            console.writeError(
                Array(
                    "\r[\(bar)] \(sent)/\(total) sent, \(state.accepted) confirmed, \(state.rejected) rejected, \(rate)/s  \u{1B}[K"
                        .utf8))
            return true
        }
    }

    /// Erases the line (before printing something else to the terminal).
    func clear() {
        state.withLock { state in
            if state.visible { console.writeError(Array("\r\u{1B}[K".utf8)) }
        }
    }

    func finish() {
        state.withLock { state in
            state.running = false
            if state.visible { console.writeError(Array("\r\u{1B}[K".utf8)) }
        }
    }

    fileprivate func count() { handedOver.add(1, ordering: .relaxed) }
}

/// A sequence that counts its elements for the progress line as they are taken.
struct CountingSequence<Base: Sequence & Sendable>: Sequence, Sendable {
    let base: Base
    let progress: ProgressLine

    func makeIterator() -> Iterator { Iterator(base: base.makeIterator(), progress: progress) }

    struct Iterator: IteratorProtocol {
        var base: Base.Iterator
        let progress: ProgressLine

        mutating func next() -> Base.Element? {
            guard let element = base.next() else { return nil }
            progress.count()
            return element
        }
    }
}
