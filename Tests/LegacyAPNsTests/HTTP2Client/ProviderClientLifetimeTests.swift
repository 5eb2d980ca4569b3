import APNsCore
import APNsCredentials
import Foundation
import GatewaySimulator
import HTTP2Client
import TestSupport
import Testing

/// A ``ProviderClient`` keeps its connections from one send to the next, until ``ProviderClient/shutdown()``:
/// judged by the in-process HTTP/2 simulator, which counts the connections and provider tokens it
/// sees.
@Suite struct ProviderClientLifetimeTests {
    typealias Books = ProviderClientSimulatorTests

    /// Simulator events, with a wait for one to arrive (bounded only so a broken build cannot hang
    /// the suite).
    final class SimulatorLog: @unchecked Sendable {
        // @unchecked: `events` is guarded by `condition`.
        private let condition = NSCondition()
        private var events: [ProviderSimulatorEvent] = []

        func append(_ event: ProviderSimulatorEvent) {
            condition.withLock {
                events.append(event)
                condition.broadcast()
            }
        }

        var all: [ProviderSimulatorEvent] { condition.withLock { events } }

        /// Waits until `count` events satisfy `matches`; false after 30 s.
        func wait(for count: Int, _ matches: (ProviderSimulatorEvent) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(30)
            return condition.withLock {
                while events.filter(matches).count < count {
                    guard condition.wait(until: deadline) else { return false }
                }
                return true
            }
        }
    }

    static func isDisconnect(_ event: ProviderSimulatorEvent) -> Bool {
        if case .disconnected = event { return true }
        return false
    }

    /// Runs `body` with a simulator (token auth and certificate auth both welcome), its log, and a
    /// client configured for it whose events are collected.
    static func withClient(
        auth: Books.Auth, configure: (inout ProviderSimulator.Configuration) -> Void = { _ in },
        _ body: (ProviderClient, ProviderFixture, SimulatorLog, Locked<[ProviderEvent]>) async throws -> Void
    ) async throws {
        let log = SimulatorLog()
        try await withProviderSimulator(configure: { configuration in
            configure(&configuration)
            configuration.events = { log.append($0) }
        }) { fixture in
            let events = Locked<[ProviderEvent]>([])
            let client = try ProviderClient(configuration: Books.configuration(fixture.endpoint, auth: auth)) { event in
                events.update { $0.append(event) }
            }
            try await body(client, fixture, log, events)
        }
    }

    @Test(arguments: Books.Auth.allCases)
    func fiveSendsUseOneConnectionAndOneProviderToken(_ auth: Books.Auth) async throws {
        try await Self.withClient(auth: auth) { client, fixture, log, events in
            for index in 1...5 {
                let report = await client.send(Books.request(index))
                #expect(report.accepted == 1 && report.isCompleteSuccess, "send \(index): \(report)")
            }
            #expect(fixture.simulator.statistics.connections == 1)
            #expect(fixture.simulator.statistics.accepted == 5)
            let tokens = log.all.filter {
                switch $0 {
                case .tokenAccepted, .tokenUpdated: true
                default: false
                }
            }
            let signed = events.get().filter { $0 == .tokenRefreshed(connection: 0) }
            #expect(tokens.count == (auth == .token ? 1 : 0), "\(tokens)")
            #expect(signed.count == (auth == .token ? 1 : 0))
            #expect(!log.all.contains(where: Self.isDisconnect), "the connection closed between sends")

            // shutdown() closes it: the simulator sees the one connection end, with all five on it.
            await client.shutdown()
            #expect(log.wait(for: 1, Self.isDisconnect))
            #expect(log.all.filter(Self.isDisconnect) == [.disconnected(connection: 1, accepted: 5, rejected: 0)])

            // A send after shutdown() still works, on a connection of its own that it closes.
            let after = await client.send(Books.request(6))
            #expect(after.accepted == 1)
            #expect(log.wait(for: 2, Self.isDisconnect))
            #expect(fixture.simulator.statistics.connections == 2)
            #expect(Set(fixture.recorder.accepted.map { Books.index(of: $0.request.deviceToken) }) == Set(1...6))
        }
    }

    /// The simulator closes a connection idle for a second (GOAWAY IdleTimeout, then close), as
    /// APNs closes connections it considers idle: the next send finds its kept connection gone and
    /// opens a new one, without an error, a retry or a duplicate.
    @Test(arguments: Books.Auth.allCases)
    func aConnectionTheServerClosedBetweenSendsIsReplacedLosingAndDuplicatingNothing(_ auth: Books.Auth)
        async throws
    {
        try await Self.withClient(auth: auth, configure: { $0.limits.idleTimeout = .seconds(1) }) {
            client, fixture, log, events in
            let first = await client.send((1...3).map { Books.request($0) })
            #expect(first.accepted == 3 && first.isCompleteSuccess, "\(first)")
            // The server's GOAWAY and close reach the client while it keeps the connection.
            #expect(log.wait(for: 1, Self.isDisconnect))
            #expect(log.all.contains { if case .goaway(_, _, .idleTimeout) = $0 { true } else { false } })

            let second = await client.send((4...6).map { Books.request($0) })
            #expect(second.accepted == 3 && second.isCompleteSuccess, "\(second)")
            #expect(second.retried == 0 && second.possibleDuplicates == 0 && second.unconfirmed.isEmpty)
            #expect(fixture.simulator.statistics.connections == 2)
            #expect(fixture.simulator.statistics.accepted == 6)
            let recorded = fixture.recorder.accepted.map { Books.index(of: $0.request.deviceToken) }
            #expect(recorded.sorted() == Array(1...6), "each notification recorded exactly once")
            let trouble = events.get().filter {
                switch $0 {
                case .connectionFailed, .retrying, .unconfirmed, .rejected: true
                default: false
                }
            }
            #expect(trouble.isEmpty, "\(trouble)")
            await client.shutdown()
        }
    }

    /// With two connections, both are kept: two concurrent sends after the first find them.
    @Test func everyConnectionOfThePoolIsKept() async throws {
        try await Self.withClient(auth: .certificate) { client, fixture, log, _ in
            var configuration = client.configuration
            configuration.connections = 2
            let pooled = try ProviderClient(configuration: configuration)
            for round in 0..<3 {
                let report = await pooled.send((1...200).map { Books.request(round * 200 + $0) })
                #expect(report.accepted == 200, "\(report)")
            }
            #expect(fixture.simulator.statistics.connections == 2)
            await pooled.shutdown()
            #expect(log.wait(for: 2, Self.isDisconnect))
        }
    }
}
