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
///   connection writes at most half as many notifications before confirming, so a gateway that
///   keeps dropping connections still lets the send make progress; a notification that was first
///   in flight on ``Configuration/maximumAttempts`` such connections (one that makes the gateway
///   hang up, say) is reported as unconfirmed.
/// - **Confirmation barrier.** Success is never assumed from silence. When the input is exhausted,
///   when the cache is full, or when the input stalls, the machine writes a deliberately invalid
///   enhanced frame (token length 0) carrying a fresh identifier. The gateway processes frames in
///   order, so its error response naming that identifier proves every earlier notification on
///   the connection was accepted. The connection then ends; more work reconnects.
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
        /// Open a connection after waiting `delay` seconds, then report ``connected()`` or
        /// ``connectFailed(_:)``.
        case connect(delay: Double)
        /// Write this notification again, with this wire identifier.
        case resend(wireIdentifier: UInt32, notification: PushNotification)
        /// Take the next notification from the input and report it with ``wroteNew(_:position:)``
        /// (or ``inputFinished()`` if there is none).
        case writeNew
        /// Write the confirmation barrier with this identifier, flush, and wait for the verdict.
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
        /// End of stream, reset, or an I/O error: the gateway's view is unknown.
        case unexpected(reason: String)
        /// The gateway refused the client certificate (seen after the handshake with TLS 1.3).
        /// Nothing on the connection was processed, and retrying cannot help.
        case certificateRejected(LegacyAPNsError)
    }

    struct Entry: Sendable {
        var position: UInt64
        var notification: PushNotification
        /// Connections it was on that ended without a verdict for it.
        var attempts: Int = 0
        var writeCount: Int = 0
        /// Written on a connection that closed without a verdict.
        var possiblyDelivered = false

        var wireIdentifier: UInt32 { UInt32(truncatingIfNeeded: position) }
    }

    enum State: Hashable, Sendable {
        case disconnected
        case connecting
        case open
        /// Barrier written; waiting for its error response.
        case confirming(barrier: UInt32)
        /// A verdict arrived; the shell must close the connection.
        case closing
        case failed
    }

    /// The limits this slot runs with.
    public let configuration: Configuration
    /// Which connection slot this is (for events).
    public let connection: Int

    private(set) var state: State = .disconnected
    private var inFlight = Ring<Entry>(capacity: 64)
    private var retry = Ring<Entry>(capacity: 16)
    private var inputIsFinished = false
    private var window: Int
    private var consecutiveFailures = 0
    private var attemptsOnThisSlot = 0
    private var highestPosition: UInt64 = 0
    private var pendingEvents: [PushEvent] = []
    /// A failure to count once the shell has closed the connection (verdict timeout, unknown id).
    private var failureAfterClose: LegacyAPNsError?

    /// The verdicts so far (complete once ``nextAction()`` returns ``Action/finished``).
    public private(set) var report = SendReport()

    /// Creates the machine for connection slot `connection` (which numbers its events).
    public init(configuration: Configuration = Configuration(), connection: Int = 0) {
        self.configuration = configuration
        self.connection = connection
        self.window = configuration.cacheCapacity
    }

    /// Whether the connection is open and taking new notifications (``Action/writeNew`` may come).
    public var isWriting: Bool { state == .open }

    /// Notifications written and not yet confirmed.
    public var inFlightCount: Int { inFlight.count }
    /// Notifications waiting to be written again.
    public var resendQueueCount: Int { retry.count }
    /// How many notifications the current connection may carry before confirming.
    public var currentWindow: Int { window }

    /// Events since the last call (for the event sink).
    public mutating func takeEvents() -> [PushEvent] {
        guard !pendingEvents.isEmpty else { return [] }
        defer { pendingEvents.removeAll(keepingCapacity: true) }
        return pendingEvents
    }

    // MARK: - Deciding

    /// What to do next.
    public mutating func nextAction() -> Action {
        switch state {
        case .failed:
            return .finished
        case .disconnected:
            if retry.isEmpty && inputIsFinished { return .finished }
            state = .connecting
            return .connect(delay: configuration.reconnect.delay(afterFailures: consecutiveFailures))
        case .connecting:
            preconditionFailure("nextAction() while connecting: report connected() or connectFailed(_:) first")
        case .confirming:
            return .awaitVerdict
        case .closing:
            return .close
        case .open:
            if inFlight.count < window {
                if !retry.isEmpty {
                    var entry = retry.removeFirst()
                    entry.writeCount += 1
                    inFlight.append(entry)
                    report.resent += 1
                    if entry.possiblyDelivered { report.possibleDuplicates += 1 }
                    return .resend(wireIdentifier: entry.wireIdentifier, notification: entry.notification)
                }
                if !inputIsFinished { return .writeNew }
            }
            if inFlight.isEmpty && retry.isEmpty && inputIsFinished {
                state = .closing
                return .close
            }
            // Input exhausted (or stalled) or the cache is full: prove what was written.
            let barrier = UInt32(truncatingIfNeeded: highestPosition &+ 0x8000_0000)
            state = .confirming(barrier: barrier)
            return .writeBarrier(wireIdentifier: barrier)
        }
    }

    // MARK: - Events

    /// The connection is up (TLS handshake done).
    public mutating func connected() {
        precondition(state == .connecting, "connected() without connect")
        state = .open
        attemptsOnThisSlot += 1
        report.connections += 1
        pendingEvents.append(.connected(connection: connection, attempt: attemptsOnThisSlot))
    }

    /// The connection could not be opened. `error` with code `certificateRejected` or
    /// `serverUntrusted` stops the send at once; anything else is retried per the policy.
    public mutating func connectFailed(_ error: LegacyAPNsError) {
        precondition(state == .connecting, "connectFailed(_:) without connect")
        if Self.isFatal(error) {
            fail(error)
            return
        }
        recordFailure(error)
    }

    /// The shell wrote a new notification taken from the input at 1-based `position`. Returns the
    /// wire identifier to put in the frame (the shell may encode before or after calling this).
    @discardableResult
    public mutating func wroteNew(_ notification: PushNotification, position: UInt64) -> UInt32 {
        precondition(state == .open, "wroteNew(_:position:) while not open")
        precondition(position > highestPosition, "positions must increase")
        highestPosition = position
        report.sent += 1
        let entry = Entry(position: position, notification: notification, writeCount: 1)
        inFlight.append(entry)
        return entry.wireIdentifier
    }

    /// The shell did not write a notification taken from the input at `position` because the
    /// gateway would refuse it anyway (a token of the wrong size, an oversized payload): it is
    /// rejected at once with the status the gateway would have answered.
    public mutating func refused(_ notification: PushNotification, position: UInt64, status: StatusCode) {
        precondition(position > highestPosition, "positions must increase")
        highestPosition = position
        report.sent += 1
        reject(Entry(position: position, notification: notification), status: status)
    }

    /// A notification the shell took from the input but never wrote, because the slot stopped
    /// (see ``stop(_:)``): it is reported unconfirmed and not written.
    public mutating func abandoned(_ notification: PushNotification, position: UInt64) {
        highestPosition = Swift.max(highestPosition, position)
        report.sent += 1
        giveUp(Entry(position: position, notification: notification))
    }

    /// The input has no more notifications (or the caller asked to stop taking them).
    public mutating func inputFinished() {
        inputIsFinished = true
    }

    /// The input is momentarily empty: confirm what is in flight now rather than leave it
    /// unconfirmed while waiting. Returns whether a barrier is due.
    public mutating func inputStalled() -> Bool {
        guard state == .open, !inFlight.isEmpty, retry.isEmpty else { return false }
        window = inFlight.count  // the next nextAction() writes the barrier
        return true
    }

    /// The gateway sent an error response.
    public mutating func received(_ response: ErrorResponse) {
        switch state {
        case .open, .confirming:
            break
        default:
            return  // a verdict already arrived on this connection; the rest is noise
        }
        let barrier: UInt32? = if case .confirming(let id) = state { id } else { nil }
        state = .closing
        if response.identifier == barrier {
            let count = inFlight.count
            acceptFirst(count)
            consecutiveFailures = 0
            window = Swift.min(configuration.cacheCapacity, Swift.max(window * 4, count * 4, Self.minimumWindow))
            return
        }
        guard let index = indexInFlight(of: response.identifier) else {
            pendingEvents.append(.unknownIdentifier(connection: connection, response))
            closedWithoutVerdict()
            failureAfterClose = LegacyAPNsError(
                .connectionFailed,
                "the gateway named identifier \(response.identifier), which was not sent on that connection")
            return
        }
        switch response.status {
        case .shutdown, .noErrors:
            // The named notification is the last one processed.
            acceptFirst(index + 1)
            requeueAll(reason: .shutdown(identifier: response.identifier))
        case .processingError:
            acceptFirst(index)
            var failed = inFlight.removeFirst()
            failed.attempts += 1
            if failed.attempts >= configuration.maximumAttempts {
                // Out of retries. If an earlier connection may have delivered it, it is not a
                // clean rejection: its fate is unknown.
                if failed.possiblyDelivered { giveUp(failed) } else { reject(failed, status: response.status) }
            } else {
                // Transient: it goes first into the resend queue, before what followed it.
                inFlight.prepend(failed)
            }
            requeueAll(reason: .errorResponse(response))
        default:
            acceptFirst(index)
            reject(inFlight.removeFirst(), status: response.status)
            requeueAll(reason: .errorResponse(response))
        }
        consecutiveFailures = 0
        adaptWindow(acceptedBeforeVerdict: index)
    }

    /// The smallest window: enough to keep a TLS record full.
    static let minimumWindow = 64

    /// Everything written after a rejected notification is discarded and written again, so when
    /// errors come every few notifications a large window mostly buys resends. After an error
    /// the next connection writes at most about twice what this one got through before its error
    /// (then confirms with the barrier, which grows the window fourfold again). A send with rare
    /// errors keeps the full window.
    private mutating func adaptWindow(acceptedBeforeVerdict accepted: Int) {
        window = Swift.min(configuration.cacheCapacity, Swift.max(Self.minimumWindow, 2 * (accepted + 1)))
    }

    /// The barrier's verdict did not come in time; the shell closes the connection.
    public mutating func verdictTimedOut() {
        guard case .confirming = state else { return }
        closedWithoutVerdict()
        state = .closing
        failureAfterClose = LegacyAPNsError(.timedOut, "the gateway did not answer the confirmation barrier in time")
    }

    /// The connection ended. After a verdict this is the expected close; otherwise everything in
    /// flight is unknown.
    public mutating func closed(_ cause: CloseCause) {
        switch state {
        case .closing:
            state = .disconnected
            if let failure = failureAfterClose {
                failureAfterClose = nil
                pendingEvents.append(.closed(connection: connection, reason: failure.reason))
                recordFailure(failure)
            } else {
                pendingEvents.append(.closed(connection: connection, reason: "closed after the gateway's verdict"))
            }
        case .open, .confirming:
            switch cause {
            case .certificateRejected(let error):
                // Nothing on this connection was processed; retrying cannot help.
                while !inFlight.isEmpty {
                    var entry = inFlight.removeFirst()
                    entry.writeCount -= 1
                    retry.append(entry)
                }
                fail(error)
            case .unexpected(let reason):
                pendingEvents.append(.closed(connection: connection, reason: reason))
                let lost = closedWithoutVerdict()
                state = .disconnected
                if lost > 0 { recordFailure(LegacyAPNsError(.connectionFailed, reason)) }
            }
        default:
            break
        }
    }

    /// Stops the slot: whatever has no verdict becomes unconfirmed.
    public mutating func stop(_ error: LegacyAPNsError) {
        fail(error)
    }

    // MARK: - Bookkeeping

    static func isFatal(_ error: LegacyAPNsError) -> Bool {
        error.code == .certificateRejected || error.code == .serverUntrusted || error.code == .tlsConfiguration
    }

    private mutating func recordFailure(_ error: LegacyAPNsError) {
        consecutiveFailures += 1
        if consecutiveFailures >= configuration.reconnect.maximumConsecutiveFailures {
            fail(
                LegacyAPNsError(
                    .connectionFailed,
                    "\(error.reason) (gave up after \(consecutiveFailures) attempts in a row)"))
            return
        }
        state = .disconnected
        let delay = configuration.reconnect.delay(afterFailures: consecutiveFailures)
        pendingEvents.append(.reconnecting(connection: connection, delay: delay, reason: error.reason))
    }

    private mutating func fail(_ error: LegacyAPNsError) {
        state = .failed
        if report.failure == nil { report.failure = error }
        while !inFlight.isEmpty { giveUp(inFlight.removeFirst()) }
        while !retry.isEmpty { giveUp(retry.removeFirst()) }
    }

    private mutating func giveUp(_ entry: Entry) {
        let unconfirmed = UnconfirmedNotification(
            position: entry.position, notification: entry.notification, wasWritten: entry.writeCount > 0)
        report.unconfirmed.append(unconfirmed)
        pendingEvents.append(.unconfirmed(connection: connection, unconfirmed))
    }

    /// Everything in flight lost its connection without a verdict. Returns how many notifications
    /// that was (a close with none in flight is not a failure).
    @discardableResult
    private mutating func closedWithoutVerdict() -> Int {
        let written = inFlight.count
        var requeued: [Entry] = []
        requeued.reserveCapacity(written)
        var isHead = true
        while !inFlight.isEmpty {
            var entry = inFlight.removeFirst()
            // Only the first notification in flight is a suspect: a gateway that drops the
            // connection at a random point has processed some of the others, and a notification
            // that makes the gateway hang up every time ends up first (the window halves down to
            // one) and runs out of attempts there.
            if isHead { entry.attempts += 1 }
            isHead = false
            entry.possiblyDelivered = true
            if entry.attempts >= configuration.maximumAttempts {
                giveUp(entry)
            } else {
                requeued.append(entry)
            }
        }
        if !requeued.isEmpty {
            pendingEvents.append(.resent(connection: connection, count: requeued.count, reason: .silentClose))
            prependRetry(requeued)
        }
        if written > 0 { window = Swift.max(1, written / 2) }
        return written
    }

    private mutating func acceptFirst(_ count: Int) {
        guard count > 0 else { return }
        for _ in 0..<count { _ = inFlight.removeFirst() }
        report.accepted += count
        pendingEvents.append(.confirmed(connection: connection, count: count))
    }

    private mutating func reject(_ entry: Entry, status: StatusCode) {
        let rejection = Rejection(
            position: entry.position, identifier: entry.notification.identifier, token: entry.notification.token,
            status: status, mayHaveBeenDelivered: entry.possiblyDelivered)
        report.rejected.append(rejection)
        pendingEvents.append(.rejected(connection: connection, rejection))
    }

    /// Moves everything still in flight (discarded by the gateway) to the front of the resend queue.
    private mutating func requeueAll(reason: ResendReason) {
        guard !inFlight.isEmpty else { return }
        var entries: [Entry] = []
        entries.reserveCapacity(inFlight.count)
        while !inFlight.isEmpty { entries.append(inFlight.removeFirst()) }
        pendingEvents.append(.resent(connection: connection, count: entries.count, reason: reason))
        prependRetry(entries)
    }

    /// Puts `entries` (ascending, all older than anything queued) before the queued ones.
    private mutating func prependRetry(_ entries: [Entry]) {
        for entry in entries.reversed() { retry.prepend(entry) }
    }

    /// The index of the in-flight entry with this wire identifier, if any.
    private func indexInFlight(of identifier: UInt32) -> Int? {
        guard let first = inFlight.first else { return nil }
        // In-flight positions ascend and span far less than 2^32, so the identifier's position is
        // the first one's plus the wrapped difference.
        let target = first.position &+ UInt64(identifier &- first.wireIdentifier)
        let index = inFlight.partitionIndex(of: target) { $0.position }
        guard index < inFlight.count, inFlight[index].position == target else { return nil }
        return index
    }
}
