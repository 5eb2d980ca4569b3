/// The binary protocol's promises to one legacy sender connection, kept while its notifications
/// travel upstream on concurrent HTTP/2 streams. Pure: no sockets, no clocks, no threads.
///
/// A binary gateway answers at most once per connection: an error response naming the first bad
/// notification, then the close, and the sender resends everything it sent after that one. Over
/// HTTP/2 the verdicts come back in any order, so the machine holds them in sender order and
/// answers only when everything before the first failure is known to be delivered:
///
/// - Notifications are *admitted* in the order they arrive (each gets a sequence number, the tag
///   the shell sends upstream with it) while the window has room and nothing has failed.
/// - A verdict *settles* its notification. Successes at the front are let go at once (the window
///   moves on). A failure makes the connection *failing*: nothing more is admitted (frames after
///   it are dropped, as Apple's gateway dropped them; the sender sends them again).
/// - When every notification before the earliest failure has succeeded, the machine *answers*:
///   the error response naming it (status 10 naming the last delivered one when the failure was
///   the upstream's, a silent close for a command-0 frame, and a silent close too when nothing
///   with an identifier was delivered on the connection: status 10 names the last notification
///   processed, and naming one that was not, identifier 0 say, tells a sender numbering from 0
///   that its first notification arrived), and hands the shell what to remember
///   for the resend: the notifications after the failure that already have a verdict, and those
///   still upstream (pending).
/// - Verdicts that arrive after the answer, or after the sender went away, come back as an
///   ``Aftermath``: resolve the memory, or report a notification nobody was told about.
///
/// ```
///   open ──failure──▶ failing ──all before it delivered──▶ answered ──last verdict──▶ finished
///     │                  │                                    ▲
///     └──sender gone─────┴──▶ gone ─────────last verdict──────┴──────────────────────▶ finished
///   stop(): open becomes failing at the first notification without a verdict (status 10 after
///   the drain), or answers status 10 at once when every verdict is in
/// ```
public struct BridgeSenderMachine: Sendable {
    /// Limits.
    public struct Configuration: Hashable, Sendable {
        /// Notifications admitted without a verdict yet (in flight upstream, or queued for it) at
        /// most (`--strict-order`: 1, one in flight). Those with a verdict wait, in sender order,
        /// for the earlier ones still without one, up to ``backlogFactor`` windows in all:
        /// verdicts come back out of order across upstream connections, and only the front is let
        /// go.
        public var window = 1000

        /// How many windows of admitted notifications, with and without verdicts, may be held at
        /// once. A notification with its verdict holds no payload, only its token and resend key.
        public static let backlogFactor = 8

        /// The default above.
        public init() {}
    }

    /// One admitted notification.
    public struct Item: Hashable, Sendable {
        /// Its sequence number on this connection, from 1.
        public let sequence: UInt64
        /// The binary identifier (0 for command 0, which has none).
        public let identifier: UInt32
        /// The command it came in.
        public let command: Command
        /// The device token (for reports).
        public let token: DeviceToken
        /// How a resend is recognised.
        public let key: BridgeResendKey
        /// Its verdict, once known.
        public var verdict: BridgeVerdict?
    }

    /// The answer to the sender, after which the connection closes.
    public struct Answer: Hashable, Sendable {
        /// The error response to write, or nil for a silent close (a command-0 failure).
        public var response: ErrorResponse?
        /// The failing notification (nil when the bridge stopped with every verdict in).
        public var failing: Item?
        /// Why, in words.
        public var reason: String
        /// Notifications after the failure that already have their verdict: remember them for the
        /// resend.
        public var settledAfter: [Item]
        /// Notifications after the failure still upstream: remember them as pending.
        public var pendingAfter: [Item]

        /// Creates an answer.
        public init(
            response: ErrorResponse?, failing: Item?, reason: String, settledAfter: [Item], pendingAfter: [Item]
        ) {
            self.response = response
            self.failing = failing
            self.reason = reason
            self.settledAfter = settledAfter
            self.pendingAfter = pendingAfter
        }
    }

    /// What the shell should do.
    public enum Action: Hashable, Sendable {
        /// Nothing until the next frame or verdict.
        case none
        /// Write the answer (if it has a response), close the connection, and remember what it says.
        case answer(Answer)
        /// Nothing is left: the sender is gone or answered and every verdict is in.
        case finished
    }

    /// What a verdict means once the sender no longer hears about it.
    public enum Aftermath: Hashable, Sendable {
        /// Nothing to do (the verdict is held for the answer, or needs no word).
        case none
        /// The notification was after the failure and is remembered as pending: resolve the
        /// memory with this verdict.
        case resolve(BridgeResendKey, BridgeVerdict)
        /// The sender went away without being told: the bridge reports this notification's
        /// verdict itself (it was not delivered, or not certainly).
        case unreported(Item, BridgeVerdict)
    }

    private enum State: Hashable, Sendable {
        case open
        /// `sequence` is the earliest failure.
        case failing(sequence: UInt64)
        /// Stop was asked: answer with status 10 once every verdict is in.
        case stopping
        case answered
        case gone
    }

    /// The configuration.
    public let configuration: Configuration
    private var state = State.open
    /// Admitted notifications not yet let go, in sender order (sequence numbers contiguous).
    private var items = Ring<Item>(capacity: 64)
    private var nextSequence: UInt64 = 1
    /// Admitted notifications without a verdict.
    private var unsettled = 0
    /// The identifier of the last notification let go as delivered, in sender order (nil while
    /// none with an identifier was).
    public private(set) var lastDeliveredIdentifier: UInt32?
    /// Notifications let go as delivered (accepted or unregistered), in order.
    public private(set) var delivered = 0

    /// A machine for a new connection.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// True while frames are admitted and the window has room. When false the shell stops
    /// reading the sender (when failing: reads and drops, as the sender's frames no longer count).
    public var canAdmit: Bool { room > 0 }

    /// How many more frames may be admitted now: the window's room for notifications without a
    /// verdict, within the backlog's; 0 unless open.
    public var room: Int {
        guard case .open = state else { return 0 }
        let window = Swift.max(1, configuration.window)
        let (backlog, overflow) = window.multipliedReportingOverflow(by: Configuration.backlogFactor)
        return Swift.max(0, Swift.min(window - unsettled, (overflow ? Int.max : backlog) - items.count))
    }

    /// Admitted notifications without a verdict.
    public var inFlight: Int { unsettled }

    /// True while frames are still taken at all (open, even with a full window).
    public var isAdmitting: Bool {
        if case .open = state { return true }
        return false
    }

    /// Notifications admitted and not let go.
    public var outstanding: Int { items.count }

    /// True until the sender has been answered or has left: verdicts still shape what it will be
    /// told. Afterwards a notification without a verdict must not go upstream on this connection's
    /// behalf: the sender sends it again (or has left, and hears nothing either way).
    public var willAnswer: Bool {
        switch state {
        case .open, .failing, .stopping: return true
        case .answered, .gone: return false
        }
    }

    /// Admits a notification; returns its sequence number, or nil when frames are no longer
    /// taken (a failure is known or the bridge is stopping: drop it, the sender will resend it).
    /// The shell may call it with a full window (it never reads past one), but should not.
    public mutating func admit(
        identifier: UInt32, command: Command, token: DeviceToken, key: BridgeResendKey
    ) -> UInt64? {
        guard case .open = state else { return nil }
        let sequence = nextSequence
        nextSequence += 1
        items.append(
            Item(sequence: sequence, identifier: identifier, command: command, token: token, key: key, verdict: nil))
        unsettled += 1
        return sequence
    }

    /// A frame could not be decoded: it fails at the next position, with the status a gateway
    /// answers (a confirmation barrier arrives here too: every notification before it is answered
    /// for when its error response goes out). Returns false when frames are no longer taken.
    @discardableResult
    public mutating func malformed(_ response: ErrorResponse, command: Command, reason: String) -> Bool {
        guard
            let sequence = admit(
                identifier: response.identifier, command: command, token: .placeholder,
                key: BridgeResendKey(identifier: response.identifier, digest: 0))
        else { return false }
        _ = settle(sequence: sequence, verdict: .rejected(response.status, reason: reason))
        return true
    }

    /// The admitted notification with `sequence` (matched as ``settle(sequence:verdict:)`` does),
    /// while the machine still holds it.
    public func item(sequence: UInt64) -> Item? {
        index(of: sequence).map { items[$0] }
    }

    /// The verdict for the notification with `sequence`, matched by its low 32 bits (the tag's
    /// width; a window is far smaller). Unknown or already settled sequences are ignored.
    public mutating func settle(sequence: UInt64, verdict: BridgeVerdict) -> Aftermath {
        guard let index = index(of: sequence), items[index].verdict == nil else { return .none }
        items[index].verdict = verdict
        unsettled -= 1
        let item = items[index]
        switch state {
        case .open, .stopping:
            if !verdict.isSuccess { state = .failing(sequence: item.sequence) }
        case .failing(let earliest):
            if !verdict.isSuccess, item.sequence < earliest { state = .failing(sequence: item.sequence) }
        case .answered:
            dropSettledFront()
            return .resolve(item.key, verdict)
        case .gone:
            dropSettledFront()
            return verdict.isSuccess ? .none : .unreported(item, verdict)
        }
        letGoDelivered()
        return .none
    }

    /// The sender closed its side or the connection broke. Returns the notifications that already
    /// failed and will now never be answered for (the bridge reports them); later verdicts come
    /// back as ``Aftermath/unreported(_:_:)``.
    public mutating func senderGone() -> [Item] {
        switch state {
        case .answered, .gone: return []
        case .open, .failing, .stopping: break
        }
        state = .gone
        var failed: [Item] = []
        for index in 0..<items.count {
            if let verdict = items[index].verdict, !verdict.isSuccess { failed.append(items[index]) }
        }
        dropSettledFront()
        return failed
    }

    /// The bridge is stopping: take nothing more; once every admitted notification has its
    /// verdict, answer status 10 (shutdown) naming the last one delivered, as Apple's gateway did
    /// before maintenance. Call ``abandon(reason:)`` when the drain time is over.
    public mutating func stop() {
        if case .open = state { state = .stopping }
    }

    /// Settles every notification still without a verdict as unavailable (the drain time is over,
    /// or the upstream is gone): the first of them fails with status 10.
    public mutating func abandon(reason: String) -> [Aftermath] {
        var waiting: [UInt64] = []
        for index in 0..<items.count where items[index].verdict == nil { waiting.append(items[index].sequence) }
        var results: [Aftermath] = []
        for sequence in waiting {
            let result = settle(sequence: sequence, verdict: .unavailable(reason: reason))
            if result != .none { results.append(result) }
        }
        return results
    }

    /// Whether ``nextAction()`` has something for the shell now (an answer, or the end),
    /// without taking it: a shell waiting for verdicts need not be woken for the others.
    public var hasActionDue: Bool {
        switch state {
        case .open: false
        case .stopping: items.isEmpty
        case .failing(let sequence): items.first?.sequence == sequence
        case .answered, .gone: unsettled == 0
        }
    }

    /// What to do now.
    public mutating func nextAction() -> Action {
        switch state {
        case .open:
            return .none
        case .stopping:
            guard items.isEmpty else { return .none }
            state = .answered
            return .answer(
                Answer(
                    response: lastDeliveredIdentifier.map { ErrorResponse(status: .shutdown, identifier: $0) },
                    failing: nil, reason: "the bridge is stopping", settledAfter: [], pendingAfter: []))
        case .failing(let sequence):
            guard let front = items.first, front.sequence == sequence else { return .none }
            return .answer(answer(failing: items.removeFirst()))
        case .answered, .gone:
            return unsettled == 0 ? .finished : .none
        }
    }

    // MARK: - Internals

    private func index(of sequence: UInt64) -> Int? {
        guard let first = items.first else { return nil }
        let offset = Int(UInt32(truncatingIfNeeded: sequence) &- UInt32(truncatingIfNeeded: first.sequence))
        return offset < items.count ? offset : nil
    }

    /// Once nothing more is answered, settled notifications at the front are of no more use (the
    /// ring stays contiguous: those in the middle go when they reach the front).
    private mutating func dropSettledFront() {
        while let front = items.first, front.verdict != nil {
            if front.verdict?.isSuccess == true { delivered += 1 }
            _ = items.removeFirst()
        }
    }

    /// Lets go of delivered notifications at the front, up to the earliest failure.
    private mutating func letGoDelivered() {
        while let front = items.first, let verdict = front.verdict, verdict.isSuccess {
            if case .failing(let sequence) = state, front.sequence >= sequence { break }
            _ = items.removeFirst()
            delivered += 1
            if front.command != .simple { lastDeliveredIdentifier = front.identifier }
        }
    }

    private mutating func answer(failing: Item) -> Answer {
        var settled: [Item] = []
        var pending: [Item] = []
        for index in 0..<items.count {
            let item = items[index]
            if item.verdict == nil { pending.append(item) } else { settled.append(item) }
        }
        state = .answered
        dropSettledFront()
        let verdict = failing.verdict ?? .unavailable(reason: "no verdict")
        let response: ErrorResponse?
        let reason: String
        switch verdict {
        case .rejected(let status, let why):
            response = failing.command == .simple ? nil : ErrorResponse(status: status, identifier: failing.identifier)
            reason = why
        case .unavailable(let why):
            // Status 10 names the last notification delivered: the sender resends everything after
            // it. With none delivered there is nothing to name: the connection closes without a
            // word, as a gateway that lost its backend would.
            response =
                failing.command == .simple
                ? nil : lastDeliveredIdentifier.map { ErrorResponse(status: .shutdown, identifier: $0) }
            reason = why
        case .accepted, .unregistered:
            response = nil
            reason = "delivered"
        }
        return Answer(
            response: response, failing: failing, reason: reason, settledAfter: settled, pendingAfter: pending)
    }
}
