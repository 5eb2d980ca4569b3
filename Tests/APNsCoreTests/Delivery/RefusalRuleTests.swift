import APNsCore
import TestSupport
import Testing

/// Scripts for the refusal rule: before a slot's first verdict, a connection the gateway ends costs
/// two failures and makes the next connection a probe of one notification.
@Suite struct RefusalRuleTests {
    typealias Script = DeliveryStateMachineTests

    static func machine(failures: Int = 4) -> DeliveryStateMachine {
        Script.machine(failures: failures)
    }

    @Test func twoConnectionsEndedByTheGatewayFromTheFirstOnStopTheSendNamingTheLikelyCause() {
        var machine = Self.machine()
        Script.connectAndWrite(&machine, 1...5)
        machine.inputFinished()
        machine.closed(.endedByGateway(reason: "127.0.0.1:2195 closed the connection without an error response"))
        #expect(machine.currentWindow == 1)  // the next connection is a probe
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Script.expectResends(&machine, [1])
        machine.expectNext(.writeBarrier(wireIdentifier: 5 &+ Script.barrierOffset))
        machine.closed(.endedByGateway(reason: "127.0.0.1:2195 closed the connection (Connection reset by peer)"))
        machine.expectNext(.finished)
        #expect(machine.report.failure?.code == .certificateRejected)
        #expect(
            machine.report.failure?.reason
                == "the gateway ended every connection right after the TLS handshake (2 in a row, nothing confirmed): "
                + "it probably refuses this certificate's environment (production/sandbox) or its topic, "
                + "or this is the feedback port (2196) and not a gateway port (2195), "
                + "or it is a bridge whose upstream is unavailable; "
                + "last: 127.0.0.1:2195 closed the connection (Connection reset by peer)")
        #expect(machine.report.unconfirmed.map(\.position) == [1, 2, 3, 4, 5])
        #expect(machine.report.connections == 2)
    }

    @Test func aHandshakeTheGatewayBreaksOffCountsTheSame() {
        var machine = Self.machine()
        machine.expectNext(.connect(delay: .zero))
        machine.connectFailed(LegacyAPNsError(.handshakeFailed, "TLS handshake with g failed: the connection closed"))
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connectFailed(LegacyAPNsError(.handshakeFailed, "TLS handshake with g failed: the connection closed"))
        machine.expectNext(.finished)
        #expect(machine.report.failure?.code == .certificateRejected)
        #expect(machine.report.failure?.reason.contains("(2 in a row, nothing confirmed)") == true)
    }

    @Test func aProbeTheGatewayAnswersEndsTheRuleForTheRestOfTheSend() {
        var machine = Self.machine()
        Script.connectAndWrite(&machine, 1...8)
        machine.closed(.endedByGateway(reason: "closed"))
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Script.expectResends(&machine, [1])
        Script.confirm(&machine, highest: 8)  // a gateway that drops large connections answers the probe
        #expect(machine.report.accepted == 1)
        #expect(machine.currentWindow == 64)
        // From now on a connection the gateway ends is an ordinary silent close: the window halves
        // and the send goes on.
        machine.expectNext(.connect(delay: .zero))
        machine.connected()
        Script.expectResends(&machine, [2, 3, 4, 5, 6, 7, 8])
        machine.closed(.endedByGateway(reason: "closed"))
        #expect(machine.currentWindow == 3)
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Script.expectResends(&machine, [2, 3, 4])
        machine.closed(.endedByGateway(reason: "closed"))
        machine.expectNext(.connect(delay: .milliseconds(200)))
        #expect(machine.report.failure == nil)
    }

    @Test func closesTheGatewayCannotBeBlamedForKeepTheOrdinaryBudget() {
        var machine = Self.machine()
        Script.connectAndWrite(&machine, 1...8)
        machine.closed(.unexpected(reason: "accepted no data for 30 s"))
        #expect(machine.currentWindow == 4)  // halved, no probe
        machine.expectNext(.connect(delay: .milliseconds(100)))
        machine.connected()
        Script.expectResends(&machine, [1, 2, 3, 4])
        machine.closed(.unexpected(reason: "accepted no data for 30 s"))
        machine.expectNext(.connect(delay: .milliseconds(200)))
        #expect(machine.report.failure == nil)
    }
}
