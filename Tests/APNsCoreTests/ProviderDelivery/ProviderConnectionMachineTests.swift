import APNsCore
import TestSupport
import Testing

/// Scripts for the HTTP/2 delivery logic of one connection: event in, action out. No sockets, no
/// clocks: time is a number the script moves.
@Suite struct ProviderConnectionMachineTests {
    static func entry(_ position: UInt64) -> ProviderEntry {
        var bytes = [UInt8](repeating: 0x11, count: 32)
        bytes[24..<32] = ArraySlice(withUnsafeBytes(of: position.bigEndian) { Array($0) })
        let request = try! ProviderRequest(
            deviceToken: DeviceToken(bytes: bytes), payload: Payload(unvalidatedBytes: Array(#"{"aps":{}}"#.utf8)),
            topic: "com.example.app", apnsID: APNsID(rawValue: UInt128(position)))
        return ProviderEntry(position: position, request: request)
    }

    static func machine(
        tokens: Bool = false, attempts: Int = 3, failures: Int = 3,
        configure: (inout ProviderConnectionMachine.Configuration) -> Void = { _ in }
    ) -> ProviderConnectionMachine {
        var configuration = ProviderConnectionMachine.Configuration()
        configuration.usesTokens = tokens
        configuration.maximumAttempts = attempts
        configuration.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1),
            maximumConsecutiveFailures: failures)
        configure(&configuration)
        return ProviderConnectionMachine(configuration: configuration)
    }

    static let t0 = Duration.seconds(100)

    /// Connects at `now` with a server limit, takes `positions`, and submits each on streams 1, 3, 5...
    static func connectAndSubmit(
        _ machine: inout ProviderConnectionMachine, _ positions: [UInt64], limit: Int = 100, now: Duration = t0,
        firstStream: Int32 = 1
    ) {
        #expect(machine.nextAction(now: now) == .connect(delay: .zero))
        machine.connected(now: now, serverStreamLimit: limit)
        submit(&machine, positions, now: now, firstStream: firstStream)
    }

    static func submit(
        _ machine: inout ProviderConnectionMachine, _ positions: [UInt64], now: Duration = t0, firstStream: Int32 = 1
    ) {
        if machine.configuration.usesTokens, machine.nextAction(now: now) == .mintToken {
            machine.tokenMinted(now: now)
        }
        guard case .take(let maximum) = machine.nextAction(now: now) else {
            Issue.record("expected a take")
            return
        }
        #expect(maximum >= positions.count)
        machine.took(positions.map(entry), now: now)
        var stream = firstStream
        for position in positions {
            let action = machine.nextAction(now: now)
            guard case .submit(let submitted) = action else {
                Issue.record("expected submit of \(position), got \(action)")
                return
            }
            #expect(submitted.position == position)
            machine.submitted(submitted, stream: stream, now: now)
            stream += 2
        }
    }

    static func ok(_ position: UInt64) -> ProviderResponse { .success(apnsID: APNsID(rawValue: UInt128(position))) }

    @Test func answersAreVerdictsAndTheSlotFinishesWhenTheInputIsExhausted() {
        var machine = Self.machine()
        Self.connectAndSubmit(&machine, [1, 2, 3])
        machine.received(Self.ok(1), on: 1, now: Self.t0 + .milliseconds(3))
        machine.received(ProviderResponse(rejecting: .badDeviceToken), on: 3, now: Self.t0)
        machine.received(
            ProviderResponse(rejecting: .unregistered, timestamp: 1_700_000_000_000), on: 5, now: Self.t0)
        #expect(machine.takeFinalizedCount() == 3)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 100))
        machine.inputExhausted()
        #expect(machine.nextAction(now: Self.t0) == .close)
        machine.closed()
        #expect(machine.nextAction(now: Self.t0) == .finished)
        #expect(machine.report.accepted == 1)
        #expect(machine.report.rejected.map(\.reason) == [.badDeviceToken, .unregistered])
        #expect(machine.report.rejected.last?.timestamp == 1_700_000_000_000)
        #expect(machine.takeRequeued().isEmpty)
        #expect(
            machine.takeEvents().contains {
                if case .accepted(_, let accepted) = $0 {
                    accepted.position == 1 && accepted.latency == .milliseconds(3)
                } else {
                    false
                }
            })
    }

    /// With every stream in use and input still to come, the machine waits for an answer (or a
    /// timeout), not for a moment already past: such a wait returns at once, over and over.
    @Test func aFullWindowWaitsForAnswersNotForAPastDeadline() {
        var machine = Self.machine()
        Self.connectAndSubmit(&machine, [1, 2, 3, 4], limit: 4)
        let later = Self.t0 + .milliseconds(50)
        guard case .wait(let deadline) = machine.nextAction(now: later) else {
            Issue.record("a full window waits")
            return
        }
        #expect(deadline.map { $0 > later } ?? true, "waits until \(String(describing: deadline)), now \(later)")
        // An answer frees a stream: the next action takes again, at once.
        machine.received(Self.ok(1), on: 1, now: later)
        #expect(machine.nextAction(now: later) == .take(maximum: 1))
    }

    @Test func withTokensOneStreamUntilTheFirstAnswerThenTheServerLimit() {
        var machine = Self.machine(tokens: true)
        #expect(machine.nextAction(now: Self.t0) == .connect(delay: .zero))
        machine.connected(now: Self.t0, serverStreamLimit: 1000)
        #expect(machine.nextAction(now: Self.t0) == .mintToken)
        machine.tokenMinted(now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 1))
        machine.took([Self.entry(1)], now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .submit(Self.entry(1)))
        machine.submitted(Self.entry(1), stream: 1, now: Self.t0)
        guard case .wait = machine.nextAction(now: Self.t0) else {
            Issue.record("one stream only")
            return
        }
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        #expect(machine.streamLimit == 1000)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 1000))
    }

    /// The adversarial run: `send --http2 --cert` opened about 100 streams before the server's
    /// SETTINGS arrived, and a server allowing 10 that ends the connection for the 11th (as APNs
    /// does) got nothing delivered. Certificate or token, one stream until the SETTINGS say how many.
    @Test func aCertificateConnectionHasOneStreamInFlightUntilTheServersSettingsArrive() {
        var machine = Self.machine()
        #expect(machine.nextAction(now: Self.t0) == .connect(delay: .zero))
        machine.connected(now: Self.t0)
        #expect(machine.streamLimit == 1)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 1))
        machine.took([Self.entry(1)], now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .submit(Self.entry(1)))
        machine.submitted(Self.entry(1), stream: 1, now: Self.t0)
        guard case .wait = machine.nextAction(now: Self.t0) else {
            Issue.record("one stream in flight until the server's SETTINGS")
            return
        }
        #expect(machine.streamsInFlight == 1)
        // The SETTINGS: 10 streams, so 9 more may go out now, and not one beyond.
        machine.settingsChanged(maximumConcurrentStreams: 10, now: Self.t0)
        #expect(machine.streamLimit == 10)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 9))
        let more = (2...12).map { Self.entry(UInt64($0)) }
        machine.took(more, now: Self.t0)
        var stream: Int32 = 3
        while case .submit(let entry) = machine.nextAction(now: Self.t0) {
            machine.submitted(entry, stream: stream, now: Self.t0)
            stream += 2
        }
        #expect(machine.streamsInFlight == 10)
        // An answer frees one stream, and one more goes out.
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        guard case .submit(let next) = machine.nextAction(now: Self.t0) else {
            Issue.record("a freed stream is used")
            return
        }
        #expect(next.position == 11)
        machine.submitted(next, stream: stream, now: Self.t0)
        guard case .wait = machine.nextAction(now: Self.t0) else {
            Issue.record("at the server's limit")
            return
        }
        #expect(machine.streamsInFlight == 10)
    }

    @Test func aReconnectWaitsForTheNewServersSettingsAgain() {
        var machine = Self.machine()
        Self.connectAndSubmit(&machine, [1], limit: 10)
        let goaway = [UInt8]("Maximum active streams violated for this endpoint.".utf8).withUnsafeBytes {
            ProviderGoaway(lastStreamID: 1, errorCode: .refusedStream, debugData: $0)
        }
        machine.receivedGoaway(goaway, now: Self.t0)
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .close)
        machine.closed()
        guard case .connect = machine.nextAction(now: Self.t0) else {
            Issue.record("a reconnect")
            return
        }
        machine.connected(now: Self.t0)
        #expect(machine.streamLimit == 1)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 1))
        // This server's SETTINGS name no limit (nghttp2 then holds "unlimited"): our own bound.
        machine.settingsChanged(maximumConcurrentStreams: Int(UInt32.max), now: Self.t0)
        #expect(machine.streamLimit == machine.configuration.maximumStreams)
    }

    @Test func withTokensTheFirstAnswerReportsTheRisenStreamLimit() {
        var machine = Self.machine(tokens: true)
        Self.connectAndSubmit(&machine, [1], limit: 1)
        // The server raises its limit after the first valid token, before its answer arrives.
        machine.settingsChanged(maximumConcurrentStreams: 8, now: Self.t0)
        let limits = { (events: [ProviderEvent]) in
            events.compactMap { if case .streamLimit(_, let limit) = $0 { limit } else { nil } }
        }
        #expect(limits(machine.takeEvents()) == [1])
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        #expect(limits(machine.takeEvents()) == [8])
        #expect(machine.streamLimit == 8)
        machine.received(Self.ok(1), on: 1, now: Self.t0)  // a stray answer: nothing new
        #expect(limits(machine.takeEvents()).isEmpty)
    }

    @Test func theServersLimitIsHonouredAndFollowsItsSettings() {
        var machine = Self.machine()
        Self.connectAndSubmit(&machine, [1, 2], limit: 2)
        guard case .wait = machine.nextAction(now: Self.t0) else {
            Issue.record("at the limit")
            return
        }
        machine.settingsChanged(maximumConcurrentStreams: 5, now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 3))
    }

    @Test func aRefusedStreamAndStreamsAboveAGoawayAreRetriedWithoutAnAttempt() {
        var machine = Self.machine()
        Self.connectAndSubmit(&machine, [1, 2, 3, 4])
        machine.streamClosed(1, errorCode: .refusedStream, now: Self.t0)
        let goaway = [UInt8](#"{"reason":"Shutdown"}"#.utf8).withUnsafeBytes {
            ProviderGoaway(lastStreamID: 5, errorCode: .noError, debugData: $0)
        }
        machine.receivedGoaway(goaway, now: Self.t0)
        let requeued = machine.takeRequeued()
        #expect(requeued.map(\.position) == [1, 4])
        #expect(requeued.allSatisfy { $0.attempts == 0 && !$0.possiblyDelivered })
        // Streams 3 and 5 were processed: their answers still come; then the connection closes.
        guard case .wait = machine.nextAction(now: Self.t0) else {
            Issue.record("draining")
            return
        }
        machine.received(Self.ok(2), on: 3, now: Self.t0)
        machine.received(Self.ok(3), on: 5, now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .close)
        machine.closed()
        // A graceful GOAWAY (NO_ERROR, Shutdown) after answers: the next connection opens at once.
        #expect(machine.nextAction(now: Self.t0) == .connect(delay: .zero))
        #expect(machine.report.accepted == 2)
    }

    @Test func aServerThatSaysGoawayBeforeAnyAnswerSpendsTheReconnectBudget() {
        var machine = Self.machine(failures: 3)
        let shutdown = [UInt8](#"{"reason":"Shutdown"}"#.utf8).withUnsafeBytes {
            ProviderGoaway(lastStreamID: 0, errorCode: .noError, debugData: $0)
        }
        var delays: [Duration] = []
        for _ in 0..<3 {
            guard case .connect(let delay) = machine.nextAction(now: Self.t0) else {
                Issue.record("expected a connect")
                return
            }
            delays.append(delay)
            machine.connected(now: Self.t0, serverStreamLimit: 100)
            // A storm: many GOAWAYs on one connection count once.
            for _ in 0..<50 { machine.receivedGoaway(shutdown, now: Self.t0) }
            #expect(machine.nextAction(now: Self.t0) == .close)
            machine.closed()
        }
        #expect(machine.nextAction(now: Self.t0) == .finished)
        // No answer on any of them: no progress, so the reconnects back off.
        #expect(delays == [.zero, .milliseconds(100), .milliseconds(200)])
        #expect(machine.report.failure?.code == .connectionFailed)
        #expect(machine.report.failure?.reason.contains("Shutdown") == true)
        #expect(machine.report.failure?.reason.contains("gave up after 3") == true)
    }

    @Test func aLostConnectionRetriesWhatWasInFlightAsPossibleDuplicates() {
        var machine = Self.machine()
        Self.connectAndSubmit(&machine, [1, 2])
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        machine.connectionLost(LegacyAPNsError(.connectionFailed, "reset by peer"), now: Self.t0)
        let requeued = machine.takeRequeued()
        #expect(requeued.map(\.position) == [2])
        #expect(requeued.first?.possiblyDelivered == true)
        #expect(requeued.first?.attempts == 1)
        // An answer came on that connection: progress, so no backoff and no budget spent.
        #expect(machine.nextAction(now: Self.t0) == .connect(delay: .milliseconds(100)))
        machine.connected(now: Self.t0, serverStreamLimit: 100)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 100))
        machine.took(requeued, now: Self.t0)
        guard case .submit(let again) = machine.nextAction(now: Self.t0) else {
            Issue.record("resend")
            return
        }
        machine.submitted(again, stream: 1, now: Self.t0)
        machine.received(Self.ok(2), on: 1, now: Self.t0)
        #expect(machine.report.accepted == 2)
        #expect(machine.report.retried == 1)
        #expect(machine.report.possibleDuplicates == 1)
        #expect(machine.report.possiblyDuplicated.map(\.position) == [2])
    }

    @Test func aStreamWithoutAnAnswerIsResetAndSentElsewhereThenGivenUp() {
        var machine = Self.machine(attempts: 2) { $0.requestTimeout = .seconds(30) }
        Self.connectAndSubmit(&machine, [1])
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 99))
        machine.nothingToTake(retryAt: nil, now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .wait(until: Self.t0 + .milliseconds(20)))
        #expect(machine.nextAction(now: Self.t0 + .seconds(30)) == .cancel(stream: 1))
        var requeued = machine.takeRequeued()
        #expect(requeued.map(\.position) == [1])
        #expect(requeued.first?.possiblyDelivered == true)
        // The late answer on the reset stream is ignored.
        machine.received(Self.ok(1), on: 1, now: Self.t0 + .seconds(31))
        #expect(machine.report.accepted == 0)
        // Sent again, and again no answer: out of attempts, unconfirmed (it may have been delivered).
        machine.took(requeued, now: Self.t0 + .seconds(31))
        let next = machine.nextAction(now: Self.t0 + .seconds(31))
        guard case .submit(let again) = next else {
            Issue.record("expected a submit, got \(next)")
            return
        }
        machine.submitted(again, stream: 3, now: Self.t0 + .seconds(31))
        #expect(machine.nextAction(now: Self.t0 + .seconds(61)) == .cancel(stream: 3))
        requeued = machine.takeRequeued()
        #expect(requeued.isEmpty)
        #expect(machine.report.unconfirmed.map(\.position) == [1])
        #expect(machine.report.unconfirmed.first?.mayHaveBeenDelivered == true)
    }

    @Test func tooManyRequestsAndServerErrorsAreRetriedAfterADelayThenRejected() {
        var machine = Self.machine(attempts: 2)
        Self.connectAndSubmit(&machine, [1, 2])
        machine.received(ProviderResponse(rejecting: .tooManyRequests), on: 1, now: Self.t0)
        machine.received(ProviderResponse(rejecting: .internalServerError), on: 3, now: Self.t0)
        let requeued = machine.takeRequeued()
        #expect(requeued.map(\.position) == [1, 2])
        #expect(requeued.allSatisfy { $0.notBefore == Self.t0 + .seconds(1) && !$0.possiblyDelivered })
        // The second 503 for #2 exhausts its attempts: rejected with that answer (not delivered).
        machine.took(requeued, now: Self.t0 + .seconds(1))
        for stream: Int32 in [3, 5] {
            guard case .submit(let entry) = machine.nextAction(now: Self.t0 + .seconds(1)) else { return }
            machine.submitted(entry, stream: stream + 2, now: Self.t0 + .seconds(1))
        }
        machine.received(Self.ok(1), on: 5, now: Self.t0 + .seconds(1))
        machine.received(ProviderResponse(rejecting: .serviceUnavailable), on: 7, now: Self.t0 + .seconds(1))
        #expect(machine.report.accepted == 1)
        #expect(machine.report.rejected.map(\.status) == [503])
        #expect(machine.report.rejected.first?.mayHaveBeenDelivered == false)
    }

    /// The events of a script, drained.
    static func events(_ machine: inout ProviderConnectionMachine) -> [ProviderEvent] {
        var events: [ProviderEvent] = []
        machine.drainEvents { events.append($0) }
        return events
    }

    /// Each retry names its cause (a bounded value, for metrics), each reset who sent it, and each
    /// rejection APNs answered the time it took.
    @Test func everyRetryNamesItsCauseEveryResetWhoSentItAndEveryAnswerItsLatency() {
        var machine = Self.machine(attempts: 3)
        Self.connectAndSubmit(&machine, [1, 2, 3, 4, 5, 6, 7, 8])
        _ = Self.events(&machine)
        let later = Self.t0 + .milliseconds(50)
        machine.streamClosed(1, errorCode: .refusedStream, now: later)
        machine.streamClosed(3, errorCode: .internalError, now: later)
        machine.received(ProviderResponse(rejecting: .tooManyRequests), on: 5, now: later)
        machine.received(ProviderResponse(rejecting: .serviceUnavailable), on: 7, now: later)
        machine.received(ProviderResponse(rejecting: .idleTimeout), on: 9, now: later)
        machine.received(ProviderResponse(rejecting: .expiredProviderToken), on: 11, now: later)
        machine.received(ProviderResponse(rejecting: .badDeviceToken), on: 13, now: later)
        let goaway = [UInt8](#"{"reason":"Shutdown"}"#.utf8).withUnsafeBytes {
            ProviderGoaway(lastStreamID: 13, errorCode: .noError, debugData: $0)
        }
        machine.receivedGoaway(goaway, now: later)
        var causes: [UInt64: ProviderRetryCause] = [:]
        var duplicates: Set<UInt64> = []
        var resets: [String] = []
        var latencies: [Duration?] = []
        for event in Self.events(&machine) {
            switch event {
            case .retrying(_, let position, let cause, let reason, let possibleDuplicate):
                causes[position] = cause
                if possibleDuplicate { duplicates.insert(position) }
                #expect(!reason.isEmpty)
            case .streamReset(_, let stream, let code, let byClient): resets.append("\(stream) \(code) \(byClient)")
            case .rejected(_, let rejection): latencies.append(rejection.latency)
            default: break
            }
        }
        #expect(
            causes == [
                1: .refusedStream, 2: .streamReset, 3: .tooManyRequests, 4: .serverError, 5: .idleTimeout,
                6: .expiredProviderToken, 8: .goaway,
            ])
        #expect(duplicates == [2], "only the stream reset with another code may have been delivered")
        #expect(resets == ["1 REFUSED_STREAM false", "3 INTERNAL_ERROR false"])
        #expect(latencies == [.milliseconds(50)], "the 400, timed from its sending")

        // A request unanswered for the request timeout: the client resets its stream, and it goes
        // again as a possible duplicate; a lost connection takes the rest.
        var timing = Self.machine(attempts: 3) { $0.requestTimeout = .seconds(30) }
        Self.connectAndSubmit(&timing, [1, 2])
        timing.received(Self.ok(2), on: 3, now: Self.t0)
        #expect(timing.nextAction(now: Self.t0) == .take(maximum: 99))
        timing.nothingToTake(retryAt: nil, now: Self.t0)
        _ = Self.events(&timing)
        #expect(timing.nextAction(now: Self.t0 + .seconds(31)) == .cancel(stream: 1))
        let timedOut = Self.events(&timing)
        #expect(timedOut.contains(.streamReset(connection: 0, stream: 1, errorCode: .cancel, byClient: true)))
        #expect(
            timedOut.contains {
                if case .retrying(_, 1, .requestTimeout, _, true) = $0 { true } else { false }
            })
        timing.took(timing.takeRequeued(), now: Self.t0 + .seconds(31))
        guard case .submit(let again) = timing.nextAction(now: Self.t0 + .seconds(31)) else {
            Issue.record("expected the resend")
            return
        }
        timing.submitted(again, stream: 5, now: Self.t0 + .seconds(31))
        _ = Self.events(&timing)
        timing.connectionLost(LegacyAPNsError(.connectionFailed, "reset by peer"), now: Self.t0 + .seconds(32))
        #expect(
            Self.events(&timing).contains {
                if case .retrying(_, 1, .connectionLost, _, true) = $0 { true } else { false }
            })
    }

    /// A token that is old (here 61 minutes, a client that forgot to rotate) and refused as
    /// expired: one retry with a fresh token on a new connection. That fresh token refused as
    /// expired too says the clock is wrong: the send stops with that cause, nothing more is sent.
    @Test func anOldExpiredTokenIsRetriedOnceAndAFreshOneRefusedStopsTheSendNamingTheClock() {
        var machine = Self.machine(tokens: true)
        Self.connectAndSubmit(&machine, [1])
        let later = Self.t0 + .seconds(61 * 60)
        machine.received(ProviderResponse(rejecting: .expiredProviderToken), on: 1, now: later)
        #expect(machine.takeRequeued().first?.usedTokenRetry == true)
        #expect(machine.nextAction(now: later) == .close)
        machine.closed()
        #expect(machine.nextAction(now: later) == .connect(delay: .zero))
        machine.connected(now: later, serverStreamLimit: 1)
        #expect(machine.nextAction(now: later) == .mintToken)  // the new connection signs its own
        machine.tokenMinted(now: later)
        var retried = Self.entry(1)
        retried.usedTokenRetry = true
        retried.sends = 1
        machine.took([retried], now: later)
        guard case .submit(let again) = machine.nextAction(now: later) else { return }
        machine.submitted(again, stream: 1, now: later)
        machine.received(ProviderResponse(rejecting: .expiredProviderToken), on: 1, now: later + .seconds(1))
        #expect(machine.report.rejected.map(\.reason) == [.expiredProviderToken])
        #expect(machine.takeRequeued().isEmpty)
        #expect(machine.nextAction(now: later + .seconds(1)) == .close)
        machine.closed()
        #expect(machine.nextAction(now: later + .seconds(1)) == .finished)
        #expect(machine.report.failure?.code == .certificateRejected)
        #expect(machine.report.failure?.reason.contains("clock is probably wrong") == true, "\(machine.report)")
    }

    @Test func tokensAreRotatedAtFiftyMinutesNeverBefore() {
        var machine = Self.machine(tokens: true)
        Self.connectAndSubmit(&machine, [1])
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        let later = Self.t0 + .seconds(49 * 60)
        #expect(machine.nextAction(now: later) == .take(maximum: 100))
        machine.nothingToTake(retryAt: nil, now: later)
        let fifty = Self.t0 + .seconds(50 * 60)
        #expect(machine.nextAction(now: fifty) == .mintToken)
        machine.tokenMinted(now: fifty)
        #expect(machine.nextAction(now: fifty) == .take(maximum: 100))
    }

    @Test func credentialsThatCannotSucceedStopTheSendAfterTheAnswersInFlight() {
        var machine = Self.machine(tokens: true)
        Self.connectAndSubmit(&machine, [1])
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        Self.submit(&machine, [2, 3], firstStream: 3)
        machine.received(ProviderResponse(rejecting: .invalidProviderToken), on: 3, now: Self.t0)
        guard case .wait = machine.nextAction(now: Self.t0) else {
            Issue.record("stream 5 still answers")
            return
        }
        machine.received(ProviderResponse(rejecting: .invalidProviderToken), on: 5, now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .close)
        machine.closed()
        #expect(machine.nextAction(now: Self.t0) == .finished)
        #expect(machine.report.failure?.stopsSending == true)
        #expect(machine.report.rejected.count == 2)
        #expect(machine.report.accepted == 1)
    }

    /// Taken while a PING was out and not yet submitted (the server lowered its stream limit
    /// meanwhile): when the PING goes unanswered they are not dropped with the connection, but
    /// are the next connection's first requests.
    @Test func entriesTakenWhileAPingIsOutSurviveItsTimeout() {
        var machine = Self.machine { $0.pingInterval = .seconds(60) }
        Self.connectAndSubmit(&machine, [1], limit: 3)
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        var now = Self.t0
        while now < Self.t0 + .seconds(60) {
            if case .take = machine.nextAction(now: now) { machine.nothingToTake(retryAt: nil, now: now) }
            now += .seconds(5)
        }
        #expect(machine.nextAction(now: Self.t0 + .seconds(60)) == .ping)
        now = Self.t0 + .seconds(61)
        #expect(machine.nextAction(now: now) == .take(maximum: 3))
        machine.took([Self.entry(2), Self.entry(3), Self.entry(4)], now: now)
        guard case .submit(let second) = machine.nextAction(now: now) else {
            Issue.record("expected a submit")
            return
        }
        machine.submitted(second, stream: 3, now: now)
        machine.settingsChanged(maximumConcurrentStreams: 1, now: now)
        guard case .wait = machine.nextAction(now: now) else {
            Issue.record("no free stream: expected a wait")
            return
        }
        #expect(machine.nextAction(now: Self.t0 + .seconds(80)) == .close)
        machine.closed()
        #expect(machine.takeRequeued().map(\.position) == [2])  // in flight: retried by the pool
        guard case .connect = machine.nextAction(now: Self.t0 + .seconds(81)) else {
            Issue.record("reconnects")
            return
        }
        machine.connected(now: Self.t0 + .seconds(81), serverStreamLimit: 100)
        for position: UInt64 in [3, 4] {
            guard case .submit(let entry) = machine.nextAction(now: Self.t0 + .seconds(81)) else {
                Issue.record("expected \(position) on the next connection")
                return
            }
            #expect(entry.position == position)
            machine.submitted(entry, stream: Int32(position), now: Self.t0 + .seconds(81))
        }
    }

    /// A slot backing off when the send ends has nothing to reconnect for: it finishes without a
    /// connection and without counting a failure.
    @Test func aSlotThatNeedsNoConnectionAnyMoreFinishes() {
        var machine = Self.machine()
        guard case .connect = machine.nextAction(now: Self.t0) else {
            Issue.record("expected a connect")
            return
        }
        machine.connectionNotNeeded()
        #expect(machine.nextAction(now: Self.t0) == .finished)
        #expect(machine.report.failure == nil)
        #expect(machine.report.connections == 0)
    }

    @Test func anUnansweredPingMeansTheConnectionIsDead() {
        var machine = Self.machine { $0.pingInterval = .seconds(60) }
        Self.connectAndSubmit(&machine, [1])
        machine.received(Self.ok(1), on: 1, now: Self.t0)
        machine.nothingToTake(retryAt: nil, now: Self.t0 + .seconds(59))
        machine.inputExhausted()
        // (an exhausted input closes at once; a paused one pings)
        var paused = Self.machine { $0.pingInterval = .seconds(60) }
        Self.connectAndSubmit(&paused, [1])
        paused.received(Self.ok(1), on: 1, now: Self.t0)
        var now = Self.t0
        while now < Self.t0 + .seconds(60) {
            if case .take = paused.nextAction(now: now) { paused.nothingToTake(retryAt: nil, now: now) }
            now += .seconds(5)
        }
        #expect(paused.nextAction(now: Self.t0 + .seconds(60)) == .ping)
        #expect(paused.nextAction(now: Self.t0 + .seconds(81)) == .close)
        paused.closed()
        guard case .connect = paused.nextAction(now: Self.t0 + .seconds(81)) else {
            Issue.record("reconnects")
            return
        }
    }

    @Test func connectFailuresBackOffAndGiveUpWhileCertificateProblemsStopAtOnce() {
        var machine = Self.machine(failures: 3)
        var delays: [Duration] = []
        while case .connect(let delay) = machine.nextAction(now: Self.t0) {
            delays.append(delay)
            machine.connectFailed(LegacyAPNsError(.connectionFailed, "connection refused"), now: Self.t0)
        }
        #expect(delays == [.zero, .milliseconds(100), .milliseconds(200)])
        #expect(machine.report.failure?.reason == "connection refused (gave up after 3 attempts in a row)")

        var refused = Self.machine()
        _ = refused.nextAction(now: Self.t0)
        refused.connectFailed(LegacyAPNsError(.certificateRejected, "unknown ca"), now: Self.t0)
        #expect(refused.nextAction(now: Self.t0) == .finished)
        #expect(refused.report.connections == 0)
    }

    @Test func aLocallyRefusedRequestIsRejectedWithoutARoundTrip() {
        var machine = Self.machine()
        #expect(machine.nextAction(now: Self.t0) == .connect(delay: .zero))
        machine.connected(now: Self.t0)
        _ = machine.nextAction(now: Self.t0)
        machine.took([Self.entry(1)], now: Self.t0)
        guard case .submit(let entry) = machine.nextAction(now: Self.t0) else { return }
        machine.refused(entry, reason: .payloadTooLarge)
        #expect(machine.report.rejected.first?.isLocal == true)
        #expect(machine.report.rejected.first?.status == 413)
        #expect(machine.takeFinalizedCount() == 1)
    }
}

/// A connection a completed send keeps open for the next one (`kept()`), and the next send's
/// machine taking it up (`resumed(now:serverStreamLimit:tokenMintedAt:)`).
@Suite struct ProviderConnectionMachineKeptConnectionTests {
    typealias Script = ProviderConnectionMachineTests
    static let t0 = Script.t0

    @Test func aCompletedSendMayKeepItsConnectionAndFinishesWithoutClosingIt() {
        var machine = Script.machine(tokens: true)
        Script.connectAndSubmit(&machine, [1])
        #expect(!machine.isClosingAfterCompletion)
        machine.received(Script.ok(1), on: 1, now: Self.t0)
        #expect(machine.nextAction(now: Self.t0) == .take(maximum: 100))
        machine.inputExhausted()
        #expect(machine.nextAction(now: Self.t0) == .close)
        #expect(machine.isClosingAfterCompletion)
        _ = machine.takeEvents()
        machine.kept()
        #expect(machine.nextAction(now: Self.t0) == .finished)
        #expect(machine.takeEvents().isEmpty, "no connectionClosed: the connection is still open")
        #expect(machine.report.accepted == 1)
    }

    @Test func aConnectionWindingDownAfterAGoawayIsNotClosingAfterCompletion() {
        var machine = Script.machine()
        Script.connectAndSubmit(&machine, [1])
        let goaway = [UInt8]().withUnsafeBytes { ProviderGoaway(lastStreamID: 1, errorCode: .noError, debugData: $0) }
        machine.receivedGoaway(goaway, now: Self.t0)
        machine.received(Script.ok(1), on: 1, now: Self.t0)
        machine.inputExhausted()
        #expect(machine.nextAction(now: Self.t0) == .close)
        #expect(!machine.isClosingAfterCompletion)
    }

    @Test func aResumedConnectionKeepsItsTokenUntilTheRefreshAgeAndSendsMoreThanOneStream() {
        var machine = Script.machine(tokens: true)
        let minted = Self.t0
        let now = Self.t0 + .seconds(10 * 60)
        #expect(machine.nextAction(now: now) == .connect(delay: .zero))
        machine.resumed(now: now, serverStreamLimit: 100, tokenMintedAt: minted)
        #expect(machine.nextAction(now: now) == .take(maximum: 100), "no new token, no one-stream rule")
        machine.took([Script.entry(1)], now: now)
        guard case .submit = machine.nextAction(now: now) else {
            Issue.record("expected the submit")
            return
        }
        // At the refresh age (50 minutes after the token was signed, not after the resume): a new one.
        var later = Script.machine(tokens: true)
        #expect(later.nextAction(now: now) == .connect(delay: .zero))
        later.resumed(now: now, serverStreamLimit: 100, tokenMintedAt: now - .seconds(50 * 60))
        #expect(later.nextAction(now: now) == .mintToken)
    }
}
