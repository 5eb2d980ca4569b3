import APNsCore
import TestSupport
import Testing

/// The state machine against a model gateway that processes frames in order, rejects bad tokens,
/// shuts down, drops connections silently, delays and loses error responses, with the ledger
/// checked at the end: nothing accepted was lost, nothing rejected was delivered, and every extra
/// delivery is counted as a possible duplicate.
@Suite struct DeliveryModelTests {
    struct Faults {
        var silentClosePerFrame: Double
        var shutdownPerFrame: Double
        var processingErrorPerFrame: Double
        var lostResponse: Double
        var connectFailure: Double
        var maximumResponseDelay: Int
        var badEvery: Int
        /// A rejection that is not tied to the token (e.g. a token that became invalid meanwhile).
        var randomRejectPerFrame: Double = 0
    }

    /// One gateway connection of the model.
    struct ModelConnection {
        var alive = true
        /// What the client will see, and after how many more client actions.
        var pending: (event: Event, countdown: Int)?

        enum Event {
            case response(ErrorResponse)
            case silentClose
        }
    }

    struct Outcome {
        var report: SendReport
        var delivered: [Int]
        var badPositions: Set<Int>
        var silentEvents: Int
    }

    static func position(of notification: PushNotification) -> Int {
        notification.token.withUnsafeBytes { raw in
            Int(UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }
    }

    static func run(count: Int, faults: Faults, capacity: Int, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        func chance(_ probability: Double) -> Bool {
            Double(random.next() % 1_000_000) / 1_000_000 < probability
        }
        var machine = DeliveryStateMachine(
            configuration: .init(
                cacheCapacity: capacity, maximumAttempts: 4,
                reconnect: ReconnectPolicy(initialDelay: .milliseconds(10), maximumConsecutiveFailures: 1000)))
        var delivered = [Int](repeating: 0, count: count + 1)
        let bad = Set(stride(from: faults.badEvery, through: count, by: max(1, faults.badEvery)).map { $0 })
        var connection = ModelConnection()
        var nextPosition = 1
        var silentEvents = 0

        func schedule(_ event: ModelConnection.Event, _ connection: inout ModelConnection) {
            connection.alive = false
            var event = event
            if case .response = event, chance(faults.lostResponse) {
                event = .silentClose  // the RST ate it
            }
            if case .silentClose = event { silentEvents += 1 }
            connection.pending = (event, Int(random.next() % UInt64(faults.maximumResponseDelay + 1)))
        }

        func process(_ notification: PushNotification, wireIdentifier: UInt32) {
            guard connection.alive else { return }  // discarded after an error or a close
            if chance(faults.silentClosePerFrame) {
                schedule(.silentClose, &connection)
                return
            }
            let position = position(of: notification)
            if bad.contains(position) {
                schedule(.response(ErrorResponse(status: .invalidToken, identifier: wireIdentifier)), &connection)
                return
            }
            if chance(faults.randomRejectPerFrame) {
                schedule(.response(ErrorResponse(status: .invalidToken, identifier: wireIdentifier)), &connection)
                return
            }
            if chance(faults.processingErrorPerFrame) {
                schedule(.response(ErrorResponse(status: .processingError, identifier: wireIdentifier)), &connection)
                return
            }
            delivered[position] += 1
            if chance(faults.shutdownPerFrame) {
                schedule(.response(ErrorResponse(status: .shutdown, identifier: wireIdentifier)), &connection)
            }
        }

        func deliver(force: Bool) {
            guard let pending = connection.pending else { return }
            if !force, pending.countdown > 0 {
                connection.pending!.countdown -= 1
                return
            }
            connection.pending = nil
            switch pending.event {
            case .response(let response): machine.received(response)
            case .silentClose: machine.closed(.unexpected(reason: "model closed"))
            }
        }

        var steps = 0
        loop: while steps < 5_000_000 {
            steps += 1
            switch machine.nextAction() {
            case .connect:
                if chance(faults.connectFailure) {
                    machine.connectFailed(LegacyAPNsError(.connectionFailed, "refused"))
                } else {
                    machine.connected()
                    connection = ModelConnection()
                }
            case .writeNew:
                guard nextPosition <= count else {
                    machine.inputFinished()
                    continue
                }
                let notification = DeliveryStateMachineTests.notification(UInt64(nextPosition))
                let id = machine.wroteNew(notification, position: UInt64(nextPosition))
                nextPosition += 1
                process(notification, wireIdentifier: id)
                deliver(force: false)
            case .resend(let id, let notification):
                process(notification, wireIdentifier: id)
                deliver(force: false)
            case .writeBarrier(let id):
                if connection.alive {
                    schedule(.response(ErrorResponse(status: .missingDeviceToken, identifier: id)), &connection)
                }
                deliver(force: false)
            case .awaitVerdict:
                if connection.pending == nil { schedule(.silentClose, &connection) }
                deliver(force: true)
            case .close:
                machine.closed(.unexpected(reason: "client closed"))
                connection = ModelConnection()
            case .finished:
                break loop
            }
        }
        return Outcome(report: machine.report, delivered: delivered, badPositions: bad, silentEvents: silentEvents)
    }

    static func checkLedger(_ outcome: Outcome, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        DeliveryLedger(delivered: outcome.delivered, badPositions: outcome.badPositions)
            .check(outcome.report, count: count, sourceLocation: sourceLocation)
    }

    @Test func rejectionsWithDelayedResponsesLoseAndDuplicateNothing() {
        let faults = Faults(
            silentClosePerFrame: 0, shutdownPerFrame: 0, processingErrorPerFrame: 0, lostResponse: 0,
            connectFailure: 0, maximumResponseDelay: 50, badEvery: 97)
        for seed in UInt64(1)...20 {
            let outcome = Self.run(count: 2_000, faults: faults, capacity: 500, seed: seed)
            Self.checkLedger(outcome, count: 2_000)
            #expect(outcome.report.rejected.count == 20)
            #expect(outcome.report.unconfirmed.isEmpty)
            #expect(outcome.report.possibleDuplicates == 0)
            #expect(outcome.delivered.dropFirst().allSatisfy { $0 <= 1 })
        }
    }

    @Test func shutdownsAndProcessingErrorsLoseAndDuplicateNothing() {
        let faults = Faults(
            silentClosePerFrame: 0, shutdownPerFrame: 0.002, processingErrorPerFrame: 0.002, lostResponse: 0,
            connectFailure: 0.05, maximumResponseDelay: 20, badEvery: 333)
        for seed in UInt64(100)...120 {
            let outcome = Self.run(count: 2_000, faults: faults, capacity: 300, seed: seed)
            Self.checkLedger(outcome, count: 2_000)
            #expect(outcome.report.possibleDuplicates == 0)
            #expect(outcome.delivered.dropFirst().allSatisfy { $0 <= 1 })
        }
    }

    @Test func silentClosesAndLostResponsesNeverLoseAndNeverSilentlyDuplicate() {
        let faults = Faults(
            silentClosePerFrame: 0.003, shutdownPerFrame: 0.001, processingErrorPerFrame: 0.001, lostResponse: 0.2,
            connectFailure: 0.05, maximumResponseDelay: 30, badEvery: 151, randomRejectPerFrame: 0.001)
        var sawDuplicates = false
        for seed in UInt64(1000)...1040 {
            let outcome = Self.run(count: 2_000, faults: faults, capacity: 400, seed: seed)
            Self.checkLedger(outcome, count: 2_000)
            sawDuplicates = sawDuplicates || outcome.report.possibleDuplicates > 0
        }
        #expect(sawDuplicates, "the faults should have forced some at-least-once resends")
    }
}
