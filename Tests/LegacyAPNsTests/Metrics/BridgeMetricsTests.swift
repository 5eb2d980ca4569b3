import APNsCore
import APNsMetrics
import APNsRuntime
import GatewaySimulator
import HTTP2Client
import LegacyBridge
import TestSupport
import Testing

/// The bridge's metrics against the run they describe: a known mix (bad tokens, 410s) through a
/// real bridge and simulator, `/metrics` parsed by prometheus-client, every counter compared to
/// the notification.
@Suite struct BridgeMetricsTests {
    static let bad = [137, 600]
    static let gone = [5, 9, 400]

    @Test func theCountersAgreeWithTheRunToTheNotification() async throws {
        var faults = ProviderFaults()
        for index in Self.bad { faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken }
        for index in Self.gone {
            faults.unregisteredTokens[TestGateway.notification(index).token] = .milliseconds(1_700_000_000_000)
        }
        let metrics = PushMetrics(version: "9.9.9-test")
        try await withBridge(faults: faults, configure: { $0.reportMetrics(to: metrics) }) { fixture in
            metrics.observe(fixture.bridge)
            let server = MetricsServer(metrics: metrics, port: 0) { fixture.bridge.readiness() }
            let endpoint = try await server.start()
            let report = try await fixture.client().send((1...1000).map { TestGateway.notification($0) })
            #expect(report.failure == nil)
            #expect(report.rejected.map(\.identifier) == Self.bad.map(UInt32.init))
            let statistics = fixture.bridge.statistics
            let scrape = try MetricsScrape.scrape("http://\(endpoint)/metrics")
            await server.stop()

            #expect(scrape.value("legacy_push_build_info", ["version": "9.9.9-test"]) == 1)
            #expect(scrape.types["legacy_push_upstream_response_seconds"] == "histogram")
            #expect(scrape.types["legacy_push_upstream_responses"] == "counter")
            // Upstream: every notification once, by status and reason (the bridge names the push type).
            let responses = "legacy_push_upstream_responses_total"
            #expect(scrape.sum(responses) == 1000)
            #expect(scrape.value(responses, ["push_type": "alert", "status": "200", "reason": "none"]) == 995)
            #expect(scrape.value(responses, ["push_type": "alert", "status": "400", "reason": "BadDeviceToken"]) == 2)
            #expect(scrape.value(responses, ["push_type": "alert", "status": "410", "reason": "Unregistered"]) == 3)
            #expect(scrape.value("legacy_push_upstream_requests_sent_total") == 1000)
            // Every final answer timed, under its status.
            let latency = "legacy_push_upstream_response_seconds"
            #expect(scrape.value(latency + "_count", ["status": "200"]) == 995)
            #expect(scrape.value(latency + "_bucket", ["status": "200", "le": "+Inf"]) == 995)
            #expect(scrape.value(latency + "_count", ["status": "400"]) == 2)
            #expect(scrape.value(latency + "_count", ["status": "410"]) == 3)
            #expect(scrape.sum(latency + "_count") == 1000)
            #expect(scrape.sum("legacy_push_upstream_retries_total") == 0)
            #expect(scrape.value("legacy_push_upstream_connections") == 1)
            #expect(scrape.value("legacy_push_upstream_connections_opened_total") == 1)
            #expect(scrape.value("legacy_push_upstream_token_refreshes_total") == 1)
            #expect(scrape.value("legacy_push_upstream_stream_limit") == 1000)
            #expect(scrape.value("legacy_push_upstream_in_flight") == 0)
            #expect(scrape.value("legacy_push_upstream_queue_depth") == 0)
            // The sender side, as the bridge counted it.
            // Our client writes command 1 frames (resends included in the count).
            let received = "legacy_push_notifications_received_total"
            #expect(scrape.value(received, ["command": "1"]) == statistics.received)
            #expect(scrape.sum(received) == statistics.received && statistics.received >= 1000)
            #expect(scrape.value("legacy_push_notifications_forwarded_total") == 1000)
            #expect(scrape.value("legacy_push_bridge_verdicts_total", ["verdict": "accepted"]) == 995)
            #expect(scrape.value("legacy_push_bridge_verdicts_total", ["verdict": "rejected"]) == 2)
            #expect(scrape.value("legacy_push_bridge_verdicts_total", ["verdict": "unregistered"]) == 3)
            #expect(scrape.value("legacy_push_bridge_verdicts_total", ["verdict": "unavailable"]) == 0)
            #expect(scrape.value("legacy_push_unregistered_stored_total") == 3)
            #expect(scrape.value("legacy_push_feedback_tuples_stored") == 3)
            #expect(scrape.value("legacy_push_duplicates_suppressed_total") == statistics.acknowledgedResends)
            #expect(scrape.value("legacy_push_possible_duplicates_total") == 0)
            #expect(scrape.value("legacy_push_confirmation_barriers_total") == statistics.confirmationBarriers)
            // Error responses per status: one for each bad token, as the events said.
            let answered = fixture.events.get().compactMap { event -> String? in
                guard case .answered(_, let response, _, _, _) = event else { return nil }
                return response.map { "\($0.status.rawValue)" } ?? "none"
            }
            #expect(scrape.sum("legacy_push_error_responses_total") == statistics.errorResponses)
            #expect(scrape.sum("legacy_push_error_responses_total") == answered.count)
            #expect(scrape.value("legacy_push_error_responses_total", ["status": "8"]) == 2)
            #expect(scrape.value("legacy_push_connections_accepted_total") == statistics.senderConnections)
            #expect(scrape.value("legacy_push_store_errors_total") == 0)
            // No device token or identifier anywhere in the page.
            let page = try curlStatus("http://\(endpoint)/metrics").body
            #expect(page.isEmpty || !page.contains("abababab"))
        }
    }

    @Test func readyWhenTheUpstreamAnswersNotReadyWhenItCannot() async throws {
        try await withBridge { fixture in
            let metrics = PushMetrics(version: "test")
            let server = MetricsServer(metrics: metrics, port: 0) { fixture.bridge.readiness() }
            let endpoint = try await server.start()
            #expect(try curlStatus("http://\(endpoint)/healthz") == (200, "ok"))
            #expect(try curlStatus("http://\(endpoint)/readyz") == (200, "ready"))
            #expect(try curlStatus("http://\(endpoint)/nothing").status == 404)
            await server.stop()
        }
        // Nothing listens upstream: the probe tries, fails, and says why (503).
        let closed = try Listener(host: "127.0.0.1", port: 0).endpoint  // bound, then closed: refused
        try await withBridge(upstreamAt: closed) { fixture in
            let server = MetricsServer(metrics: PushMetrics(version: "test"), port: 0) {
                fixture.bridge.readiness(timeout: .seconds(5))
            }
            let endpoint = try await server.start()
            #expect(try curlStatus("http://\(endpoint)/healthz").status == 200)
            let ready = try curlStatus("http://\(endpoint)/readyz")
            #expect(ready.status == 503)
            #expect(ready.body.hasPrefix("not ready: no upstream connection: "), "\(ready.body)")
            // A probe is not a sender: nobody was counted as refused.
            #expect(fixture.bridge.statistics.refusedConnections == 0)
            await server.stop()
        }
    }
}
