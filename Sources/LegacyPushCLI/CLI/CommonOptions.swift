import CommandLineKit
import LegacyAPNs

/// Options more than one subcommand takes, declared once.
enum CommonOptions {
    /// `--max-payload` (send, serve, frame encode, frame decode).
    static let maximumPayload = Option<Int>.integer(
        "max-payload", "bytes", help: "Largest payload in bytes (256 for gateways before iOS 8; larger: status 7).",
        range: 1...65535, default: Payload.defaultMaximumSize)

    /// `--format` (send, frame encode).
    static let format = Option<FrameFormat>.choice(
        "format", help: "simple (command 0), enhanced (1) or frame (2).",
        ["simple": .simple, "enhanced": .enhanced, "frame": .itemized], default: .enhanced)

    /// `--quiet` (send, serve).
    static let quiet = Flag("quiet", help: "No progress line, no connection log.")
}

/// The fields of one notification (send, frame encode).
enum NotificationOptions {
    /// `--payload`.
    static let payload = Option<String>.text(
        "payload", "json", help: "The payload, sent byte for byte as given (must be valid JSON).")
    /// `--payload-file`.
    static let payloadFile = Option<String>.text("payload-file", "path", help: "Read the payload from a file.")
    /// `--id`.
    static let identifier = Option<UInt32>.integer(
        "id", help: "The notification identifier (0...4294967295).", range: 0...UInt32.max)
    /// `--expiry`.
    static let expiry = Option<UInt32>.integer(
        "expiry", "unix-seconds", help: "Expiry in UNIX seconds; 0 means do not store.", range: 0...UInt32.max)
    /// `--priority`: 10 or 5 for the binary protocol (written in item frames), also 1 for HTTP/2;
    /// each command judges the value with ``priority(_:http2:)``.
    static let priority = Option<Int>(
        "priority", "10|5|1", help: "Priority: 10 or 5 (binary item frames; HTTP/2 also takes 1)."
    ) { text in
        try ParsedArguments.parseInteger(text, option: "--priority", as: Int.self, in: nil)
    }

    /// The `--priority` given, judged for the binary protocol or (`http2`) the HTTP/2 API.
    static func priority(_ arguments: ParsedArguments, http2: Bool) throws -> Priority? {
        guard let value = try arguments.value(priority) else { return nil }
        do {
            return http2 ? try Priority(validatingHTTP2: value) : try Priority(validating: value)
        } catch let error as LegacyAPNsError {
            throw CLIError.usage(error.reason)
        }
    }

    /// The payload bytes from `--payload` or `--payload-file`.
    static func payloadBytes(_ arguments: ParsedArguments) throws -> [UInt8] {
        switch (try arguments.value(payload), try arguments.value(payloadFile)) {
        case (let text?, nil): return Array(text.utf8)
        case (nil, let path?): return try Files.read(path, limit: 1024 * 1024)
        case (.some, .some): throw CLIError.usage("give either --payload or --payload-file, not both")
        case (nil, nil): throw CLIError.usage("missing --payload or --payload-file")
        }
    }
}
