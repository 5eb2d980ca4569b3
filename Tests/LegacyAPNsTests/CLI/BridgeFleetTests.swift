import APNsCore
import APNsRuntime
import Foundation
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// A fleet: two `legacy-push bridge` processes on one PostgreSQL database (``PostgresCluster``)
/// behind HAProxy (`mode tcp`, round robin, health checks), in front of one simulator with bad
/// tokens and uninstalled apps. Our binary client sends through the balancer, so each reconnect
/// after an error response lands on the other bridge, which must answer the resend from what the
/// first one remembered; one bridge is SIGKILLed mid-run and restarted. Nothing is lost, no bad
/// token is delivered, every notification delivered twice is named (by the sender or a bridge),
/// and every 410 stored by either bridge is read back exactly once through the balancer.
@Suite(.serialized) struct BridgeFleetTests {
    static let ca = Fixtures.certs("ca.pem")
    static let p8 = Fixtures.certs("AuthKey_ABC123DEFG.p8")

    /// A bridge of the fleet, on fixed ports, logging JSON events.
    static func bridge(port: UInt16, feedbackPort: UInt16, upstream: Endpoint, store: String) throws -> ChildProcess {
        let bridge = try ChildProcess([
            "bridge", "--port", "\(port)", "--feedback-port", "\(feedbackPort)", "--upstream",
            "127.0.0.1:\(upstream.port)", "--upstream-ca-file", ca, "--auth-key", p8, "--team-id", ProviderPair.teamID,
            "--store", store, "--topic", "com.example.legacy", "--json",
        ])
        _ = try #require(bridge.waitForLine { $0.contains("feedback on ") }, "\(bridge.stderr)")
        return bridge
    }

    /// HAProxy in front of the bridges' gateway and feedback ports.
    static func balancer(gateway: UInt16, feedback: UInt16, bridges: [(UInt16, UInt16)], folder: String) throws
        -> BackgroundProgram
    {
        let template = try String(contentsOfFile: Fixtures.root + "/haproxy/fleet.cfg.in", encoding: .utf8)
        let servers = { (kind: String, port: (UInt16, UInt16) -> UInt16) in
            bridges.enumerated().map {
                "    server \(kind)\($0.offset) 127.0.0.1:\(port($0.element.0, $0.element.1)) check inter 200ms fall 2 rise 1"
            }
            .joined(separator: "\n")
        }
        let configuration = template.replacingOccurrences(of: "@GATEWAY_PORT@", with: "\(gateway)")
            .replacingOccurrences(of: "@FEEDBACK_PORT@", with: "\(feedback)")
            .replacingOccurrences(of: "@BRIDGES@", with: servers("b") { gateway, _ in gateway })
            .replacingOccurrences(of: "@FEEDBACKS@", with: servers("f") { _, feedback in feedback })
        let path = folder + "/haproxy.cfg"
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        let haproxy = try #require(ExternalProgram.haproxy.locate())
        let check = try CLIRunner.runProcess(haproxy, ["-c", "-f", path])
        #expect(check.status == 0, "\(check.stderr)")
        return try BackgroundProgram(haproxy, ["-db", "-f", path])
    }

    @Test func twoBridgesOnOnePostgreSQLBehindHAProxyLoseNothingAndDuplicateNothingSilently() async throws {
        let store = try PostgresCluster.shared.get().database()
        let count = 12_000
        var picker = SplitMix64(seed: 2804)
        var bad = Set<Int>()
        var gone = Set<Int>()
        while bad.count < count / 100 { bad.insert(1 + Int(picker.next() % UInt64(count))) }
        while gone.count < 40 {
            let index = 1 + Int(picker.next() % UInt64(count))
            if !bad.contains(index) { gone.insert(index) }
        }
        let scratch = try ScratchDirectory()
        try await withProviderSimulator(configure: { configuration in
            for index in bad {
                configuration.faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken
            }
            for index in gone {
                configuration.faults.unregisteredTokens[TestGateway.notification(index).token] = .milliseconds(
                    1_767_225_600_000 + UInt64(index) * 1000)
            }
        }) { upstream in
            let ports = try (0..<2).map { _ in (try freeLoopbackPort(), try freeLoopbackPort()) }
            var bridges = try ports.map {
                try Self.bridge(port: $0.0, feedbackPort: $0.1, upstream: upstream.endpoint, store: store)
            }
            let (gateway, feedback) = (try freeLoopbackPort(), try freeLoopbackPort())
            let balancer = try Self.balancer(gateway: gateway, feedback: feedback, bridges: ports, folder: scratch.path)
            defer { balancer.stop() }
            // HAProxy is up once it forwards: a TLS handshake through it succeeds.
            var configuration = BridgeFixture.clientConfiguration(
                gateway: Endpoint(host: "127.0.0.1", port: gateway), failures: 400)
            configuration.verdictTimeout = .seconds(20)
            let client = try PushClient(configuration: configuration)
            let notifications = (1...count).map { TestGateway.notification($0) }
            let sending = Task { await client.send(notifications) }

            // Bridge 0 killed once half went through, restarted on the same ports shortly after.
            var logs: [String] = []
            let due = await eventually(within: .seconds(60)) { upstream.recorder.accepted.count >= count / 2 }
            #expect(due, "only \(upstream.recorder.accepted.count) delivered before the kill")
            #expect(bridges[0].kill(SIGKILL) == .signal(SIGKILL))
            logs += bridges[0].lines
            try await Task.sleep(for: .milliseconds(300))
            bridges[0] = try Self.bridge(
                port: ports[0].0, feedbackPort: ports[0].1, upstream: upstream.endpoint, store: store)
            let report = await sending.value

            // Every 410, whichever bridge stored it, read back once through the balancer.
            var feedbackTokens: [DeviceToken] = []
            for _ in 0..<6 {
                let read = await CLIRunner.run([
                    "feedback", "--feedback", "127.0.0.1:\(feedback)", "--json", "--ca-file", Self.ca, "--cert",
                    Fixtures.certs("universal-modern.p12"), "--passphrase-file", Fixtures.certs("passphrase.txt"),
                ])
                #expect(read.status == 0, "\(read.stderr)")
                for line in read.output.split(separator: "\n") {
                    guard let range = line.range(of: #""token":""#),
                        let token = try? DeviceToken(hexString: String(line[range.upperBound...].prefix(64)))
                    else { continue }
                    feedbackTokens.append(token)
                }
            }
            for index in bridges.indices {
                #expect(bridges[index].interruptAndWait() == 0, "\(bridges[index].stderr)")
                logs += bridges[index].lines
            }

            let ledger = BridgeLedger(
                count: count, accepted: upstream.recorder.accepted, report: report, logs: logs,
                undeliverable: bad.union(gone), bad: bad)
            let acknowledged = logs.filter { $0.contains(#""event":"acknowledgedResend""#) }.count
            let served = Dictionary(grouping: feedbackTokens.map(BridgeFixture.index(of:)), by: { $0 })
            print(
                "fleet: \(report.accepted) accepted, \(report.rejected.count) rejected, \(report.unconfirmed.count) "
                    + "unconfirmed, \(report.connections) connections, \(acknowledged) resends answered from the "
                    + "shared memory, \(ledger.namedBySender.count) named by the sender, \(ledger.namedByBridges.count) "
                    + "by the bridges, \(ledger.silent.count) silent; \(feedbackTokens.count) feedback tuples")
            #expect(report.sent == count)
            #expect(ledger.lost.isEmpty, "lost: \(ledger.lost.prefix(10))")
            #expect(
                ledger.silent.isEmpty,
                "delivered twice, named by nobody: \(ledger.silent.count), e.g. \(ledger.silent.prefix(10))")
            // Resends crossed bridges and were answered from the shared memory.
            #expect(acknowledged > 0)
            #expect(Set(served.keys) == gone, "410s read back: \(served.keys.sorted()) of \(gone.sorted())")
            #expect(served.values.allSatisfy { $0.count == 1 }, "a 410 read back twice")
        }
    }
}
