/// The rules of ``DeliveryStateMachine`` (see there), written once and kept generic over what the
/// machine keeps of each notification: the notification itself (``DeliveryStateMachine``, for
/// library callers) or a reference to its pre-encoded frame (``FrameDeliveryStateMachine``, for
/// `send --input`). Both wrappers live in this module, so each is compiled for its own item type.
package struct DeliveryCore<Item: DeliveryItem>: Sendable {
    typealias Configuration = DeliveryStateMachine.Configuration
    typealias CloseCause = DeliveryStateMachine.CloseCause

    /// What the shell should do next: ``DeliveryStateMachine/Action`` with the item kept.
    package enum Step {
        /// Open a connection after waiting `delay`.
        case connect(delay: Duration)
        /// Write this item's notification again, with this wire identifier.
        case resend(wireIdentifier: UInt32, item: Item)
        /// Take the next notification from the input.
        case writeNew
        /// Write the ``ConfirmationBarrier`` with this identifier, flush, and wait for the verdict.
        case writeBarrier(wireIdentifier: UInt32)
        /// Flush, then wait for the gateway's error response or the connection's end.
        case awaitVerdict
        /// Close the connection.
        case close
        /// Nothing is left to do.
        case finished
    }

    /// The most in-flight entries a connection reserves room for when it opens (a larger window
    /// grows its ring as it fills).
    static var inFlightReservation: Int { 1 << 17 }

    struct Entry: Sendable {
        var position: UInt64
        var item: Item
        /// Connections it was on that ended without a verdict for it. (32-bit counters: an entry is
        /// 32 bytes, not 40, and a window of them is touched fresh by every connection.)
        var attempts: Int32 = 0
        var writeCount: Int32 = 0
        /// Written on a connection that closed without a verdict.
        var possiblyDelivered = false
        /// Already named in ``SendReport/possiblyDuplicated``.
        var listedAsDuplicate = false

        var wireIdentifier: UInt32 { UInt32(truncatingIfNeeded: position) }
    }

    /// Notifications written on the current connection and not yet confirmed, in write order.
    typealias InFlight = Ring<Entry>

    /// Where the slot's connection is; each state carries what only it has.
    enum State: Sendable {
        /// No connection; the next action connects (or finishes when nothing is left).
        case disconnected
        /// A connection is being opened; ``connected()`` or ``connectFailed(_:)`` comes next.
        case connecting
        /// Connected and writing.
        case open(InFlight)
        /// The barrier with this identifier is written; waiting for its verdict.
        case confirming(InFlight, barrier: UInt32)
        /// A verdict arrived (or none will): the shell closes the connection. `failure` is counted
        /// against the retry budget once it has (a barrier left unanswered, an unknown identifier).
        case closing(failure: LegacyAPNsError?)
        /// Stopped for good; everything without a verdict is unconfirmed.
        case failed
        /// Only while a payload is changed in place (keeps the ring's storage uniquely referenced).
        case modifying
    }

    /// Failures in a row: all of them set the backoff delay, only those without progress spend
    /// the retry budget.
    struct Failures: Hashable, Sendable {
        var consecutive = 0
        var withoutProgress = 0
    }

    /// The limits this slot runs with.
    let configuration: Configuration
    /// Which connection slot this is (for events).
    let connection: Int

    private(set) var state: State = .disconnected
    /// Notifications waiting to be written again, oldest first (survives connections).
    private var retry = Ring<Entry>(capacity: 16)
    /// The ring of a connection that ended confirmed, empty, for the next one.
    private var spareInFlight: InFlight?
    /// Whether the input has more to give.
    private var inputIsOpen = true
    /// Settling (see ``settle()``): nothing is written any more but the barrier for what is in
    /// flight.
    private var isSettling = false
    private var window: WindowPolicy
    private var failures = Failures()
    private var attemptsOnThisSlot = 0
    private var highestPosition: UInt64 = 0
    private var pendingEvents: [PushEvent] = []
    /// Whether the gateway has answered anything on this slot (the refusal rule ends then).
    private var sawVerdict = false
    /// Connections in a row the gateway ended before the slot's first verdict.
    private var endedBeforeAnyVerdict = 0

    /// What a connection the gateway ends before the slot's first verdict costs the retry budget.
    static var refusalFailureCost: Int { DeliveryStateMachine.refusalFailureCost }

    /// The verdicts so far (complete once ``nextAction()`` returns ``Action/finished``).
    private(set) var report = SendReport()

    /// Creates the machine for connection slot `connection` (which numbers its events).
    init(configuration: Configuration, connection: Int) {
        self.configuration = configuration
        self.connection = connection
        self.window = WindowPolicy(capacity: configuration.cacheCapacity)
    }

    /// Whether the connection is open and taking new notifications (``Action/writeNew`` may come).
    var isWriting: Bool {
        if case .open = state { return true }
        return false
    }

    /// Notifications written and not yet confirmed.
    var inFlightCount: Int {
        switch state {
        case .open(let inFlight), .confirming(let inFlight, _): inFlight.count
        case .disconnected, .connecting, .closing, .failed, .modifying: 0
        }
    }

    /// The identifier of the barrier waiting for its verdict, if one is.
    var pendingBarrier: UInt32? {
        if case .confirming(_, let barrier) = state { return barrier }
        return nil
    }

    /// Notifications waiting to be written again.
    var resendQueueCount: Int { retry.count }
    /// How many notifications the current connection may carry before confirming.
    var currentWindow: Int { window.current }

    /// Events since the last call (for the event sink).
    mutating func takeEvents() -> [PushEvent] {
        guard !pendingEvents.isEmpty else { return [] }
        defer { pendingEvents.removeAll(keepingCapacity: true) }
        return pendingEvents
    }

    // MARK: - Deciding

    /// What to do next.
    mutating func nextAction() -> Step {
        switch state {
        case .failed:
            return .finished
        case .disconnected:
            if isSettling {
                // What waits to be resent stays unsent: the gateway discarded it (or it went on a
                // connection that ended without a verdict, and is reported so).
                while !retry.isEmpty { giveUp(retry.removeFirst(), inFlight: false) }
                state = .failed
                return .finished
            }
            if retry.isEmpty && !inputIsOpen { return .finished }
            state = .connecting
            return .connect(delay: configuration.reconnect.delay(afterFailures: failures.consecutive))
        case .connecting:
            preconditionFailure("nextAction() while connecting: report connected() or connectFailed(_:) first")
        case .confirming:
            return .awaitVerdict
        case .closing:
            return .close
        case .open(var inFlight):
            state = .modifying
            defer { if case .modifying = state { state = .open(inFlight) } }
            if inFlight.count < window.current, !isSettling {
                if !retry.isEmpty {
                    var entry = retry.removeFirst()
                    entry.writeCount += 1
                    report.resent += 1
                    if entry.possiblyDelivered {
                        report.possibleDuplicates += 1
                        if !entry.listedAsDuplicate {
                            entry.listedAsDuplicate = true
                            report.possiblyDuplicated.append(
                                PossibleDuplicate(
                                    position: entry.position, identifier: entry.item.callerIdentifier,
                                    token: entry.item.token))
                        }
                    }
                    inFlight.append(entry)
                    return .resend(wireIdentifier: entry.wireIdentifier, item: entry.item)
                }
                if inputIsOpen { return .writeNew }
            }
            if inFlight.isEmpty && (isSettling || (retry.isEmpty && !inputIsOpen)) {
                state = .closing(failure: nil)
                return .close
            }
            // Input exhausted (or stalled) or the window is full: prove what was written.
            let barrier = UInt32(truncatingIfNeeded: highestPosition) &+ DeliveryStateMachine.barrierIdentifierOffset
            state = .confirming(inFlight, barrier: barrier)
            return .writeBarrier(wireIdentifier: barrier)
        case .modifying:
            preconditionFailure("state left in .modifying")
        }
    }

    // MARK: - Events

    /// The connection is up (TLS handshake done).
    mutating func connected() {
        guard case .connecting = state else { preconditionFailure("connected() without connect") }
        // Room for the whole window at once (up to `inFlightReservation`): a ring that doubled its
        // way up to 100,000 entries held the old and the new storage at once (22 MB at the last
        // step) and copied every entry on the way; reserved pages are only touched as they fill.
        let room = Swift.min(window.current, Self.inFlightReservation)
        if let spare = spareInFlight, spare.capacity >= room {
            state = .open(spare)
        } else {
            state = .open(InFlight(capacity: room))
        }
        spareInFlight = nil
        attemptsOnThisSlot += 1
        report.connections += 1
        pendingEvents.append(.connected(connection: connection, attempt: attemptsOnThisSlot))
    }

    /// The connection could not be opened. An error that ``LegacyAPNsError/stopsSending`` (a
    /// refused or untrusted certificate, a refused protocol, unusable credentials) stops the send
    /// at once; anything else is retried per the policy.
    mutating func connectFailed(_ error: LegacyAPNsError) {
        guard case .connecting = state else { preconditionFailure("connectFailed(_:) without connect") }
        if error.stopsSending {
            fail(error)
        } else if error.code == .handshakeFailed, !sawVerdict {
            endedBeforeAnyVerdict += 1
            recordFailure(error, cost: Self.refusalFailureCost, isRefusal: true)
        } else {
            recordFailure(error, spendsBudget: true)
        }
    }

    /// The shell wrote a new notification taken from the input at 1-based `position`. Returns the
    /// wire identifier to put in the frame (the shell may encode before or after calling this).
    @discardableResult
    mutating func wroteNew(_ item: Item, position: UInt64) -> UInt32 {
        guard case .open(var inFlight) = state else { preconditionFailure("wroteNew(_:position:) while not open") }
        precondition(position > highestPosition, "positions must increase")
        state = .modifying
        highestPosition = position
        report.sent += 1
        let entry = Entry(position: position, item: item, writeCount: 1)
        inFlight.append(entry)
        state = .open(inFlight)
        return entry.wireIdentifier
    }

    /// The shell did not write a notification taken from the input at `position` because the
    /// gateway would refuse it anyway (a token of the wrong size, an oversized payload): it is
    /// rejected at once with the status the gateway would have answered.
    mutating func refused(_ item: Item, position: UInt64, status: StatusCode) {
        precondition(position > highestPosition, "positions must increase")
        highestPosition = position
        report.sent += 1
        reject(Entry(position: position, item: item), status: status)
    }

    /// A notification the shell took from the input but never wrote, because the slot stopped
    /// (see ``stop(_:)``): it is reported unconfirmed and not written.
    mutating func abandoned(_ item: Item, position: UInt64) {
        highestPosition = Swift.max(highestPosition, position)
        report.sent += 1
        giveUp(Entry(position: position, item: item), inFlight: false)
    }

    /// The input has no more notifications (or the caller asked to stop taking them).
    mutating func inputFinished() {
        inputIsOpen = false
    }

    /// The send is stopping (cancelled, or another slot failed for good): take nothing more from
    /// the input and resend nothing, only prove what is in flight on the open connection (its
    /// barrier and verdict), then finish. What waits to be resent is reported unconfirmed, as not
    /// sent unless an earlier connection may have delivered it; the shell reports what it took and
    /// never wrote with ``abandoned(_:position:)``. Settling thus takes one verdict at most, however
    /// much input was taken.
    mutating func settle() {
        inputIsOpen = false
        isSettling = true
    }

    /// The input is momentarily empty: confirm what is in flight now rather than leave it
    /// unconfirmed while waiting. Returns whether a barrier is due.
    mutating func inputStalled() -> Bool {
        guard case .open(let inFlight) = state, !inFlight.isEmpty, retry.isEmpty else { return false }
        window.confirmNow(inFlight: inFlight.count)  // the next nextAction() writes the barrier
        return true
    }

    /// The gateway sent an error response.
    mutating func received(_ response: ErrorResponse) {
        var inFlight: InFlight
        let barrier: UInt32?
        switch state {
        case .open(let current):
            (inFlight, barrier) = (current, nil)
        case .confirming(let current, let id):
            (inFlight, barrier) = (current, id)
        case .disconnected, .connecting, .closing, .failed:
            return  // a verdict already arrived on this connection (or none is expected): noise
        case .modifying:
            preconditionFailure("state left in .modifying")
        }
        state = .modifying
        sawVerdict = true
        endedBeforeAnyVerdict = 0
        if response.identifier == barrier {
            let count = inFlight.count
            acceptFirst(count, of: &inFlight)
            progressed()
            window.barrierConfirmed(count: count)
            // The emptied ring serves the next connection: its pages are touched already.
            spareInFlight = inFlight
            state = .closing(failure: nil)
            return
        }
        guard let index = Self.index(of: response.identifier, in: inFlight) else {
            pendingEvents.append(.unknownIdentifier(connection: connection, response))
            closedWithoutVerdict(&inFlight)
            state = .closing(
                failure: LegacyAPNsError(
                    .connectionFailed,
                    "the gateway named identifier \(response.identifier), which was not sent on that connection"))
            return
        }
        switch response.status {
        case .shutdown, .noErrors:
            // The named notification is the last one processed.
            acceptFirst(index + 1, of: &inFlight)
        case .processingError:
            acceptFirst(index, of: &inFlight)
            var failed = inFlight.removeFirst()
            failed.attempts += 1
            if Int(failed.attempts) >= configuration.maximumAttempts {
                // Out of retries. If an earlier connection may have delivered it, it is not a
                // clean rejection: its fate is unknown.
                if failed.possiblyDelivered {
                    giveUp(failed, inFlight: false)
                } else {
                    reject(failed, status: response.status)
                }
            } else {
                // Transient: it goes first into the resend queue, before what followed it.
                inFlight.prepend(failed)
            }
        default:
            acceptFirst(index, of: &inFlight)
            reject(inFlight.removeFirst(), status: response.status)
        }
        let reason: ResendReason =
            response.status == .shutdown || response.status == .noErrors
            ? .shutdown(identifier: response.identifier) : .errorResponse(response)
        requeueAll(&inFlight, reason: reason)
        progressed()
        window.errorResponse(acceptedBefore: index)
        state = .closing(failure: nil)
    }

    /// The barrier's verdict did not come in time; the shell closes the connection.
    mutating func verdictTimedOut() {
        guard case .confirming(var inFlight, _) = state else { return }
        state = .modifying
        closedWithoutVerdict(&inFlight)
        state = .closing(
            failure: LegacyAPNsError(.timedOut, "the gateway did not answer the confirmation barrier in time"))
    }

    /// The connection ended. After a verdict this is the expected close; otherwise everything in
    /// flight is unknown.
    mutating func closed(_ cause: CloseCause) {
        switch state {
        case .closing(let failure):
            state = .disconnected
            if let failure {
                pendingEvents.append(.closed(connection: connection, reason: failure.reason))
                recordFailure(failure, spendsBudget: true)
            } else {
                pendingEvents.append(.closed(connection: connection, reason: "closed after the gateway's verdict"))
            }
        case .open(var inFlight), .confirming(var inFlight, _):
            state = .modifying
            switch cause {
            case .certificateRejected(let error):
                // Nothing on this connection was processed; retrying cannot help.
                while !inFlight.isEmpty {
                    var entry = inFlight.removeFirst()
                    entry.writeCount -= 1
                    retry.append(entry)
                }
                fail(error)
            case .endedByGateway(let reason) where !sawVerdict:
                pendingEvents.append(.closed(connection: connection, reason: reason))
                closedWithoutVerdict(&inFlight)
                state = .disconnected
                endedBeforeAnyVerdict += 1
                window.probe()
                recordFailure(
                    LegacyAPNsError(.connectionFailed, reason), cost: Self.refusalFailureCost, isRefusal: true)
            case .unexpected(let reason), .endedByGateway(let reason):
                pendingEvents.append(.closed(connection: connection, reason: reason))
                let (lost, couldShrink) = closedWithoutVerdict(&inFlight)
                state = .disconnected
                // Losing work while the window can still shrink is the path to progress (the next
                // connection carries half): it delays the next attempt but does not spend the
                // budget. Once the window is down to one, it is a failure like any other.
                if lost > 0 { recordFailure(LegacyAPNsError(.connectionFailed, reason), spendsBudget: !couldShrink) }
            }
        case .disconnected, .connecting, .failed:
            break  // no connection to close
        case .modifying:
            preconditionFailure("state left in .modifying")
        }
    }

    /// Stops the slot: whatever has no verdict becomes unconfirmed.
    mutating func stop(_ error: LegacyAPNsError) {
        fail(error)
    }

    // MARK: - Bookkeeping

    /// A verdict arrived: the failure count starts again.
    private mutating func progressed() {
        failures = Failures()
    }

    private mutating func recordFailure(_ error: LegacyAPNsError, spendsBudget: Bool) {
        recordFailure(error, cost: spendsBudget ? 1 : 0, isRefusal: false)
    }

    /// Counts a failure costing `cost` of the retry budget; `isRefusal` when the refusal rule
    /// counted it (the gateway ended the connection before the slot's first verdict).
    private mutating func recordFailure(_ error: LegacyAPNsError, cost: Int, isRefusal: Bool) {
        failures.consecutive += 1
        failures.withoutProgress += cost
        if failures.withoutProgress >= configuration.reconnect.maximumConsecutiveFailures {
            if isRefusal {
                fail(
                    LegacyAPNsError(
                        .certificateRejected,
                        "the gateway ended every connection right after the TLS handshake "
                            + "(\(endedBeforeAnyVerdict) in a row, nothing confirmed): it probably refuses this "
                            + "certificate's environment (production/sandbox) or its topic, or this is the feedback "
                            + "port (2196) and not a gateway port (2195), or it is a bridge whose upstream is "
                            + "unavailable; last: \(error.reason)",
                        underlying: error))
                return
            }
            fail(
                LegacyAPNsError(
                    .connectionFailed, "\(error.reason) (gave up after \(failures.withoutProgress) attempts in a row)",
                    underlying: error))
            return
        }
        state = .disconnected
        let delay = configuration.reconnect.delay(afterFailures: failures.consecutive)
        pendingEvents.append(.reconnecting(connection: connection, delay: delay, reason: error.reason))
    }

    private mutating func fail(_ error: LegacyAPNsError) {
        switch state {
        case .open(var inFlight), .confirming(var inFlight, _):
            state = .modifying
            while !inFlight.isEmpty { giveUp(inFlight.removeFirst(), inFlight: true) }
        case .disconnected, .connecting, .closing, .failed, .modifying:
            break
        }
        state = .failed
        if report.failure == nil { report.failure = error }
        while !retry.isEmpty { giveUp(retry.removeFirst(), inFlight: false) }
    }

    /// Reports `entry` unconfirmed. It may have been delivered when it is in flight on the current
    /// connection (written, no verdict) or an earlier connection ended without a verdict for it;
    /// otherwise (never written, or written and discarded by the gateway after an earlier
    /// notification's error response) it certainly was not.
    private mutating func giveUp(_ entry: Entry, inFlight: Bool) {
        let unconfirmed = UnconfirmedNotification(
            position: entry.position, notification: entry.item.notification,
            wasWritten: (inFlight && entry.writeCount > 0) || entry.possiblyDelivered)
        report.unconfirmed.append(unconfirmed)
        pendingEvents.append(.unconfirmed(connection: connection, unconfirmed))
    }

    /// Everything in flight lost its connection without a verdict. Returns how many
    /// notifications that was (a close with none in flight is not a failure) and whether the
    /// window could still shrink.
    @discardableResult
    private mutating func closedWithoutVerdict(_ inFlight: inout InFlight) -> (lost: Int, couldShrink: Bool) {
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
            if Int(entry.attempts) >= configuration.maximumAttempts {
                giveUp(entry, inFlight: false)
            } else {
                requeued.append(entry)
            }
        }
        if !requeued.isEmpty {
            pendingEvents.append(.resent(connection: connection, count: requeued.count, reason: .silentClose))
            prependRetry(requeued)
        }
        let couldShrink = window.closedSilently(inFlight: written)
        return (written, couldShrink)
    }

    private mutating func acceptFirst(_ count: Int, of inFlight: inout InFlight) {
        guard count > 0 else { return }
        inFlight.removeFirst(count)
        report.accepted += count
        pendingEvents.append(.confirmed(connection: connection, count: count))
    }

    private mutating func reject(_ entry: Entry, status: StatusCode) {
        let rejection = Rejection(
            position: entry.position, identifier: entry.item.callerIdentifier, token: entry.item.token,
            status: status, mayHaveBeenDelivered: entry.possiblyDelivered)
        report.rejected.append(rejection)
        pendingEvents.append(.rejected(connection: connection, rejection))
    }

    /// Moves everything still in flight (discarded by the gateway) to the front of the resend queue.
    private mutating func requeueAll(_ inFlight: inout InFlight, reason: ResendReason) {
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
    private static func index(of identifier: UInt32, in inFlight: InFlight) -> Int? {
        guard let first = inFlight.first else { return nil }
        // In-flight positions ascend and span far less than 2^32, so the identifier's position is
        // the first one's plus the wrapped difference.
        let target = first.position &+ UInt64(identifier &- first.wireIdentifier)
        let index = inFlight.partitionIndex(of: target) { $0.position }
        guard index < inFlight.count, inFlight[index].position == target else { return nil }
        return index
    }

    /// The oldest position without a verdict (in flight or waiting to be resent), if any.
    var oldestPending: UInt64? {
        let waiting = retry.first?.position
        switch state {
        case .open(let inFlight), .confirming(let inFlight, _):
            guard let first = inFlight.first?.position else { return waiting }
            return waiting.map { Swift.min($0, first) } ?? first
        case .disconnected, .connecting, .closing, .failed, .modifying:
            return waiting
        }
    }
}

// The frame path's run of new notifications lives here, next to the state it changes.
extension DeliveryCore where Item == FrameRecord.Reference {
    /// See ``FrameDeliveryStateMachine/writeNew(records:firstPosition:into:until:)``.
    mutating func writeNew(
        records: UnsafeRawBufferPointer, firstPosition: UInt64, into writer: inout ByteWriter, until limit: Int
    ) -> (count: Int, bytes: Int) {
        guard case .open(var inFlight) = state else { preconditionFailure("writeNew(records:) while not open") }
        precondition(firstPosition > highestPosition, "positions must increase")
        guard let base = records.baseAddress else { return (0, 0) }
        state = .modifying
        var offset = 0
        var position = firstPosition
        let room = window.current
        while offset < records.count, inFlight.count < room {
            let record = FrameRecord.Reference(base + offset)
            let identifier = UInt32(truncatingIfNeeded: position)
            writer.writeWithUnsafeMutableBytes(byteCount: record.frameSize) { out in
                record.copyFrame(identifier: identifier, to: out.baseAddress!)
            }
            inFlight.append(Entry(position: position, item: record, writeCount: 1))
            offset += record.recordSize
            position += 1
            if writer.count >= limit { break }
        }
        let count = Int(position - firstPosition)
        if count > 0 { highestPosition = position - 1 }
        report.sent += count
        state = .open(inFlight)
        return (count, offset)
    }
}
