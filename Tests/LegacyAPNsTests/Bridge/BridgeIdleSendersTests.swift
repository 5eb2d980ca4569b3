import APNsCore
import APNsRuntime
import Foundation
import GatewaySimulator
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// Idle sender connections wait without a thread of their own (``Bridge/Configuration/parkAfter``):
/// parked after a quiet spell, served again by a new thread the moment they send, evicted, time
/// out or the bridge stops, with exactly what an unparked connection would have had.
@Suite struct BridgeIdleSendersTests {
    static func frame(_ index: Int) -> [UInt8] {
        var writer = ByteWriter(capacity: 512)
        FrameEncoder.encodeValidated(
            TestGateway.notification(index), as: .enhanced, identifier: UInt32(index), into: &writer)
        return writer.bytes
    }

    static func write(_ bytes: [UInt8], to session: TLSSession) -> Bool {
        bytes.withUnsafeBytes { session.writeAll($0, timeout: 5) } == nil
    }

    static func answers(_ fixture: BridgeFixture) -> [ErrorResponse] {
        fixture.events.get().compactMap { event -> ErrorResponse? in
            if case .answered(_, let response, _, _, _) = event { return response }
            return nil
        }
    }

    /// A sender that goes quiet gives its thread back; when it sends again a new thread serves it
    /// as before: its next notification is delivered and a bad one is answered with its status.
    @Test func anIdleSenderWaitsWithoutAThreadAndIsServedWhenItSendsAgain() async throws {
        var faults = ProviderFaults()
        faults.failingTokens[TestGateway.notification(3).token] = .badDeviceToken
        try await withBridge(faults: faults, configure: { $0.parkAfter = .milliseconds(200) }) { fixture in
            let sender = try BridgeHostileSenderTests.connect(fixture)
            #expect(Self.write(Self.frame(1), to: sender))
            #expect(await eventually { fixture.deliveries()[1] == 1 })
            #expect(await eventually { fixture.bridge.parkedConnections == 1 }, "the quiet sender was not parked")
            let threadsWhileParked = fixture.bridge.activeThreads
            // Sends again: served (delivered), then quiet again, then a bad token answered.
            #expect(Self.write(Self.frame(2), to: sender))
            #expect(await eventually { fixture.deliveries()[2] == 1 })
            #expect(await eventually { fixture.bridge.parkedConnections == 1 }, "not parked again")
            #expect(fixture.bridge.activeThreads == threadsWhileParked)
            #expect(Self.write(Self.frame(3), to: sender))
            let answer = SimulatorRobustnessTests.readUntilClosed(sender, timeout: 10)
            #expect(answer == [8, 8, 0, 0, 0, 3], "the bad token's answer: \(answer)")
            #expect(fixture.bridge.parkedConnections == 0)
            #expect(await eventually { fixture.bridge.registeredSessions == 0 })
        }
    }

    /// Many quiet senders hold one thread between them, and the connection limit still makes
    /// room: a parked sender is evicted for a new one, which is served at once.
    @Test func parkedSendersShareOneThreadAndMakeRoomAtTheLimit() async throws {
        try await withBridge(configure: {
            $0.parkAfter = .milliseconds(100)
            $0.maximumConnections = 40
            $0.evictableAfter = .milliseconds(300)
        }) { fixture in
            let baseline = fixture.bridge.activeThreads
            var senders: [TLSSession] = []
            for index in 0..<40 {
                let sender = try BridgeHostileSenderTests.connect(fixture)
                #expect(Self.write(Self.frame(100 + index), to: sender))
                senders.append(sender)
            }
            #expect(await eventually(within: .seconds(20)) { fixture.bridge.parkedConnections == 40 })
            // 40 connections, no thread of their own (the parker is counted in the baseline).
            #expect(fixture.bridge.activeThreads == baseline, "\(fixture.bridge.activeThreads) threads")
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await BridgeHostileSenderTests.healthy(fixture))
            let evicted = await eventually {
                fixture.events.get().contains { event in
                    if case .senderDisconnected(_, _, let reason) = event { return reason.contains("make room") }
                    return false
                }
            }
            #expect(evicted, "no parked sender was evicted to make room")
            #expect(fixture.deliveries().count == 90)
        }
    }

    /// A parked sender gets what any connected sender gets when the bridge stops: status 10
    /// naming the last notification delivered on its connection.
    @Test func aParkedSenderHearsTheStop() async throws {
        try await withBridge(configure: { $0.parkAfter = .milliseconds(100) }) { fixture in
            let sender = try BridgeHostileSenderTests.connect(fixture)
            #expect(Self.write(Self.frame(1) + Self.frame(2), to: sender))
            #expect(await eventually { fixture.deliveries().count == 2 && fixture.bridge.parkedConnections == 1 })
            await fixture.bridge.stop()
            let answer = SimulatorRobustnessTests.readUntilClosed(sender, timeout: 10)
            #expect(answer == [8, 10, 0, 0, 0, 2], "\(answer)")
            #expect(Self.answers(fixture) == [ErrorResponse(status: .shutdown, identifier: 2)])
        }
    }
}
