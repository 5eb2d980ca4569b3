import APNsMetrics
import CommandLineKit

/// `--metrics HOST:PORT` (`bridge`, `serve`, `serve --http2`): `GET /metrics` (Prometheus text
/// format), `GET /healthz` and `GET /readyz` over plain HTTP on that address.
enum MetricsOptions {
    static let address = Option<Endpoint>(
        "metrics", "host:port",
        help: "Serve GET /metrics (Prometheus), /healthz and /readyz on this address over plain HTTP "
            + "(e.g. 127.0.0.1:9100; port 0: any free one; keep it on a private interface)."
    ) { text in
        try address(text, naming: "--metrics", examplePort: 9100)
    }

    /// `HOST:PORT` of an option that serves plain HTTP (`--metrics`, `--inbox`); port 0 asks for a
    /// free port, as --port 0 does (the announcement names it).
    static func address(_ text: String, naming option: String, examplePort: UInt16) throws -> Endpoint {
        let anyPort = text.hasSuffix(":0")
        do {
            var endpoint = try Endpoint(
                parsing: anyPort ? text.dropLast() + "1" : text, naming: option, examplePort: examplePort)
            if anyPort { endpoint.port = 0 }
            return endpoint
        } catch let error as LegacyAPNsError {
            throw CLIError.usage(error.reason)
        }
    }

    /// The metrics of this run and where to serve them, when `--metrics` was given.
    static func metrics(_ arguments: ParsedArguments) throws -> (metrics: PushMetrics, endpoint: Endpoint)? {
        guard let endpoint = try arguments.value(address) else { return nil }
        return (PushMetrics(version: LegacyPush.version), endpoint)
    }

    /// A server for `metrics` at `endpoint`, ready when `readiness` says so (nil: ready).
    static func server(
        _ metrics: PushMetrics, at endpoint: Endpoint, readiness: @escaping @Sendable () -> String? = { nil }
    ) -> MetricsServer {
        MetricsServer(metrics: metrics, host: endpoint.host, port: endpoint.port, readiness: readiness)
    }

    /// Starts a side server (metrics, inbox; if any), then the command's servers with `start`; the
    /// side server stops again when they fail to start.
    static func start<Endpoints>(
        _ server: (any SideServer)?, _ start: () async throws -> Endpoints
    ) async throws -> (Endpoints, Endpoint?) {
        let metricsEndpoint = try await server?.start()
        do {
            return (try await start(), metricsEndpoint)
        } catch {
            await server?.stop()
            throw error
        }
    }

    /// The line announcing the endpoint.
    static func announcement(_ endpoint: Endpoint) -> String {
        "metrics on http://\(endpoint)/metrics"
    }
}

/// A plain-HTTP server a command runs beside its own (`--metrics`, `--inbox`).
protocol SideServer: Sendable {
    func start() async throws -> Endpoint
    func stop() async
}

extension MetricsServer: SideServer {}

extension InterruptWatch {
    /// ``serve(start:announce:stop:)`` with a serving command's side servers (`--metrics`,
    /// `--inbox`; either may be nil): started before the command's own servers (and stopped again
    /// when those fail to start), announced after the command's lines, stopped after it.
    static func serve<Endpoints>(
        console: Console, metrics: (any SideServer)?, inbox: (any SideServer)?,
        start: () async throws -> Endpoints, announce: (Endpoints) -> Void, stop: () async -> Void
    ) async throws {
        try await serve(
            start: {
                try await MetricsOptions.start(inbox) { try await MetricsOptions.start(metrics) { try await start() } }
            },
            announce: { started in
                let ((endpoints, metricsEndpoint), inboxEndpoint) = started
                announce(endpoints)
                if let metricsEndpoint { console.print(MetricsOptions.announcement(metricsEndpoint)) }
                if let inboxEndpoint { console.print(InboxOptions.announcement(inboxEndpoint)) }
                console.flush()
            },
            stop: {
                await stop()
                await metrics?.stop()
                await inbox?.stop()
            })
    }
}
