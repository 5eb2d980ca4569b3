import APNsCore
import TestSupport
import Testing

/// A cancelled send settles: it takes and resends nothing more, proves what is in flight with one
/// barrier, and reports the rest in the right bucket (what the gateway discarded is not sent).
@Suite struct SettleTests {
    typealias Script = DeliveryStateMachineTests

    @Test func settlingProvesWhatIsInFlightAndWritesNothingMore() {
        var machine = Script.machine()
        Script.connectAndWrite(&machine, 1...4)
        machine.settle()
        // No writeNew, although the input never finished: the barrier for 1...4 comes at once.
        Script.confirm(&machine, highest: 4)
        machine.expectNext(.finished)
        #expect(machine.report.sent == 4)
        #expect(machine.report.accepted == 4)
        #expect(machine.report.unconfirmed.isEmpty)
    }

    @Test func whatTheGatewayDiscardedIsNotSentAndNotResent() {
        var machine = Script.machine()
        Script.connectAndWrite(&machine, 1...5)
        // 2 is rejected: the gateway processed 1 and discarded 3, 4 and 5.
        machine.received(ErrorResponse(status: .invalidToken, identifier: 2))
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.settle()
        machine.expectNext(.finished)
        #expect(machine.report.accepted == 1)
        #expect(machine.report.rejected.map(\.position) == [2])
        #expect(machine.report.resent == 0)
        #expect(machine.report.notSent.map(\.position) == [3, 4, 5])
        #expect(machine.report.unknownFate.isEmpty)
        #expect(machine.report.failure == nil)
    }

    @Test func settlingWithResendsWaitingClosesTheIdleConnectionWithoutResending() {
        var machine = Script.machine()
        Script.connectAndWrite(&machine, 1...3)
        machine.received(ErrorResponse(status: .invalidToken, identifier: 1))
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        // The next connection is up, nothing written on it yet, when the send is cancelled.
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        machine.settle()
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.finished)
        #expect(machine.report.resent == 0)
        #expect(machine.report.notSent.map(\.position) == [2, 3])
    }

    @Test func aSilentCloseWhileSettlingLeavesWhatWasInFlightOfUnknownFate() {
        var machine = Script.machine()
        Script.connectAndWrite(&machine, 1...3)
        machine.settle()
        machine.expectNext(.writeBarrier(wireIdentifier: 3 &+ Script.barrierOffset))
        machine.expectNext(.awaitVerdict)
        machine.closed(.unexpected(reason: "reset"))
        machine.expectNext(.finished)
        #expect(machine.report.unknownFate.map(\.position) == [1, 2, 3])
        #expect(machine.report.notSent.isEmpty)
    }

    @Test func aStoppedSlotReportsDiscardedResendsAsNotSentAndWhatIsInFlightAsUnknown() {
        var machine = Script.machine()
        Script.connectAndWrite(&machine, 1...4)
        machine.received(ErrorResponse(status: .invalidToken, identifier: 2))
        machine.expectNext(.close)
        machine.closed(.unexpected(reason: "eof"))
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        // 3 goes out again; then the send is abandoned with 4 still waiting.
        Script.expectResends(&machine, [3])
        machine.stop(LegacyAPNsError(.cancelled, "abandoned"))
        machine.expectNext(.finished)
        #expect(machine.report.unknownFate.map(\.position) == [3])
        #expect(machine.report.notSent.map(\.position) == [4])
    }
}
