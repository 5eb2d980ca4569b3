import APNsCore
import APNsMetrics

extension PushMetricsListener {
    /// Hands a binary simulator's event to the callback it concerns.
    public func record(_ event: SimulatorEvent) {
        switch event {
        case .connected: connectionAccepted()
        case .handshakeFailed, .refused, .certificateRefused: connectionRefused()
        case .rejected(_, let response, _, _): errorResponseSent(status: response.status)
        case .shutdown: errorResponseSent(status: .shutdown)
        case .closedSilently: errorResponseSent(status: nil)
        case .confirmationAnswered, .idleTimeout, .progressTimeout, .evicted, .disconnected, .feedbackServed:
            break
        }
    }

    /// Hands an HTTP/2 simulator's event to the callback it concerns.
    public func record(_ event: ProviderSimulatorEvent) {
        switch event {
        case .connected: connectionAccepted()
        case .handshakeFailed, .refused: connectionRefused()
        case .goaway(_, _, let reason): goawaySent(reason: reason)
        case .reset: connectionReset()
        case .tokenAccepted, .tokenUpdated, .rejected, .channelRequest, .stalled, .protocolError, .cutOff,
            .disconnected:
            break
        }
    }
}

extension GatewaySimulator.Configuration {
    /// Reports to `listener` too, after the event handler already configured.
    public mutating func reportMetrics(to listener: some PushMetricsListener) {
        alsoReport { listener.record($0) }
    }

    /// Calls `handler` for every event too, after the handler already configured.
    mutating func alsoReport(_ handler: @escaping @Sendable (SimulatorEvent) -> Void) {
        let events = self.events
        self.events = { event in
            events?(event)
            handler(event)
        }
    }
}

extension ProviderSimulator.Configuration {
    /// Reports to `listener` too, after the event handler already configured (with a handler, the
    /// simulator describes each rejected request: that costs a little per rejection).
    public mutating func reportMetrics(to listener: some PushMetricsListener) {
        alsoReport { listener.record($0) }
    }

    /// Calls `handler` for every event too, after the handler already configured.
    mutating func alsoReport(_ handler: @escaping @Sendable (ProviderSimulatorEvent) -> Void) {
        let events = self.events
        self.events = { event in
            events?(event)
            handler(event)
        }
    }
}

extension PushMetrics {
    /// Adds the families the binary simulator counts anyway (``GatewaySimulator/Statistics``, its
    /// open connections), read whenever the metrics are rendered.
    public func observe(_ simulator: GatewaySimulator) {
        let statistics = { @Sendable [weak simulator] in simulator?.statistics }
        sampleReceivedPerCommand { statistics()?.receivedByCommand }
        registry.sampled(
            "legacy_push_simulator_notifications_total", help: "Notifications accepted and rejected.",
            kind: .counter, label: "outcome", from: statistics, [("accepted", \.accepted), ("rejected", \.rejected)])
        registry.sampled(
            .counter, prefix: "legacy_push_simulator_", from: statistics,
            [
                ("connections_total", "Connections that completed the TLS handshake.", \.connections),
                ("resumed_connections_total", "Of those, resumed TLS sessions.", \.resumedConnections),
                ("confirmation_barriers_total", "Confirmation barriers answered.", \.confirmationBarriers),
                ("shutdowns_total", "Status 10 answers sent.", \.shutdowns),
                ("silent_closes_total", "Connections closed without an error response (faults).", \.silentCloses),
                ("handshake_failures_total", "Clients refused in the TLS handshake.", \.handshakeFailures),
                ("evictions_total", "Idle connections closed to make room.", \.evictions),
                ("progress_timeouts_total", "Connections closed by the frame deadline.", \.progressTimeouts),
                ("refused_certificates_total", "Certificates refused for environment or topic.", \.refusedCertificates),
                ("feedback_tuples_served_total", "Feedback tuples handed out.", \.feedbackServed),
            ])
        registry.sampled(
            .gauge, prefix: "legacy_push_", from: { @Sendable [weak simulator] in simulator },
            [("connections", "Connections served now.", \.openConnections)])
    }

    /// Adds the families the HTTP/2 simulator counts anyway (``ProviderSimulator/Statistics``, its
    /// open connections), read whenever the metrics are rendered.
    public func observe(_ simulator: ProviderSimulator) {
        let statistics = { @Sendable [weak simulator] in simulator?.statistics }
        registry.sampled(
            "legacy_push_simulator_requests_total", help: "Requests answered, by status and reason (none for 200).",
            kind: .counter, labels: ["status", "reason"]
        ) {
            guard let statistics = statistics() else { return [] }
            var series: [(labels: [String], value: Int)] = [(["200", "none"], statistics.accepted)]
            for (reason, count) in statistics.rejected.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                series.append((["\(reason.status ?? 0)", reason.rawValue], count))
            }
            return series
        }
        registry.sampled(
            .counter, prefix: "legacy_push_simulator_", from: statistics,
            [
                ("connections_total", "Connections that completed the TLS handshake.", \.connections),
                ("certificate_connections_total", "Of those, with a client certificate.", \.certificateConnections),
                ("handshake_failures_total", "Clients refused in the TLS handshake.", \.handshakeFailures),
                ("refused_connections_total", "Connections refused at the limit.", \.refusedConnections),
                ("stalled_total", "Requests never answered (faults).", \.stalled),
                ("goaways_total", "GOAWAY frames sent.", \.goaways),
                ("resets_total", "Connections reset by fault injection.", \.resets),
                ("protocol_errors_total", "Connections that broke HTTP/2.", \.protocolErrors),
                ("cut_off_total", "Connections cut off for exceeding a limit.", \.cutOff),
            ])
        registry.sampled(
            .gauge, prefix: "legacy_push_", from: { @Sendable [weak simulator] in simulator },
            [("connections", "Connections served now.", \.openConnections)])
    }
}
