/// The delivery logic of one HTTP/2 connection slot of a pool, as a value with no I/O.
///
/// The connection shell asks ``nextAction(now:)`` what to do, does it (connect, take work from
/// the pool's shared queue, sign a token, submit a request, reset a stream, ping, close), and
/// reports what happened (``connected(now:serverStreamLimit:)``, ``settingsChanged(maximumConcurrentStreams:now:)``,
/// ``submitted(_:stream:now:)``,
/// ``received(_:on:now:)``, ``streamClosed(_:errorCode:now:)``, ``receivedGoaway(_:now:)``,
/// ``connectionLost(_:now:)``, ...). Time is a `Duration` since any fixed origin, passed in by the
/// shell, so tests move through an hour in microseconds. Requests to retry go back to the shared
/// queue (``takeRequeued()``), so any connection of the pool can send them.
///
/// ## The rules (HTTP2-PROTOCOL.md)
/// - A 200 is *accepted*. A refusal that cannot succeed unchanged is *rejected* with its status
///   and reason (410 with its timestamp). Nothing else is ever counted as accepted.
/// - Not processed, so retried without counting an attempt: a stream refused with
///   `REFUSED_STREAM`, streams above a GOAWAY's last-stream-id, a request that could not be
///   submitted.
/// - Answered but not accepted, retried after a delay while attempts remain, else rejected with
///   the last answer: 429 TooManyRequests, 5xx (backoff), 400 IdleTimeout (a new connection).
/// - Lost, so retried and counted as a *possible duplicate* (APNs may have delivered it), and
///   given up as unconfirmed when attempts run out: requests in flight on a connection that
///   breaks or whose PING goes unanswered, a stream reset with any other code, a request with
///   no answer within ``Configuration/requestTimeout`` (the stream is reset and the request goes
///   elsewhere).
/// - 403 ExpiredProviderToken: one retry with a fresh token on a new connection, then rejected.
///   A token younger than ``believablyExpiredAge`` refused as expired means the clock is wrong
///   (every token would be): the send stops, as for refused credentials.
/// - Credentials that cannot succeed (403 InvalidProviderToken, BadCertificateEnvironment, ...,
///   a refused or untrusted certificate, see ``RetryAdvice/stopSending``): the send stops. Requests
///   already in flight still get their answers; nothing new is sent.
/// - Streams: never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS, our own
///   ``Configuration/maximumStreams``; one until the server's SETTINGS arrive, whatever the
///   authentication (a server may allow fewer than any guess, and APNs ends the connection with
///   GOAWAY "Maximum active streams violated for this endpoint." for a stream beyond its limit,
///   acknowledged or not: a client that opened 100 streams first delivered nothing); and, with token
///   auth, one until the connection's first answer ("APNs allows only one stream until you post a
///   request with a valid authentication token"). Every connection learns the limit afresh from
///   its server's SETTINGS, so a reconnect never opens more than that server allows.
/// - Tokens (token auth): each connection signs its own; a token is replaced once it is
///   ``Configuration/tokenRefreshAge`` old (about 50 minutes: APNs refuses tokens older than an
///   hour and answers 429 TooManyProviderTokenUpdates to a connection that changes its token
///   within 20 minutes), so connections opened at different times never race each other.
/// - A connection idle for ``Configuration/pingInterval`` sends a PING; one unanswered within
///   ``Configuration/pingTimeout`` counts as lost.
/// - Reconnects back off (``Configuration/reconnect``); only failures without progress spend the
///   retry budget.
///
/// ## States
/// ```
///   disconnected ──connect──▶ connecting ──connected()──▶ open ──GOAWAY / close wanted──▶ draining
///        ▲  ▲  │                   │ connectFailed              │ (no new streams; in-flight answered)
///        │  │  │ nothing left       ▼                            ▼                         │
///        │  │  └──▶ finished     disconnected (backoff)     closing ◀──────────────────────┘
///        │  └────────── closed() ◀────────────────────────────┘
///        └── connectionLost(_:) from open or draining (in-flight requests requeued as possible duplicates)
///   failed: stop(_:), a credential that cannot succeed, or the retry budget spent
/// ```
public struct ProviderConnectionMachine: Sendable {
    /// Limits of one connection slot.
    public struct Configuration: Hashable, Sendable {
        /// Streams this client uses at most on one connection, whatever the server allows.
        public var maximumStreams = 1000
        /// Attempts without a verdict (429, 5xx, lost, timed out) before a notification is given up
        /// (rejected with the last answer, or unconfirmed when an attempt was lost).
        public var maximumAttempts = 3
        /// A request with no answer after this long is reset and sent again elsewhere.
        public var requestTimeout: Duration = .seconds(30)
        /// A connection with nothing to do for this long sends a PING (Apple: after an hour idle).
        public var pingInterval: Duration = .seconds(3600)
        /// A PING unanswered for this long means the connection is dead.
        public var pingTimeout: Duration = .seconds(20)
        /// How soon to look at the shared queue again when it had nothing.
        public var takeInterval: Duration = .milliseconds(20)
        /// Delays between connection attempts, and when to give up.
        public var reconnect = ReconnectPolicy()
        /// Delays before sending a notification again after 429 or 5xx (by its attempts).
        public var retryDelay = Backoff(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(60))
        /// Token authentication: one stream until the first answer; a token per connection.
        public var usesTokens = false
        /// A connection's token is replaced once it is this old.
        public var tokenRefreshAge: Duration = .seconds(50 * 60)
        /// Whether the report lists every rejection, unconfirmed notification and possible
        /// duplicate. A producer that runs for days (the bridge) turns this off, reads the verdicts
        /// from the events, and the report only counts them.
        public var keepsVerdictLists = true

        /// The defaults above.
        public init() {}
    }

    /// What the shell should do next.
    public enum Action: Hashable, Sendable {
        /// Open a connection after waiting `delay`; report ``connected(now:serverStreamLimit:)`` or
        /// ``connectFailed(_:now:)``.
        case connect(delay: Duration)
        /// Take up to `maximum` notifications from the shared queue; report ``took(_:now:)``,
        /// ``nothingToTake(retryAt:now:)`` or ``inputExhausted()``.
        case take(maximum: Int)
        /// Sign a fresh provider token (iat: now) and use it from the next request on; report
        /// ``tokenMinted(now:)``.
        case mintToken
        /// Submit this request on a new stream; report ``submitted(_:stream:now:)`` or
        /// ``submitFailed(_:now:)``.
        case submit(ProviderEntry)
        /// Reset this stream (it waited too long); its request was already requeued.
        case cancel(stream: Int32)
        /// Send a PING; report ``pingAcknowledged(now:)``.
        case ping
        /// Nothing to do until an event arrives or `deadline` (nil: no deadline) passes.
        case wait(until: Duration?)
        /// Close the connection (GOAWAY, flush, close); report ``closed()``.
        case close
        /// Nothing is left to do; read ``report``.
        case finished
    }

    struct InFlight: Hashable, Sendable {
        var entry: ProviderEntry
        var sentAt: Duration
    }

    /// Why a connection is being wound down.
    enum Winding: Hashable, Sendable {
        /// A GOAWAY came (or an answer said this connection is not worth keeping): finish the
        /// streams, then reconnect after `delay`.
        case reconnect(delay: Duration, reason: String)
        /// The send is stopping (`error`); no reconnect.
        case stop(LegacyAPNsError)
    }

    struct Open: Hashable, Sendable {
        var streams = StreamTable<InFlight>()
        /// Taken from the shared queue, not yet submitted.
        var buffered: [ProviderEntry] = []
        var bufferedIndex = 0
        /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
        var serverLimit: Int
        /// The server's SETTINGS have arrived (before: one stream, whatever ``serverLimit`` says).
        var settingsReceived = false
        /// An answer has arrived on this connection (token auth may use more than one stream).
        var answered = false
        var tokenMintedAt: Duration?
        var lastActivity: Duration
        var pingSentAt: Duration?
        /// When the shared queue may be asked again.
        var nextTake: Duration = .zero
        var winding: Winding?
        /// Where in `buffered` the entry handed out in ``Action/submit(_:)`` is, until the shell
        /// reports what became of it.
        var submittingIndex: Int?
        /// No stream can time out before this (a lower bound: the oldest stream's send time, or
        /// the last scan's moment, plus the request timeout), so the streams are scanned only then.
        var timeoutsCheckedUntil: Duration = .zero

        var hasBuffered: Bool { bufferedIndex < buffered.count }
    }

    /// Where the slot's connection is. An open connection's own state is ``open``, a separate
    /// property changed in place (an `Open` in the enum would be copied out and back on every
    /// event: several hundred bytes and a retain per field, twice per notification).
    enum State: Hashable, Sendable {
        case disconnected
        case connecting
        /// Connected; ``open`` holds the connection's state.
        case open
        /// The shell closes; `then` says what follows.
        case closing(then: AfterClose)
        case failed
    }

    /// What follows a close.
    enum AfterClose: Hashable, Sendable {
        case reconnect(delay: Duration)
        case failure(LegacyAPNsError, spendsBudget: Bool)
        case stop(LegacyAPNsError)
        case finish
    }

    /// The limits this slot runs with.
    public let configuration: Configuration
    /// Which slot this is (for events).
    public let connection: Int

    private(set) var state: State = .disconnected
    /// The connection's state while ``state`` is ``State/open`` (left behind, emptied, after it).
    private var open = Open(serverLimit: 0, lastActivity: .zero)
    /// Entries taken and not yet submitted, kept across reconnects of this slot.
    private var carried: [ProviderEntry] = []
    private var inputIsExhausted = false
    private var failures = (consecutive: 0, withoutProgress: 0)
    private var nextConnectDelay: Duration = .zero
    private var attemptsOnThisSlot = 0
    private var pendingEvents: [ProviderEvent] = []
    private var requeued: [ProviderEntry] = []
    private var finalized = 0

    /// The verdicts so far (complete once ``nextAction(now:)`` returns ``Action/finished``).
    public private(set) var report = ProviderSendReport()

    /// Creates the machine for slot `connection`.
    public init(configuration: Configuration = Configuration(), connection: Int = 0) {
        self.configuration = configuration
        self.connection = connection
    }

    // MARK: - Outboxes

    /// Events since the last call.
    public mutating func takeEvents() -> [ProviderEvent] {
        guard !pendingEvents.isEmpty else { return [] }
        defer { pendingEvents.removeAll(keepingCapacity: true) }
        return pendingEvents
    }

    /// Hands every event since the last call to `body`, in order, and forgets them: the outbox
    /// keeps its storage, where ``takeEvents()`` hands it out and must allocate anew (a shell
    /// drains after every action, several times per notification).
    public mutating func drainEvents(_ body: ((ProviderEvent) -> Void)?) {
        guard !pendingEvents.isEmpty else { return }
        if let body {
            for event in pendingEvents { body(event) }
        }
        pendingEvents.removeAll(keepingCapacity: true)
    }

    /// Entries to put back on the shared queue (their ``ProviderEntry/notBefore`` says when they
    /// may go out again).
    public mutating func takeRequeued() -> [ProviderEntry] {
        guard !requeued.isEmpty else { return [] }
        defer { requeued.removeAll(keepingCapacity: true) }
        return requeued
    }

    /// How many notifications got their final verdict since the last call (the shared queue
    /// counts what is still outstanding).
    public mutating func takeFinalizedCount() -> Int {
        defer { finalized = 0 }
        return finalized
    }

    /// A token refused as expired (403 ExpiredProviderToken) younger than this, by our clock,
    /// says our clock and APNs' disagree: APNs refuses tokens over an hour old.
    public static let believablyExpiredAge: Duration = .seconds(30 * 60)

    /// "3 s", "12 min": a token's age, for messages.
    private static func describe(_ age: Duration) -> String {
        let seconds = age.components.seconds
        return seconds < 120 ? "\(Swift.max(0, seconds)) s" : "\(seconds / 60) min"
    }

    /// Streams in flight on the current connection.
    public var streamsInFlight: Int {
        if case .open = state { return open.streams.count }
        return 0
    }

    /// Streams the connection may use now.
    public var streamLimit: Int {
        guard case .open = state else { return 0 }
        return limit()
    }

    private func limit() -> Int {
        let allowed = Swift.max(0, Swift.min(open.serverLimit, configuration.maximumStreams))
        if !open.settingsReceived || (configuration.usesTokens && !open.answered) { return Swift.min(1, allowed) }
        return allowed
    }

    // MARK: - Deciding

    /// What to do next at `now`.
    public mutating func nextAction(now: Duration) -> Action {
        switch state {
        case .failed:
            return .finished
        case .disconnected:
            if inputIsExhausted && carried.isEmpty { return .finished }
            state = .connecting
            return .connect(delay: nextConnectDelay)
        case .connecting:
            preconditionFailure("nextAction(now:) while connecting: report connected(now:) or connectFailed(_:now:)")
        case .closing:
            return .close
        case .open:
            return decide(now: now)
        }
    }

    private mutating func decide(now: Duration) -> Action {
        // A PING that went unanswered: the connection is dead.
        if let sent = open.pingSentAt, now - sent >= configuration.pingTimeout {
            lose(reason: "no answer to a PING within \(configuration.pingTimeout)", now: now)
            // Taken while the PING was out and not submitted yet: the next connection's first.
            returnBuffered()
            state = .closing(
                then: .failure(
                    LegacyAPNsError(.timedOut, "the server did not answer a PING within \(configuration.pingTimeout)"),
                    spendsBudget: true))
            return .close
        }
        // A request waiting too long: reset it and send it elsewhere.
        if now >= open.timeoutsCheckedUntil, let (stream, waiting) = firstTimedOut(now: now) {
            open.streams[stream] = nil
            retryLost(
                waiting.entry, cause: .requestTimeout,
                reason: "no answer within \(configuration.requestTimeout) (stream \(stream))", now: now)
            pendingEvents.append(
                .streamReset(connection: connection, stream: stream, errorCode: .cancel, byClient: true))
            return .cancel(stream: stream)
        }
        if let winding = open.winding {
            guard open.streams.isEmpty else { return .wait(until: deadline()) }
            returnBuffered()
            switch winding {
            case .reconnect(let delay, let reason):
                // Wound down before a single answer (a GOAWAY right after the preface): no progress,
                // so it spends the reconnect budget; a server doing this forever is given up.
                state =
                    open.answered
                    ? .closing(then: .reconnect(delay: delay))
                    : .closing(then: .failure(LegacyAPNsError(.connectionFailed, reason), spendsBudget: true))
            case .stop(let error): state = .closing(then: .stop(error))
            }
            return .close
        }
        if open.streams.isEmpty, open.pingSentAt == nil, now - open.lastActivity >= configuration.pingInterval {
            open.pingSentAt = now
            return .ping
        }
        let free = limit() - open.streams.count
        if free > 0 {
            if configuration.usesTokens,
                open.tokenMintedAt.map({ now - $0 >= configuration.tokenRefreshAge }) ?? true
            {
                return .mintToken
            }
            if open.hasBuffered {
                let index = open.bufferedIndex
                open.bufferedIndex += 1
                if let notBefore = open.buffered[index].notBefore, notBefore > now {
                    // Not yet: back to the shared queue (it knows when), the slot goes on.
                    requeued.append(open.buffered[index])
                    return decide(now: now)
                }
                open.buffered[index].notBefore = nil
                open.submittingIndex = index
                return .submit(open.buffered[index])
            }
            if !inputIsExhausted, now >= open.nextTake {
                open.buffered.removeAll(keepingCapacity: true)
                open.bufferedIndex = 0
                return .take(maximum: free)
            }
        }
        if open.streams.isEmpty, inputIsExhausted, !open.hasBuffered {
            state = .closing(then: .finish)
            return .close
        }
        return .wait(until: deadline())
    }

    /// The stream waiting longer than the request timeout, if any; otherwise notes when the next
    /// one can (streams are sent later than `now`, or at the oldest one's time).
    private mutating func firstTimedOut(now: Duration) -> (Int32, InFlight)? {
        var oldest = now
        for (stream, waiting) in open.streams {
            if now - waiting.sentAt >= configuration.requestTimeout { return (stream, waiting) }
            oldest = Swift.min(oldest, waiting.sentAt)
        }
        open.timeoutsCheckedUntil = oldest + configuration.requestTimeout
        return nil
    }

    /// The next moment something is due on the connection.
    private func deadline() -> Duration? {
        var next: Duration?
        func consider(_ moment: Duration) { next = next.map { Swift.min($0, moment) } ?? moment }
        if !open.streams.isEmpty { consider(open.timeoutsCheckedUntil) }
        if let sent = open.pingSentAt {
            consider(sent + configuration.pingTimeout)
        } else if open.streams.isEmpty {
            consider(open.lastActivity + configuration.pingInterval)
        }
        // The next look at the queue matters only with room to take: with every stream in use
        // a past `nextTake` made each wait return at once (a spin of timeout-0 polls, about one
        // per three notifications while the window stayed full).
        if open.winding == nil, !inputIsExhausted, open.streams.count < limit() { consider(open.nextTake) }
        if configuration.usesTokens, let minted = open.tokenMintedAt {
            consider(minted + configuration.tokenRefreshAge)
        }
        return next
    }

    // MARK: - Connection events

    /// The connection is up. `serverStreamLimit` is the server's SETTINGS_MAX_CONCURRENT_STREAMS
    /// when its SETTINGS have already arrived; nil (the usual case: TLS is up, no HTTP/2 frame read
    /// yet) means they have not, and the connection uses one stream until
    /// ``settingsChanged(maximumConcurrentStreams:now:)`` reports them.
    public mutating func connected(now: Duration, serverStreamLimit: Int? = nil) {
        guard case .connecting = state else { preconditionFailure("connected(now:) without connect") }
        open = Open(serverLimit: serverStreamLimit ?? 1, lastActivity: now)
        open.settingsReceived = serverStreamLimit != nil
        swap(&open.buffered, &carried)
        state = .open
        attemptsOnThisSlot += 1
        report.connections += 1
        nextConnectDelay = .zero
        pendingEvents.append(.connected(connection: connection, attempt: attemptsOnThisSlot))
    }

    /// Instead of ``connected(now:serverStreamLimit:)``: the shell reuses a connection that a
    /// finished send kept open (``kept()``), whose server's SETTINGS (`serverStreamLimit`) came long
    /// ago. It has answered before, so token auth's one-stream rule no longer holds, and its provider token, signed at `tokenMintedAt`, goes on being used
    /// until ``Configuration/tokenRefreshAge`` after that (nil: none yet, sign one).
    public mutating func resumed(now: Duration, serverStreamLimit: Int, tokenMintedAt: Duration?) {
        connected(now: now, serverStreamLimit: serverStreamLimit)
        open.answered = true
        open.tokenMintedAt = tokenMintedAt
    }

    /// Instead of ``connected(now:serverStreamLimit:)`` or ``connectFailed(_:now:)``: the shell
    /// did not connect, because the shared input is finished and every notification has its
    /// verdict (it found out while waiting out ``Action/connect(delay:)``). The slot finishes.
    public mutating func connectionNotNeeded() {
        guard case .connecting = state else { preconditionFailure("connectionNotNeeded() without connect") }
        state = .disconnected
        inputIsExhausted = true
    }

    /// The connection could not be opened. An error that ``LegacyAPNsError/stopsSending`` stops the
    /// send at once; anything else is retried per the policy.
    public mutating func connectFailed(_ error: LegacyAPNsError, now: Duration) {
        guard case .connecting = state else { preconditionFailure("connectFailed(_:now:) without connect") }
        state = .disconnected
        if error.stopsSending {
            fail(error)
        } else {
            recordFailure(error, spendsBudget: true)
        }
    }

    /// The server's SETTINGS arrived, and with them its concurrent-stream limit (as the HTTP/2 layer
    /// holds it after applying them: unlimited when the first SETTINGS name none). The first ones
    /// lift the one-stream rule of a new connection.
    public mutating func settingsChanged(maximumConcurrentStreams: Int, now: Duration) {
        if case .open = state {
            open.serverLimit = maximumConcurrentStreams
            open.settingsReceived = true
        }
        pendingEvents.append(.streamLimit(connection: connection, limit: streamLimit))
    }

    /// The PING was answered.
    public mutating func pingAcknowledged(now: Duration) {
        if case .open = state {
            open.pingSentAt = nil
            open.lastActivity = now
        }
    }

    /// A provider token was signed (token auth); requests from now on carry it.
    public mutating func tokenMinted(now: Duration) {
        if case .open = state {
            open.tokenMintedAt = now
        }
        pendingEvents.append(.tokenRefreshed(connection: connection))
    }

    // MARK: - Work events

    /// The shared queue handed over `entries` (positions ascending, retries first).
    public mutating func took(_ entries: [ProviderEntry], now: Duration) {
        guard case .open = state else {
            carried.append(contentsOf: entries)
            return
        }
        if case .open = state {
            open.buffered.append(contentsOf: entries)
        }
    }

    /// The shared queue had nothing ready; retries wait until `retryAt` (if any), and new input may
    /// come any time.
    public mutating func nothingToTake(retryAt: Duration?, now: Duration) {
        if case .open = state {
            var next = now + configuration.takeInterval
            if let retryAt { next = Swift.min(next, Swift.max(now, retryAt)) }
            open.nextTake = next
        }
    }

    /// True while the connection is open, has free streams and would take new input as soon as
    /// it arrives: a shell that waits may ask to be woken by the producer.
    public var wantsInput: Bool {
        guard case .open = state, open.winding == nil, !inputIsExhausted, !open.hasBuffered else {
            return false
        }
        return limit() > open.streams.count
    }

    /// New input may have arrived (the producer woke the connection): look at the shared queue now
    /// instead of at the next ``Configuration/takeInterval``.
    public mutating func inputMayHaveArrived(now: Duration) {
        if case .open = state {
            open.nextTake = Swift.min(open.nextTake, now)
        }
    }

    /// The input is finished and no notification is outstanding anywhere in the pool.
    public mutating func inputExhausted() {
        inputIsExhausted = true
    }

    /// The request of `entry` went out on `stream`.
    public mutating func submitted(_ entry: consuming ProviderEntry, stream: Int32, now: Duration) {
        var sent = entry
        sent.sends += 1
        if sent.sends > 1 {
            report.retried += 1
            if sent.possiblyDelivered {
                report.possibleDuplicates += 1
                if !sent.listedAsDuplicate, configuration.keepsVerdictLists {
                    sent.listedAsDuplicate = true
                    report.possiblyDuplicated.append(
                        PossibleDuplicate(
                            position: sent.position, identifier: sent.request.identifier,
                            token: sent.request.deviceToken))
                }
            }
        }
        pendingEvents.append(.sent(connection: connection, position: sent.position, apnsID: sent.apnsID))
        if case .open = state {
            open.submittingIndex = nil
            open.streams[stream] = InFlight(entry: sent, sentAt: now)
            open.lastActivity = now
        }
    }

    /// The request could not be submitted (the connection is going away): it goes back to the
    /// shared queue, not counted as an attempt.
    public mutating func submitFailed(_ entry: ProviderEntry, now: Duration) {
        if case .open = state {
            open.submittingIndex = nil
        }
        requeued.append(entry)
    }

    /// A `entry` the client refused to send because APNs would refuse it (see
    /// ``ProviderRequest``'s checks): rejected at once, without a round trip.
    public mutating func refused(_ entry: ProviderEntry, reason: ProviderReason) {
        if case .open = state {
            open.submittingIndex = nil
        }
        reject(entry, response: ProviderResponse(rejecting: reason, apnsID: entry.apnsID), isLocal: true)
    }

    /// APNs answered on `stream`.
    public mutating func received(_ response: ProviderResponse, on stream: Int32, now: Duration) {
        var rejectedForCredentials: LegacyAPNsError?
        if case .open = state {
            guard let waiting = open.streams.removeValue(forKey: stream) else {
                return
            }
            open.lastActivity = now
            if !open.answered {
                open.answered = true
                // Token auth: the first answer lifts the one-stream rule; say so for metrics.
                if configuration.usesTokens && limit() != 1 {
                    pendingEvents.append(.streamLimit(connection: connection, limit: limit()))
                }
            }
            failures = (0, 0)  // an answer is progress
            var entry = waiting.entry
            let latency = now - waiting.sentAt
            switch response.retryAdvice {
            case .delivered:
                report.accepted += 1
                finalized += 1
                var acceptance = ProviderAcceptance(
                    position: entry.position, tag: entry.tag, identifier: entry.request.identifier,
                    apnsID: response.apnsID ?? entry.apnsID, latency: now - waiting.sentAt,
                    isPossibleDuplicate: entry.possiblyDelivered)
                acceptance.pushType = entry.request.pushType
                pendingEvents.append(.accepted(connection: connection, acceptance))
            case .doNotRetry, .discardDeviceToken:
                reject(entry, response: response, latency: latency)
            case .retryAfterDelay, .retryWithBackoff:
                entry.attempts += 1
                if entry.attempts >= configuration.maximumAttempts {
                    reject(entry, response: response, latency: latency)
                } else {
                    entry.notBefore = now + configuration.retryDelay.delay(afterFailures: entry.attempts)
                    retry(entry, cause: response.status == 429 ? .tooManyRequests : .serverError, reason: "\(response)")
                }
                if response.reason == .tooManyProviderTokenUpdates || response.reason == .shutdown {
                    // The connection is not worth keeping: finish its streams and reconnect.
                    failures.consecutive += 1
                    open.winding =
                        open.winding
                        ?? .reconnect(
                            delay: configuration.reconnect.delay(afterFailures: failures.consecutive),
                            reason: "\(response)")
                }
            case .retryOnNewConnection:
                entry.attempts += 1
                if entry.attempts >= configuration.maximumAttempts {
                    reject(entry, response: response, latency: latency)
                } else {
                    retry(entry, cause: .idleTimeout, reason: "\(response)")
                }
                open.winding = open.winding ?? .reconnect(delay: .zero, reason: "\(response)")
            case .refreshTokenAndRetryOnce:
                if configuration.usesTokens, let minted = open.tokenMintedAt,
                    now - minted < Self.believablyExpiredAge
                {
                    // A token signed moments ago cannot be an hour old: the clocks disagree, and
                    // every fresh token would be refused the same way (a connection and a token
                    // per notification, twice). Stop with the cause.
                    reject(entry, response: response, latency: latency)
                    rejectedForCredentials = LegacyAPNsError(
                        .certificateRejected,
                        "APNs refused a provider token signed \(Self.describe(now - minted)) ago as expired "
                            + "(403 ExpiredProviderToken): this machine's clock is probably wrong (APNs refuses "
                            + "tokens dated over an hour before its own clock): check it, e.g. with 'date -u', "
                            + "and set it right (NTP)")
                } else if entry.usedTokenRetry {
                    reject(entry, response: response, latency: latency)
                } else {
                    entry.usedTokenRetry = true
                    retry(entry, cause: .expiredProviderToken, reason: "\(response): a fresh token on a new connection")
                }
                open.winding = open.winding ?? .reconnect(delay: .zero, reason: "the provider token expired")
            case .stopSending:
                reject(entry, response: response, latency: latency)
                rejectedForCredentials = LegacyAPNsError(
                    .certificateRejected, "APNs refused the credentials: \(response) (every notification would fail)")
            }
        }
        if let rejectedForCredentials { stopSending(rejectedForCredentials) }
    }

    /// A stream ended without an answer (reset by the server, or closed early).
    public mutating func streamClosed(_ stream: Int32, errorCode: HTTP2ErrorCode, now: Duration) {
        if case .open = state {
            guard let waiting = open.streams.removeValue(forKey: stream) else {
                return
            }
            open.lastActivity = now
            pendingEvents.append(
                .streamReset(connection: connection, stream: stream, errorCode: errorCode, byClient: false))
            if errorCode == .refusedStream {
                // RFC 9113 §8.7: the request was not processed; try again, not an attempt.
                retry(waiting.entry, cause: .refusedStream, reason: "stream \(stream) refused (REFUSED_STREAM)")
            } else {
                retryLost(
                    waiting.entry, cause: .streamReset, reason: "stream \(stream) reset (\(errorCode))", now: now)
            }
        }
    }

    /// The server sent GOAWAY: streams above its last-stream-id go elsewhere (not processed), the
    /// rest still get their answers, and the connection winds down.
    public mutating func receivedGoaway(_ goaway: ProviderGoaway, now: Duration) {
        pendingEvents.append(.goaway(connection: connection, goaway))
        var stop: LegacyAPNsError?
        if case .open = state {
            for stream in open.streams.streams.sorted() where !goaway.wasProcessed(stream: stream) {
                let waiting = open.streams.removeValue(forKey: stream)!
                retry(waiting.entry, cause: .goaway, reason: "\(goaway): stream \(stream) not processed")
            }
            switch goaway.advice {
            case .stopSending:
                stop = LegacyAPNsError(.certificateRejected, "APNs closed the connection: \(goaway)")
            case .retryWithBackoff:
                // Once per connection: a storm of GOAWAYs neither stretches the backoff nor
                // replaces a stop already decided.
                guard open.winding == nil else { break }
                failures.consecutive += 1
                open.winding = .reconnect(
                    delay: configuration.reconnect.delay(afterFailures: failures.consecutive), reason: "\(goaway)")
            default:
                open.winding = open.winding ?? .reconnect(delay: .zero, reason: "\(goaway)")
            }
        }
        if let stop { stopSending(stop) }
    }

    /// The connection broke (reset, end of stream, a TLS or HTTP/2 protocol error): what was in
    /// flight may or may not have been delivered.
    ///
    /// A refused client certificate (`.certificateRejected` before any answer: with TLS 1.3 the
    /// server's alert arrives on the first read after the handshake, once requests may already be
    /// written) means the server processed nothing on the connection: those requests were not
    /// sent, and end *not sent* (the send stops), never as possibly delivered.
    public mutating func connectionLost(_ error: LegacyAPNsError, now: Duration) {
        switch state {
        case .open:
            let lostStreams = open.streams.count
            if error.code == .certificateRejected, !open.answered {
                for stream in open.streams.streams.sorted() {
                    var entry = open.streams.removeValue(forKey: stream)!.entry
                    entry.sends = Swift.max(0, entry.sends - 1)
                    carried.append(entry)
                }
            } else {
                lose(reason: error.reason, now: now)
            }
            returnBuffered()
            let winding = open.winding
            state = .disconnected
            pendingEvents.append(.connectionClosed(connection: connection, reason: error.reason))
            if case .stop(let stop) = winding {
                fail(stop)
            } else if error.stopsSending {
                fail(error)
            } else if case .reconnect(let delay, _) = winding, open.answered, lostStreams == 0 {
                // The close a GOAWAY announced, come before the connection wound down on its
                // own: nothing lost, no failure, the GOAWAY's delay (none for a graceful one).
                nextConnectDelay = delay
            } else {
                recordFailure(error, spendsBudget: !open.answered)
            }
        case .closing(let then):
            state = .disconnected
            finishClose(then)
        case .disconnected, .connecting, .failed:
            break
        }
    }

    /// Whether the ``Action/close`` asked for ends a completed send: the input is exhausted, the
    /// connection is healthy (no GOAWAY, no failure) and idle, so the shell may keep it open for
    /// a later send (``kept()``) instead of closing it.
    public var isClosingAfterCompletion: Bool {
        if case .closing(then: .finish) = state { return true }
        return false
    }

    /// Instead of ``closed()`` when ``isClosingAfterCompletion``: the shell keeps the connection
    /// open for a later send (which reports ``resumed(now:serverStreamLimit:tokenMintedAt:)``).
    /// The slot finishes; no `connectionClosed` event, the connection being still open.
    public mutating func kept() {
        guard isClosingAfterCompletion else { return closed() }
        state = .disconnected
    }

    /// The connection closed after ``Action/close``.
    public mutating func closed() {
        guard case .closing(let then) = state else { return }
        state = .disconnected
        finishClose(then)
    }

    /// Stops the slot: no new requests; those in flight still get their answers (or time out).
    /// Call again, or let the connection close, to end it.
    public mutating func stop(_ error: LegacyAPNsError) {
        stopSending(error)
    }

    // MARK: - Bookkeeping

    private mutating func finishClose(_ then: AfterClose) {
        switch then {
        case .finish:
            pendingEvents.append(.connectionClosed(connection: connection, reason: "the send is complete"))
        case .reconnect(let delay):
            nextConnectDelay = delay
            pendingEvents.append(.connectionClosed(connection: connection, reason: "reconnecting"))
        case .failure(let error, let spendsBudget):
            pendingEvents.append(.connectionClosed(connection: connection, reason: error.reason))
            recordFailure(error, spendsBudget: spendsBudget)
        case .stop(let error):
            pendingEvents.append(.connectionClosed(connection: connection, reason: error.reason))
            fail(error)
        }
    }

    private mutating func stopSending(_ error: LegacyAPNsError) {
        switch state {
        case .open:
            returnBuffered()
            open.winding = .stop(error)
        case .disconnected, .connecting, .closing:
            fail(error)
        case .failed:
            break
        }
    }

    /// Entries taken but not submitted stay with the slot for its next connection.
    private mutating func returnBuffered() {
        let first = open.submittingIndex ?? open.bufferedIndex
        open.submittingIndex = nil
        carried.append(contentsOf: open.buffered[first...])
        open.buffered.removeAll()
        open.bufferedIndex = 0
    }

    /// Everything in flight lost its connection.
    private mutating func lose(reason: String, now: Duration) {
        for stream in open.streams.streams.sorted() {
            let waiting = open.streams.removeValue(forKey: stream)!
            retryLost(waiting.entry, cause: .connectionLost, reason: reason, now: now)
        }
    }

    /// A request that may have been delivered: again, as a possible duplicate, while attempts
    /// remain; else unconfirmed.
    private mutating func retryLost(
        _ entry: ProviderEntry, cause: ProviderRetryCause, reason: String, now: Duration
    ) {
        var entry = entry
        entry.attempts += 1
        entry.possiblyDelivered = true
        if entry.attempts >= configuration.maximumAttempts {
            giveUp(entry, why: reason)
        } else {
            retry(entry, cause: cause, reason: reason)
        }
    }

    private mutating func retry(_ entry: ProviderEntry, cause: ProviderRetryCause, reason: String) {
        requeued.append(entry)
        pendingEvents.append(
            .retrying(
                connection: connection, position: entry.position, cause: cause, reason: reason,
                possibleDuplicate: entry.possiblyDelivered))
    }

    /// `response` ends `entry`: APNs's answer `latency` after it was sent, or the client's own
    /// refusal (`isLocal`).
    private mutating func reject(
        _ entry: ProviderEntry, response: ProviderResponse, isLocal: Bool = false, latency: Duration? = nil
    ) {
        var rejection = ProviderRejection(
            position: entry.position, identifier: entry.request.identifier, token: entry.request.deviceToken,
            status: response.status,
            reason: response.reason, timestamp: response.timestamp, apnsID: response.apnsID ?? entry.apnsID,
            isLocal: isLocal, mayHaveBeenDelivered: entry.possiblyDelivered, tag: entry.tag)
        rejection.pushType = entry.request.pushType
        rejection.latency = latency
        if configuration.keepsVerdictLists { report.rejected.append(rejection) } else { report.unlistedRejections += 1 }
        finalized += 1
        pendingEvents.append(.rejected(connection: connection, rejection))
    }

    private mutating func giveUp(_ entry: ProviderEntry, why: String) {
        let unconfirmed = ProviderUnconfirmed(
            position: entry.position, request: entry.request, mayHaveBeenDelivered: entry.possiblyDelivered, why: why,
            tag: entry.tag)
        if configuration.keepsVerdictLists {
            report.unconfirmed.append(unconfirmed)
        } else {
            report.unlistedUnconfirmed += 1
        }
        finalized += 1
        pendingEvents.append(.unconfirmed(connection: connection, unconfirmed))
    }

    private mutating func recordFailure(_ error: LegacyAPNsError, spendsBudget: Bool) {
        failures.consecutive += 1
        if spendsBudget { failures.withoutProgress += 1 }
        if failures.withoutProgress >= configuration.reconnect.maximumConsecutiveFailures {
            fail(
                LegacyAPNsError(
                    .connectionFailed, "\(error.reason) (gave up after \(failures.withoutProgress) attempts in a row)",
                    underlying: error))
            return
        }
        let delay = configuration.reconnect.delay(afterFailures: failures.consecutive)
        nextConnectDelay = delay
        pendingEvents.append(.connectionFailed(connection: connection, reason: error.reason, delay: delay))
    }

    /// Stops for good: taken entries that were never sent are not sent; the rest is the pool's.
    private mutating func fail(_ error: LegacyAPNsError) {
        if case .open = state {
            lose(reason: error.reason, now: .zero)
            returnBuffered()
        }
        state = .failed
        if report.failure == nil { report.failure = error }
        for entry in carried {
            giveUp(entry, why: "the send stopped: \(error.reason)")
        }
        carried = []
    }
}
