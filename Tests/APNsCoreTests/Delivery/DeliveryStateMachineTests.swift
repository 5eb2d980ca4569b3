import APNsCore
import TestSupport
import Testing

/// Scripts for the resend logic: event in, action and verdicts out. No sockets, no clocks.
@Suite struct DeliveryStateMachineTests {
    static let barrierOffset: UInt32 = 0x8000_0000

    static func notification(_ position: UInt64, identifier: UInt32? = nil) -> PushNotification {
        var bytes = [UInt8](repeating: 0, count: 32)
        bytes[24..<32] = ArraySlice(withUnsafeBytes(of: position.bigEndian) { Array($0) })
        return PushNotification(
            token: try! DeviceToken(bytes: bytes),
            payload: Payload(unvalidatedBytes: Array("{\"n\":\(position)}".utf8)),
            identifier: identifier)
    }

    static func machine(capacity: Int = 100, attempts: Int = 3, failures: Int = 3) -> DeliveryStateMachine {
        DeliveryStateMachine(
            configuration: .init(
                cacheCapacity: capacity, maximumAttempts: attempts,
                reconnect: ReconnectPolicy(
                    initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1),
                    maximumConsecutiveFailures: failures)))
    }

    /// Connects and writes positions `range` as new notifications.
    static func connectAndWrite(
        _ machine: inout DeliveryStateMachine, _ range: ClosedRange<UInt64>, delay: Duration = .zero
    ) {
        machine.expectNext(.connect(delay: delay))
        machine.connected()
        write(&machine, range)
    }

    static func write(_ machine: inout DeliveryStateMachine, _ range: ClosedRange<UInt64>) {
        for position in range {
            machine.expectNext(.writeNew)
            let id = machine.wroteNew(notification(position), position: position)
            #expect(id == UInt32(truncatingIfNeeded: position))
        }
    }

    static func expectResends(_ machine: inout DeliveryStateMachine, _ positions: [UInt64]) {
        for position in positions {
            machine.expectNext(
                .resend(
                    wireIdentifier: UInt32(truncatingIfNeeded: position), notification: notification(position)))
        }
    }

    /// Barrier, verdict, close.
    static func confirm(_ machine: inout DeliveryStateMachine, highest: UInt64) {
        let barrier = UInt32(truncatingIfNeeded: highest) &+ barrierOffset
        machine.expectNext(.writeBarrier(wireIdentifier: barrier))
        machine.expectNext(.awaitVerdict)
        machine.received(ErrorResponse(status: .missingDeviceToken, identifier: barrier))
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
    }

    @Test func everythingIsConfirmedByOneBarrierAtTheEnd() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...5)
        machine.inputFinished()
        Self.confirm(&machine, highest: 5)
        machine.expectNext(.finished)
        #expect(machine.report.sent == 5)
        #expect(machine.report.accepted == 5)
        #expect(machine.report.isCompleteSuccess)
        #expect(machine.report.connections == 1)
        #expect(machine.report.resent == 0)
    }

    @Test func nothingToSendNeedsNoConnection() {
        var machine = Self.machine()
        machine.inputFinished()
        machine.expectNext(.finished)
        #expect(machine.report.connections == 0)
    }

    @Test func anErrorArrivingAfterMoreWritesAcceptsEarlierRejectsNamedAndResendsLater() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...10)
        // The response for #3 arrives while the client is already at #10.
        machine.received(ErrorResponse(status: .invalidToken, identifier: 3))
        #expect(machine.report.accepted == 2)
        #expect(
            machine.report.rejected == [
                Rejection(
                    position: 3, identifier: nil, token: Self.notification(3).token, status: .invalidToken)
            ])
        #expect(machine.resendQueueCount == 7)
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        #expect(machine.nextAction() == .connect(delay: .zero))  // an error response is not a failure
        machine.connected()
        Self.expectResends(&machine, Array(4...10))
        machine.inputFinished()
        Self.confirm(&machine, highest: 10)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 9)
        #expect(machine.report.resent == 7)
        #expect(machine.report.possibleDuplicates == 0)
        #expect(machine.report.connections == 2)
        let events = machine.takeEvents()
        #expect(
            events.contains(
                .resent(
                    connection: 0, count: 7,
                    reason: .errorResponse(
                        ErrorResponse(status: .invalidToken, identifier: 3)))))
    }

    /// Every status the gateway can send, naming #3 of 5 written.
    @Test(arguments: StatusCode.allKnown + [StatusCode(rawValue: 9), StatusCode(rawValue: 200)])
    func everyStatusCodeHasADefinedOutcome(_ status: StatusCode) {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...5)
        machine.received(ErrorResponse(status: status, identifier: 3))
        switch status {
        case .shutdown, .noErrors:
            // The named notification was the last one processed.
            #expect(machine.report.accepted == 3)
            #expect(machine.report.rejected.isEmpty)
            #expect(machine.resendQueueCount == 2)
        case .processingError:
            // Transient: #3 is retried with the rest.
            #expect(machine.report.accepted == 2)
            #expect(machine.report.rejected.isEmpty)
            #expect(machine.resendQueueCount == 3)
        default:
            #expect(machine.report.accepted == 2)
            #expect(machine.report.rejected.map(\.status) == [status])
            #expect(machine.report.rejected.map(\.position) == [3])
            #expect(machine.resendQueueCount == 2)
        }
        #expect(machine.inFlightCount == 0)
        machine.expectNext(.close)
    }

    @Test func shutdownStatusMeansTheIdentifierWasDelivered() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...6)
        machine.inputFinished()
        machine.received(ErrorResponse(status: .shutdown, identifier: 4))
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        Self.expectResends(&machine, [5, 6])
        Self.confirm(&machine, highest: 6)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 6)
        #expect(machine.report.resent == 2)
        #expect(machine.report.possibleDuplicates == 0)
        #expect(machine.report.isCompleteSuccess)
    }

    @Test func anUnknownIdentifierIsReportedNotGuessed() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...4)
        machine.received(ErrorResponse(status: .invalidToken, identifier: 99))
        let events = machine.takeEvents()
        #expect(
            events.contains(.unknownIdentifier(connection: 0, ErrorResponse(status: .invalidToken, identifier: 99))))
        #expect(machine.report.rejected.isEmpty)
        #expect(machine.report.accepted == 0)
        // All four are unknown now: resent at least once, flagged as possible duplicates.
        #expect(machine.resendQueueCount == 4)
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        #expect(machine.nextAction() == .connect(delay: .milliseconds(100)))  // counted as a failure
        machine.connected()
        Self.expectResends(&machine, [1, 2])  // the window halved to 2
        #expect(machine.report.possibleDuplicates == 2)
    }

    @Test func aSilentCloseResendsAtLeastOnceWithAHalvedWindow() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...8)
        machine.closed(.unexpected(reason: "connection reset by peer"))
        #expect(machine.resendQueueCount == 8)
        #expect(machine.currentWindow == 4)
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Self.expectResends(&machine, [1, 2, 3, 4])
        // Window full: confirm before writing more.
        Self.confirm(&machine, highest: 8)
        #expect(machine.report.accepted == 4)
        #expect(machine.currentWindow == 64)  // grows fourfold, at least to the minimum
        #expect(machine.nextAction() == .connect(delay: .zero))  // progress resets the backoff
        machine.connected()
        Self.expectResends(&machine, [5, 6, 7, 8])
        machine.inputFinished()
        Self.confirm(&machine, highest: 8)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 8)
        #expect(machine.report.possibleDuplicates == 8)
        #expect(machine.report.isCompleteSuccess)
    }

    @Test func aRejectionAfterASilentCloseSaysTheNotificationMayHaveBeenDelivered() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...4)
        machine.closed(.unexpected(reason: "reset"))
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Self.expectResends(&machine, [1, 2])
        machine.received(ErrorResponse(status: .invalidToken, identifier: 2))
        #expect(machine.report.rejected.map(\.mayHaveBeenDelivered) == [true])
        #expect(machine.report.accepted == 1)
    }

    @Test func notificationsThatKeepLosingTheirConnectionEndUnconfirmed() {
        var machine = Self.machine(attempts: 2, failures: 10)
        Self.connectAndWrite(&machine, 1...2)
        machine.inputFinished()
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Self.expectResends(&machine, [1])
        machine.closed(.unexpected(reason: "eof"))  // #1 now lost its connection twice
        #expect(machine.report.unconfirmed.map(\.position) == [1])
        #expect(machine.report.unconfirmed.first?.wasWritten == true)
        machine.expectNext(.connect(delay: .milliseconds(200)))
        machine.connected()
        Self.expectResends(&machine, [2])
        Self.confirm(&machine, highest: 2)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 1)
        #expect(!machine.report.isCompleteSuccess)
        #expect(
            machine.report.sent == machine.report.accepted + machine.report.rejected.count
                + machine.report.unconfirmed.count)
    }

    @Test func aFullCacheForcesABarrierMidStream() {
        var machine = Self.machine(capacity: 3)
        Self.connectAndWrite(&machine, 1...3)
        Self.confirm(&machine, highest: 3)
        #expect(machine.report.accepted == 3)
        Self.connectAndWrite(&machine, 4...6)
        Self.confirm(&machine, highest: 6)
        Self.connectAndWrite(&machine, 7...7)
        machine.inputFinished()
        Self.confirm(&machine, highest: 7)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 7)
        #expect(machine.report.connections == 3)
    }

    @Test func frequentErrorsShrinkTheWindowSoFewerNotificationsAreWrittenOnlyToBeDiscarded() {
        var machine = Self.machine(capacity: 1000)
        Self.connectAndWrite(&machine, 1...400)
        // #101 is rejected after 100 were accepted: the next connection writes at most ~2x that.
        machine.received(ErrorResponse(status: .invalidToken, identifier: 101))
        #expect(machine.currentWindow == 202)
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        Self.expectResends(&machine, Array(102...303))
        // Window full: confirm the 202 before writing more; the window then grows fourfold.
        Self.confirm(&machine, highest: 400)
        #expect(machine.report.accepted == 302)
        #expect(machine.currentWindow == 808)
        // An error on the very first frame keeps a minimum window.
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        Self.expectResends(&machine, [304])
        machine.received(ErrorResponse(status: .invalidToken, identifier: 304))
        #expect(machine.currentWindow == 64)
    }

    @Test func aStalledInputIsConfirmedRatherThanLeftInFlight() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...3)
        let stalled = machine.inputStalled()
        #expect(stalled)
        Self.confirm(&machine, highest: 3)
        #expect(machine.report.accepted == 3)
        let again = machine.inputStalled()
        #expect(!again)  // nothing in flight, nothing to confirm
    }

    @Test func aProcessingErrorIsRetriedThenRejected() {
        var machine = Self.machine(attempts: 2)
        Self.connectAndWrite(&machine, 1...2)
        machine.inputFinished()
        machine.received(ErrorResponse(status: .processingError, identifier: 1))
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        Self.expectResends(&machine, [1, 2])
        machine.received(ErrorResponse(status: .processingError, identifier: 1))
        #expect(machine.report.rejected.map(\.position) == [1])
        #expect(machine.report.rejected.map(\.status) == [.processingError])
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        Self.expectResends(&machine, [2])
        Self.confirm(&machine, highest: 2)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 1)
    }

    @Test func aRefusedCertificateStopsAtOnce() {
        var machine = Self.machine()
        machine.expectNext(.connect(delay: .zero))
        let error = LegacyAPNsError(.certificateRejected, "the gateway refused the client certificate")
        machine.connectFailed(error)
        machine.expectNext(.finished)
        #expect(machine.report.failure == error)
        #expect(machine.report.connections == 0)
    }

    @Test func aCertificateRefusedAfterTheHandshakeLeavesEverythingUnsentNotUnknown() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...3)
        let error = LegacyAPNsError(.certificateRejected, "the gateway refused the client certificate: unknown ca")
        machine.closed(.certificateRejected(error))
        machine.expectNext(.finished)
        #expect(machine.report.failure == error)
        #expect(machine.report.unconfirmed.map(\.position) == [1, 2, 3])
        #expect(machine.report.unconfirmed.allSatisfy { !$0.wasWritten })
    }

    @Test func connectFailuresBackOffExponentiallyThenGiveUp() {
        var machine = Self.machine(failures: 3)
        var delays: [Duration] = []
        while case .connect(let delay) = machine.nextAction() {
            delays.append(delay)
            machine.connectFailed(LegacyAPNsError(.connectionFailed, "connection refused"))
        }
        #expect(delays == [.zero, .milliseconds(100), .milliseconds(200)])
        #expect(machine.report.failure?.code == .connectionFailed)
        #expect(machine.report.failure?.reason == "connection refused (gave up after 3 attempts in a row)")
        machine.expectNext(.finished)
    }

    @Test func wireIdentifiersWrapAroundWithoutConfusion() {
        var machine = Self.machine()
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        let start: UInt64 = 0xFFFF_FFFE
        Self.write(&machine, start...(start + 4))  // wire ids FFFFFFFE, FFFFFFFF, 0, 1, 2
        machine.received(ErrorResponse(status: .invalidToken, identifier: 1))
        #expect(machine.report.rejected.map(\.position) == [start + 3])
        #expect(machine.report.accepted == 3)
        #expect(machine.resendQueueCount == 1)
    }

    @Test func duplicateAndZeroCallerIdentifiersDoNotBreakResend() {
        var machine = Self.machine()
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        for position in UInt64(1)...4 {
            machine.expectNext(.writeNew)
            machine.wroteNew(Self.notification(position, identifier: 0), position: position)
        }
        machine.received(ErrorResponse(status: .invalidToken, identifier: 2))
        #expect(
            machine.report.rejected == [
                Rejection(
                    position: 2, identifier: 0, token: Self.notification(2).token, status: .invalidToken)
            ])
        #expect(machine.report.accepted == 1)
        #expect(machine.resendQueueCount == 2)
    }

    @Test func aSecondResponseOnTheSameConnectionIsIgnored() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...4)
        machine.received(ErrorResponse(status: .invalidToken, identifier: 2))
        machine.received(ErrorResponse(status: .invalidToken, identifier: 3))
        #expect(machine.report.rejected.count == 1)
        #expect(machine.resendQueueCount == 2)
    }

    @Test func aBarrierThatIsNeverAnsweredCountsAsASilentClose() {
        var machine = Self.machine()
        Self.connectAndWrite(&machine, 1...2)
        machine.inputFinished()
        machine.expectNext(.writeBarrier(wireIdentifier: 2 &+ Self.barrierOffset))
        machine.verdictTimedOut()
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "closed by client"))
        #expect(machine.resendQueueCount == 2)
        machine.expectNext(.connect(delay: .milliseconds(100)))
    }
}

extension DeliveryStateMachine {
    /// Takes the next action and expects it to be `expected`.
    mutating func expectNext(_ expected: Action, sourceLocation: SourceLocation = #_sourceLocation) {
        let action = nextAction()
        #expect(action == expected, sourceLocation: sourceLocation)
    }
}

@Suite struct DeliveryStateMachineDuplicateTests {
    @Test func possiblyDuplicatedNotificationsAreNamedOnceEach() {
        var machine = DeliveryStateMachineTests.machine(attempts: 5, failures: 10)
        DeliveryStateMachineTests.connectAndWrite(&machine, 1...3)
        machine.inputFinished()
        machine.closed(.unexpected(reason: "reset"))  // 1, 2, 3 may have been delivered
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        DeliveryStateMachineTests.expectResends(&machine, [1])  // the window halved to one
        machine.expectNext(.writeBarrier(wireIdentifier: 3 &+ DeliveryStateMachineTests.barrierOffset))
        machine.closed(.unexpected(reason: "reset"))  // #1 resent and lost again
        machine.expectNext(.connect(delay: .milliseconds(200)))
        machine.connected()
        DeliveryStateMachineTests.expectResends(&machine, [1])
        DeliveryStateMachineTests.confirm(&machine, highest: 3)
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        DeliveryStateMachineTests.expectResends(&machine, [2, 3])
        DeliveryStateMachineTests.confirm(&machine, highest: 3)
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 3)
        #expect(machine.report.possibleDuplicates == 4)  // #1 twice, #2 and #3 once
        #expect(machine.report.possiblyDuplicated.map(\.position) == [1, 2, 3])
    }
}
