/// ``DeliveryStateMachine`` for notifications sent as pre-encoded frames (``FrameRecord``s, as
/// `PushClient.send(frames:)` and `legacy-push send --input` send them): the same rules, the same
/// events and the same report, but what it keeps of a notification in flight is a
/// ``FrameRecord/Reference`` (an address, no reference count), and new notifications are written
/// a run at a time with ``writeNew(records:firstPosition:into:until:)``, which copies each frame
/// into the write buffer with its wire identifier patched in.
package struct FrameDeliveryStateMachine: Sendable {
    package typealias Configuration = DeliveryStateMachine.Configuration
    package typealias CloseCause = DeliveryStateMachine.CloseCause

    private var core: DeliveryCore<FrameRecord.Reference>

    /// Creates the machine for connection slot `connection` (which numbers its events).
    package init(configuration: Configuration = Configuration(), connection: Int = 0) {
        core = DeliveryCore(configuration: configuration, connection: connection)
    }

    /// The limits this slot runs with.
    package var configuration: Configuration { core.configuration }

    /// Which connection slot this is (for events).
    package var connection: Int { core.connection }

    /// The verdicts so far (complete once ``nextAction()`` returns ``Action/finished``).
    package var report: SendReport { core.report }

    /// Whether the connection is open and taking new notifications (``Action/writeNew`` may come).
    package var isWriting: Bool { core.isWriting }

    /// Notifications written and not yet confirmed.
    package var inFlightCount: Int { core.inFlightCount }

    /// The identifier of the barrier waiting for its verdict, if one is.
    package var pendingBarrier: UInt32? { core.pendingBarrier }

    /// Notifications waiting to be written again.
    package var resendQueueCount: Int { core.resendQueueCount }

    /// How many notifications the current connection may carry before confirming.
    package var currentWindow: Int { core.currentWindow }

    /// Events since the last call (for the event sink).
    package mutating func takeEvents() -> [PushEvent] { core.takeEvents() }

    /// What to do next.
    package mutating func nextAction() -> DeliveryCore<FrameRecord.Reference>.Step { core.nextAction() }

    /// What to do next (``nextAction()``, under the name the shell's ``SlotMachine`` uses).
    package mutating func nextStep() -> DeliveryCore<FrameRecord.Reference>.Step { core.nextAction() }

    /// The connection is up (TLS handshake done).
    package mutating func connected() { core.connected() }

    /// The connection could not be opened. An error that ``LegacyAPNsError/stopsSending`` (a
    /// refused or untrusted certificate, a refused protocol, unusable credentials) stops the send
    /// at once; anything else is retried per the policy.
    package mutating func connectFailed(_ error: LegacyAPNsError) { core.connectFailed(error) }

    /// The shell wrote a new notification taken from the input at 1-based `position`. Returns the
    /// wire identifier to put in the frame (the shell may encode before or after calling this).
    @discardableResult
    package mutating func wroteNew(_ record: FrameRecord.Reference, position: UInt64) -> UInt32 {
        core.wroteNew(record, position: position)
    }

    /// The shell did not write a notification taken from the input at `position` because the
    /// gateway would refuse it anyway (a token of the wrong size, an oversized payload): it is
    /// rejected at once with the status the gateway would have answered.
    package mutating func refused(_ record: FrameRecord.Reference, position: UInt64, status: StatusCode) {
        core.refused(record, position: position, status: status)
    }

    /// A notification the shell took from the input but never wrote, because the slot stopped
    /// (see ``stop(_:)``): it is reported unconfirmed and not written.
    package mutating func abandoned(_ record: FrameRecord.Reference, position: UInt64) {
        core.abandoned(record, position: position)
    }

    /// The input has no more notifications (or the caller asked to stop taking them).
    package mutating func inputFinished() { core.inputFinished() }

    /// See ``DeliveryStateMachine/settle()``.
    package mutating func settle() { core.settle() }

    /// The input is momentarily empty: confirm what is in flight now rather than leave it
    /// unconfirmed while waiting. Returns whether a barrier is due.
    package mutating func inputStalled() -> Bool { core.inputStalled() }

    /// The gateway sent an error response.
    package mutating func received(_ response: ErrorResponse) { core.received(response) }

    /// The barrier's verdict did not come in time; the shell closes the connection.
    package mutating func verdictTimedOut() { core.verdictTimedOut() }

    /// The connection ended. After a verdict this is the expected close; otherwise everything in
    /// flight is unknown.
    package mutating func closed(_ cause: CloseCause) { core.closed(cause) }

    /// Stops the slot: whatever has no verdict becomes unconfirmed.
    package mutating func stop(_ error: LegacyAPNsError) { core.stop(error) }

    /// Writes new notifications from `records` (whole ``FrameRecord``s, the first one taken from
    /// the input at `firstPosition`, the others after it) into `writer`, each frame with its wire
    /// identifier, for as long as ``nextAction()`` would keep answering `writeNew` and `writer`
    /// holds less than `limit` bytes: exactly what that many ``wroteNew(_:position:)`` calls do,
    /// in one call. Call it when ``nextAction()`` answered `writeNew`. Returns how many records
    /// it wrote and their bytes in `records` (at least one record when `records` is not empty).
    package mutating func writeNew(
        records: UnsafeRawBufferPointer, firstPosition: UInt64, into writer: inout ByteWriter, until limit: Int
    ) -> (count: Int, bytes: Int) {
        core.writeNew(records: records, firstPosition: firstPosition, into: &writer, until: limit)
    }

    /// The oldest position that still has no verdict (in flight or waiting to be resent), or nil:
    /// records before it are no longer referenced by the machine.
    package var oldestPending: UInt64? { core.oldestPending }
}
