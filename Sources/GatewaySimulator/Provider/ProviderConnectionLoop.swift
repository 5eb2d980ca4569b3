import APNsCore
import APNsCredentials
internal import APNsRuntime

/// The TLS shell of one ``ProviderConnection``, on the connection's own thread: TLS handshake,
/// then a loop over the connection's `Transport` (the TLS session) that reads what the client
/// sent, lets the connection answer, writes what it has (never blocking: a slow reader gets its
/// bytes as it takes them), and waits in `poll(2)` (through `Transport.wait(for:timeout:)`) for
/// the socket or the next timer.
///
/// Bounds: while more than ``ProviderSimulator/Limits/maximumBufferedOutput`` bytes wait for the
/// client, nothing more is read from it; when it takes none for
/// ``ProviderSimulator/Limits/writeTimeout``, it is cut off.
struct ProviderConnectionLoop {
    let policy: ProviderPolicy
    let context: TLSContext
    let number: Int
    let client: String
    /// What the accept thread sees of this connection (progress; its eviction to make room).
    let activity: ProviderConnectionActivity
    /// False on the management port: channel management only.
    var servesPushes = true

    /// The longest wait, so a stopping simulator is noticed quickly.
    static let tick = 0.1

    func run(_ socket: Socket) {
        let limits = policy.limits
        let tls: TLSSession
        do {
            tls = try TLSSession.accept(
                socket, context: context, peer: client, timeout: limits.handshakeTimeout.inSeconds,
                drainTimeout: 1,
                interruption: activity.handshake.interruption(
                    reason: "closed in its TLS handshake to make room for a new client"))
            guard activity.handshake.finish() else {
                tls.close()
                throw LegacyAPNsError(.cancelled, "closed in its TLS handshake to make room for a new client")
            }
            activity.progressed(now: Monotonic.now())
        } catch {
            activity.handshake.finish()
            policy.update { $0.handshakeFailures += 1 }
            policy.emit(.handshakeFailed(client: client, reason: (error as? LegacyAPNsError)?.reason ?? "\(error)"))
            return
        }
        let authentication: ProviderConnection.Authentication
        var described: ProviderSimulatorEvent.Authentication = .token
        if let certificate = tls.peerCertificate {
            var topics: [String] = []
            for topic in [certificate.topic].compactMap({ $0 }) + certificate.topics.map(\.name)
            where !topics.contains(topic) {
                topics.append(topic)
            }
            authentication = .certificate(topics: topics, environment: certificate.environment)
            if policy.events != nil {
                described = .certificate(
                    subject: certificate.subject, topics: topics, environment: certificate.environment)
            }
        } else {
            authentication = .token
        }
        policy.update {
            $0.connections += 1
            if case .certificate = authentication { $0.certificateConnections += 1 }
        }
        if policy.events != nil {
            policy.emit(
                .connected(
                    connection: number, client: client, tlsVersion: tls.protocolVersion,
                    applicationProtocol: tls.applicationProtocol, authentication: described))
        }
        let connection: ProviderConnection
        do {
            connection = try ProviderConnection(
                policy: policy, number: number, authentication: authentication, now: Monotonic.now(),
                servesPushes: servesPushes)
        } catch {
            tls.close()
            return
        }
        if serve(connection, over: tls) == .reset { reset(connection, tls) }
        connection.finish()
        policy.emit(
            .disconnected(
                connection: number, accepted: connection.acceptedCount, rejected: connection.rejectedCount))
    }

    /// How ``serve(_:over:)`` ended.
    private enum Ending {
        /// It said goodbye and closed the transport.
        case closed
        /// A fault wants the connection reset (a TCP RST, which only the socket can do).
        case reset
    }

    private func serve(_ connection: ProviderConnection, over transport: any Transport) -> Ending {
        let limits = policy.limits
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { input.deallocate() }
        var output = ByteWriter(capacity: 64 * 1024)
        var written = 0
        var lastInput = Monotonic.now()
        var lastOutputProgress = lastInput
        var stopDeadline: Double?
        /// Whether the last read stopped before the TLS layer ran dry.
        var inputMayBePending = false
        /// Since when TLS has needed to write before reading on.
        var readNeedsWritable: Double?
        let outputBound = limits.maximumBufferedOutput
        var requestsSeen = 0

        while true {
            var now = Monotonic.now()
            if stopDeadline == nil, policy.isStopping {
                connection.goaway(reason: .shutdown)
                stopDeadline = now + 1
            }

            // Read what is there, unless the client is not taking its answers.
            var peerGone = false
            if connection.wantsRead, output.count - written < outputBound {
                // Until the TLS layer has nothing more (OpenSSL reads ahead: bytes it holds are
                // invisible to poll), unless the answers pile up or the batch is large.
                inputMayBePending = true
                reading: for _ in 0..<16 {
                    switch transport.read(into: input) {
                    case .done(let count):
                        lastInput = now
                        readNeedsWritable = nil
                        do {
                            try connection.receive(UnsafeRawBufferPointer(rebasing: input[0..<count]), now: now)
                        } catch {
                            break reading  // nghttp2's GOAWAY is queued; send it and end
                        }
                        if output.count - written >= outputBound { break reading }
                    case .wantRead:
                        inputMayBePending = false
                        readNeedsWritable = nil
                        break reading
                    case .wantWrite:
                        // TLS must send before it can read on (the client takes nothing).
                        inputMayBePending = false
                        if readNeedsWritable == nil { readNeedsWritable = now }
                        break reading
                    case .closed, .failed:
                        peerGone = true
                        break reading
                    }
                }
            }
            connection.tick(now: now)
            if connection.completedRequests != requestsSeen {
                requestsSeen = connection.completedRequests
                activity.progressed(now: now)
            }
            activity.setOwesNothing(connection.owesNothing)
            if activity.isEvicted, connection.cutOffReason == nil {
                connection.terminate(errorCode: .noError, reason: "closed to make room for a new client (idle)")
            }
            if connection.resetRequested { return .reset }

            // Write what there is, as far as the client takes it.
            var produced = false
            if output.count - written < outputBound, connection.wantsWrite {
                if written == output.count {
                    output.clear()
                    written = 0
                }
                let before = output.count
                do {
                    try connection.send(into: &output)
                } catch {
                    break
                }
                produced = output.count > before
            }
            writing: while written < output.count {
                let result = output.withUnsafeReadableBytes {
                    transport.write(UnsafeRawBufferPointer(rebasing: $0[written...]))
                }
                switch result {
                case .done(let count):
                    written += count
                    lastOutputProgress = now
                case .wantWrite, .wantRead:
                    break writing
                case .closed, .failed:
                    peerGone = true
                    break writing
                }
            }
            if written == output.count {
                output.clear()
                written = 0
                lastOutputProgress = now
            }

            if peerGone { break }
            if connection.cutOffReason != nil || connection.protocolError != nil {
                if written == output.count || now - lastOutputProgress > 1 { break }
            } else if connection.isFinished, written == output.count {
                break
            }
            if let stopDeadline, now > stopDeadline { break }
            let writeStalled = written < output.count && now - lastOutputProgress > limits.writeTimeout.inSeconds
            let readStalled = readNeedsWritable.map { now - $0 > limits.writeTimeout.inSeconds } ?? false
            if writeStalled || readStalled {
                connection.terminate(
                    errorCode: .enhanceYourCalm,
                    reason:
                        "the client took no data for \(formatSeconds(limits.writeTimeout.inSeconds)) (responses never read)"
                )
                break
            }
            if let idle = limits.idleTimeout, now - lastInput > idle.inSeconds, connection.goawayLastStream == nil {
                connection.goaway(reason: .idleTimeout)
            }

            // Wait for the socket, or the next timer.
            var events: Readiness = []
            if connection.wantsRead, output.count - written < outputBound { events.insert(.readable) }
            if written < output.count || readNeedsWritable != nil { events.insert(.writable) }
            if produced, connection.wantsWrite, output.count - written < outputBound { continue }
            if inputMayBePending, connection.wantsRead, output.count - written < outputBound { continue }
            now = Monotonic.now()
            var timeout = Self.tick
            if let deadline = connection.nextDeadline { timeout = min(timeout, max(0, deadline - now)) }
            _ = transport.wait(for: events, timeout: timeout)
        }
        // Whatever is left goes out if it can, then close_notify and a FIN.
        if written < output.count {
            _ = output.withUnsafeReadableBytes { transport.write(UnsafeRawBufferPointer(rebasing: $0[written...])) }
        }
        transport.closeGently(drainTimeout: connection.cutOffReason == nil ? 0.2 : 0)
        return .closed
    }

    private func reset(_ connection: ProviderConnection, _ tls: TLSSession) {
        policy.update { $0.resets += 1 }
        policy.emit(.reset(connection: number, unanswered: 1))
        tls.socket.abort()
    }
}
