import APNsCore
import Foundation
import GatewaySimulator
import LegacyBridge
import TestSupport
import Testing

/// The bridge judged by a sender we did not write: pushjack 1.6.0 from PyPI, an unmodified legacy
/// binary client (item frames, error responses read after each batch, resend from the failing
/// identifier + 1, the feedback reader), pointed at the bridge in front of the HTTP/2 simulator.
@Suite(.serialized) struct BridgeIndependentSenderTests {
    static let program = """
        import json, sys
        from pushjack import APNSClient
        host, port, feedback_port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        certificate = sys.argv[5]
        error_timeout = float(sys.argv[6]) if len(sys.argv) > 6 else 2

        class Bridge(APNSClient):
            pass
        Bridge.host, Bridge.port = host, port
        Bridge.feedback_host, Bridge.feedback_port = host, feedback_port

        tokens = ["ab" * 24 + "%016x" % (index + 1) for index in range(count)]
        client = Bridge(certificate=certificate, default_error_timeout=error_timeout)
        response = client.send(tokens, "Hello from pushjack", badge=1)
        client.close()
        expired = Bridge(certificate=certificate).get_expired_tokens()
        print(json.dumps({
            "errors": [[type(error).__name__, error.identifier] for error in response.errors],
            "successes": len(response.successes),
            "expired": [[token.token, token.timestamp] for token in expired],
        }))
        """

    struct Outcome: Decodable {
        var errors: [[Value]]
        var successes: Int
        var expired: [[Value]]
    }

    enum Value: Decodable, Equatable {
        case text(String)
        case number(Int)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) {
                self = .number(number)
            } else {
                self = .text(try container.decode(String.self))
            }
        }
    }

    /// Runs a pushjack `program` against the bridge at `endpoints` with the arguments every program
    /// here reads: host, port, feedback port, count, the sender's certificate, then `errorTimeout`.
    static func pushjack(
        _ program: String, _ endpoints: Bridge.Endpoints, count: Int, errorTimeout: String? = nil
    ) async throws -> CLIRunner.Result {
        try await pushjack(
            program, gateway: endpoints.gateway, feedbackPort: endpoints.feedback?.port ?? 0, count: count,
            errorTimeout: errorTimeout)
    }

    /// Runs a pushjack `program` against a gateway and a feedback port on the gateway's host.
    static func pushjack(
        _ program: String, gateway: Endpoint, feedbackPort: UInt16, count: Int, errorTimeout: String? = nil
    ) async throws -> CLIRunner.Result {
        let python = try PythonTools.python()
        let arguments =
            [
                "-c", program, gateway.host, String(gateway.port), String(feedbackPort), String(count),
                Fixtures.certs("universal-combined.pem"),
            ] + (errorTimeout.map { [$0] } ?? [])
        return try await Task.detached { try CLIRunner.runProcess(URL(fileURLWithPath: python), arguments) }.value
    }

    @Test func pushjackSeesOneRejectionEveryOtherDeliveredOnceAndThe410AsFeedback() async throws {
        let count = 300
        // pushjack numbers notifications from 0: notification(i) has identifier i - 1.
        let bad = 117
        let gone = 42
        var faults = ProviderFaults()
        faults.failingTokens[TestGateway.notification(bad).token] = .badDeviceToken
        faults.unregisteredTokens[TestGateway.notification(gone).token] = .milliseconds(1_650_000_000_500)
        try await withBridge(faults: faults) { fixture in
            let result = try await Self.pushjack(Self.program, fixture.endpoints, count: count)
            #expect(result.status == 0, "\(result.stderr)")
            let outcome = try JSONDecoder().decode(Outcome.self, from: Data(result.output.utf8))
            #expect(outcome.errors == [[.text("APNSInvalidTokenError"), .number(bad - 1)]])
            #expect(outcome.successes == count - 1)
            #expect(
                outcome.expired == [[.text(TestGateway.notification(gone).token.hexString), .number(1_650_000_000)]])
            // Upstream, every notification but the bad and the unregistered one exactly once.
            let deliveries = fixture.deliveries()
            #expect(deliveries.keys.sorted() == Array(1...count).filter { $0 != bad && $0 != gone })
            #expect(deliveries.values.allSatisfy { $0 == 1 }, "a resend was delivered twice")
            #expect(fixture.bridge.statistics.forwarded == count)
        }
    }

    /// A sender that has written everything and waits for the error response with a short timeout
    /// (pushjack's `default_error_timeout`, 0.3 s here): the bridge's answer must not wait for its
    /// own socket poll to time out (0.5 s) once the verdict is in, or pushjack takes the bad
    /// notifications for delivered (before: it missed both rejections in 13 of 15 trials).
    @Test func aQuietSenderHearsEachRejectionBeforeItsErrorTimeout() async throws {
        let count = 60
        let bad = [20, 45]
        var faults = ProviderFaults()
        for index in bad { faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken }
        try await withBridge(faults: faults) { fixture in
            let result = try await Self.pushjack(Self.program, fixture.endpoints, count: count, errorTimeout: "0.3")
            #expect(result.status == 0, "\(result.stderr)")
            let outcome = try JSONDecoder().decode(Outcome.self, from: Data(result.output.utf8))
            #expect(outcome.errors == bad.map { [.text("APNSInvalidTokenError"), .number($0 - 1)] })
            #expect(outcome.successes == count - bad.count)
            #expect(fixture.deliveries().keys.sorted() == Array(1...count).filter { !bad.contains($0) })
        }
    }

    /// pushjack against a bridge whose upstream is gone. Before, the bridge answered status 10
    /// naming identifier 0, which pushjack took for "0 was delivered, resend from 1": once the
    /// upstream came back, notification 0 was never delivered, and while it was down pushjack
    /// looped (tens of thousands of connections a minute). Now the bridge refuses it before the
    /// handshake: pushjack hears a connection failure and stops, nothing is taken for delivered,
    /// and the bridge says once why.
    @Test func pushjackMeetingAnUnreachableUpstreamStopsInsteadOfLoopingAndNothingIsTakenForDelivered() async throws {
        let program = """
            import json, signal, sys
            from pushjack import APNSClient
            host, port, count, certificate = sys.argv[1], int(sys.argv[2]), int(sys.argv[4]), sys.argv[5]
            signal.alarm(60)  # a sender still looping after a minute fails the test
            class Bridge(APNSClient):
                pass
            Bridge.host, Bridge.port = host, port
            tokens = ["ab" * 24 + "%016x" % (index + 1) for index in range(count)]
            client = Bridge(certificate=certificate, default_error_timeout=1)
            try:
                response = client.send(tokens, "Hello from pushjack", badge=1)
                outcome = {"successes": len(response.successes),
                           "errors": [type(error).__name__ for error in response.errors]}
            except Exception as error:
                outcome = {"exception": type(error).__name__}
            print(json.dumps(outcome))
            """
        try await withBridge(upstreamAt: Endpoint(host: "127.0.0.1", port: 1)) { fixture in
            let result = try await Self.pushjack(program, fixture.endpoints, count: 200)
            #expect(result.status == 0, "\(result.stderr)")
            let outcome = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
            // pushjack gives up with a connection error; it never counts one as sent.
            #expect(outcome?["exception"] != nil || (outcome?["successes"] as? Int) == 0, "\(result.output)")
            #expect(fixture.bridge.statistics.senderConnections == 0)
            #expect(fixture.bridge.statistics.received == 0)
            #expect(fixture.bridge.statistics.refusedConnections < 50)
            let outages = fixture.events.get().filter { if case .upstreamUnavailable = $0 { true } else { false } }
            #expect(outages.count == 1)
        }
    }
}
