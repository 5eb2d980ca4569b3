import APNsCore
import Testing

/// The binary protocol's promises kept over out-of-order HTTP/2 verdicts, without sockets.
@Suite struct BridgeSenderMachineTests {
    static func token(_ index: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0xAB, count: 32)
        bytes[31] = UInt8(truncatingIfNeeded: index)
        bytes[30] = UInt8(truncatingIfNeeded: index >> 8)
        return try! DeviceToken(bytes: bytes)
    }

    static func key(_ identifier: UInt32) -> BridgeResendKey {
        BridgeResendKey(identifier: identifier, digest: UInt128(identifier) &* 0x9E37_79B9)
    }

    /// Admits identifiers `ids` (command 1) and returns their sequence numbers.
    static func admit(_ machine: inout BridgeSenderMachine, _ ids: ClosedRange<UInt32>, command: Command = .enhanced)
        -> [UInt64]
    {
        ids.map { machine.admit(identifier: $0, command: command, token: token(Int($0)), key: key($0))! }
    }

    @Test func everythingDeliveredNeedsNoWordAndTheWindowMovesOn() {
        var configuration = BridgeSenderMachine.Configuration()
        configuration.window = 3
        var machine = BridgeSenderMachine(configuration: configuration)
        let sequences = Self.admit(&machine, 1...3)
        #expect(!machine.canAdmit)
        #expect(machine.room == 0)
        // Out of order: the last first. It has its verdict, so the window has room for one more,
        // but only the front is let go.
        _ = machine.settle(sequence: sequences[2], verdict: .accepted)
        #expect(machine.room == 1)
        #expect(machine.inFlight == 2)
        #expect(machine.outstanding == 3)
        #expect(machine.delivered == 0)
        _ = machine.settle(sequence: sequences[0], verdict: .unregistered(seconds: 5))
        #expect(machine.room == 2)
        #expect(machine.outstanding == 2)
        #expect(machine.delivered == 1)
        _ = machine.settle(sequence: sequences[1], verdict: .accepted)
        #expect(machine.outstanding == 0)
        #expect(machine.delivered == 3)
        #expect(machine.lastDeliveredIdentifier == 3)
        #expect(machine.nextAction() == .none)
    }

    @Test func notificationsWithAVerdictWaitBehindTheFrontUpToTheBacklog() {
        var configuration = BridgeSenderMachine.Configuration()
        configuration.window = 2
        var machine = BridgeSenderMachine(configuration: configuration)
        let backlog = 2 * BridgeSenderMachine.Configuration.backlogFactor
        let first = Self.admit(&machine, 1...2)
        #expect(machine.room == 0)
        // The first stays upstream; every later one gets its verdict at once and waits behind it.
        _ = machine.settle(sequence: first[1], verdict: .accepted)
        var next: UInt32 = 3
        while machine.canAdmit {
            #expect(machine.room == 1)
            let sequence = machine.admit(
                identifier: next, command: .enhanced, token: Self.token(Int(next)), key: Self.key(next))!
            _ = machine.settle(sequence: sequence, verdict: .accepted)
            next += 1
        }
        #expect(machine.outstanding == backlog)
        #expect(machine.inFlight == 1)
        #expect(machine.delivered == 0)
        #expect(machine.room == 0)
        _ = machine.settle(sequence: first[0], verdict: .accepted)
        #expect(machine.outstanding == 0)
        #expect(machine.delivered == backlog)
        #expect(machine.lastDeliveredIdentifier == UInt32(backlog))
        #expect(machine.room == 2)
    }

    @Test func aWindowTooLargeToMultiplyStillHasRoom() {
        var configuration = BridgeSenderMachine.Configuration()
        configuration.window = .max
        var machine = BridgeSenderMachine(configuration: configuration)
        #expect(machine.room == .max)
        _ = Self.admit(&machine, 1...2)
        #expect(machine.room == .max - 2)
    }

    @Test func theFirstFailureIsAnsweredOnlyOnceEverythingBeforeItIsDelivered() throws {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...6)
        // 4 fails first; 1-3 are still upstream: no answer yet, and nothing more is taken.
        _ = machine.settle(sequence: sequences[3], verdict: .rejected(.invalidToken, reason: "BadDeviceToken"))
        #expect(machine.nextAction() == .none)
        #expect(machine.admit(identifier: 7, command: .enhanced, token: Self.token(7), key: Self.key(7)) == nil)
        _ = machine.settle(sequence: sequences[5], verdict: .accepted)  // after the failure
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        _ = machine.settle(sequence: sequences[2], verdict: .accepted)
        #expect(machine.nextAction() == .none)  // 2 is still out
        _ = machine.settle(sequence: sequences[1], verdict: .accepted)
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected the answer once 1-3 were delivered")
            return
        }
        #expect(answer.response == ErrorResponse(status: .invalidToken, identifier: 4))
        #expect(answer.failing?.identifier == 4)
        #expect(answer.settledAfter.map(\.identifier) == [6])
        #expect(answer.pendingAfter.map(\.identifier) == [5])
        #expect(machine.delivered == 3)
        // The one still upstream resolves the memory when it comes.
        #expect(machine.settle(sequence: sequences[4], verdict: .accepted) == .resolve(Self.key(5), .accepted))
        #expect(machine.nextAction() == .finished)
    }

    @Test func anEarlierFailureThatArrivesLaterIsTheOneAnswered() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...5)
        _ = machine.settle(sequence: sequences[4], verdict: .rejected(.invalidToken, reason: "late one"))
        _ = machine.settle(sequence: sequences[1], verdict: .rejected(.invalidPayloadSize, reason: "earlier one"))
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == ErrorResponse(status: .invalidPayloadSize, identifier: 2))
        #expect(answer.settledAfter.map(\.identifier) == [5])  // remembered as rejected for the resend
        #expect(answer.pendingAfter.map(\.identifier) == [3, 4])
    }

    @Test func upstreamTroubleIsStatusTenNamingTheLastDelivered() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 10...13)
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        _ = machine.settle(sequence: sequences[1], verdict: .accepted)
        _ = machine.settle(sequence: sequences[2], verdict: .unavailable(reason: "upstream unreachable"))
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == ErrorResponse(status: .shutdown, identifier: 11))
        #expect(answer.pendingAfter.map(\.identifier) == [13])
    }

    @Test func anUpstreamFailureBeforeAnythingWasDeliveredClosesWithoutNamingAnIdentifier() {
        // A sender numbering from 0 (pushjack does) would read "status 10, identifier 0" as "0
        // arrived" and never send it again; nothing arrived, so nothing is named.
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 0...2)
        for sequence in sequences {
            _ = machine.settle(sequence: sequence, verdict: .unavailable(reason: "no upstream"))
        }
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == nil)
        #expect(answer.failing?.identifier == 0)
        #expect(machine.lastDeliveredIdentifier == nil)
    }

    @Test func anUpstreamFailureAfterADeliveryNamesTheLastDeliveredEvenIfItIsZero() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 0...1)
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        _ = machine.settle(sequence: sequences[1], verdict: .unavailable(reason: "no upstream"))
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == ErrorResponse(status: .shutdown, identifier: 0))
    }

    @Test func aBridgeStoppingBeforeAnythingWasDeliveredClosesWithoutAWord() {
        var machine = BridgeSenderMachine()
        machine.stop()
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == nil)
    }

    @Test func aCommandZeroFailureClosesWithoutAWord() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 0...0, command: .simple)
        _ = machine.settle(sequence: sequences[0], verdict: .rejected(.invalidToken, reason: "bad"))
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == nil)
    }

    @Test func aMalformedFrameFailsAtItsPlaceInLine() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...2)
        // A confirmation barrier: the frame with no token, status 2, naming its identifier.
        let taken = machine.malformed(
            ErrorResponse(status: .missingDeviceToken, identifier: 99), command: .enhanced, reason: "no token")
        #expect(taken)
        #expect(machine.nextAction() == .none)  // 1 and 2 first
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        _ = machine.settle(sequence: sequences[1], verdict: .accepted)
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == ErrorResponse(status: .missingDeviceToken, identifier: 99))
        #expect(machine.delivered == 2)
    }

    @Test func aSenderThatLeavesHearsNothingAndItsFailuresAreReported() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...4)
        _ = machine.settle(sequence: sequences[1], verdict: .rejected(.invalidToken, reason: "bad"))
        let failed = machine.senderGone()
        #expect(failed.map(\.identifier) == [2])
        #expect(machine.settle(sequence: sequences[0], verdict: .accepted) == .none)
        let late = machine.settle(sequence: sequences[2], verdict: .unavailable(reason: "lost"))
        guard case .unreported(let item, _) = late else {
            Issue.record("expected the late failure to be reported, got \(late)")
            return
        }
        #expect(item.identifier == 3)
        #expect(machine.nextAction() == .none)
        _ = machine.settle(sequence: sequences[3], verdict: .accepted)
        #expect(machine.nextAction() == .finished)
    }

    @Test func stoppingAnswersStatusTenOnceEveryVerdictIsIn() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...3)
        machine.stop()
        #expect(!machine.isAdmitting)
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        #expect(machine.nextAction() == .none)
        // The drain time is over: what has no verdict fails, the first one named by status 10.
        let aftermaths = machine.abandon(reason: "stopping")
        #expect(aftermaths.isEmpty)
        guard case .answer(let answer) = machine.nextAction() else {
            Issue.record("expected an answer")
            return
        }
        #expect(answer.response == ErrorResponse(status: .shutdown, identifier: 1))
        #expect(answer.settledAfter.map(\.identifier) == [3])
        #expect(answer.settledAfter.first?.verdict == .unavailable(reason: "stopping"))
    }

    @Test func stoppingWithEverythingDeliveredSaysShutdownAtOnce() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 7...7)
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        machine.stop()
        #expect(
            machine.nextAction()
                == .answer(
                    BridgeSenderMachine.Answer(
                        response: ErrorResponse(status: .shutdown, identifier: 7), failing: nil,
                        reason: "the bridge is stopping", settledAfter: [], pendingAfter: [])))
    }

    @Test func unknownAndRepeatedVerdictsAreIgnored() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...2)
        #expect(machine.settle(sequence: 99, verdict: .accepted) == .none)
        _ = machine.settle(sequence: sequences[1], verdict: .accepted)
        _ = machine.settle(sequence: sequences[1], verdict: .rejected(.invalidToken, reason: "again"))
        _ = machine.settle(sequence: sequences[0], verdict: .accepted)
        #expect(machine.nextAction() == .none)
        #expect(machine.delivered == 2)
    }

    @Test func sequencesAreMatchedByTheirLowThirtyTwoBits() {
        var machine = BridgeSenderMachine()
        let sequences = Self.admit(&machine, 1...2)
        // The tag carries only the low half; a window never spans 2^32.
        _ = machine.settle(sequence: sequences[0] | (0xABCD << 32), verdict: .accepted)
        #expect(machine.outstanding == 1)
    }
}
