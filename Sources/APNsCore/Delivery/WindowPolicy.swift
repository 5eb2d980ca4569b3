/// How many notifications one connection may carry before it confirms them with a
/// ``ConfirmationBarrier``: the resend window of a connection slot.
///
/// Everything after a rejected notification is discarded by the gateway and written again, and
/// everything in flight on a connection that closes silently is written again, so the window
/// trades resends against barriers (one reconnect each). The five rules live here and nowhere
/// else:
/// - a barrier confirmed `n`: the next connection may carry four times more (at least
///   ``minimum``), so a clean send quickly returns to the full ``capacity``;
/// - an error response named the notification after `a` accepted ones: the next connection
///   carries about twice what got through (at least ``minimum``). When errors come every few
///   notifications a large window mostly buys resends; rare errors keep the window large;
/// - a connection closed without an answer while `w` were in flight: the next one carries half,
///   so a gateway that drops connections after some number of notifications is eventually
///   confirmed below that number and the send makes progress;
/// - the gateway ended a connection before the slot's first verdict (``DeliveryStateMachine``'s
///   refusal rule): the next one is a probe of one notification;
/// - the input paused with `w` in flight: confirm those now (the window shrinks to `w`).
public struct WindowPolicy: Hashable, Sendable {
    /// The smallest window after an error or a confirmation: enough frames to fill a TLS record.
    public static let minimum = 64

    /// The largest window: the resend cache's capacity.
    public let capacity: Int
    /// The window of the current (or next) connection.
    public private(set) var current: Int

    /// Starts at the full capacity.
    public init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
        self.current = self.capacity
    }

    /// The barrier confirmed `count` notifications.
    public mutating func barrierConfirmed(count: Int) {
        current = Swift.min(capacity, Swift.max(current * 4, count * 4, Self.minimum))
    }

    /// An error response named the notification that followed `accepted` accepted ones.
    public mutating func errorResponse(acceptedBefore accepted: Int) {
        current = Swift.min(capacity, Swift.max(Self.minimum, 2 * (accepted + 1)))
    }

    /// A connection ended without a verdict while `inFlight` notifications were on it. Returns
    /// whether the window could still shrink (false once it is down to one notification).
    @discardableResult
    public mutating func closedSilently(inFlight: Int) -> Bool {
        guard inFlight > 0 else { return current > 1 }
        let couldShrink = current > 1
        current = Swift.max(1, inFlight / 2)
        return couldShrink
    }

    /// The gateway ended a connection before any verdict: the next carries one notification, which
    /// tells a gateway that answers nothing from one that drops large connections.
    public mutating func probe() {
        current = 1
    }

    /// The input paused with `inFlight` notifications written: confirm exactly those.
    public mutating func confirmNow(inFlight: Int) {
        current = inFlight
    }
}
