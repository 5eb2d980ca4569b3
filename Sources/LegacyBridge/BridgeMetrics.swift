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
    /// the upstream's verdict callback (a few relaxed atomic additions in `PushMetrics`).
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
    /// (blocking the rendering thread: `MetricsServer`'s own).
    public func observe(_ bridge: Bridge) {
        let statistics = { @Sendable [weak bridge] in bridge?.statistics }
        sampleReceivedPerCommand { statistics()?.receivedByCommand }
        registry.sampled(
            .counter, prefix: "legacy_push_", from: statistics,
            [("notifications_forwarded_total", "Notifications sent upstream (once each).", \.forwarded)])
        registry.sampled(
            "legacy_push_bridge_verdicts_total",
            help: "Verdicts on notifications: accepted, unregistered (410, stored), rejected, unavailable "
                + "(no upstream verdict: status 10), not_delivered (the sender had left).",
            kind: .counter, label: "verdict", from: statistics,
            [
                ("accepted", \.accepted), ("unregistered", \.unregistered), ("rejected", \.rejected),
                ("unavailable", \.unavailable), ("not_delivered", \.notDelivered),
            ])
        registry.sampled(
            .counter, prefix: "legacy_push_", from: statistics,
            [
                (
                    "unregistered_stored_total", "Tokens APNs answered 410 for, stored for the feedback service.",
                    \.unregistered
                ),
                (
                    "duplicates_suppressed_total",
                    "Resent notifications answered from memory instead of being delivered twice.",
                    \.acknowledgedResends
                ),
                (
                    "possible_duplicates_total",
                    "Notifications whose earlier attempt may have been delivered (outcome unknown, sent again).",
                    \.possibleDuplicates
                ),
                (
                    "confirmation_barriers_total", "Confirmation barriers answered (not failures).",
                    \.confirmationBarriers
                ),
                ("frames_dropped_total", "Frames dropped after a failure on their connection (resent).", \.dropped),
                ("feedback_tuples_served_total", "Feedback tuples handed to senders.", \.feedbackServed),
            ])
        registry.sampled(
            .gauge, prefix: "legacy_push_", from: { @Sendable [weak bridge] in bridge },
            [
                (
                    "feedback_tuples_stored", "Tuples in the store waiting for the feedback service.",
                    { $0.storedFeedbackCountNow() }
                ),
                (
                    "connections", "Sender connections served now (both ports, handshakes included).",
                    \.openConnections
                ),
                (
                    "upstream_queue_depth", "Notifications waiting for an upstream connection (retries too).",
                    \.upstreamOccupancy.queued
                ),
                (
                    "upstream_in_flight", "Notifications an upstream connection holds without a verdict.",
                    \.upstreamOccupancy.inFlight
                ),
            ])
    }
}
