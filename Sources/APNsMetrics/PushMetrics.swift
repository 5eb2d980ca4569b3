import APNsCore

/// The Prometheus metrics of a push client, simulator or bridge: a ``PushMetricsListener`` that
/// records into a ``MetricsRegistry`` under the `legacy_push_` prefix, and renders it
/// (``exposition()``) for `GET /metrics` (``MetricsServer``).
///
/// Event-driven families are recorded here; counts a module keeps anyway (a bridge's
/// `BridgeStatistics`, a simulator's statistics, queue depths) are sampled when rendered, added by
/// the module's `observe` extension (`metrics.observe(bridge)`). Labels are bounded values only:
/// statuses, APNs reasons, push types, never a device token or an identifier.
///
/// | family | kind | labels |
/// | --- | --- | --- |
/// | `legacy_push_build_info` | gauge (1) | `version` |
/// | `legacy_push_connections_accepted_total` | counter | |
/// | `legacy_push_connections_refused_total` | counter | |
/// | `legacy_push_error_responses_total` | counter | `status` (binary status, `none` for a silent close) |
/// | `legacy_push_upstream_connections` | gauge (opened minus closed) | |
/// | `legacy_push_upstream_connections_opened_total` | counter | |
/// | `legacy_push_upstream_connection_failures_total` | counter | |
/// | `legacy_push_upstream_requests_sent_total` | counter | |
/// | `legacy_push_upstream_responses_total` | counter | `push_type`, `status`, `reason` |
/// | `legacy_push_upstream_response_seconds` | histogram (final answers) | `status` |
/// | `legacy_push_upstream_refused_locally_total` | counter | `reason` |
/// | `legacy_push_upstream_retries_total` | counter | `reason` (``ProviderRetryCause``), `possible_duplicate` |
/// | `legacy_push_upstream_stream_resets_total` | counter | `by` (`client`, `server`), `error_code` |
/// | `legacy_push_upstream_unconfirmed_total` | counter | `may_have_been_delivered` |
/// | `legacy_push_upstream_goaways_total` | counter | `reason` |
/// | `legacy_push_upstream_token_refreshes_total` | counter | |
/// | `legacy_push_upstream_stream_limit` | gauge (the last limit a connection reported) | |
/// | `legacy_push_gateway_*` | the binary client: connections, rejections per status, resends, unconfirmed | |
/// | `legacy_push_goaways_sent_total` | counter | `reason` |
/// | `legacy_push_connection_resets_total` | counter | |
/// | `legacy_push_store_errors_total` | counter | |
/// | `legacy_push_upstream_outages_total` | counter | |
public final class PushMetrics: PushMetricsListener {
    /// Where the families live; add your own, or sampled ones.
    public let registry: MetricsRegistry

    private let accepted: Counter
    private let refused: Counter
    private let errorResponses: LabelledFamily<Counter>
    private let upstreamOpen: Gauge
    private let upstreamOpened: Counter
    private let upstreamFailures: Counter
    private let upstreamClosedCount: Counter
    private let requestsSent: Counter
    private let responses: LabelledFamily<Counter>
    /// The 200 series per push type, looked up without a lock (the hot path: one per notification).
    private let acceptedByPushType: [PushType: Counter]
    private let acceptedUntyped: Counter
    private let latency: LabelledFamily<Histogram>
    /// The 200 series of ``latency``, kept (the hot path).
    private let acceptedLatency: Histogram
    private let refusedLocally: LabelledFamily<Counter>
    private let retries: LabelledFamily<Counter>
    private let streamResets: LabelledFamily<Counter>
    private let unconfirmed: LabelledFamily<Counter>
    private let goaways: LabelledFamily<Counter>
    private let tokenRefreshes: Counter
    private let streamLimit: Gauge
    private let gatewayConnections: Counter
    private let gatewayRejections: LabelledFamily<Counter>
    private let gatewayResends: Counter
    private let gatewayUnconfirmedCount: Counter
    private let goawaysSent: LabelledFamily<Counter>
    private let resets: Counter
    private let storeErrors: Counter
    private let outages: Counter

    /// The upper bounds of ``PushMetrics``'s latency histogram, in seconds (APNs answers in tens of
    /// milliseconds; a local simulator in well under one).
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// Creates the families in `registry`, with `legacy_push_build_info{version="..."} 1`.
    public init(version: String, registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        registry.gauge("legacy_push_build_info", help: "Always 1; the version is the label.", labels: ["version"])
            .labels(version).set(1)
        accepted = registry.counter(
            "legacy_push_connections_accepted_total", help: "Client connections accepted (TLS handshake done).")
        refused = registry.counter(
            "legacy_push_connections_refused_total",
            help: "Client connections refused (handshake, certificate, connection limit, upstream unavailable).")
        errorResponses = registry.counter(
            "legacy_push_error_responses_total",
            help: "Binary error responses sent, by status (none: closed without one).", labels: ["status"])
        upstreamOpen = registry.gauge(
            "legacy_push_upstream_connections", help: "HTTP/2 connections to the provider API open now.")
        upstreamOpened = registry.counter(
            "legacy_push_upstream_connections_opened_total", help: "HTTP/2 connections to the provider API opened.")
        upstreamFailures = registry.counter(
            "legacy_push_upstream_connection_failures_total",
            help: "HTTP/2 connection attempts that failed, and open connections lost.")
        upstreamClosedCount = registry.counter(
            "legacy_push_upstream_connections_closed_total", help: "HTTP/2 connections to the provider API closed.")
        requestsSent = registry.counter(
            "legacy_push_upstream_requests_sent_total", help: "Requests sent to the provider API (retries included).")
        responses = registry.counter(
            "legacy_push_upstream_responses_total",
            help: "Answers of the provider API, by push type (none: not named), status and reason (none for 200).",
            labels: ["push_type", "status", "reason"])
        var byType: [PushType: Counter] = [:]
        for type in PushType.allKnown { byType[type] = responses.labels(type.rawValue, "200", "none") }
        acceptedByPushType = byType
        acceptedUntyped = responses.labels("none", "200", "none")
        latency = registry.histogram(
            "legacy_push_upstream_response_seconds",
            help: "Time from sending a request to its final answer, by status (200, and rejections).",
            buckets: Self.latencyBuckets, labels: ["status"])
        acceptedLatency = latency.labels("200")
        refusedLocally = registry.counter(
            "legacy_push_upstream_refused_locally_total",
            help: "Requests refused without sending, by the reason APNs would give.", labels: ["reason"])
        retries = registry.counter(
            "legacy_push_upstream_retries_total",
            help: "Requests sent again, by reason (429, 5xx, refused or lost streams, GOAWAY, ...).",
            labels: ["reason", "possible_duplicate"])
        streamResets = registry.counter(
            "legacy_push_upstream_stream_resets_total",
            help: "Streams reset without an answer, by who reset them (client: the request timed out) and code.",
            labels: ["by", "error_code"])
        unconfirmed = registry.counter(
            "legacy_push_upstream_unconfirmed_total", help: "Notifications that ended without a verdict.",
            labels: ["may_have_been_delivered"])
        goaways = registry.counter(
            "legacy_push_upstream_goaways_total", help: "GOAWAY frames received, by reason.", labels: ["reason"])
        tokenRefreshes = registry.counter(
            "legacy_push_upstream_token_refreshes_total", help: "Provider tokens signed.")
        streamLimit = registry.gauge(
            "legacy_push_upstream_stream_limit", help: "The stream limit a connection last reported.")
        gatewayConnections = registry.counter(
            "legacy_push_gateway_connections_opened_total", help: "Connections to the binary gateway opened.")
        gatewayRejections = registry.counter(
            "legacy_push_gateway_rejections_total", help: "Notifications the binary gateway refused, by status.",
            labels: ["status"])
        gatewayResends = registry.counter(
            "legacy_push_gateway_resent_total", help: "Notifications sent again to the binary gateway.")
        gatewayUnconfirmedCount = registry.counter(
            "legacy_push_gateway_unconfirmed_total", help: "Notifications the binary gateway never confirmed.")
        goawaysSent = registry.counter(
            "legacy_push_goaways_sent_total", help: "GOAWAY frames the HTTP/2 server sent, by reason.",
            labels: ["reason"])
        resets = registry.counter(
            "legacy_push_connection_resets_total", help: "Connections reset with requests in flight.")
        storeErrors = registry.counter("legacy_push_store_errors_total", help: "Failures of the durable store.")
        outages = registry.counter(
            "legacy_push_upstream_outages_total", help: "Times the upstream became unavailable to new senders.")
    }

    /// Adds `legacy_push_notifications_received_total{command}`, the notifications a binary server
    /// decoded per command (0, 1, 2), read from `counts` when rendered (nil: no samples).
    package func sampleReceivedPerCommand(_ counts: @escaping @Sendable () -> CommandCounts?) {
        registry.sampled(
            "legacy_push_notifications_received_total", help: "Notifications received (frames decoded), by command.",
            kind: .counter, labels: ["command"]
        ) {
            counts()?.byCommand.map { (labels: ["\($0.command.rawValue)"], value: $0.count) } ?? []
        }
    }

    /// The registry in the Prometheus text format (``MetricsRegistry/contentType``).
    public func exposition() -> String { registry.exposition() }

    // MARK: - PushMetricsListener

    /// Counts an accepted client connection.
    public func connectionAccepted() { accepted.increment() }
    /// Counts a refused client connection.
    public func connectionRefused() { refused.increment() }
    /// Counts an error response by its status.
    public func errorResponseSent(status: StatusCode?) {
        errorResponses.labels(status.map { "\($0.rawValue)" } ?? "none").increment()
    }

    /// Counts an upstream connection opened; one more open.
    public func upstreamConnected() {
        upstreamOpened.increment()
        upstreamOpen.add(1)
    }

    /// Counts a failed or lost upstream connection.
    public func upstreamConnectionFailed() { upstreamFailures.increment() }

    /// Counts an upstream connection closed; one fewer open.
    public func upstreamConnectionClosed() {
        upstreamClosedCount.increment()
        upstreamOpen.add(-1)
    }

    /// Counts a request sent upstream.
    public func upstreamRequestSent() { requestsSent.increment() }

    /// Counts an answer by push type, status and reason, and times it by status.
    public func upstreamAnswered(status: Int, reason: ProviderReason?, pushType: PushType?, latency: Duration?) {
        if status == 200 {
            if let pushType {
                (acceptedByPushType[pushType] ?? responses.labels(pushType.rawValue, "200", "none")).increment()
            } else {
                acceptedUntyped.increment()
            }
            if let latency { acceptedLatency.observe(latency) }
        } else {
            let status = "\(status)"
            responses.labels(pushType?.rawValue ?? "none", status, reason?.rawValue ?? "none").increment()
            if let latency { self.latency.labels(status).observe(latency) }
        }
    }

    /// Counts a request refused without a round trip, by reason.
    public func upstreamRefusedLocally(reason: ProviderReason?) {
        refusedLocally.labels(reason?.rawValue ?? "none").increment()
    }

    /// Counts a retry by its cause.
    public func upstreamRetried(cause: ProviderRetryCause, possibleDuplicate: Bool) {
        retries.labels(cause.rawValue, "\(possibleDuplicate)").increment()
    }
    /// Counts a stream reset by who reset it and its error code.
    public func upstreamStreamReset(errorCode: HTTP2ErrorCode, byClient: Bool) {
        streamResets.labels(byClient ? "client" : "server", "\(errorCode)").increment()
    }
    /// Counts a notification without a verdict.
    public func upstreamUnconfirmed(mayHaveBeenDelivered: Bool) {
        unconfirmed.labels("\(mayHaveBeenDelivered)").increment()
    }
    /// Counts a GOAWAY received, by reason.
    public func upstreamGoaway(reason: ProviderReason?) { goaways.labels(reason?.rawValue ?? "none").increment() }
    /// Counts a provider token signed.
    public func upstreamTokenRefreshed() { tokenRefreshes.increment() }
    /// Keeps the stream limit reported last.
    public func upstreamStreamLimit(_ limit: Int) { streamLimit.set(limit) }
    /// Counts a binary gateway connection opened.
    public func gatewayConnected() { gatewayConnections.increment() }
    /// Counts a binary gateway rejection by status.
    public func gatewayRejected(status: StatusCode) { gatewayRejections.labels("\(status.rawValue)").increment() }
    /// Counts notifications resent to the binary gateway.
    public func gatewayResent(count: Int) { gatewayResends.increment(by: count) }
    /// Counts a notification the binary gateway never confirmed.
    public func gatewayUnconfirmed() { gatewayUnconfirmedCount.increment() }
    /// Counts a GOAWAY the simulator sent, by reason.
    public func goawaySent(reason: ProviderReason?) { goawaysSent.labels(reason?.rawValue ?? "none").increment() }
    /// Counts a connection reset by the simulator.
    public func connectionReset() { resets.increment() }
    /// Counts a failure of the store.
    public func storeFailed() { storeErrors.increment() }
    /// Counts an upstream outage.
    public func upstreamOutage() { outages.increment() }
}
