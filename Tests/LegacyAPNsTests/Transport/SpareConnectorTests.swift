import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

/// The connection a slot prepares in advance after errors: used when healthy, dropped when the
/// gateway closed it meanwhile, and never opened for an error-free send.
@Suite struct SpareConnectorTests {
    static func connector(_ gateway: TestGateway) throws -> SpareConnector {
        let context = try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
        return SpareConnector(endpoint: gateway.endpoints.gateway, context: context, timeout: 5)
    }

    /// Polls `condition` until it holds or `timeout` passes (the simulator runs on its own threads).
    static func eventually(_ timeout: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    @Test func aPreparedSpareIsHandedOverReadyToUse() async throws {
        try await withTestGateway { gateway in
            let spare = try Self.connector(gateway)
            defer { spare.stop() }
            #expect(spare.take() == nil)  // nothing asked for yet
            spare.prepare(resuming: nil)
            #expect(Self.eventually { gateway.simulator.statistics.connections == 1 })
            var session: TLSSession?
            #expect(
                Self.eventually {
                    session = spare.take()
                    return session != nil
                })
            let frame = FrameFixtures.notifications[1].bin
            _ = frame.withUnsafeBytes { session!.write($0) }
            session!.close()
            #expect(Self.eventually { gateway.recorder.count == 1 })
        }
    }

    @Test func aSpareTheGatewayClosedIsNotUsed() async throws {
        try await withTestGateway(configure: { $0.idleTimeout = .milliseconds(200) }) { gateway in
            let spare = try Self.connector(gateway)
            defer { spare.stop() }
            spare.prepare(resuming: nil)
            #expect(
                Self.eventually {
                    gateway.events.get().contains { if case .idleTimeout = $0 { return true } else { return false } }
                })
            #expect(spare.take() == nil)  // the event comes after the close, so the client has the FIN
        }
    }

    @Test func errorsMakeTheClientKeepTheNextConnectionReady() async throws {
        var faults = SimulatorFaults()
        faults.failEvery = (count: 20, status: .invalidToken)
        try await withTestGateway(faults: faults) { gateway in
            let client = try PushClient(configuration: gateway.clientConfiguration())
            let report = await client.send((1...400).map { TestGateway.notification($0) })
            #expect(report.failure == nil)
            #expect(report.accepted + report.rejected.count == 400)
            #expect(report.rejected.count >= 15)
            // Every connection the gateway saw was used, but for at most one spare left over at the end.
            let seen = gateway.simulator.statistics.connections
            #expect(seen >= report.connections && seen <= report.connections + 1)
        }
    }

    @Test func anErrorFreeSendOpensNoSpare() async throws {
        try await withTestGateway { gateway in
            let client = try PushClient(configuration: gateway.clientConfiguration())
            let report = await client.send((1...300).map { TestGateway.notification($0) })
            #expect(report.isCompleteSuccess)
            #expect(gateway.simulator.statistics.connections == report.connections)
        }
    }
}
