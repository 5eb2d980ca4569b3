import APNsCore
import APNsCredentials
internal import APNsRuntime

/// One client connection of the gateway port, as a non-blocking state machine a ``ServeLoop``
/// drives: handshake (with its deadline), then decode in bulk, apply faults, record, answer.
///
/// ```
/// handshaking ──▶ serving ──▶ delaying (--error-delay) ──▶ answering ──▶ draining ──▶ closed
///      │             │  └──────────────────────────────────────▲            ▲
///      │             └─ silent close, command 0, cut ───────────┼────────────┘
///      └─ failure, timeout ────────────────────────────────────────────────┘
/// ```
/// Draining is the gentle close: close_notify and FIN sent, whatever the client still sends read
/// and thrown away for the drain timeout, so closing does not reset the connection under an error
/// response the client has not read yet.
final class GatewaySession: LoopConnection {
    enum Verdict {
        /// Answer with this error response (command 0: close without one), then close gently.
        case reject(ErrorResponse, token: DeviceToken?, reason: String, command: Command)
        /// Answer a sender's ``ConfirmationBarrier`` (status 2 naming it), then close gently: not
        /// a rejection.
        case confirm(ErrorResponse)
        /// Answer status 10 naming the last accepted notification.
        case shutdown(UInt32)
        /// Close without a word.
        case silentClose
    }

    private enum Phase {
        case handshaking(deadline: Double)
        case serving
        /// Reading and discarding until `until`, then answering (``SimulatorFaults/errorResponseDelay``).
        case delaying(until: Double, response: [UInt8])
        /// Writing the error response (one byte per record with ``SimulatorFaults/splitErrorResponses``).
        case answering(bytes: [UInt8], offset: Int, nextWrite: Double, giveUp: Double)
        case draining(until: Double)
        case closed
    }

    /// Seconds a client may take no data before the simulator gives up writing to it.
    static let writeTimeout = 5.0
    /// TLS records read per turn before the loop serves the other connections.
    static let readsPerTurn = 16

    unowned let loop: ServeLoop
    let number: Int
    let client: String
    private let session: TLSSession
    private let simulator: GatewaySimulator
    private let configuration: GatewaySimulator.Configuration
    private var phase: Phase
    private(set) var interest: Readiness = .readable
    private(set) var hasWork = false
    private var decoder: FrameDecoder
    private var accepted = 0
    private var batch: [Frame] = []
    /// When the client last sent anything (the idle timeout).
    private var lastData: Double
    /// When the oldest incomplete frame began (the progress rule).
    private var partialSince: Double?
    /// Reads pause until then (``SimulatorFaults/readDelay``).
    private var nextRead = 0.0

    var descriptor: Int32 { session.socket.descriptor }

    init(loop: ServeLoop, number: Int, client: String, session: TLSSession, now: Double) {
        self.loop = loop
        self.number = number
        self.client = client
        self.session = session
        self.simulator = loop.simulator
        self.configuration = loop.simulator.configuration
        self.phase = .handshaking(deadline: now + configuration.handshakeTimeout.inSeconds)
        self.lastData = now
        self.decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: configuration.maximumPayloadSize, acceptsNotifications: true,
                acceptsErrorResponses: false))
        batch.reserveCapacity(512)
    }

    var deadline: Double? {
        switch phase {
        case .handshaking(let deadline): return deadline
        case .serving:
            var deadline = configuration.idleTimeout.map { lastData + $0.inSeconds }
            if let partialSince {
                deadline = Swift.min(deadline ?? .infinity, partialSince + configuration.frameTimeout.inSeconds)
            }
            if nextRead > 0 { deadline = Swift.min(deadline ?? .infinity, nextRead) }
            return deadline
        case .delaying(let until, _): return until
        case .answering(_, _, let nextWrite, let giveUp): return interest.isEmpty ? nextWrite : giveUp
        case .draining(let until): return until
        case .closed: return nil
        }
    }

    func service(ready: Readiness, now: Double) -> Bool {
        hasWork = false
        switch phase {
        case .handshaking(let deadline):
            handshake(now: now, deadline: deadline)
        case .serving:
            serve(now: now)
        case .delaying(let until, let response):
            // The client hanging up ends the delay: the answer is attempted at once.
            if !discardInput() || now >= until { answer(response, now: now) }
        case .answering:
            writeAnswer(now: now)
        case .draining(let until):
            if !session.socket.discardAvailable() || now >= until { close() }
        case .closed:
            break
        }
        if case .closed = phase { return false }
        return true
    }

    func end(evicted: Bool, now: Double) {
        switch phase {
        case .handshaking, .serving:
            configuration.recorder?.connectionClosed(number)
            if evicted {
                simulator.state.withLock { $0.statistics.evictions += 1 }
                drain(for: 0, now: now)
                simulator.emit(.evicted(connection: number, accepted: accepted))
                return
            } else if case .serving = phase {
                // The simulator stops: as a client would see it end.
                simulator.emit(.disconnected(connection: number, accepted: accepted))
            }
        case .delaying, .answering, .draining, .closed:
            break
        }
        close()
    }

    private func close() {
        if case .draining = phase {
            session.socket.close()  // close_notify went out when draining began
        } else {
            session.close()
        }
        phase = .closed
        simulator.release(number)
    }

    /// Starts the gentle close: nothing more counts against the limit.
    private func drain(for seconds: Double, now: Double) {
        simulator.release(number)
        session.beginGentleClose()
        interest = .readable
        phase = .draining(until: now + seconds)
        if seconds <= 0 { close() }
    }

    // MARK: - Handshake

    private func handshake(now: Double, deadline: Double) {
        let step = session.continueHandshake()
        switch step {
        case .done, .closed:
            handshakeCompleted(now: now)
        case .wantRead, .wantWrite:
            interest = step == .wantWrite ? .writable : .readable
            if now >= deadline {
                simulator.handshakeFailed(
                    client: client, error: LegacyAPNsError(.timedOut, "TLS handshake with \(client) timed out"))
                drain(for: configuration.drainTimeout.inSeconds, now: now)
            }
        case .failed(let error):
            // The alert OpenSSL queued gets the drain time to reach the client.
            simulator.handshakeFailed(client: client, error: error)
            drain(for: configuration.drainTimeout.inSeconds, now: now)
        }
    }

    private func handshakeCompleted(now: Double) {
        let resumed = session.didResume
        simulator.state.withLock {
            $0.statistics.connections += 1
            if resumed { $0.statistics.resumedConnections += 1 }
            $0.connections[number]?.lastProgress = now
        }
        let checksCertificate = configuration.environment != nil || !configuration.topics.isEmpty
        let certificate = checksCertificate || configuration.events != nil ? session.peerCertificate : nil
        if configuration.events != nil {  // describing the peer costs certificate parsing
            simulator.emit(
                .connected(
                    connection: number, client: client, subject: certificate?.subject ?? "(none)",
                    tlsVersion: session.protocolVersion + (resumed ? " resumed" : "")))
        }
        if checksCertificate, let reason = refusal(of: certificate) {
            // As Apple's gateway did: no answer, the connection just ends.
            simulator.state.withLock { $0.statistics.refusedCertificates += 1 }
            simulator.emit(.certificateRefused(connection: number, client: client, reason: reason))
            close()
            return
        }
        phase = .serving
        lastData = now
        serve(now: now)
    }

    /// Why the client certificate is not for this gateway, if it is not.
    private func refusal(of certificate: Certificate?) -> String? {
        guard let certificate else { return "no client certificate" }
        if let required = configuration.environment {
            let environment = certificate.environment
            if environment != .both && environment != required {
                return environment == .unknown
                    ? "the client certificate has no APNs environment marker (this gateway is \(required))"
                    : "the client certificate is for \(environment) and this gateway is \(required)"
            }
        }
        if !configuration.topics.isEmpty {
            let topics = certificate.topics.map(\.name)
            if !topics.contains(where: configuration.topics.contains) {
                let listed = topics.isEmpty ? "none" : topics.joined(separator: ", ")
                return "the client certificate's topics (\(listed)) include none of "
                    + configuration.topics.joined(separator: ", ")
            }
        }
        return nil
    }

    // MARK: - Serving

    private func serve(now: Double) {
        let faults = configuration.faults
        var reads = 0
        while reads < Self.readsPerTurn {
            if nextRead > now {
                interest = []
                return
            }
            nextRead = 0
            switch session.read(into: loop.buffer) {
            case .done(let count):
                reads += 1
                lastData = now
                // Decode after every read (one TLS record, up to 16 KiB), as a gateway does: a bad
                // frame is answered before more of the client's stream piles up behind it.
                decoder.append(UnsafeRawBufferPointer(rebasing: loop.buffer[0..<count]))
                if let verdict = decode(now: now, faults: faults) {
                    finish(verdict, now: now)
                    return
                }
                if faults.readDelay > .zero {
                    nextRead = now + faults.readDelay.inSeconds
                    interest = []
                    return
                }
            case .wantRead, .wantWrite:
                interest = .readable
                if let doomed = decoder.pendingFailure {
                    // The client paused inside a frame no bytes can make valid: answered now.
                    finish(Self.verdict(for: doomed), now: now)
                    return
                }
                checkProgress(now: now)
                return
            case .closed, .failed:
                configuration.recorder?.connectionClosed(number)
                simulator.emit(.disconnected(connection: number, accepted: accepted))
                close()
                return
            }
        }
        hasWork = true  // more may be waiting: after the other connections have had their turn
    }

    /// The idle timeout and the progress rule.
    private func checkProgress(now: Double) {
        // Both events come after the close, so a client that sees one already has the FIN.
        if let idle = configuration.idleTimeout, now - lastData >= idle.inSeconds {
            // A client that stalls (mid-frame or not) does not hold a slot forever.
            configuration.recorder?.connectionClosed(number)
            drain(for: 0, now: now)
            simulator.emit(.idleTimeout(connection: number, accepted: accepted))
        } else if let partialSince, now - partialSince >= configuration.frameTimeout.inSeconds {
            // Bytes keep coming but no frame completes: half a frame is nothing to answer.
            configuration.recorder?.connectionClosed(number)
            drain(for: 0, now: now)
            simulator.state.withLock { $0.statistics.progressTimeouts += 1 }
            simulator.emit(.progressTimeout(connection: number, accepted: accepted))
        }
    }

    /// Decodes what was read, records what was accepted, and returns the verdict if one is due.
    private func decode(now: Double, faults: SimulatorFaults) -> Verdict? {
        var verdict: Verdict?
        var commands = CommandCounts()
        decoding: while verdict == nil {
            let frame: Frame?
            do {
                frame = try decoder.next()
            } catch {
                verdict = Self.verdict(for: error)
                break decoding
            }
            guard case .notification(let notification, let command)? = frame else { break decoding }
            commands.add(command)
            let decision = decide(notification, command: command, faults: faults)
            if case .refuse(let fault) = decision {
                verdict = fault
                break decoding
            }
            accepted += 1
            let identifier = notification.identifier ?? 0
            batch.append(frame!)
            if case .acceptThenShutdown = decision {
                verdict = .shutdown(identifier)
            } else if let limit = faults.shutdownAfter, accepted == limit {
                verdict = .shutdown(identifier)
            } else if let limit = faults.closeAfter, accepted == limit {
                verdict = .silentClose
            }
        }
        let completed = !batch.isEmpty
        if !completed, commands.total > 0 {
            simulator.state.withLock { $0.statistics.receivedByCommand.add(commands) }  // refused ones
        }
        if completed {
            let count = batch.count
            simulator.state.withLock {
                $0.statistics.receivedByCommand.add(commands)
                $0.statistics.accepted += count
                $0.connections[number]?.lastProgress = now
            }
            configuration.recorder?.record(batch, connection: number)
            loop.recorded(now: now)
            batch.removeAll(keepingCapacity: true)
        }
        // The progress rule's clock: the oldest frame still incomplete began at most now.
        if decoder.bufferedByteCount == 0 {
            partialSince = nil
        } else if completed || partialSince == nil {
            partialSince = now
        }
        if verdict == nil, decoder.bufferedByteCount >= configuration.maximumBufferedBytes {
            verdict = .reject(
                ErrorResponse(status: .protocolError, identifier: 0), token: nil,
                reason: "more than \(configuration.maximumBufferedBytes) bytes without a complete frame",
                command: .enhanced)
        }
        return verdict
    }

    /// The answer to a malformed frame (a sender's confirmation barrier is confirmed).
    private static func verdict(for error: FrameDecodingError) -> Verdict {
        error.isConfirmationBarrier
            ? .confirm(error.errorResponse)
            : .reject(
                error.errorResponse, token: nil, reason: "byte \(error.offset): \(error.reason)", command: error.command
            )
    }

    enum Decision {
        case accept
        case acceptThenShutdown
        case refuse(Verdict)
    }

    /// Applies the configured faults to a well-formed notification.
    private func decide(_ notification: PushNotification, command: Command, faults: SimulatorFaults) -> Decision {
        let identifier = notification.identifier ?? 0
        func reject(_ status: StatusCode, _ reason: String) -> Decision {
            .refuse(
                .reject(
                    ErrorResponse(status: status, identifier: identifier), token: notification.token, reason: reason,
                    command: command))
        }
        if let status = faults.failingTokens[notification.token] {
            return reject(status, "token is on the fail list")
        }
        let (count, roll, pick): (Int, Double, UInt64) = simulator.state.withLock { state in
            state.received += 1
            let roll = Double(state.random.next() >> 11) / Double(1 << 53)
            return (state.received, roll, state.random.next())
        }
        if let every = faults.failEvery, every.count > 0, count % every.count == 0 {
            return reject(every.status, "--fail-every \(every.count): notification #\(count) fails")
        }
        if let random = faults.random {
            var threshold = random.silentClose
            if roll < threshold { return .refuse(.silentClose) }
            threshold += random.reject
            if roll < threshold {
                let statuses: [StatusCode] = [
                    .missingDeviceToken, .missingTopic, .missingPayload, .invalidTokenSize, .invalidTopicSize,
                    .invalidPayloadSize, .invalidToken, .protocolError, .unknown,
                ]
                return reject(statuses[Int(pick % UInt64(statuses.count))], "random fault")
            }
            threshold += random.processingError
            if roll < threshold { return reject(.processingError, "random fault") }
            threshold += random.shutdown
            if roll < threshold { return .acceptThenShutdown }
        }
        return .accept
    }

    // MARK: - Verdicts

    private func finish(_ verdict: Verdict, now: Double) {
        // Everything accepted on this connection reaches the recorder before the client can learn
        // of the verdict (its error response, or the close).
        configuration.recorder?.connectionClosed(number)
        simulator.release(number)
        let drainTime = configuration.drainTimeout.inSeconds
        switch verdict {
        case .silentClose:
            simulator.state.withLock { $0.statistics.silentCloses += 1 }
            simulator.emit(.closedSilently(connection: number, accepted: accepted))
            drain(for: drainTime, now: now)
        case .reject(let response, let token, let reason, let command):
            simulator.state.withLock { $0.statistics.rejected += 1 }
            simulator.emit(.rejected(connection: number, response: response, token: token, reason: reason))
            if command == .simple {
                // Apple's gateway had no way to name a command 0 frame: it just closed.
                drain(for: drainTime, now: now)
                return
            }
            respond(response, now: now)
        case .confirm(let response):
            simulator.state.withLock { $0.statistics.confirmationBarriers += 1 }
            simulator.emit(
                .confirmationAnswered(connection: number, identifier: response.identifier, accepted: accepted))
            respond(response, now: now)
        case .shutdown(let identifier):
            simulator.state.withLock { $0.statistics.shutdowns += 1 }
            simulator.emit(.shutdown(connection: number, identifier: identifier))
            respond(ErrorResponse(status: .shutdown, identifier: identifier), now: now)
        }
    }

    /// Sends the error response (after the configured delay, reading and discarding meanwhile),
    /// then closes gently.
    private func respond(_ response: ErrorResponse, now: Double) {
        let delay = configuration.faults.errorResponseDelay
        if delay > .zero {
            phase = .delaying(until: now + delay.inSeconds, response: response.bytes)
            interest = .readable
            if !discardInput() { answer(response.bytes, now: now) }
        } else {
            answer(response.bytes, now: now)
        }
    }

    /// Reads and throws away what the client sends while the answer is delayed. False once the
    /// client has hung up.
    private func discardInput() -> Bool {
        for _ in 0..<Self.readsPerTurn {
            switch session.read(into: loop.buffer) {
            case .done: continue
            case .wantRead, .wantWrite: return true
            case .closed, .failed: return false
            }
        }
        hasWork = true
        return true
    }

    private func answer(_ bytes: [UInt8], now: Double) {
        phase = .answering(bytes: bytes, offset: 0, nextWrite: now, giveUp: now + Self.writeTimeout)
        writeAnswer(now: now)
    }

    private func writeAnswer(now: Double) {
        guard case .answering(let bytes, var offset, let nextWrite, var giveUp) = phase else { return }
        let split = configuration.faults.splitErrorResponses
        while offset < bytes.count {
            if nextWrite > now && split {
                interest = []
                phase = .answering(bytes: bytes, offset: offset, nextWrite: nextWrite, giveUp: giveUp)
                return
            }
            let end = split ? offset + 1 : bytes.count
            let result = bytes.withUnsafeBytes { session.write(UnsafeRawBufferPointer(rebasing: $0[offset..<end])) }
            switch result {
            case .done(let count):
                offset += count
                giveUp = now + Self.writeTimeout
                if split && offset < bytes.count {
                    // One byte per TLS record, with short pauses: the client must reassemble.
                    interest = []
                    phase = .answering(bytes: bytes, offset: offset, nextWrite: now + 0.002, giveUp: giveUp)
                    return
                }
            case .wantWrite, .wantRead:
                guard now < giveUp else {
                    offset = bytes.count  // the client takes nothing: give up on the answer
                    break
                }
                interest = result == .wantWrite ? .writable : .readable
                phase = .answering(bytes: bytes, offset: offset, nextWrite: now, giveUp: giveUp)
                return
            case .closed, .failed:
                offset = bytes.count
            }
        }
        drain(for: configuration.drainTimeout.inSeconds, now: now)
    }
}
