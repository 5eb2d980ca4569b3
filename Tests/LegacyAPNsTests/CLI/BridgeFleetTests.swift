import APNsCore
import APNsRuntime
import Foundation
import GatewaySimulator
import LegacyAPNs
import ProcessHarness
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
    /// `ticketKey`: the fleet's shared session ticket key file.
    static func bridge(port: UInt16, feedbackPort: UInt16, upstream: Endpoint, store: String, ticketKey: String)
        throws -> ChildProcess
    {
        let bridge = try ChildProcess([
            "bridge", "--port", "\(port)", "--feedback-port", "\(feedbackPort)", "--upstream",
            "127.0.0.1:\(upstream.port)", "--upstream-ca-file", ca, "--auth-key", p8, "--team-id", ProviderPair.teamID,
            "--store", store, "--topic", "com.example.legacy", "--json", "--session-ticket-key", ticketKey,
        ])
        _ = try #require(bridge.waitForLine { $0.contains("feedback on ") }, "\(bridge.stderr)")
        return bridge
    }

    /// A running fleet: the simulator upstream, the bridges (by index, restartable) and the
    /// balancer's gateway and feedback ports.
    final class Fleet {
        let upstream: ProviderFixture
        let store: String
        let ports: [(gateway: UInt16, feedback: UInt16)]
        var bridges: [ChildProcess]
        /// Lines of bridges that were killed or stopped.
        var logs: [String] = []
        /// The session ticket key every bridge of the fleet shares.
        let ticketKey: String

        init(upstream: ProviderFixture, store: String, bridges count: Int, folder: String) throws {
            self.upstream = upstream
            self.store = store
            ports = try (0..<count).map { _ in (try freeLoopbackPort(), try freeLoopbackPort()) }
            ticketKey = folder + "/session-ticket.key"
            _ = FileManager.default.createFile(
                atPath: ticketKey, contents: Data((0..<80).map { _ in UInt8.random(in: 0...255) }),
                attributes: [.posixPermissions: 0o600])
            bridges = try ports.map { [ticketKey] in
                try BridgeFleetTests.bridge(
                    port: $0.0, feedbackPort: $0.1, upstream: upstream.endpoint, store: store, ticketKey: ticketKey)
            }
            balancer = try HAProxyFleet(
                template: Fixtures.root + "/haproxy/fleet.cfg.in", bridges: ports, folder: folder)
        }

        private let balancer: HAProxyFleet
        var gateway: UInt16 { balancer.gateway }
        var feedback: UInt16 { balancer.feedback }

        /// SIGKILLs bridge `index`, keeps its lines, and starts it again on the same ports.
        func killAndRestart(_ index: Int) async throws {
            #expect(bridges[index].kill(SIGKILL) == .signal(SIGKILL))
            logs += bridges[index].lines
            try await Task.sleep(for: .milliseconds(300))
            bridges[index] = try BridgeFleetTests.bridge(
                port: ports[index].gateway, feedbackPort: ports[index].feedback, upstream: upstream.endpoint,
                store: store, ticketKey: ticketKey)
        }

        /// Stops every bridge (each must exit 0) and the balancer; returns every bridge's lines.
        func stop() -> [String] {
            for index in bridges.indices {
                #expect(bridges[index].interruptAndWait() == 0, "\(bridges[index].stderr)")
                logs += bridges[index].lines
            }
            balancer.stop()
            return logs
        }
    }

    /// Runs `body` with a fleet of two bridges on a fresh database in the shared cluster, in front
    /// of a simulator that fails the `bad` tokens and reports the `gone` ones uninstalled.
    static func withFleet<Result>(
        bad: Set<Int>, gone: Set<Int>, isolation: isolated (any Actor)? = #isolation,
        _ body: (Fleet) async throws -> Result
    ) async throws -> Result {
        let store = try PostgresCluster.shared.get().database().uri
        let scratch = try ScratchDirectory()
        return try await withProviderSimulator(configure: { configuration in
            for index in bad {
                configuration.faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken
            }
            for index in gone {
                configuration.faults.unregisteredTokens[TestGateway.notification(index).token] = .milliseconds(
                    1_767_225_600_000 + UInt64(index) * 1000)
            }
        }) { upstream in
            let fleet = try Fleet(upstream: upstream, store: store, bridges: 2, folder: scratch.path)
            do {
                let result = try await body(fleet)
                _ = fleet.stop()
                return result
            } catch {
                _ = fleet.stop()
                throw error
            }
        }
    }

    /// Sender connections and resumed ones, from the summary lines of the bridges that stopped.
    static func senderConnections(_ lines: [String]) -> (connections: Int, resumed: Int) {
        func number(_ name: String, in line: String) -> Int {
            guard let range = line.range(of: "\"\(name)\":") else { return 0 }
            return Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
        }
        var total = (connections: 0, resumed: 0)
        for line in lines where line.contains(#""event":"summary""#) {
            total.connections += number("senderConnections", in: line)
            total.resumed += number("resumedSenderConnections", in: line)
        }
        return total
    }

    /// `count` notification indexes: 1 % bad tokens and 40 uninstalled apps, from `seed`.
    static func faults(count: Int, seed: UInt64) -> (bad: Set<Int>, gone: Set<Int>) {
        var picker = SplitMix64(seed: seed)
        var bad = Set<Int>()
        var gone = Set<Int>()
        while bad.count < count / 100 { bad.insert(1 + Int(picker.next() % UInt64(count))) }
        while gone.count < 40 {
            let index = 1 + Int(picker.next() % UInt64(count))
            if !bad.contains(index) { gone.insert(index) }
        }
        return (bad, gone)
    }

    /// Reads the feedback service through the balancer `rounds` times with our binary client;
    /// returns every token read, in order.
    static func readFeedback(_ fleet: Fleet, rounds: Int) async -> [DeviceToken] {
        var tokens: [DeviceToken] = []
        for _ in 0..<rounds {
            let read = await CLIRunner.run([
                "feedback", "--feedback", "127.0.0.1:\(fleet.feedback)", "--json", "--ca-file", Self.ca, "--cert",
                Fixtures.certs("universal-modern.p12"), "--passphrase-file", Fixtures.certs("passphrase.txt"),
            ])
            #expect(read.status == 0, "\(read.stderr)")
            for line in read.output.split(separator: "\n") {
                guard let range = line.range(of: #""token":""#),
                    let token = try? DeviceToken(hexString: String(line[range.upperBound...].prefix(64)))
                else { continue }
                tokens.append(token)
            }
        }
        return tokens
    }

    @Test func twoBridgesOnOnePostgreSQLBehindHAProxyLoseNothingAndDuplicateNothingSilently() async throws {
        let count = 12_000
        let (bad, gone) = Self.faults(count: count, seed: 2804)
        try await Self.withFleet(bad: bad, gone: gone) { fleet in
            let upstream = fleet.upstream
            // HAProxy is up once it forwards: a TLS handshake through it succeeds.
            var configuration = BridgeFixture.clientConfiguration(
                gateway: Endpoint(host: "127.0.0.1", port: fleet.gateway), failures: 400)
            configuration.verdictTimeout = .seconds(20)
            let client = try PushClient(configuration: configuration)
            let notifications = (1...count).map { TestGateway.notification($0) }
            let sending = Task { await client.send(notifications) }

            // Bridge 0 killed once half went through, restarted on the same ports shortly after.
            let due = await eventually(within: .seconds(60)) { upstream.recorder.accepted.count >= count / 2 }
            #expect(due, "only \(upstream.recorder.accepted.count) delivered before the kill")
            try await fleet.killAndRestart(0)
            let report = await sending.value

            // Every 410, whichever bridge stored it, read back once through the balancer.
            let feedbackTokens = await Self.readFeedback(fleet, rounds: 6)
            let logs = fleet.stop()

            let ledger = BridgeLedger(
                count: count, accepted: upstream.recorder.accepted, report: report, logs: logs,
                undeliverable: bad.union(gone), bad: bad)
            let acknowledged = logs.filter { $0.contains(#""event":"acknowledgedResend""#) }.count
            let served = Dictionary(grouping: feedbackTokens.map(BridgeFixture.index(of:)), by: { $0 })
            print(
                "fleet: \(report.accepted) accepted, \(report.rejected.count) rejected, \(report.unconfirmed.count) "
                    + "unconfirmed, \(report.connections) connections, \(acknowledged) resends answered from the "
                    + "shared memory, \(ledger.namedBySender.count) named by the sender, \(ledger.namedByBridges.count) "
                    + "by the bridges, \(ledger.silent.count) silent; \(ledger.twice) delivered twice, "
                    + "\(ledger.twiceNotNamedByBridges.count) of them not named by a bridge; "
                    + "\(feedbackTokens.count) feedback tuples")
            #expect(report.sent == count)
            #expect(ledger.lost.isEmpty, "lost: \(ledger.lost.prefix(10))")
            #expect(
                ledger.silent.isEmpty,
                "delivered twice, named by nobody: \(ledger.silent.count), e.g. \(ledger.silent.prefix(10))")
            // Resends crossed bridges and were answered from the shared memory.
            #expect(acknowledged > 0)
            // Reconnects crossed bridges and resumed their TLS sessions there (the shared ticket
            // key): without it a sender resumes only at the bridge that made its session, which
            // round robin does not send it back to (26 of 121 resumed without the key).
            let (connections, resumed) = Self.senderConnections(logs)
            #expect(resumed * 2 > connections, "\(resumed) of \(connections) sender connections resumed")
            #expect(Set(served.keys) == gone, "410s read back: \(served.keys.sorted()) of \(gone.sorted())")
            #expect(served.values.allSatisfy { $0.count == 1 }, "a 410 read back twice")
        }
    }

    /// pushjack, a legacy sender we did not write, through the balancer: after each error response
    /// it reconnects (to the other bridge, round robin) and resends everything after the bad
    /// notification, part of which the first bridge had already forwarded. The fleet answers
    /// those from the shared memory: pushjack hears exactly the bad tokens, every other
    /// notification is delivered exactly once, and its feedback read through the balancer gets
    /// every 410 either bridge stored, once.
    @Test func pushjackThroughTheFleetHearsEachBadTokenOnceAndNothingIsDeliveredTwice() async throws {
        let count = 3_000
        let (bad, gone) = Self.faults(count: count, seed: 2805)
        try await Self.withFleet(bad: bad, gone: gone) { fleet in
            let result = try await BridgeIndependentSenderTests.pushjack(
                BridgeIndependentSenderTests.program, gateway: Endpoint(host: "127.0.0.1", port: fleet.gateway),
                feedbackPort: fleet.feedback, count: count)
            let logs = fleet.stop()
            #expect(result.status == 0, "\(result.stderr)")
            let outcome = try JSONDecoder().decode(
                BridgeIndependentSenderTests.Outcome.self, from: Data(result.output.utf8))
            // pushjack numbers notifications from 0: notification(i) has identifier i - 1.
            #expect(outcome.errors == bad.sorted().map { [.text("APNSInvalidTokenError"), .number($0 - 1)] })
            #expect(outcome.successes == count - bad.count)
            let expired = outcome.expired.compactMap { pair -> Int? in
                guard case .text(let hex) = pair.first, let token = try? DeviceToken(hexString: hex) else { return nil }
                return BridgeFixture.index(of: token)
            }
            #expect(Set(expired) == gone && expired.count == gone.count, "410s read back: \(expired.sorted())")
            let delivered = Dictionary(
                grouping: fleet.upstream.recorder.accepted.map { BridgeFixture.index(of: $0.request.deviceToken) }
            ) { $0 }
            let twice = delivered.filter { $0.value.count > 1 }.keys.sorted()
            #expect(
                Set(delivered.keys) == Set(1...count).subtracting(bad).subtracting(gone),
                "delivered \(delivered.count) of \(count - bad.count - gone.count)")
            #expect(twice.isEmpty, "delivered twice: \(twice.prefix(10))")
            let acknowledged = logs.filter { $0.contains(#""event":"acknowledgedResend""#) }.count
            print("fleet with pushjack: \(delivered.count) delivered, \(acknowledged) resends answered from memory")
        }
    }
}
