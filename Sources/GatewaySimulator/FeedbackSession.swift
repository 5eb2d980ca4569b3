import APNsCore
import APNsCredentials
internal import APNsRuntime

/// One client of the feedback port, as a non-blocking state machine a ``ServeLoop`` drives:
/// handshake, then the tuples (handed out once, then forgotten), then a gentle close.
final class FeedbackSession: LoopConnection {
    private enum Phase {
        case handshaking(deadline: Double)
        /// Writing `bytes` in records of the configured chunk size.
        case sending(bytes: [UInt8], offset: Int, count: Int, giveUp: Double)
        case draining(until: Double)
        case closed
    }

    unowned let loop: ServeLoop
    let number: Int
    let client: String
    private let session: TLSSession
    private let simulator: GatewaySimulator
    private var phase: Phase
    private(set) var interest: Readiness = .readable
    var hasWork: Bool { false }
    var descriptor: Int32 { session.socket.descriptor }

    init(loop: ServeLoop, number: Int, client: String, session: TLSSession, now: Double) {
        self.loop = loop
        self.number = number
        self.client = client
        self.session = session
        self.simulator = loop.simulator
        self.phase = .handshaking(deadline: now + loop.simulator.configuration.handshakeTimeout.inSeconds)
    }

    var deadline: Double? {
        switch phase {
        case .handshaking(let deadline): deadline
        case .sending(_, _, _, let giveUp): giveUp
        case .draining(let until): until
        case .closed: nil
        }
    }

    func service(ready: Readiness, now: Double) -> Bool {
        switch phase {
        case .handshaking(let deadline):
            let step = session.continueHandshake()
            switch step {
            case .done, .closed:
                start(now: now)
            case .wantRead, .wantWrite:
                interest = step == .wantWrite ? .writable : .readable
                if now >= deadline {
                    simulator.handshakeFailed(
                        client: client, error: LegacyAPNsError(.timedOut, "TLS handshake with \(client) timed out"))
                    drain(now: now)
                }
            case .failed(let error):
                simulator.handshakeFailed(client: client, error: error)
                drain(now: now)
            }
        case .sending:
            send(now: now)
        case .draining(let until):
            if !session.socket.discardAvailable() || now >= until { close() }
        case .closed:
            break
        }
        if case .closed = phase { return false }
        return true
    }

    func end(evicted: Bool, now: Double) {
        if evicted, case .handshaking = phase {
            simulator.state.withLock { $0.statistics.evictions += 1 }
            simulator.emit(.evicted(connection: number, accepted: 0))
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

    private func drain(now: Double) {
        simulator.release(number)
        session.beginGentleClose()
        interest = .readable
        phase = .draining(until: now + simulator.configuration.drainTimeout.inSeconds)
    }

    private func start(now: Double) {
        simulator.state.withLock { $0.connections[number]?.lastProgress = now }
        let records: [FeedbackRecord] = simulator.state.withLock { state in
            defer { state.feedback = [] }
            return state.feedback
        }
        var writer = ByteWriter(capacity: records.count * 38)
        for record in records { record.encode(into: &writer) }
        phase = .sending(
            bytes: writer.bytes, offset: 0, count: records.count, giveUp: now + GatewaySession.writeTimeout)
        send(now: now)
    }

    /// Writes what the client takes now, one record per chunk; then counts and closes gently.
    private func send(now: Double) {
        guard case .sending(let bytes, var offset, let count, var giveUp) = phase else { return }
        let chunk = simulator.configuration.feedbackChunkSize ?? 16 * 1024
        sending: while offset < bytes.count {
            let end = Swift.min(bytes.count, offset + chunk)
            let result = bytes.withUnsafeBytes { session.write(UnsafeRawBufferPointer(rebasing: $0[offset..<end])) }
            switch result {
            case .done(let written):
                offset += written
                giveUp = now + GatewaySession.writeTimeout
            case .wantWrite, .wantRead:
                if now >= giveUp { break sending }  // the client takes nothing: stop here
                interest = result == .wantWrite ? .writable : .readable
                phase = .sending(bytes: bytes, offset: offset, count: count, giveUp: giveUp)
                return
            case .closed, .failed:
                break sending
            }
        }
        simulator.state.withLock { $0.statistics.feedbackServed += count }
        simulator.emit(.feedbackServed(client: client, count: count))
        drain(now: now)
    }
}
