import APNsCore
import APNsRuntime
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// ``PushClient/send(frames:)`` (pre-encoded ``FrameBatch``es, what `send --input` uses) against
/// ``PushClient/send(_:)-(Sequence)`` for the same notifications: the same verdicts, the same
/// report, under the same faults.
@Suite struct FramePathTests {
    /// `notifications` in batches of about `perBatch`.
    static func batches(_ notifications: [PushNotification], format: FrameFormat = .enhanced, perBatch: Int = 97)
        -> [FrameBatch]
    {
        stride(from: 0, to: notifications.count, by: perBatch).map { start in
            var batch = FrameBatch(format: format, capacity: 1024)
            for notification in notifications[start..<Swift.min(start + perBatch, notifications.count)] {
                try! batch.append(notification)
            }
            return batch
        }
    }

    /// The shell over the in-memory gateway, once with notifications, once with frames.
    static func runBoth(
        count: Int, faults: ModelGateway.Faults, capacity: Int, format: FrameFormat = .enhanced, seed: UInt64
    ) -> (notifications: SendReport, frames: SendReport, gateway: ModelGateway) {
        let settings = GatewayConnectionSettings(
            format: format, encoder: FrameEncoder(), verdictTimeout: 5, idleConfirmationDelay: 1,
            writeBatchSize: 700, stallTimeout: 5)
        let delivery = DeliveryStateMachine.Configuration(
            cacheCapacity: capacity, maximumAttempts: 4,
            reconnect: ReconnectPolicy(initialDelay: .zero, maximumConsecutiveFailures: 1000))
        let notifications = (1...count).map(ModelGateway.notification)

        let source = NotificationSource(capacity: count + 1)
        _ = source.pushWaiting(notifications)
        source.finish()
        let plainGateway = ModelGateway(count: count, faults: faults, seed: seed)
        let plain = NotificationConnection(
            slot: 0, settings: settings, delivery: delivery, source: source, dialer: plainGateway, events: nil
        ).run()

        let frameSource = FrameSource(capacity: count + 1)
        for batch in batches(notifications, format: format) { _ = frameSource.pushWaiting(batch) }
        frameSource.finish()
        let frameGateway = ModelGateway(count: count, faults: faults, seed: seed)
        let frames = FrameConnection(
            slot: 0, settings: settings, delivery: delivery, source: frameSource, dialer: frameGateway, events: nil
        ).run()
        return (plain, frames, frameGateway)
    }

    @Test func rejectionsDelaysPartialWritesAndSilentClosesGiveTheSameReportAsNotifications() {
        let faults = ModelGateway.Faults(
            silentClosePerFrame: 0.003, shutdownPerFrame: 0.001, processingErrorPerFrame: 0.001, lostResponse: 0.2,
            connectFailure: 0.05, maximumResponseDelay: 6, badEvery: 151, partialWrite: 0.2, wantWrite: 0.1,
            stallPerWrite: 0.01, unansweredBarrier: 0.1)
        var sawDuplicates = false
        var sawRejections = false
        for seed in UInt64(2000)...2012 {
            let (plain, frames, gateway) = Self.runBoth(count: 2_000, faults: faults, capacity: 400, seed: seed)
            #expect(frames == plain, "seed \(seed)")
            gateway.ledger.check(frames, count: 2_000)
            sawDuplicates = sawDuplicates || frames.possibleDuplicates > 0
            sawRejections = sawRejections || !frames.rejected.isEmpty
        }
        #expect(sawDuplicates, "the faults should have forced some at-least-once resends")
        #expect(sawRejections)
    }

    @Test(arguments: [FrameFormat.enhanced, .itemized])
    func everyFormatIsDecodedByTheGatewayAsWritten(_ format: FrameFormat) {
        let (plain, frames, gateway) = Self.runBoth(
            count: 300, faults: .init(badEvery: 50, partialWrite: 0.5), capacity: 100, format: format, seed: 7)
        #expect(frames == plain)
        gateway.ledger.check(frames, count: 300)
        #expect(frames.rejected.map(\.position) == [50, 100, 150, 200, 250, 300])
        #expect(frames.accepted == 294)
    }

    @Test func aBatchCopyIsAValueAndABadNotificationIsRefusedWhenAppended() throws {
        var batch = FrameBatch(format: .enhanced, capacity: 16)
        try batch.append(TestGateway.notification(1))
        let copy = batch
        for index in 2...50 { try batch.append(TestGateway.notification(index)) }
        #expect(copy.count == 1)
        #expect(copy.notifications == [TestGateway.notification(1)])
        #expect(batch.notifications == (1...50).map { TestGateway.notification($0) })
        let short = PushNotification(
            token: try DeviceToken(bytes: [1, 2, 3]), payload: Payload(unvalidatedBytes: Array("{}".utf8)))
        #expect(throws: LegacyAPNsError.self) { try batch.append(short) }
        var small = FrameBatch(format: .enhanced, encoder: FrameEncoder(maximumPayloadSize: 10))
        #expect(throws: LegacyAPNsError.self) { try small.append(TestGateway.notification(1)) }
        #expect(small.isEmpty)
        #expect(batch.count == 50)
    }
}

/// The same over real TLS against the simulator: rejections in the middle with their resends,
/// status 10, a gateway closing silently, processing errors, several connections.
@Suite struct FramePathTLSTests {
    /// What must agree between the two paths whatever the timing of the gateway's answers.
    struct Verdicts: Equatable {
        var sent: Int
        var accepted: Int
        var rejected: [Rejection]
        var unconfirmed: [UnconfirmedNotification]
        /// The failure's kind (its words name the simulator's port).
        var failure: LegacyAPNsError.Code?

        init(_ report: SendReport) {
            sent = report.sent
            accepted = report.accepted
            rejected = report.rejected
            unconfirmed = report.unconfirmed
            failure = report.failure?.code
        }
    }

    /// Sends `count` notifications both ways, each against a fresh simulator with `faults`, and
    /// checks each against its gateway's record.
    static func sendBothWays(
        count: Int, faults: SimulatorFaults, connections: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (notifications: SendReport, frames: SendReport) {
        let notifications = (1...count).map { TestGateway.notification($0) }
        let plain = try await withTestGateway(faults: faults) { gateway in
            var configuration = gateway.clientConfiguration()
            configuration.connections = connections
            let report = try await PushClient(configuration: configuration).send(notifications)
            PushClientFaultTests.checkLedger(
                report, recorder: gateway.recorder, count: count, sourceLocation: sourceLocation)
            return report
        }
        let frames = try await withTestGateway(faults: faults) { gateway in
            var configuration = gateway.clientConfiguration()
            configuration.connections = connections
            let report = try await PushClient(configuration: configuration).send(
                frames: FramePathTests.batches(notifications, perBatch: 256))
            PushClientFaultTests.checkLedger(
                report, recorder: gateway.recorder, count: count, sourceLocation: sourceLocation)
            return report
        }
        return (plain, frames)
    }

    @Test func rejectionsInTheMiddleAreTheSameWithTheirResends() async throws {
        var faults = SimulatorFaults()
        for index in [17, 700, 701, 1999] {
            faults.failingTokens[TestGateway.notification(index).token] = .invalidToken
        }
        faults.errorResponseDelay = .milliseconds(30)
        let (plain, frames) = try await Self.sendBothWays(count: 2_000, faults: faults)
        #expect(Verdicts(frames) == Verdicts(plain))
        #expect(frames.rejected.map(\.position) == [17, 700, 701, 1999])
        #expect(frames.rejected.allSatisfy { $0.status == .invalidToken && $0.identifier == UInt32($0.position) })
        #expect(frames.rejected.map(\.token) == [17, 700, 701, 1999].map { TestGateway.notification($0).token })
        #expect(frames.resent > 0)
        #expect(frames.accepted == 1996)
    }

    @Test func shutdownStatusTenIsTheSame() async throws {
        var faults = SimulatorFaults()
        faults.shutdownAfter = 700
        let (plain, frames) = try await Self.sendBothWays(count: 2_000, faults: faults)
        #expect(Verdicts(frames) == Verdicts(plain))
        #expect(frames.isCompleteSuccess)
        #expect(frames.possibleDuplicates == 0)
        #expect(frames.connections >= 3)
    }

    @Test func aGatewayClosingSilentlyIsTheSame() async throws {
        var faults = SimulatorFaults()
        faults.closeAfter = 1500
        let (plain, frames) = try await Self.sendBothWays(count: 2_000, faults: faults)
        #expect(Verdicts(frames) == Verdicts(plain))
        #expect(frames.accepted == 2000)
        #expect(frames.possibleDuplicates > 0)
    }

    @Test func aGatewayThatAlwaysDropsTheConnectionLeavesTheSameUnconfirmed() async throws {
        var faults = SimulatorFaults()
        faults.closeAfter = 1
        faults.random = .init(seed: 1, silentClose: 1)
        let (plain, frames) = try await Self.sendBothWays(count: 20, faults: faults)
        #expect(Verdicts(frames) == Verdicts(plain))
        #expect(frames.accepted == 0)
        // Rebuilt from their frames: the very notifications given.
        let given = Set((1...20).map { TestGateway.notification($0) })
        #expect(frames.unconfirmed.allSatisfy { given.contains($0.notification) })
    }

    @Test func processingErrorsAndSeveralConnectionsAreTheSame() async throws {
        var faults = SimulatorFaults()
        faults.failEvery = (count: 97, status: .invalidToken)
        let (plain, frames) = try await Self.sendBothWays(count: 3_000, faults: faults, connections: 3)
        #expect(frames.sent == plain.sent)
        #expect(frames.rejected.count == plain.rejected.count)
        #expect(frames.accepted == plain.accepted)
        #expect(frames.unconfirmed.isEmpty)
    }

    @Test func aBatchOfAnotherFormatStopsTheSendBeforeItsFirstNotification() async throws {
        try await withTestGateway { gateway in
            let client = try PushClient(configuration: gateway.clientConfiguration())
            let notifications = (1...10).map { TestGateway.notification($0) }
            let report = await client.send(
                frames: FramePathTests.batches(notifications, perBatch: 5)
                    + FramePathTests.batches(notifications, format: .itemized))
            #expect(report.failure?.code == .malformedInput)
            // The first two batches were given (taken or not by the time the send stopped: those
            // not taken are reported not sent); nothing of the third.
            #expect(report.sent == 10)
            #expect(report.accepted + report.notSent.count == 10)
            #expect(gateway.recorder.count == report.accepted)
        }
    }
}
