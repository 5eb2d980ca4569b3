import APNsCore
import Foundation
import TestSupport
import Testing

/// `--metrics` as an operator uses it: `serve --http2`, `bridge` and `serve` as processes, a known
/// mix sent through them with our binary `send`, `/metrics` parsed by prometheus-client and
/// `/healthz`, `/readyz` fetched with curl.
@Suite(.serialized) struct MetricsCommandTests {
    static func metricsURL(_ process: ChildProcess) throws -> String {
        let line = try #require(process.waitForLine { $0.hasPrefix("metrics on http://") }, "\(process.stderr)")
        return String(line.dropFirst("metrics on ".count))
    }

    @Test func theBridgeAndItsUpstreamCountTheSameRun() async throws {
        let scratch = try ScratchDirectory()
        let count = 300
        let (bad, gone) = (250, 77)
        let (server, upstreamPort) = try BridgeCommandTests.upstream([
            "--metrics", "127.0.0.1:0", "--fail-token", BridgeCommandTests.token(bad), "--unregistered",
            "\(BridgeCommandTests.token(gone)):1650000000500",
        ])
        defer { _ = server.interruptAndWait() }
        let upstreamMetrics = try Self.metricsURL(server)
        let (bridge, port, _) = try BridgeCommandTests.bridge(
            upstreamPort: upstreamPort, store: scratch.file("bridge.sqlite"), ["--metrics", "127.0.0.1:0"])
        defer { _ = bridge.interruptAndWait() }
        let bridgeMetrics = try Self.metricsURL(bridge)
        let base = String(bridgeMetrics.dropLast("/metrics".count))
        #expect(try curlStatus(base + "/healthz") == (200, "ok"))
        #expect(try curlStatus(base + "/readyz") == (200, "ready"))

        let input = (1...count).map {
            #"{"token":"\#(BridgeCommandTests.token($0))","payload":{"aps":{"alert":"n\#($0)"}},"id":\#($0)}"#
        }
        let inputPath = try scratch.write(Array((input.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let sent = await BridgeCommandTests.sender([
            "send", "--gateway", "127.0.0.1:\(port)", "--input", inputPath, "--json",
        ])
        #expect(sent.status == 1, "\(sent.stderr)")

        let scrape = try MetricsScrape.scrape(bridgeMetrics)
        let responses = "legacy_push_upstream_responses_total"
        #expect(scrape.value(responses, ["push_type": "alert", "status": "200", "reason": "none"]) == count - 2)
        #expect(scrape.value(responses, ["push_type": "alert", "status": "400", "reason": "BadDeviceToken"]) == 1)
        #expect(scrape.value(responses, ["push_type": "alert", "status": "410", "reason": "Unregistered"]) == 1)
        #expect(scrape.value("legacy_push_error_responses_total", ["status": "8"]) == 1)
        #expect(scrape.value("legacy_push_unregistered_stored_total") == 1)
        #expect(scrape.value("legacy_push_feedback_tuples_stored") == 1)
        #expect(scrape.value("legacy_push_notifications_forwarded_total") == count)
        #expect(scrape.value("legacy_push_upstream_response_seconds_count", ["status": "200"]) == count - 2)
        #expect(scrape.sum("legacy_push_upstream_response_seconds_count") == count)
        #expect(scrape.value("legacy_push_build_info", ["version": "0.1.0"]) == 1)

        // The upstream saw the same, by its own count.
        let upstream = try MetricsScrape.scrape(upstreamMetrics)
        let requests = "legacy_push_simulator_requests_total"
        #expect(upstream.value(requests, ["status": "200", "reason": "none"]) == count - 2)
        #expect(upstream.value(requests, ["status": "400", "reason": "BadDeviceToken"]) == 1)
        #expect(upstream.value(requests, ["status": "410", "reason": "Unregistered"]) == 1)
        #expect(upstream.value("legacy_push_connections") == 2)  // the bridge's two upstream connections
        #expect(try curlStatus(String(upstreamMetrics.dropLast("/metrics".count)) + "/readyz").status == 200)

        #expect(bridge.interruptAndWait() == 0)
    }

    @Test func theBinarySimulatorCountsItsVerdicts() async throws {
        let bad = String(repeating: "cd", count: 32)
        let server = try ChildProcess([
            "serve", "--port", "0", "--no-feedback", "--quiet", "--metrics", "127.0.0.1:0", "--fail-token", bad,
        ])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let url = try Self.metricsURL(server)
        let gateway = String(listening.dropFirst("listening on ".count))
        // Command 0 and command 2 frames, every one accepted: counted exactly, per command.
        for (format, tokens) in [("simple", ["01"]), ("frame", ["02", "03"])] {
            let result = await BridgeCommandTests.sender(
                ["send", "--gateway", gateway, "--format", format, "--alert", "hi"]
                    + tokens.flatMap { ["--token", String(repeating: $0, count: 32)] })
            #expect(result.status == 0, "\(result.stderr)")
        }
        let sent = await BridgeCommandTests.sender([
            "send", "--gateway", String(listening.dropFirst("listening on ".count)), "--token",
            String(repeating: "ab", count: 32), "--token", bad, "--token", String(repeating: "ef", count: 32),
            "--alert", "hi",
        ])
        #expect(sent.status == 1, "\(sent.stderr)")
        let scrape = try MetricsScrape.scrape(url)
        #expect(scrape.value("legacy_push_simulator_notifications_total", ["outcome": "accepted"]) == 5)
        #expect(scrape.value("legacy_push_notifications_received_total", ["command": "0"]) == 1)
        #expect(scrape.value("legacy_push_notifications_received_total", ["command": "2"]) == 2)
        // The enhanced send: its three frames at least (a frame after the failure may come twice).
        #expect((scrape.value("legacy_push_notifications_received_total", ["command": "1"]) ?? 0) >= 3)
        #expect(scrape.value("legacy_push_simulator_notifications_total", ["outcome": "rejected"]) == 1)
        #expect(scrape.value("legacy_push_error_responses_total", ["status": "8"]) == 1)
        #expect(try curlStatus(String(url.dropLast("/metrics".count)) + "/readyz") == (200, "ready"))
    }

    @Test func aBadMetricsAddressIsOneErrorLine() async {
        let result = await CLIRunner.run(["serve", "--metrics", "localhost"])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("legacy-push: error: --metrics needs a port"), "\(result.stderr)")
    }
}
