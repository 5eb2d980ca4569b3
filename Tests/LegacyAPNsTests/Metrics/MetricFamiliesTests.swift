import APNsCore
import APNsMetrics
import GatewaySimulator
import HTTP2Client
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// The families OPERATIONS.md asks for beyond the first ones: frames received per command (the
/// bridge and the binary simulator), retries per reason, the resets the client sends, and the
/// latency of rejections. Each run is a known mix; `/metrics` is parsed by prometheus-client and
/// every count is compared to the run, to the notification.
@Suite struct MetricFamiliesTests {
    typealias Books = ProviderClientSimulatorTests

    /// The scrape of `metrics`, served for the moment by a ``MetricsServer``.
    static func scrape(_ metrics: PushMetrics) async throws -> MetricsScrape {
        let server = MetricsServer(metrics: metrics, port: 0)
        let endpoint = try await server.start()
        let scrape = Result { try MetricsScrape.scrape("http://\(endpoint)/metrics") }
        await server.stop()
        return try scrape.get()
    }

    /// 3 notifications as command 0, 5 as command 1, 7 as command 2, each format from its own client.
    static let mix: [(format: FrameFormat, range: ClosedRange<Int>)] = [
        (.simple, 1...3), (.enhanced, 4...8), (.itemized, 9...15),
    ]

    static func sendMix(_ configuration: PushClient.Configuration) async throws {
        for (format, range) in mix {
            var configuration = configuration
            configuration.format = format
            let report = try await PushClient(configuration: configuration).send(
                range.map { TestGateway.notification($0) })
            #expect(report.failure == nil && report.accepted == range.count, "\(format): \(report)")
        }
    }

    static func expectPerCommand(_ scrape: MetricsScrape, sourceLocation: SourceLocation = #_sourceLocation) {
        let received = "legacy_push_notifications_received_total"
        #expect(scrape.types["legacy_push_notifications_received"] == "counter", sourceLocation: sourceLocation)
        #expect(scrape.value(received, ["command": "0"]) == 3, sourceLocation: sourceLocation)
        #expect(scrape.value(received, ["command": "1"]) == 5, sourceLocation: sourceLocation)
        #expect(scrape.value(received, ["command": "2"]) == 7, sourceLocation: sourceLocation)
        #expect(scrape.sum(received) == 15, sourceLocation: sourceLocation)
    }

    @Test func theBridgeCountsFramesPerCommand() async throws {
        let metrics = PushMetrics(version: "test")
        try await withBridge(configure: { $0.reportMetrics(to: metrics) }) { fixture in
            metrics.observe(fixture.bridge)
            try await Self.sendMix(BridgeFixture.clientConfiguration(gateway: fixture.endpoints.gateway))
            #expect(fixture.deliveries().count == 15)
            let statistics = fixture.bridge.statistics
            #expect(statistics.received == 15)
            #expect(statistics.receivedByCommand.total == 15)
            let scrape = try await Self.scrape(metrics)
            Self.expectPerCommand(scrape)
            #expect(scrape.value("legacy_push_notifications_forwarded_total") == 15)
        }
    }

    @Test func theBinarySimulatorCountsFramesPerCommand() async throws {
        let metrics = PushMetrics(version: "test")
        try await withTestGateway(configure: { $0.reportMetrics(to: metrics) }) { gateway in
            metrics.observe(gateway.simulator)
            try await Self.sendMix(gateway.clientConfiguration())
            #expect(gateway.recorder.notifications.count == 15)
            let counts = gateway.simulator.statistics.receivedByCommand
            #expect(counts.simple == 3 && counts.enhanced == 5 && counts.itemized == 7)
            let scrape = try await Self.scrape(metrics)
            Self.expectPerCommand(scrape)
            #expect(scrape.value("legacy_push_simulator_notifications_total", ["outcome": "accepted"]) == 15)
        }
    }

    /// Token 3 always gets 429, token 7 always 503, token 11 400 BadDeviceToken, token 13 no answer
    /// at all; three attempts each. Everything else is accepted.
    @Test func retriesPerReasonResetsSentAndRejectionLatencyAgreeWithTheRun() async throws {
        let count = 40
        let metrics = PushMetrics(version: "test")
        let (report, statistics) = try await withProviderSimulator(configure: {
            $0.faults.failingTokens = [
                Books.token(3): .tooManyRequests, Books.token(7): .serviceUnavailable, Books.token(11): .badDeviceToken,
            ]
            $0.faults.stallingTokens = [Books.token(13)]
        }) { fixture in
            var configuration = Books.configuration(fixture.endpoint, auth: .token)
            configuration.delivery.requestTimeout = .milliseconds(400)
            configuration.delivery.maximumAttempts = 3
            let client = try ProviderClient(configuration: configuration, events: metrics.record)
            let report = await client.send((1...count).map { Books.request($0) })
            await client.shutdown()
            return (report, fixture.simulator.statistics)
        }
        #expect(report.failure == nil)
        #expect(report.accepted == count - 4)
        #expect(report.rejected.map { Books.index(of: $0.token) }.sorted() == [3, 7, 11])
        #expect(report.rejected.allSatisfy { $0.latency != nil }, "every answer is timed")
        #expect(report.unconfirmed.map { Books.index(of: $0.request.deviceToken) } == [13])
        // What the simulator saw: 36 accepted, three 429s, three 503s, one 400, three stalls.
        #expect(statistics.accepted == count - 4)
        #expect(statistics.rejected[.tooManyRequests] == 3 && statistics.rejected[.serviceUnavailable] == 3)
        #expect(statistics.rejected[.badDeviceToken] == 1 && statistics.stalled == 3)

        let scrape = try await Self.scrape(metrics)
        let sent = statistics.accepted + statistics.rejectedCount + statistics.stalled
        #expect(scrape.value("legacy_push_upstream_requests_sent_total") == sent)
        // Retries per reason: two each for the three that were tried three times.
        let retries = "legacy_push_upstream_retries_total"
        #expect(scrape.value(retries, ["reason": "too_many_requests", "possible_duplicate": "false"]) == 2)
        #expect(scrape.value(retries, ["reason": "server_error", "possible_duplicate": "false"]) == 2)
        #expect(scrape.value(retries, ["reason": "request_timeout", "possible_duplicate": "true"]) == 2)
        #expect(scrape.sum(retries) == 6)
        #expect(scrape.sum(retries) == report.retried)
        // The client reset each stalled stream (RST_STREAM CANCEL); the server reset none.
        let resets = "legacy_push_upstream_stream_resets_total"
        #expect(scrape.types["legacy_push_upstream_stream_resets"] == "counter")
        #expect(scrape.value(resets, ["by": "client", "error_code": "CANCEL"]) == 3)
        #expect(scrape.sum(resets, where: ["by": "server"]) == 0)
        #expect(scrape.value("legacy_push_upstream_unconfirmed_total", ["may_have_been_delivered": "true"]) == 1)
        // Final answers per status, each timed in the histogram under its status.
        let responses = "legacy_push_upstream_responses_total"
        let latency = "legacy_push_upstream_response_seconds"
        let finals: [(status: String, reason: String, count: Int)] = [
            ("200", "none", count - 4), ("429", "TooManyRequests", 1), ("503", "ServiceUnavailable", 1),
            ("400", "BadDeviceToken", 1),
        ]
        for (status, reason, expected) in finals {
            #expect(scrape.value(responses, ["push_type": "none", "status": status, "reason": reason]) == expected)
            #expect(scrape.value(latency + "_count", ["status": status]) == expected, "status \(status)")
            #expect(scrape.value(latency + "_bucket", ["status": status, "le": "+Inf"]) == expected)
        }
        #expect(scrape.sum(latency + "_count") == count - 1, "every final answer, none for the stalled one")
        #expect(scrape.types[latency] == "histogram")
    }

    @Test func theServersResetsAndRefusedStreamsAreCountedByWhoResetThem() {
        // The listener's mapping, event by event (the machine's own tests cover when they happen).
        let metrics = PushMetrics(version: "test")
        metrics.record(.streamReset(connection: 0, stream: 3, errorCode: .refusedStream, byClient: false))
        metrics.record(.streamReset(connection: 0, stream: 5, errorCode: .cancel, byClient: true))
        metrics.record(
            .retrying(connection: 0, position: 1, cause: .refusedStream, reason: "refused", possibleDuplicate: false))
        metrics.record(
            .retrying(connection: 0, position: 2, cause: .goaway, reason: "not processed", possibleDuplicate: false))
        let page = metrics.exposition()
        #expect(page.contains(#"legacy_push_upstream_stream_resets_total{by="server",error_code="REFUSED_STREAM"} 1"#))
        #expect(page.contains(#"legacy_push_upstream_stream_resets_total{by="client",error_code="CANCEL"} 1"#))
        #expect(
            page.contains(#"legacy_push_upstream_retries_total{reason="refused_stream",possible_duplicate="false"} 1"#))
        #expect(page.contains(#"legacy_push_upstream_retries_total{reason="goaway",possible_duplicate="false"} 1"#))
    }
}
