import APNsCore
import APNsCredentials
internal import APNsRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// One client connection of the simulator: decode in bulk, apply faults, record, answer.
struct GatewaySession {
    let simulator: GatewaySimulator
    let connection: Int
    let client: String

    enum Verdict {
        /// Answer with this error response (command 0: close without one), then close gently.
        case reject(ErrorResponse, token: DeviceToken?, reason: String, command: Command)
        /// Answer status 10 naming the last accepted notification.
        case shutdown(UInt32)
        /// Close without a word.
        case silentClose
    }

    func run(_ socket: Socket) {
        let configuration = simulator.configuration
        let session: TLSSession
        do {
            session = try TLSSession.accept(
                socket, context: simulator.context, peer: client, timeout: configuration.handshakeTimeout.inSeconds,
                drainTimeout: configuration.drainTimeout.inSeconds)
        } catch {
            simulator.handshakeFailed(client: client, error: error)
            return
        }
        let resumed = session.didResume
        simulator.state.withLock {
            $0.statistics.connections += 1
            if resumed { $0.statistics.resumedConnections += 1 }
        }
        if configuration.events != nil {  // describing the peer costs certificate parsing
            simulator.emit(
                .connected(
                    connection: connection, client: client, subject: session.peerSubject ?? "(none)",
                    tlsVersion: session.protocolVersion + (resumed ? " resumed" : "")))
        }

        var decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: configuration.maximumPayloadSize, acceptsNotifications: true,
                acceptsErrorResponses: false))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var accepted = 0
        var lastIdentifier: UInt32 = 0
        var batch: [Frame] = []
        batch.reserveCapacity(512)
        let faults = configuration.faults

        var lastActivity = Monotonic.now()
        while !simulator.isStopping {
            if faults.readDelay > .zero { Monotonic.sleep(faults.readDelay.inSeconds) }
            // Decode after every read (one TLS record, up to 16 KiB), as a gateway does: a bad frame
            // is answered before more of the client's stream piles up behind it.
            var gotData = false
            var ended = false
            switch session.read(into: buffer) {
            case .done(let count):
                decoder.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                gotData = true
            case .wantRead, .wantWrite:
                break
            case .closed, .failed:
                ended = true
            }
            var verdict: Verdict?
            decoding: while verdict == nil {
                let frame: Frame?
                do {
                    frame = try decoder.next()
                } catch {
                    verdict = .reject(
                        error.errorResponse, token: nil, reason: "byte \(error.offset): \(error.reason)",
                        command: error.command)
                    break decoding
                }
                guard case .notification(let notification, let command)? = frame else { break decoding }
                let decision = decide(notification, command: command, faults: faults)
                if case .refuse(let fault) = decision {
                    verdict = fault
                    break decoding
                }
                accepted += 1
                lastIdentifier = notification.identifier ?? 0
                batch.append(frame!)
                if case .acceptThenShutdown = decision {
                    verdict = .shutdown(lastIdentifier)
                } else if let limit = faults.shutdownAfter, accepted == limit {
                    verdict = .shutdown(lastIdentifier)
                } else if let limit = faults.closeAfter, accepted == limit {
                    verdict = .silentClose
                }
            }
            if !batch.isEmpty {
                simulator.state.withLock { $0.statistics.accepted += batch.count }
                configuration.recorder?.record(batch, connection: connection)
                batch.removeAll(keepingCapacity: true)
            }
            if verdict == nil, decoder.bufferedByteCount >= configuration.maximumBufferedBytes {
                verdict = .reject(
                    ErrorResponse(status: .protocolError, identifier: 0), token: nil,
                    reason: "more than \(configuration.maximumBufferedBytes) bytes without a complete frame",
                    command: .enhanced)
            }
            if let verdict {
                finish(session, verdict: verdict, accepted: accepted)
                return
            }
            if ended { break }
            if gotData {
                lastActivity = Monotonic.now()
            } else {
                if let idle = configuration.idleTimeout, Monotonic.now() - lastActivity > idle.inSeconds {
                    // A client that stalls (mid-frame or not) does not hold a slot forever.
                    session.closeGently(drainTimeout: 0)
                    simulator.emit(.idleTimeout(connection: connection, accepted: accepted))
                    return
                }
                _ = session.wait(for: .readable, timeout: 0.1)
            }
        }
        simulator.emit(.disconnected(connection: connection, accepted: accepted))
        session.close()
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

    private func finish(_ session: TLSSession, verdict: Verdict, accepted: Int) {
        let configuration = simulator.configuration
        switch verdict {
        case .silentClose:
            simulator.state.withLock { $0.statistics.silentCloses += 1 }
            simulator.emit(.closedSilently(connection: connection, accepted: accepted))
            session.closeGently(drainTimeout: configuration.drainTimeout.inSeconds)
        case .reject(let response, let token, let reason, let command):
            simulator.state.withLock { $0.statistics.rejected += 1 }
            simulator.emit(.rejected(connection: connection, response: response, token: token, reason: reason))
            if command == .simple {
                // Apple's gateway had no way to name a command 0 frame: it just closed.
                session.closeGently(drainTimeout: configuration.drainTimeout.inSeconds)
                return
            }
            respond(session, response)
        case .shutdown(let identifier):
            simulator.state.withLock { $0.statistics.shutdowns += 1 }
            simulator.emit(.shutdown(connection: connection, identifier: identifier))
            respond(session, ErrorResponse(status: .shutdown, identifier: identifier))
        }
    }

    /// Sends the error response (after the configured delay, reading and discarding meanwhile),
    /// then closes gently.
    private func respond(_ session: TLSSession, _ response: ErrorResponse) {
        let faults = simulator.configuration.faults
        if faults.errorResponseDelay > .zero {
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
            defer { scratch.deallocate() }
            session.discardInput(for: faults.errorResponseDelay.inSeconds, into: scratch)
        }
        let bytes = response.bytes
        if faults.splitErrorResponses {
            for byte in bytes {
                guard session.writeAll([byte], timeout: Self.writeTimeout) == nil else { break }
                Monotonic.sleep(0.002)
            }
        } else {
            _ = session.writeAll(bytes, timeout: Self.writeTimeout)
        }
        session.closeGently(drainTimeout: simulator.configuration.drainTimeout.inSeconds)
    }

    /// Seconds a client may take no data before the simulator gives up writing to it.
    static let writeTimeout = 5.0
}
