import APNsCore
internal import APNsRuntime

/// Serves ``PushMetrics`` over HTTP/1.1 for Prometheus and for load balancers' probes:
///
/// | request | answer |
/// | --- | --- |
/// | `GET /metrics` | 200, the families in the text format 0.0.4 (``MetricsRegistry/contentType``) |
/// | `GET /healthz` | 200 `ok`: the process is alive and serving this |
/// | `GET /readyz` | 200 `ready`, or 503 with why not (the `readiness` check you pass) |
///
/// Plain HTTP, bounded (16 connections, 8 KiB request heads, 10 s per request), bound to
/// 127.0.0.1 unless you pass another host. The connections are served on threads of their own;
/// `readiness` runs on one of them for each `/readyz` (it may block briefly: a store query, a
/// connection attempt).
///
/// ```swift
/// let metrics = PushMetrics(version: "1.0")
/// let server = MetricsServer(metrics: metrics, port: 9100) { bridge.readiness() }
/// let endpoint = try await server.start()
/// // ... curl http://127.0.0.1:9100/metrics ...
/// await server.stop()
/// ```
public final class MetricsServer: Sendable {
    private let metrics: PushMetrics
    private let readiness: @Sendable () -> String?
    private let service: HTTPService

    /// A server for `metrics` on `host:port` (port 0: a free one, reported by ``start()``);
    /// `readiness` returns nil when ready, else why not.
    public init(
        metrics: PushMetrics, host: String = "127.0.0.1", port: UInt16,
        readiness: @escaping @Sendable () -> String? = { nil }
    ) {
        self.metrics = metrics
        self.service = HTTPService(host: host, port: port)
        self.readiness = readiness
    }

    /// Binds and starts serving; returns the address (the real port when 0 was asked for).
    /// - Throws: ``LegacyAPNsError`` when the address cannot be bound.
    public func start() async throws -> Endpoint {
        let metrics = self.metrics
        let readiness = self.readiness
        return try service.start { request in Self.answer(request, metrics: metrics, readiness: readiness) }
    }

    /// Stops serving (requests being answered finish first).
    public func stop() async {
        await service.stop()
    }

    static func answer(
        _ request: HTTPRequest, metrics: PushMetrics, readiness: @Sendable () -> String?
    ) -> HTTPResponse {
        guard request.method == "GET" else {
            var response = HTTPResponse.text(405, "\(request.path) is read with GET")
            response.fields.append(("Allow", "GET"))
            return response
        }
        switch request.path {
        case "/metrics":
            return HTTPResponse(
                status: 200, contentType: MetricsRegistry.contentType, body: Array(metrics.exposition().utf8))
        case "/healthz":
            return .text(200, "ok")
        case "/readyz":
            if let why = readiness() { return .text(503, "not ready: \(why)") }
            return .text(200, "ready")
        default:
            return .text(404, "not found: \(request.path.prefix(200)) (try /metrics, /healthz, /readyz)")
        }
    }
}
