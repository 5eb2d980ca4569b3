import APNsCore
import APNsCredentials
package import APNsRuntime

/// One client connection of ``ProviderSimulator`` without any I/O: decrypted bytes in with
/// ``receive(_:now:)``, bytes for the client out with ``send(into:)``, time moving with
/// ``tick(now:)``. It owns the connection's ``HTTP2Session`` and is its delegate, and does what
/// APNs does with each request: authenticate (certificate or provider token), validate
/// (``ProviderRequestValidator``), apply the faults, answer, record.
///
/// The TLS shell (``ProviderConnectionLoop``) drives it from one thread; the fuzz target and the
/// in-memory tests drive it directly with bytes. Not `Sendable`: one owner thread.
///
/// Per request it allocates nothing of its own on the success path without a recorder: the
/// request's head and body land in a reused slot (``ProviderStreamTable``), the token is compared
/// byte for byte with the connection's current one, the response headers are written into a
/// reused ``HTTP2HeaderList``. (The validator's ``ProviderRequest`` holds the topic and the bearer
/// token as `String`s.)
package final class ProviderConnection: HTTP2SessionDelegate {
    /// How the connection authenticates, from the TLS handshake.
    package enum Authentication: Sendable, Equatable {
        /// A client certificate: the topics it may push to and the environment it is for.
        case certificate(topics: [String], environment: CertificateEnvironment)
        /// No client certificate: provider tokens.
        case token
    }

    /// What happens to a valid request.
    private enum Disposition {
        case answer(ProviderResponse)
        case stall
        case reset
        case refuse
        case shutdown
        case goawayAfterAnswer
    }

    // Confinement: one thread owns the connection (its loop, or a test) and every access below
    // is made on it, including those from the session's callbacks, which run inside `receive`
    // and `send` and touch no property the calling code is in the middle of changing. The
    // dynamic exclusivity checks Swift makes on a class's stored properties cannot find a
    // conflict here and cost about 3.5 % of `serve --http2`'s time (several per header), so they
    // are off for the per-request properties (`@exclusivity(unchecked)`), as in HTTP2Client's
    // connection; every other rule of the language still holds.
    let policy: ProviderPolicy
    /// The simulator's number for this connection.
    package let number: Int
    package let authentication: Authentication
    /// Whether `/3/device/` pushes are served (false on the management port, which serves
    /// channel management only).
    package let servesPushes: Bool
    @exclusivity(unchecked) private var session: HTTP2Session!
    @exclusivity(unchecked) private var table: ProviderStreamTable
    @exclusivity(unchecked) private var tokens: ProviderTokenAuthority?
    private let certificateAuthorization: ProviderAuthorization?
    @exclusivity(unchecked) private var headers = HTTP2HeaderList(byteCapacity: 256, fieldCapacity: 6)
    @exclusivity(unchecked) private var generator: SplitMix64
    /// Monotonic seconds of the current call.
    @exclusivity(unchecked) private var now: Double
    private let createdAt: Double

    // Counters of this connection.
    /// Requests that arrived whole.
    @exclusivity(unchecked) package private(set) var completedRequests = 0
    /// Requests answered 200 / with an error status.
    @exclusivity(unchecked) package private(set) var acceptedCount = 0
    @exclusivity(unchecked) package private(set) var rejectedCount = 0
    /// Valid requests the faults saw (for the per-connection faults).
    @exclusivity(unchecked) private var validRequests = 0

    /// Deltas not yet merged into the simulator's statistics.
    @exclusivity(unchecked) private var pendingAccepted = 0
    @exclusivity(unchecked) private var pendingRejected: [(ProviderReason, Int)] = []
    @exclusivity(unchecked) private var pendingStalled = 0
    @exclusivity(unchecked) private var pendingGoaways = 0

    /// Accepted requests not yet handed to the recorder, and when the oldest was accepted.
    @exclusivity(unchecked) private var batch: [AcceptedRequest] = []
    /// The same as JSON lines, made as they are accepted, when the recorder writes JSON Lines.
    @exclusivity(unchecked) private var lines = ByteWriter()
    private let lineRecorder: JSONLinesProviderRecorder?
    @exclusivity(unchecked) private var batchStartedAt: Double?

    /// Error responses held back by ``ProviderFaults/errorDelay``, due in order.
    @exclusivity(unchecked) private var delayed: [(due: Double, stream: Int32, response: ProviderResponse)] = []
    @exclusivity(unchecked) private var delayedHead = 0

    /// The last stream of the GOAWAY this side sent: streams above it are not processed.
    package private(set) var goawayLastStream: Int32?
    /// Set when a fault wants the connection reset (TCP RST) now.
    package private(set) var resetRequested = false
    /// Set when the client exceeded a limit; the shell closes the connection.
    package private(set) var cutOffReason: String?
    /// Set when nghttp2 refused the client's bytes.
    package private(set) var protocolError: LegacyAPNsError?
    @exclusivity(unchecked) private var sawSettings = false
    /// The SETTINGS_MAX_CONCURRENT_STREAMS sent last (token auth: 1, then the policy's).
    private var advertisedStreams: UInt32
    /// When the last request arrived whole (or the connection opened).
    @exclusivity(unchecked) private var lastCompletedAt: Double
    /// When bytes last arrived that did not complete a frame (nil: the last bytes did).
    @exclusivity(unchecked) private var partialFrameSince: Double?
    @exclusivity(unchecked) private var nextTimeoutCheck: Double

    /// Creates the connection's HTTP/2 session (its first SETTINGS wait in ``send(into:)``).
    package init(
        policy: ProviderPolicy, number: Int, authentication: Authentication, now: Double, servesPushes: Bool = true
    ) throws {
        self.policy = policy
        self.number = number
        self.authentication = authentication
        self.servesPushes = servesPushes
        self.now = now
        lineRecorder = policy.recorder as? JSONLinesProviderRecorder
        createdAt = now
        lastCompletedAt = now
        nextTimeoutCheck = now + 1
        table = ProviderStreamTable(capacity: Int(policy.maximumConcurrentStreams))
        advertisedStreams = policy.maximumConcurrentStreams
        generator = SplitMix64(seed: policy.seed &+ UInt64(number) &* 0x9E37_79B9_7F4A_7C15)
        var options = HTTP2Session.Options()
        options.maximumHeaderListSize = policy.limits.maximumHeaderListSize
        options.maximumBufferedOutput = policy.limits.maximumBufferedOutput
        // Room for a full set of concurrent requests' bodies without waiting for WINDOW_UPDATEs.
        options.connectionWindowSize = Int32(clamping: max(65_535, Int(policy.maximumConcurrentStreams) * 1024))
        switch authentication {
        case .certificate(let topics, _):
            certificateAuthorization = .certificate(topics: topics)
            options.maximumConcurrentStreams = policy.maximumConcurrentStreams
        case .token:
            certificateAuthorization = nil
            tokens = ProviderTokenAuthority(
                keys: policy.keys, teamTopics: policy.teamTopics, environment: policy.environment)
            // "APNs allows only one stream until you post a request with a valid authentication token."
            options.maximumConcurrentStreams = 1
            advertisedStreams = 1
        }
        session = try HTTP2Session(role: .server, options: options, delegate: self)
    }

    // MARK: - Driving

    /// Whether the session still expects bytes from the client.
    package var wantsRead: Bool { session.wantsRead && cutOffReason == nil && !resetRequested }
    /// Whether there is something for the client.
    package var wantsWrite: Bool { session.wantsWrite }
    /// Whether the simulator owes the client nothing: no stream open, no response held back.
    package var owesNothing: Bool { table.count == 0 && delayedHead == delayed.count }
    /// Whether the connection has nothing more to do.
    package var isFinished: Bool {
        resetRequested || (!session.wantsRead && !session.wantsWrite && delayedHead == delayed.count)
    }

    /// Feeds decrypted bytes from the client.
    ///
    /// - Throws: the session's `protocolViolation` (its GOAWAY is then waiting in ``send(into:)``).
    package func receive(_ bytes: UnsafeRawBufferPointer, now: Double) throws {
        self.now = now
        let frames = session.receivedFrameCount
        defer {
            // A frame left incomplete: when did its first bytes come (a trickle keeps it so)?
            if session.receivedFrameCount != frames {
                partialFrameSince = nil
            } else if partialFrameSince == nil, !bytes.isEmpty {
                partialFrameSince = now
            }
        }
        do {
            try session.receive(bytes)
        } catch let error as LegacyAPNsError {
            if protocolError == nil {
                protocolError = error
                policy.update { $0.protocolErrors += 1 }
                policy.emit(.protocolError(connection: number, reason: error.reason))
            }
            throw error
        }
    }

    /// Appends what the session has for the client.
    package func send(into writer: inout ByteWriter) throws {
        try session.send(into: &writer)
    }

    /// Moves time on: releases held-back responses that are due, hands accepted requests to the
    /// recorder when the interval has passed, merges the counters, and checks the timeouts.
    package func tick(now: Double) {
        self.now = now
        while delayedHead < delayed.count, delayed[delayedHead].due <= now {
            let entry = delayed[delayedHead]
            delayedHead += 1
            submit(entry.response, on: entry.stream)
        }
        if delayedHead == delayed.count, delayedHead > 0 {
            delayed.removeAll(keepingCapacity: true)
            delayedHead = 0
        }
        if let started = batchStartedAt, now - started >= policy.recordingInterval { flushRecords() }
        flushStatistics()
        if now >= nextTimeoutCheck {
            nextTimeoutCheck = now + 0.25
            checkTimeouts()
        }
    }

    /// The next moment ``tick(now:)`` has something to do (monotonic seconds), if any.
    package var nextDeadline: Double? {
        var deadline = nextTimeoutCheck
        if delayedHead < delayed.count { deadline = min(deadline, delayed[delayedHead].due) }
        if let started = batchStartedAt { deadline = min(deadline, started + policy.recordingInterval) }
        return deadline
    }

    /// Says GOAWAY with `reason` (an idle connection, a stopping simulator): streams already
    /// processed are still answered.
    package func goaway(reason: ProviderReason) {
        sendGoaway(reason: reason, lastStream: nil)
    }

    /// Ends the session at once with a GOAWAY of `errorCode` (a client cut off), carrying
    /// `debugData` when given.
    package func terminate(errorCode: HTTP2ErrorCode, reason: String, debugData: String? = nil) {
        if cutOffReason == nil {
            cutOffReason = reason
            policy.update { $0.cutOff += 1 }
            policy.emit(.cutOff(connection: number, reason: reason))
        }
        try? session.terminate(errorCode: errorCode, reason: debugData)
    }

    /// APNs's words in the GOAWAY for a stream beyond its limit (users' logs).
    package static let maximumStreamsViolated = "Maximum active streams violated for this endpoint."

    /// Hands everything over (records, counters): the connection is closing.
    package func finish() {
        flushRecords()
        flushStatistics()
    }

    private func checkTimeouts() {
        guard cutOffReason == nil else { return }
        let limits = policy.limits
        if !sawSettings, now - createdAt > limits.handshakeTimeout.inSeconds {
            terminate(
                errorCode: .settingsTimeout,
                reason:
                    "no HTTP/2 connection preface and SETTINGS within \(formatSeconds(limits.handshakeTimeout.inSeconds))"
            )
            return
        }
        if completedRequests == 0, let limit = limits.firstRequestTimeout, now - createdAt > limit.inSeconds,
            owesNothing
        {
            // Connected and said nothing worth a slot (the preface, PINGs): closed.
            terminate(errorCode: .noError, reason: "no request within \(formatSeconds(limit.inSeconds)) of connecting")
            return
        }
        if let since = partialFrameSince, now - since > limits.requestTimeout.inSeconds {
            terminate(
                errorCode: .enhanceYourCalm,
                reason:
                    "a frame took longer than \(formatSeconds(limits.requestTimeout.inSeconds)) to arrive (trickled bytes)"
            )
            return
        }
        // A request still arriving after the timeout, while no other request completed for as
        // long: a trickle (a busy client whose one stream waits for flow control is not one).
        if let oldest = table.oldest, now - oldest.startedAt > limits.requestTimeout.inSeconds,
            now - lastCompletedAt > limits.requestTimeout.inSeconds
        {
            terminate(
                errorCode: .enhanceYourCalm,
                reason:
                    "the request on stream \(oldest.stream) took longer than \(formatSeconds(limits.requestTimeout.inSeconds)) to arrive (trickled bytes)"
            )
        }
    }

    // MARK: - Session delegate

    package func didBeginHeaders(stream: Int32) {
        _ = table.open(stream, now: now)
    }

    package func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let slot = table.slot(for: stream) else { return }
        table.addHeader(slot, name: name, value: value)
    }

    package func didEndHeaders(stream: Int32, endStream: Bool) {
        if endStream { complete(stream) }
    }

    package func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer) {
        guard let slot = table.slot(for: stream) else { return }
        table.addBody(slot, bytes)
    }

    package func didEndData(stream: Int32) {
        complete(stream)
    }

    package func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) {
        table.release(stream)
    }

    package func didReceiveSettings(_ settings: HTTP2Settings) {
        sawSettings = true
    }

    /// A stream beyond the limit we advertised: with ``ProviderSimulator/ExcessStreams/goaway``, a
    /// connection error as APNs makes it, acknowledged limit or not (else nghttp2 refuses it).
    package func didExceedStreamLimit(stream: Int32) {
        guard policy.excessStreams == .goaway else { return }
        terminate(
            errorCode: .refusedStream,
            reason:
                "stream \(stream) went beyond the \(advertisedStreams) concurrent streams allowed: GOAWAY \"\(Self.maximumStreamsViolated)\"",
            debugData: Self.maximumStreamsViolated)
    }

    // MARK: - Requests

    /// A request arrived whole: authenticate, validate, apply faults, answer.
    private func complete(_ stream: Int32) {
        guard let slot = table.slot(for: stream) else { return }
        defer { table.release(stream) }
        completedRequests += 1
        lastCompletedAt = now
        if let last = goawayLastStream, stream > last { return }  // after our GOAWAY: not processed
        // The n-th request is the last processed: the GOAWAY goes out ahead of its response, so a
        // client learns it before its stream ends.
        if let limit = policy.faults.goawayAfter, completedRequests >= limit {
            sendGoaway(reason: .shutdown, lastStream: stream)
        }

        let authorization: ProviderAuthorization
        var refusedToken: (reason: ProviderReason, why: String?)?
        switch authentication {
        case .certificate(_, let environment):
            guard policy.environment.accepts(environment) else {
                if environment == .unknown {
                    reject(ProviderResponse(rejecting: .badCertificate), stream: stream, slot: slot)
                } else {
                    let server = policy.environment == .development ? "development (Apple's sandbox)" : "production"
                    reject(
                        ProviderResponse(rejecting: .badCertificateEnvironment), stream: stream, slot: slot,
                        why: "the client certificate is for \(environment), this server is \(server)")
                    sendGoaway(reason: .badCertificateEnvironment, lastStream: stream)
                }
                return
            }
            authorization = certificateAuthorization!
        case .token:
            let verdict = table.slots.withUnsafeBufferPointer { slots in
                tokens!.check(slots[Int(slot)].head, now: policy.clock.now())
            }
            switch verdict {
            case .accepted(let topics, let change):
                tokenChanged(change)
                authorization = .token(.accepted(topics: topics))
            case .rejected(let reason, let why):
                authorization = .token(.rejected(reason))
                refusedToken = (reason, why)
            }
        }

        let isChannelRequest = table.slots.withUnsafeBufferPointer { slots in
            slots[Int(slot)].head.withValue(.path, ChannelRequestValidator.handles(path:))
        }
        if isChannelRequest || !servesPushes {
            handleChannelRequest(slot: slot, stream: stream, authorization: authorization, refusedToken: refusedToken)
            return
        }
        let outcome = table.slots.withUnsafeBufferPointer { slots in
            ProviderRequestValidator.validate(
                slots[Int(slot)].head, body: slots[Int(slot)].body, authorization: authorization,
                keepingAuthorizationToken: false)
        }
        switch outcome {
        case .rejected(let response):
            // The token's refusal, when that is what the validator answered with: say why.
            let why =
                refusedToken.flatMap { $0.reason == response.reason ? $0.why : nil }
                ?? explanation(of: response, slot: slot, authorization: authorization)
            reject(response, stream: stream, slot: slot, why: why)
        case .accepted(let request):
            handle(request, stream: stream)
        }
    }

    /// Why a request broke one of the push type's rules (rows 17-20 of the validator), for the
    /// log: these are the answers Apple does not document (a token-only type over a certificate
    /// gets TopicDisallowed, say).
    private func explanation(
        of response: ProviderResponse, slot: Int32, authorization: ProviderAuthorization
    ) -> String? {
        guard policy.events != nil, let reason = response.reason,
            [.badPriority, .topicDisallowed, .invalidPushType, .payloadTooLarge].contains(reason)
        else { return nil }
        return table.slots.withUnsafeBufferPointer { slots -> String? in
            let head = slots[Int(slot)].head
            guard let type = head.string(.pushType).map(PushType.init(rawValue:)) else { return nil }
            let priority = head.withValue(.priority) { $0.flatMap(Priority.init(http2HeaderValue:)) }
            let found =
                priority.flatMap(type.problem(priority:)) ?? type.problem(usesTokens: !authorization.isCertificate)
                ?? slots[Int(slot)].body.withUnsafeBytes { type.problem(payloadJSON: $0) }
            return found.flatMap { $0.reason == reason ? $0.explanation : nil }
        }
    }

    /// A channel management or broadcast request (or anything on the management port): Apple's
    /// channel rules (``ChannelRequestValidator``), then the store.
    private func handleChannelRequest(
        slot: Int32, stream: Int32, authorization: ProviderAuthorization,
        refusedToken: (reason: ProviderReason, why: String?)?
    ) {
        let environment = policy.environment
        let store = policy.channels
        let disabled = policy.broadcastDisabledBundles
        let lookup = ChannelRequestValidator.ChannelLookup(
            policy: { store.policy(of: $1, bundleID: $0, environment: environment) },
            isEnabled: { !disabled.contains($0) })
        let (outcome, request) = table.slots.withUnsafeBufferPointer { slots in
            let head = slots[Int(slot)].head
            var outcome = ChannelRequestValidator.validate(
                head, body: slots[Int(slot)].body, authorization: authorization, lookup: lookup)
            if !servesPushes, case .success(.broadcast) = outcome.result {
                outcome.result = .failure(.init(reason: .badPath, why: "broadcasts go to the push host, not here"))
            }
            return (outcome, "\(head.string(.method) ?? "?") \(head.string(.path) ?? "?")")
        }
        let requestID = outcome.requestID ?? .random(using: &generator)
        var response: ChannelResponse
        var why: String?
        var result = outcome.result
        if case .success = result, let reason = policy.nextValidChannelRequest() {
            result = .failure(.init(reason: reason, why: "fault injection (every n-th channel request)"))
        }
        switch result {
        case .failure(let refusal):
            response = ChannelResponse(rejecting: refusal.reason, requestID: requestID)
            why = refusedToken.flatMap { $0.reason == refusal.reason ? $0.why : nil } ?? refusal.why
        case .success(.create(let bundleID, let storagePolicy)):
            if let id = store.create(bundleID: bundleID, policy: storagePolicy, environment: environment) {
                response = ChannelResponse(status: 201, requestID: requestID, channelID: id)
            } else {
                response = ChannelResponse(rejecting: .cannotCreateChannelConfig, requestID: requestID)
                why =
                    "no room for another channel of \(bundleID) in \(environment): at most "
                    + "\(store.maximumChannelsPerApp) per app, \(store.maximumChannels) in all"
            }
        case .success(.read(let bundleID, let id)):
            let found = store.policy(of: id, bundleID: bundleID, environment: environment)
            response = ChannelResponse(
                status: 200, requestID: requestID,
                body: found.map { ChannelConfiguration(storagePolicy: $0).json } ?? [])
        case .success(.delete(let bundleID, let id)):
            _ = store.delete(id, bundleID: bundleID, environment: environment)
            response = ChannelResponse(status: 204, requestID: requestID)
        case .success(.list(let bundleID)):
            let ids = store.channels(bundleID: bundleID, environment: environment)
            response = ChannelResponse(status: 200, requestID: requestID, body: ChannelID.listJSON(ids))
        case .success(.broadcast(let broadcast, let storagePolicy)):
            let unique: APNsID? = environment == .development ? .random(using: &generator) : nil
            store.record(
                ChannelStore.Broadcast(
                    request: broadcast, policy: storagePolicy, environment: environment, requestID: requestID,
                    uniqueID: unique, notes: outcome.notes))
            response = ChannelResponse(status: 200, requestID: requestID, uniqueID: unique)
            why =
                "broadcast on channel \(broadcast.channelID), policy \(storagePolicy)"
                + (storagePolicy == .mostRecentMessageStored ? ": kept as the channel's message" : "")
        }
        if response.isSuccess {
            policy.update {
                if case .success(.broadcast) = result { $0.broadcasts += 1 } else { $0.channelRequests += 1 }
            }
        } else {
            rejectedCount += 1
            let reason = response.reason ?? ProviderReason(rawValue: "")
            policy.update { $0.rejected[reason, default: 0] += 1 }
        }
        policy.emit(
            .channelRequest(connection: number, request: request, response: response, why: why, notes: outcome.notes))
        headers.removeAll()
        response.writeHeaders(into: &headers)
        try? session.submitResponse(stream: stream, headers: headers, body: response.bodyBytes)
    }

    private func tokenChanged(_ change: ProviderTokenAuthority.Change) {
        switch change {
        case .none:
            break
        case .first(let keyID, let teamID):
            try? session.submitSettings([.maxConcurrentStreams(policy.maximumConcurrentStreams)])
            advertisedStreams = policy.maximumConcurrentStreams
            policy.emit(.tokenAccepted(connection: number, keyID: keyID, teamID: teamID))
        case .updated(let keyID):
            policy.emit(.tokenUpdated(connection: number, keyID: keyID))
        }
    }

    /// A valid request: the faults decide, then it is answered (or not).
    private func handle(_ request: ProviderRequest, stream: Int32) {
        validRequests += 1
        switch disposition(of: request) {
        case .answer(let response):
            if response.isSuccess {
                accept(request, stream: stream, apnsID: request.apnsID)
            } else {
                var response = response
                response.apnsID = request.apnsID
                respond(response, stream: stream, token: request.deviceToken)
            }
        case .stall:
            pendingStalled += 1
            policy.emit(.stalled(connection: number, stream: stream))
        case .reset:
            resetRequested = true
        case .refuse:
            try? session.submitRstStream(stream: stream, errorCode: .refusedStream)
        case .shutdown:
            respond(
                ProviderResponse(rejecting: .shutdown, apnsID: request.apnsID), stream: stream,
                token: request.deviceToken)
            sendGoaway(reason: .shutdown, lastStream: stream)
        case .goawayAfterAnswer:
            accept(request, stream: stream, apnsID: request.apnsID)
            sendGoaway(reason: .shutdown, lastStream: stream)
        }
    }

    /// The table of ``ProviderFaults``, in its order.
    private func disposition(of request: ProviderRequest) -> Disposition {
        guard policy.hasRequestFaults else { return .answer(.success(apnsID: nil)) }
        let faults = policy.faults
        if !faults.stallingTokens.isEmpty, faults.stallingTokens.contains(request.deviceToken) { return .stall }
        if let limit = faults.resetAfter, validRequests > limit { return .reset }
        if let limit = faults.shutdownAfter, validRequests > limit { return .shutdown }
        if !faults.failingTokens.isEmpty, let reason = faults.failingTokens[request.deviceToken] {
            let timestamp = reason.status == 410 ? UInt64(max(0, policy.clock.now())) : nil
            return .answer(ProviderResponse(rejecting: reason, timestamp: timestamp))
        }
        if !faults.unregisteredTokens.isEmpty, let since = faults.unregisteredTokens[request.deviceToken] {
            let timestamp: UInt64
            switch since {
            case .now: timestamp = UInt64(max(0, policy.clock.now()))
            case .milliseconds(let milliseconds): timestamp = milliseconds
            }
            return .answer(ProviderResponse(rejecting: .unregistered, timestamp: timestamp))
        }
        guard faults.needsSharedState else { return .answer(.success(apnsID: nil)) }
        let (count, roll) = policy.nextValidRequest()
        if let every = faults.failEvery, every.count > 0, count % every.count == 0 {
            let timestamp = every.reason.status == 410 ? UInt64(max(0, policy.clock.now())) : nil
            return .answer(ProviderResponse(rejecting: every.reason, timestamp: timestamp))
        }
        if let random = faults.random {
            var threshold = random.reset
            if roll < threshold { return .reset }
            threshold += random.stall
            if roll < threshold { return .stall }
            threshold += random.serviceUnavailable
            if roll < threshold { return .answer(ProviderResponse(rejecting: .serviceUnavailable)) }
            threshold += random.badDeviceToken
            if roll < threshold { return .answer(ProviderResponse(rejecting: .badDeviceToken)) }
            threshold += random.goaway
            if roll < threshold { return .goawayAfterAnswer }
            threshold += random.refusedStream
            if roll < threshold { return .refuse }
        }
        return .answer(.success(apnsID: nil))
    }

    private func accept(_ request: ProviderRequest, stream: Int32, apnsID: APNsID?) {
        let id = apnsID ?? .random(using: &generator)
        let unique: APNsID? = policy.environment == .development ? .random(using: &generator) : nil
        acceptedCount += 1
        pendingAccepted += 1
        if policy.recorder != nil {
            if batchStartedAt == nil { batchStartedAt = now }
            if lineRecorder != nil {
                AcceptedRequest.writeJSON(request, apnsID: id, into: &lines)
                lines.writeInteger(UInt8(0x0A))
            } else {
                batch.append(AcceptedRequest(request: request, apnsID: id, connection: number, uniqueID: unique))
            }
        }
        submit(.success(apnsID: id, apnsUniqueID: unique), on: stream)
    }

    private func reject(_ response: ProviderResponse, stream: Int32, slot: Int32, why: String? = nil) {
        let token = policy.events == nil ? nil : requestToken(slot)
        respond(response, stream: stream, token: token, why: why)
    }

    /// The device token of the request in `slot`, for events.
    private func requestToken(_ slot: Int32) -> DeviceToken? {
        guard let path = table.slots[Int(slot)].head.string(.path), path.hasPrefix(ProviderRequest.pathPrefix) else {
            return nil
        }
        return try? DeviceToken(hexString: path.dropFirst(ProviderRequest.pathPrefix.count))
    }

    /// Answers with an error status (after the configured delay).
    private func respond(_ response: ProviderResponse, stream: Int32, token: DeviceToken?, why: String? = nil) {
        var response = response
        if response.apnsID == nil { response.apnsID = .random(using: &generator) }
        rejectedCount += 1
        let reason = response.reason ?? ProviderReason(rawValue: "")
        if let index = pendingRejected.firstIndex(where: { $0.0 == reason }) {
            pendingRejected[index].1 += 1
        } else {
            pendingRejected.append((reason, 1))
        }
        policy.emit(.rejected(connection: number, stream: stream, response: response, token: token, why: why))
        let delay = policy.faults.errorDelay
        if delay > .zero {
            delayed.append((now + delay.inSeconds, stream, response))
        } else {
            submit(response, on: stream)
        }
    }

    private func submit(_ response: ProviderResponse, on stream: Int32) {
        headers.removeAll()
        response.writeHeaders(into: &headers)
        // The stream may be gone (the client reset it): nothing to answer then.
        try? session.submitResponse(stream: stream, headers: headers, body: response.hasBody ? response.bodyBytes : [])
    }

    private func sendGoaway(reason: ProviderReason?, lastStream: Int32?) {
        guard goawayLastStream == nil else { return }
        let last = lastStream ?? session.lastProcessedStreamID
        goawayLastStream = last
        let debug = reason.map { ProviderResponse(status: 0, reason: $0).bodyBytes } ?? []
        try? session.submitGoaway(lastStreamID: last, errorCode: .noError, debugData: debug)
        pendingGoaways += 1
        policy.emit(.goaway(connection: number, lastStreamID: last, reason: reason))
    }

    // MARK: - Handing over

    private func flushRecords() {
        batchStartedAt = nil
        if let lineRecorder {
            guard !lines.isEmpty else { return }
            lineRecorder.write(lines: lines)
            lines.clear()
            if lines.capacity > 1 << 20 { lines = ByteWriter() }
            return
        }
        guard !batch.isEmpty else { return }
        policy.recorder?.record(batch)
        batch.removeAll(keepingCapacity: true)
    }

    private func flushStatistics() {
        guard pendingAccepted > 0 || !pendingRejected.isEmpty || pendingStalled > 0 || pendingGoaways > 0 else {
            return
        }
        policy.update { statistics in
            statistics.accepted += pendingAccepted
            for (reason, count) in pendingRejected { statistics.rejected[reason, default: 0] += count }
            statistics.stalled += pendingStalled
            statistics.goaways += pendingGoaways
        }
        pendingAccepted = 0
        pendingRejected.removeAll(keepingCapacity: true)
        pendingStalled = 0
        pendingGoaways = 0
    }
}
