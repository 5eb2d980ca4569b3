/// The resend logic of one gateway connection slot, as a value with no I/O.
///
/// The connection shell asks ``nextAction()`` what to do, does it, and reports what happened
/// (``connected()``, ``wroteNew(_:position:)``, ``received(_:)``, ``closed(_:)``, ...). The machine
/// decides what to write, what to resend, and what every notification's verdict is. Tests drive
/// it as a script: event in, expected action and report out, with no sockets and no clocks.
///
/// ## The rules
/// - Every written notification stays in the cache until the gateway gives a verdict. Wire
///   identifiers are the client's own (the low 32 bits of the notification's position in the
///   input), so duplicate or zero caller identifiers never confuse the bookkeeping.
/// - An error response with status *s* naming identifier *x*: everything written before *x* on
///   that connection is accepted; *x* is rejected with *s* (status 1, processing error, is
///   transient: *x* is retried); everything after *x* was discarded and is resent on the next
///   connection, in order.
/// - Status 10 (shutdown) names the **last notification processed**: it and everything before it
///   are accepted, everything after is resent.
/// - An identifier that was not written on this connection is reported
///   (``PushEvent/unknownIdentifier(connection:_:)``), never guessed: the connection is treated as
///   closed without a verdict.
/// - A connection that closes without an error response tells nothing: everything still in flight
///   is resent (at least once) and counted in ``SendReport/possibleDuplicates``. The next
///   connection writes at most half as many notifications before confirming (``WindowPolicy``), so
///   a gateway that keeps dropping connections still lets the send make progress; a notification
///   that was first in flight on ``Configuration/maximumAttempts`` such connections (one that
///   makes the gateway hang up, say) is reported as unconfirmed.
/// - **Confirmation barrier.** Success is never assumed from silence. When the input is exhausted,
///   when the window is full, or when the input stalls, the machine writes a
///   ``ConfirmationBarrier`` carrying a fresh identifier. The gateway processes frames in order, so
///   its error response naming that identifier proves every earlier notification on the
///   connection was accepted. The connection then ends; more work reconnects.
/// - **Retry budget.** ``ReconnectPolicy/maximumConsecutiveFailures`` counts failures *without
///   progress*: connection attempts that fail, and connections that end without a verdict once the
///   window cannot shrink any more. Any verdict is progress and starts the count again. A failure
///   that cannot heal (``LegacyAPNsError/stopsSending``) stops at once.
/// - **Refusal rule.** A gateway that refuses the certificate's environment (a development
///   certificate at the production gateway, or the reverse) or its topic closes or resets every
///   connection right after the TLS handshake, without a word; on one connection that looks like
///   any reset. So, until the slot has seen its first verdict: a connection the gateway ended
///   without one (``CloseCause/endedByGateway(reason:)``, or a handshake it broke off:
///   ``LegacyAPNsError/Code-swift.struct/handshakeFailed``) counts **two** failures against the
///   retry budget, and the next connection is a probe carrying a single notification (then the
///   barrier). With the default budget of four, the second such connection in a row, from the
///   first on, stops the send with ``LegacyAPNsError/Code-swift.struct/certificateRejected``: "the
///   gateway ended every connection right after the TLS handshake (2 in a row, nothing confirmed):
///   it probably refuses this certificate's environment (production/sandbox) or its topic, or this
///   is the feedback port (2196) and not a gateway port (2195), or it is a bridge whose upstream is
///   unavailable" (a feedback service with nothing to list closes right after the handshake too,
///   and so does a `Bridge` that cannot reach the HTTP/2 API). A
///   gateway that merely drops large connections after some notifications answers the probe's
///   barrier, and its first verdict ends the rule for the rest of the send.
///
/// ## States
/// ```
///                   nextAction(): connect(delay)            connected()
///   ┌──────────────┐ ────────────────────────▶ ┌────────────┐ ─────────▶ ┌──────────────────────┐
///   │ disconnected │                           │ connecting │            │ open(in flight)      │──┐ writeNew,
///   └──────────────┘ ◀──────────────────────── └────────────┘            │                      │◀─┘ resend
///     │   ▲   ▲        connectFailed (may heal)                          └──────────────────────┘
///     │   │   │                                         window full, input done │          │
///     │   │   │ closed(unexpected): resend all in flight    or stalled: barrier ▼          │ received(error)
///     │   │   └────────────────────────────────── ┌──────────────────────────────┐        │
///     │   │                                       │ confirming(in flight, barrier)│        │
///     │   │                                       └──────────────────────────────┘        │
///     │   │    closed(_)    ┌──────────────────┐   received(_), verdictTimedOut() │         │
///     │   └──────────────── │ closing(failure) │ ◀────────────────────────────────┴─────────┘
///     │                     └──────────────────┘
///     │ nothing left                      ┌────────┐  stop(_), a failure that stops sending, or the
///     └──▶ finished          finished ◀── │ failed │  retry budget spent (from any state)
///                                         └────────┘
/// ```
public struct DeliveryStateMachine: Sendable {
    /// Limits of one connection slot.
    public struct Configuration: Hashable, Sendable {
        /// How many written, unconfirmed notifications one connection may carry before it confirms
        /// them with a barrier. This is the resend cache: memory is bounded by it.
        public var cacheCapacity: Int
        /// How many connections a notification may be written on without a verdict (closed
        /// without an error response, or status 1) before it is given up as unconfirmed.
        public var maximumAttempts: Int
        /// Delays between connection attempts, and when to give up.
        public var reconnect: ReconnectPolicy

        /// 100,000 notifications: about 20 MB with 100-byte payloads, and one barrier (one TLS
        /// reconnect, a few milliseconds) per 100,000 notifications, well under 0.1 % of a send.
        public static let defaultCacheCapacity = 100_000

        /// Creates limits; the defaults are documented on each property.
        public init(
            cacheCapacity: Int = Self.defaultCacheCapacity, maximumAttempts: Int = 3,
            reconnect: ReconnectPolicy = ReconnectPolicy()
        ) {
            self.cacheCapacity = Swift.max(1, cacheCapacity)
            self.maximumAttempts = Swift.max(1, maximumAttempts)
            self.reconnect = reconnect
        }
    }

    /// What the shell should do next.
    public enum Action: Hashable, Sendable {
        /// Open a connection after waiting `delay`, then report ``connected()`` or
        /// ``connectFailed(_:)``.
        case connect(delay: Duration)
        /// Write this notification again, with this wire identifier.
        case resend(wireIdentifier: UInt32, notification: PushNotification)
        /// Take the next notification from the input and report it with ``wroteNew(_:position:)``
        /// (or ``inputFinished()`` if there is none).
        case writeNew
        /// Write the ``ConfirmationBarrier`` with this identifier, flush, and wait for the verdict.
        case writeBarrier(wireIdentifier: UInt32)
        /// Flush, then wait for the gateway's error response or the connection's end, and report
        /// ``received(_:)``, ``closed(_:)`` or ``verdictTimedOut()``.
        case awaitVerdict
        /// Close the connection, then report ``closed(_:)``.
        case close
        /// Nothing is left to do; read ``report``.
        case finished
    }

    /// How a connection ended without an error response.
    public enum CloseCause: Hashable, Sendable {
        /// The connection failed for a reason the shell cannot pin on the gateway (it took no data
        /// for too long, it sent bytes that are no error response): the gateway's view is unknown.
        case unexpected(reason: String)
        /// The gateway ended the connection: end of stream or a reset, without an error response.
        /// Its view is unknown too; before the slot's first verdict this is what a gateway refusing
        /// the certificate's environment or topic does (the refusal rule).
        case endedByGateway(reason: String)
        /// The gateway refused the client certificate (seen after the handshake with TLS 1.3).
        /// Nothing on the connection was processed, and retrying cannot help.
        case certificateRejected(LegacyAPNsError)
    }

    /// A barrier's wire identifier is this far from the newest notification's: half the 32-bit
    /// identifier space. Identifiers in flight span at most the cache capacity (far less than
    /// 2^31), so a barrier can never carry the identifier of a notification it confirms.
    public static let barrierIdentifierOffset: UInt32 = 0x8000_0000

    /// What a connection the gateway ends before the slot's first verdict costs the retry budget.
    public static let refusalFailureCost = 2

    /// The rules, kept once for every kind of item (``DeliveryCore``).
    private var core: DeliveryCore<PushNotification>

    /// Creates the machine for connection slot `connection` (which numbers its events).
    public init(configuration: Configuration = Configuration(), connection: Int = 0) {
        core = DeliveryCore(configuration: configuration, connection: connection)
    }

    /// The limits this slot runs with.
    public var configuration: Configuration { core.configuration }

    /// Which connection slot this is (for events).
    public var connection: Int { core.connection }

    /// The verdicts so far (complete once ``nextAction()`` returns ``Action/finished``).
    public var report: SendReport { core.report }

    /// Whether the connection is open and taking new notifications (``Action/writeNew`` may come).
    public var isWriting: Bool { core.isWriting }

    /// Notifications written and not yet confirmed.
    public var inFlightCount: Int { core.inFlightCount }

    /// The identifier of the barrier waiting for its verdict, if one is.
    public var pendingBarrier: UInt32? { core.pendingBarrier }

    /// Notifications waiting to be written again.
    public var resendQueueCount: Int { core.resendQueueCount }

    /// How many notifications the current connection may carry before confirming.
    public var currentWindow: Int { core.currentWindow }

    /// Events since the last call (for the event sink).
    public mutating func takeEvents() -> [PushEvent] { core.takeEvents() }

    /// What to do next, as the shell that runs both machines takes it (one step type for both).
    package mutating func nextStep() -> DeliveryCore<PushNotification>.Step { core.nextAction() }

    /// What to do next.
    public mutating func nextAction() -> Action {
        switch core.nextAction() {
        case .connect(let delay): .connect(delay: delay)
        case .resend(let identifier, let notification): .resend(wireIdentifier: identifier, notification: notification)
        case .writeNew: .writeNew
        case .writeBarrier(let identifier): .writeBarrier(wireIdentifier: identifier)
        case .awaitVerdict: .awaitVerdict
        case .close: .close
        case .finished: .finished
        }
    }

    /// The connection is up (TLS handshake done).
    public mutating func connected() { core.connected() }

    /// The connection could not be opened. An error that ``LegacyAPNsError/stopsSending`` (a
    /// refused or untrusted certificate, a refused protocol, unusable credentials) stops the send
    /// at once; anything else is retried per the policy.
    public mutating func connectFailed(_ error: LegacyAPNsError) { core.connectFailed(error) }

    /// The shell wrote a new notification taken from the input at 1-based `position`. Returns the
    /// wire identifier to put in the frame (the shell may encode before or after calling this).
    @discardableResult
    public mutating func wroteNew(_ notification: PushNotification, position: UInt64) -> UInt32 {
        core.wroteNew(notification, position: position)
    }

    /// The shell did not write a notification taken from the input at `position` because the
    /// gateway would refuse it anyway (a token of the wrong size, an oversized payload): it is
    /// rejected at once with the status the gateway would have answered.
    public mutating func refused(_ notification: PushNotification, position: UInt64, status: StatusCode) {
        core.refused(notification, position: position, status: status)
    }

    /// A notification the shell took from the input but never wrote, because the slot stopped
    /// (see ``stop(_:)``): it is reported unconfirmed and not written.
    public mutating func abandoned(_ notification: PushNotification, position: UInt64) {
        core.abandoned(notification, position: position)
    }

    /// The input has no more notifications (or the caller asked to stop taking them).
    public mutating func inputFinished() { core.inputFinished() }

    /// The send is stopping: take and resend nothing more, prove what is in flight on the open
    /// connection, then finish. What waits to be resent is reported unconfirmed (not sent, unless
    /// an earlier connection may have delivered it); report what was taken and never written with
    /// ``abandoned(_:position:)``. Settling costs one verdict at most.
    public mutating func settle() { core.settle() }

    /// The input is momentarily empty: confirm what is in flight now rather than leave it
    /// unconfirmed while waiting. Returns whether a barrier is due.
    public mutating func inputStalled() -> Bool { core.inputStalled() }

    /// The gateway sent an error response.
    public mutating func received(_ response: ErrorResponse) { core.received(response) }

    /// The barrier's verdict did not come in time; the shell closes the connection.
    public mutating func verdictTimedOut() { core.verdictTimedOut() }

    /// The connection ended. After a verdict this is the expected close; otherwise everything in
    /// flight is unknown.
    public mutating func closed(_ cause: CloseCause) { core.closed(cause) }

    /// Stops the slot: whatever has no verdict becomes unconfirmed.
    public mutating func stop(_ error: LegacyAPNsError) { core.stop(error) }
}
