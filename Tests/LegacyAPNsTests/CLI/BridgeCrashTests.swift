import APNsCore
import APNsRuntime
import Foundation
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// `legacy-push bridge` killed with SIGKILL in the middle of a send (three times) and restarted on
/// the same store and port: our binary client keeps sending through it (reconnecting), and the simulator
/// behind it counts every delivery. Nothing is lost, no bad token is delivered, and every
/// notification delivered twice is named: by the sender (it was in flight on a connection that
/// went silent) or by the bridge (`possibleDuplicate`: its earlier copy was upstream when the
/// process died). Before the resend memory was kept in the store, the restarted bridge delivered
/// again what the killed one had remembered for the sender's resend, and nobody said so.
@Suite(.serialized) struct BridgeCrashTests {
    static let ca = Fixtures.certs("ca.pem")
    static let p8 = Fixtures.certs("AuthKey_ABC123DEFG.p8")

    static func bridge(port: UInt16, upstream: Endpoint, store: String) throws -> ChildProcess {
        let bridge = try ChildProcess([
            "bridge", "--port", "\(port)", "--feedback-port", "0", "--upstream", "127.0.0.1:\(upstream.port)",
            "--upstream-ca-file", ca, "--auth-key", p8, "--team-id", ProviderPair.teamID, "--store", store,
            "--topic", "com.example.legacy", "--json",
        ])
        _ = try #require(
            bridge.waitForLine { $0.contains(#""event":"listening""#) || $0.contains("listening on ") },
            "\(bridge.stderr)")
        return bridge
    }

    @Test func aBridgeKilledAndRestartedOnItsStoreDuplicatesNothingSilently() async throws {
        let count = 20_000
        var picker = SplitMix64(seed: 3203)
        var bad = Set<Int>()
        while bad.count < count / 50 { bad.insert(1 + Int(picker.next() % UInt64(count))) }
        let scratch = try ScratchDirectory()
        let store = scratch.file("bridge.sqlite")
        try await withProviderSimulator(configure: { configuration in
            for index in bad {
                configuration.faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken
            }
        }) { upstream in
            let port = try freeLoopbackPort()  // the bridge takes it, every incarnation
            var bridge = try Self.bridge(port: port, upstream: upstream.endpoint, store: store)
            var logs: [String] = []

            // Reconnects through each restart (the port is refused for a few hundred milliseconds,
            // seconds on a loaded machine: 400 refusals at up to 100 ms apart are 40 s).
            var configuration = BridgeFixture.clientConfiguration(
                gateway: Endpoint(host: "127.0.0.1", port: port), failures: 400)
            configuration.verdictTimeout = .seconds(20)
            let client = try PushClient(configuration: configuration)
            let notifications = (1...count).map { TestGateway.notification($0) }
            let sending = Task { await client.send(notifications) }

            // Killed three times, at a quarter, a half and three quarters delivered (answers from
            // memory are in use by then), restarted on the same store and port shortly after.
            for quarter in 1...3 {
                let due = await eventually(within: .seconds(60)) {
                    upstream.recorder.accepted.count >= count * quarter / 4
                }
                #expect(due, "only \(upstream.recorder.accepted.count) delivered before kill \(quarter)")
                #expect(bridge.kill(SIGKILL) == .signal(SIGKILL))
                logs += bridge.lines
                try await Task.sleep(for: .milliseconds(300))
                bridge = try Self.bridge(port: port, upstream: upstream.endpoint, store: store)
            }
            let report = await sending.value
            #expect(bridge.interruptAndWait() == 0, "\(bridge.stderr)")
            logs += bridge.lines
            #expect(logs.contains { $0.contains(#""event":"senderConnected""#) })

            let ledger = BridgeLedger(
                count: count, accepted: upstream.recorder.accepted, report: report, logs: logs, undeliverable: bad,
                bad: bad)
            print(
                "bridge crash: \(report.accepted) accepted, \(report.rejected.count) rejected, "
                    + "\(report.unconfirmed.count) unconfirmed, \(ledger.twice) delivered twice "
                    + "(\(ledger.namedBySender.count) named by the sender, \(ledger.namedByBridges.count) by the "
                    + "bridge), \(ledger.silent.count) silently")
            #expect(report.sent == count)
            #expect(ledger.lost.isEmpty, "lost: \(ledger.lost.prefix(10))")
            #expect(
                ledger.silent.isEmpty,
                "delivered twice, named by nobody: \(ledger.silent.count), e.g. \(ledger.silent.prefix(10))")
        }
    }
}
