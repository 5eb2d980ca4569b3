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
        case .tokenAccepted, .tokenUpdated, .rejected, .stalled, .protocolError, .cutOff, .disconnected:
            break
        }
    }
}

extension GatewaySimulator.Configuration {
    /// Reports to `listener` too, after the event handler already configured.
    public mutating func reportMetrics(to listener: some PushMetricsListener) {
        let events = self.events
        self.events = { event in
            events?(event)
            listener.record(event)
        }
    }
}

extension ProviderSimulator.Configuration {
    /// Reports to `listener` too, after the event handler already configured (with a handler, the
    /// simulator describes each rejected request: that costs a little per rejection).
    public mutating func reportMetrics(to listener: some PushMetricsListener) {
        let events = self.events
        self.events = { event in
            events?(event)
            listener.record(event)
        }
    }
}

extension PushMetrics {
    /// Adds the families the binary simulator counts anyway (``GatewaySimulator/Statistics``, its
    /// open connections), read whenever the metrics are rendered.
    public func observe(_ simulator: GatewaySimulator) {
        func statistic(_ read: @escaping @Sendable (GatewaySimulator.Statistics) -> Int) -> @Sendable () -> Int? {
            { [weak simulator] in simulator.map { read($0.statistics) } }
        }
        registry.sampled(
            "legacy_push_simulator_notifications_total", help: "Notifications accepted and rejected.",
            kind: .counter, labels: ["outcome"]
        ) { [weak simulator] in
            guard let statistics = simulator?.statistics else { return [] }
            return [(["accepted"], statistics.accepted), (["rejected"], statistics.rejected)]
        }
        let counters: [(String, String, @Sendable (GatewaySimulator.Statistics) -> Int)] = [
            ("connections_total", "Connections that completed the TLS handshake.", { $0.connections }),
            ("resumed_connections_total", "Of those, resumed TLS sessions.", { $0.resumedConnections }),
            ("confirmation_barriers_total", "Confirmation barriers answered.", { $0.confirmationBarriers }),
            ("shutdowns_total", "Status 10 answers sent.", { $0.shutdowns }),
            ("silent_closes_total", "Connections closed without an error response (faults).", { $0.silentCloses }),
            ("handshake_failures_total", "Clients refused in the TLS handshake.", { $0.handshakeFailures }),
            ("evictions_total", "Idle connections closed to make room.", { $0.evictions }),
            ("progress_timeouts_total", "Connections closed by the frame deadline.", { $0.progressTimeouts }),
            (
                "refused_certificates_total", "Certificates refused for environment or topic.",
                { $0.refusedCertificates }
            ),
            ("feedback_tuples_served_total", "Feedback tuples handed out.", { $0.feedbackServed }),
        ]
        for (name, help, read) in counters {
            registry.sampled("legacy_push_simulator_" + name, help: help, kind: .counter, value: statistic(read))
        }
        registry.sampled("legacy_push_connections", help: "Connections served now.", kind: .gauge) {
            [weak simulator] in simulator?.openConnections
        }
    }

    /// Adds the families the HTTP/2 simulator counts anyway (``ProviderSimulator/Statistics``, its
    /// open connections), read whenever the metrics are rendered.
    public func observe(_ simulator: ProviderSimulator) {
        func statistic(_ read: @escaping @Sendable (ProviderSimulator.Statistics) -> Int) -> @Sendable () -> Int? {
            { [weak simulator] in simulator.map { read($0.statistics) } }
        }
        registry.sampled(
            "legacy_push_simulator_requests_total", help: "Requests answered, by status and reason (none for 200).",
            kind: .counter, labels: ["status", "reason"]
        ) { [weak simulator] in
            guard let statistics = simulator?.statistics else { return [] }
            var series: [(labels: [String], value: Int)] = [(["200", "none"], statistics.accepted)]
            for (reason, count) in statistics.rejected.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                series.append((["\(reason.status ?? 0)", reason.rawValue], count))
            }
            return series
        }
        let counters: [(String, String, @Sendable (ProviderSimulator.Statistics) -> Int)] = [
            ("connections_total", "Connections that completed the TLS handshake.", { $0.connections }),
            ("certificate_connections_total", "Of those, with a client certificate.", { $0.certificateConnections }),
            ("handshake_failures_total", "Clients refused in the TLS handshake.", { $0.handshakeFailures }),
            ("refused_connections_total", "Connections refused at the limit.", { $0.refusedConnections }),
            ("stalled_total", "Requests never answered (faults).", { $0.stalled }),
            ("goaways_total", "GOAWAY frames sent.", { $0.goaways }),
            ("resets_total", "Connections reset by fault injection.", { $0.resets }),
            ("protocol_errors_total", "Connections that broke HTTP/2.", { $0.protocolErrors }),
            ("cut_off_total", "Connections cut off for exceeding a limit.", { $0.cutOff }),
        ]
        for (name, help, read) in counters {
            registry.sampled("legacy_push_simulator_" + name, help: help, kind: .counter, value: statistic(read))
        }
        registry.sampled("legacy_push_connections", help: "Connections served now.", kind: .gauge) {
            [weak simulator] in simulator?.openConnections
        }
    }
}
