import CommandLineKit
import GatewaySimulator

/// `--inbox HOST:PORT` and `--inbox-size N` (`serve`, `serve --http2`, `bridge`): a page and a JSON
/// API (`/api/v1`) showing the last notifications the simulator or bridge received, over plain
/// HTTP; `--offline TOKEN` (`serve --http2`): a device offline from the start.
enum InboxOptions {
    static let address = Option<Endpoint>(
        "inbox", "host:port",
        help: "Show what is received on a page at http://HOST:PORT/ with a JSON API under /api/v1 "
            + "(e.g. 127.0.0.1:8025; port 0: any free one; keep it on a private interface)."
    ) { text in
        try MetricsOptions.address(text, naming: "--inbox", examplePort: 8025)
    }
    static let size = Option<Int>.integer(
        "inbox-size", help: "How many notifications the inbox keeps (the newest).", range: 1...1_000_000,
        default: PushInbox.defaultCapacity)
    static let offline = RepeatedOption<DeviceToken>(
        "offline", "hex",
        help: "With --inbox: this device is offline from the start; pushes to it are stored as APNs stores them "
            + "(one per app, until apns-expiration) until POST /api/v1/devices/TOKEN/online (repeatable)."
    ) { hex in
        do {
            return try DeviceToken(hexString: hex)
        } catch let error as LegacyAPNsError {
            throw CLIError.usage("--offline: \(error.reason)")
        }
    }

    /// The inbox of this run and its server, when `--inbox` was given; `simulatesDevices` for
    /// `serve --http2` (its pushes have a fate; `--offline` is read).
    static func inbox(_ arguments: ParsedArguments, simulatesDevices: Bool = false) throws -> (
        inbox: PushInbox, server: InboxServer
    )? {
        let capacity = try arguments.required(size)
        let offlineDevices = simulatesDevices ? try arguments.values(offline) : []
        guard let endpoint = try arguments.value(address) else {
            if arguments.has(size) { throw CLIError.usage("--inbox-size needs --inbox HOST:PORT") }
            if !offlineDevices.isEmpty { throw CLIError.usage("--offline needs --inbox HOST:PORT") }
            return nil
        }
        let inbox = PushInbox(capacity: capacity, simulatesDevices: simulatesDevices, offline: offlineDevices)
        return (inbox, InboxServer(inbox: inbox, host: endpoint.host, port: endpoint.port))
    }

    /// The line a command prints once the inbox is served.
    static func announcement(_ endpoint: Endpoint) -> String {
        "inbox on http://\(endpoint)/"
    }
}

extension InboxServer: SideServer {}
