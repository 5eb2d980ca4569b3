import APNsCore
import APNsMetrics
import HTTP2Client

extension PushMetricsListener {
    /// Hands a bridge's event to the callback it concerns. The upstream's events come through
    /// ``Bridge/Configuration/upstreamEvents`` instead (``Bridge/Configuration/reportMetrics(to:)``
    /// connects both): ``BridgeEvent/upstream(_:)`` is skipped here, so nothing counts twice.
    public func record(_ event: BridgeEvent) {
        switch event {
        case .senderConnected: connectionAccepted()
        case .senderRefused: connectionRefused()
        case .answered(_, let response, _, _, _): errorResponseSent(status: response?.status)
        case .storeFailed: storeFailed()
        case .upstreamUnavailable: upstreamOutage()
        case .senderDisconnected, .confirmationAnswered, .rejected, .unregistered, .acknowledgedResend,
            .possibleDuplicate, .notDelivered, .feedbackServed, .upstreamAvailable, .upstream:
            break
        }
    }
}

extension Bridge.Configuration {
    /// Reports to `listener` too: the bridge's events (``events``) and its upstream's
    /// (``upstreamEvents``), after the handlers already configured. Per notification this costs
    /// the upstream's verdict callback (a few relaxed atomic additions in ``PushMetrics``).
    public mutating func reportMetrics(to listener: some PushMetricsListener) {
        let events = self.events
        let upstreamEvents = self.upstreamEvents
        self.events = { event in
            events?(event)
            listener.record(event)
        }
        self.upstreamEvents = { event in
            upstreamEvents?(event)
            listener.record(event)
        }
    }
}

extension PushMetrics {
    /// Adds the families a bridge keeps counts of anyway, read from it whenever the metrics are
    /// rendered: its ``BridgeStatistics``, the connections it serves, the store's tuples, the
    /// upstream's queue depth and notifications in flight. Rendering queries the store once
    /// (blocking the rendering thread: ``MetricsServer``'s own).
    public func observe(_ bridge: Bridge) {
        func statistic(_ read: @escaping @Sendable (BridgeStatistics) -> Int) -> @Sendable () -> Int? {
            { [weak bridge] in bridge.map { read($0.statistics) } }
        }
        registry.sampled(
            "legacy_push_notifications_received_total", help: "Notifications received from senders (frames decoded).",
            kind: .counter, value: statistic { $0.received })
        registry.sampled(
            "legacy_push_notifications_forwarded_total", help: "Notifications sent upstream (once each).",
            kind: .counter, value: statistic { $0.forwarded })
        registry.sampled(
            "legacy_push_bridge_verdicts_total",
            help: "Verdicts on notifications: accepted, unregistered (410, stored), rejected, unavailable "
                + "(no upstream verdict: status 10), not_delivered (the sender had left).",
            kind: .counter, labels: ["verdict"]
        ) { [weak bridge] in
            guard let statistics = bridge?.statistics else { return [] }
            return [
                (["accepted"], statistics.accepted), (["unregistered"], statistics.unregistered),
                (["rejected"], statistics.rejected), (["unavailable"], statistics.unavailable),
                (["not_delivered"], statistics.notDelivered),
            ]
        }
        registry.sampled(
            "legacy_push_unregistered_stored_total",
            help: "Tokens APNs answered 410 for, stored for the feedback service.",
            kind: .counter, value: statistic { $0.unregistered })
        registry.sampled(
            "legacy_push_duplicates_suppressed_total",
            help: "Resent notifications answered from memory instead of being delivered twice.", kind: .counter,
            value: statistic { $0.acknowledgedResends })
        registry.sampled(
            "legacy_push_possible_duplicates_total",
            help: "Notifications whose earlier attempt may have been delivered (outcome unknown, sent again).",
            kind: .counter, value: statistic { $0.possibleDuplicates })
        registry.sampled(
            "legacy_push_confirmation_barriers_total", help: "Confirmation barriers answered (not failures).",
            kind: .counter, value: statistic { $0.confirmationBarriers })
        registry.sampled(
            "legacy_push_frames_dropped_total", help: "Frames dropped after a failure on their connection (resent).",
            kind: .counter, value: statistic { $0.dropped })
        registry.sampled(
            "legacy_push_feedback_tuples_served_total", help: "Feedback tuples handed to senders.", kind: .counter,
            value: statistic { $0.feedbackServed })
        registry.sampled(
            "legacy_push_feedback_tuples_stored", help: "Tuples in the store waiting for the feedback service.",
            kind: .gauge
        ) { [weak bridge] in bridge?.storedFeedbackCountNow() }
        registry.sampled(
            "legacy_push_connections", help: "Sender connections served now (both ports, handshakes included).",
            kind: .gauge
        ) { [weak bridge] in bridge?.openConnections }
        registry.sampled(
            "legacy_push_upstream_queue_depth", help: "Notifications waiting for an upstream connection (retries too).",
            kind: .gauge
        ) { [weak bridge] in bridge?.upstreamOccupancy.queued }
        registry.sampled(
            "legacy_push_upstream_in_flight", help: "Notifications an upstream connection holds without a verdict.",
            kind: .gauge
        ) { [weak bridge] in bridge?.upstreamOccupancy.inFlight }
    }
}
