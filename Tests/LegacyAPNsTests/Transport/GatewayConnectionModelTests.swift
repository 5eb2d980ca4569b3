import APNsCore
import APNsRuntime
import LegacyAPNs
import TestSupport
import Testing

/// The real connection shell (``GatewayConnection``: batching, partial writes, reading between
/// writes, stall detection, the verdict timeout) driven through its transport seam by an
/// in-memory gateway that speaks bytes, with random faults. The same ledger as the state
/// machine's model test must hold: nothing accepted was lost, nothing rejected was delivered,
/// every extra delivery is counted as a possible duplicate.
@Suite struct GatewayConnectionModelTests {
    static func run(count: Int, faults: ModelGateway.Faults, capacity: Int, seed: UInt64) async -> (
        SendReport, ModelGateway
    ) {
        let source = NotificationSource(capacity: count + 1)
        _ = source.pushWaiting((1...count).map(ModelGateway.notification))
        source.finish()
        let gateway = ModelGateway(count: count, faults: faults, seed: seed)
        let connection = NotificationConnection(
            slot: 0,
            settings: .init(
                format: .enhanced, encoder: FrameEncoder(), verdictTimeout: 5, idleConfirmationDelay: 1,
                writeBatchSize: 700, stallTimeout: 5),
            delivery: .init(
                cacheCapacity: capacity, maximumAttempts: 4,
                reconnect: ReconnectPolicy(initialDelay: .zero, maximumConsecutiveFailures: 1000)),
            source: source, dialer: gateway, events: nil)
        return (connection.run(), gateway)
    }

    @Test func rejectionsWithDelayedResponsesPartialWritesAndWaitsLoseAndDuplicateNothing() async {
        let faults = ModelGateway.Faults(maximumResponseDelay: 8, badEvery: 97, partialWrite: 0.3, wantWrite: 0.2)
        for seed in UInt64(1)...10 {
            let (report, gateway) = await Self.run(count: 2_000, faults: faults, capacity: 500, seed: seed)
            gateway.ledger.check(report, count: 2_000)
            #expect(report.rejected.count == 20)
            #expect(report.unconfirmed.isEmpty)
            #expect(report.possibleDuplicates == 0)
            #expect(report.failure == nil)
        }
    }

    @Test func silentClosesStallsLostAndUnansweredVerdictsNeverLoseAndNeverSilentlyDuplicate() async {
        let faults = ModelGateway.Faults(
            silentClosePerFrame: 0.003, shutdownPerFrame: 0.001, processingErrorPerFrame: 0.001, lostResponse: 0.2,
            connectFailure: 0.05, maximumResponseDelay: 6, badEvery: 151, partialWrite: 0.2, wantWrite: 0.1,
            stallPerWrite: 0.01, unansweredBarrier: 0.1)
        var sawDuplicates = false
        var sawStalls = false
        for seed in UInt64(1000)...1020 {
            let (report, gateway) = await Self.run(count: 2_000, faults: faults, capacity: 400, seed: seed)
            gateway.ledger.check(report, count: 2_000)
            #expect(report.failure == nil)
            sawDuplicates = sawDuplicates || report.possibleDuplicates > 0
            sawStalls = sawStalls || gateway.stalls > 0
        }
        #expect(sawDuplicates, "the faults should have forced some at-least-once resends")
        #expect(sawStalls, "the faults should have made the shell detect stalled connections")
    }

    @Test func everyFormatIsDecodedByTheGatewayAsWritten() async {
        for format in [FrameFormat.enhanced, .itemized] {
            let source = NotificationSource(capacity: 1_000)
            _ = source.pushWaiting((1...300).map(ModelGateway.notification))
            source.finish()
            let gateway = ModelGateway(count: 300, faults: .init(badEvery: 50, partialWrite: 0.5), seed: 7)
            let connection = NotificationConnection(
                slot: 0,
                settings: .init(
                    format: format, encoder: FrameEncoder(), verdictTimeout: 5, idleConfirmationDelay: 1,
                    writeBatchSize: 300, stallTimeout: 5),
                delivery: .init(cacheCapacity: 100), source: source, dialer: gateway, events: nil)
            let report = connection.run()
            gateway.ledger.check(report, count: 300)
            #expect(report.rejected.map(\.position) == [50, 100, 150, 200, 250, 300])
            #expect(report.accepted == 294)
        }
    }
}
