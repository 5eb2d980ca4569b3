import APNsCore
import APNsCredentials
internal import APNsRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The owner of one connection slot: a single thread that runs the ``DeliveryStateMachine``
/// against real TLS connections.
///
/// It encodes frames into one reusable buffer and writes it in batches of
/// ``PushClient/Configuration/writeBatchSize`` bytes (one TLS record each, many frames per
/// syscall), and before every batch it reads whatever the gateway sent, without blocking, so an
/// error response is seen as soon as it arrives and reading never stalls writing. Not `Sendable`:
/// it lives and dies on its thread.
final class GatewayConnection {
    struct Settings: Sendable {
        var endpoint: Endpoint
        var context: TLSContext
        var format: FrameFormat
        var encoder: FrameEncoder
        var connectTimeout: Double
        var verdictTimeout: Double
        var idleConfirmationDelay: Double
        var writeBatchSize: Int
        var stallTimeout: Double
    }

    private let settings: Settings
    private let source: NotificationSource
    private let events: (@Sendable (PushEvent) -> Void)?
    private var machine: DeliveryStateMachine
    private var session: TLSSession? {
        willSet {
            // Keep the latest resumable session: reconnecting after an error response then costs no
            // certificate signatures.
            if let old = session, newValue !== old, let ticket = old.resumableTicket { self.ticket = ticket }
        }
    }
    private var ticket: TLSTicket?
    private let spare: SpareConnector
    /// Whether this slot keeps a spare connection ready (once error responses made it reconnect).
    private var usesSpares = false
    /// Whether the current connection should order a spare once its session ticket has arrived.
    private var spareWanted = false
    private var barrierIdentifier: UInt32?
    private var writer: ByteWriter
    private var decoder = FrameDecoder(configuration: .provider)
    private var local: [(UInt64, PushNotification)] = []
    private var localIndex = 0
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)

    init(
        slot: Int, settings: Settings, delivery: DeliveryStateMachine.Configuration, source: NotificationSource,
        events: (@Sendable (PushEvent) -> Void)?
    ) {
        self.settings = settings
        self.source = source
        self.events = events
        self.machine = DeliveryStateMachine(configuration: delivery, connection: slot)
        self.writer = ByteWriter(capacity: settings.writeBatchSize * 2)
        self.spare = SpareConnector(
            endpoint: settings.endpoint, context: settings.context, timeout: settings.connectTimeout)
        local.reserveCapacity(256)
    }

    deinit { readBuffer.deallocate() }

    /// Runs until every notification this slot took has a verdict.
    func run() -> SendReport {
        while true {
            let action = machine.nextAction()
            publishEvents()
            switch action {
            case .connect(let delay):
                Monotonic.sleep(delay)
                open()
            case .writeNew:
                guard let (position, notification) = nextInput() else { continue }
                if let status = settings.encoder.gatewayStatus(for: notification, format: settings.format) {
                    machine.refused(notification, position: position, status: status)
                    continue
                }
                let identifier = machine.wroteNew(notification, position: position)
                FrameEncoder.encodeValidated(notification, as: settings.format, identifier: identifier, into: &writer)
                if writer.count >= settings.writeBatchSize { pump(flushAll: false) }
            case .resend(let identifier, let notification):
                FrameEncoder.encodeValidated(notification, as: settings.format, identifier: identifier, into: &writer)
                if writer.count >= settings.writeBatchSize { pump(flushAll: false) }
            case .writeBarrier(let identifier):
                barrierIdentifier = identifier
                Self.encodeBarrier(identifier, into: &writer)
                pump(flushAll: true)
            case .awaitVerdict:
                pump(flushAll: true)
                awaitVerdict()
            case .close:
                session?.close()
                session = nil
                writer.clear()
                machine.closed(.unexpected(reason: "closed"))
            case .finished:
                // Taken but never written (the slot stopped early): accounted, not lost.
                while localIndex < local.count {
                    let (position, notification) = local[localIndex]
                    machine.abandoned(notification, position: position)
                    localIndex += 1
                }
                publishEvents()
                spare.stop()
                if machine.report.failure != nil { source.stop() }
                return machine.report
            }
        }
    }

    /// The confirmation barrier: an enhanced frame with token length 0 and payload length 0, which
    /// every gateway answers with an error response (status 2) naming `identifier`.
    static func encodeBarrier(_ identifier: UInt32, into writer: inout ByteWriter) {
        writer.writeInteger(Command.enhanced.rawValue)
        writer.writeInteger(identifier)
        writer.writeInteger(UInt32(0))
        writer.writeInteger(UInt16(0))
        writer.writeInteger(UInt16(0))
    }

    private func publishEvents() {
        let pending = machine.takeEvents()
        guard let events, !pending.isEmpty else { return }
        for event in pending { events(event) }
    }

    private func open() {
        do {
            if let ready = spare.take() {
                session = ready
            } else {
                session = try TLSSession.connect(
                    to: settings.endpoint, context: settings.context, timeout: settings.connectTimeout, resuming: ticket
                )
            }
            ticket = nil
            spareWanted = usesSpares
            barrierIdentifier = nil
            decoder = FrameDecoder(configuration: .provider)
            writer.clear()
            machine.connected()
        } catch let error as LegacyAPNsError {
            machine.connectFailed(error)
        } catch {
            machine.connectFailed(LegacyAPNsError(.connectionFailed, "\(error)"))
        }
    }

    // MARK: - Input

    /// The next notification from the shared input, or nil when there is none for now (the
    /// machine has then been told: input finished, or stalled with a barrier due, or a verdict
    /// or the end of the connection arrived while waiting).
    private func nextInput() -> (UInt64, PushNotification)? {
        if localIndex < local.count {
            defer { localIndex += 1 }
            return local[localIndex]
        }
        if take(timeout: 0) { return nextInput() }
        if sourceFinished { return nil }
        // The input is slow: let the gateway see what is buffered, and keep watching for its
        // verdicts while waiting. After a short idle period, confirm what is in flight.
        pump(flushAll: true)
        let stalledSince = Monotonic.now()
        while machine.isWriting {
            if take(timeout: 0.02) { return nextInput() }
            if sourceFinished { return nil }
            guard readAvailable() else { return nil }
            if Monotonic.now() - stalledSince >= settings.idleConfirmationDelay, machine.inputStalled() {
                return nil
            }
        }
        return nil
    }

    private var sourceFinished = false

    /// Refills the local batch; false when nothing came (and tells the machine if nothing will).
    private func take(timeout: Double) -> Bool {
        local.removeAll(keepingCapacity: true)
        localIndex = 0
        switch source.take(into: &local, maximum: 256, timeout: timeout) {
        case .taken:
            return true
        case .finished:
            sourceFinished = true
            machine.inputFinished()
            return false
        case .empty:
            return false
        }
    }

    // MARK: - Socket work

    /// Writes buffered frames: all of them (`flushAll`), or until less than one batch is left.
    /// Reads what the gateway sent first, every time. Blocks in poll(2) only when the socket is
    /// full, and then wakes for readability as well.
    private func pump(flushAll: Bool) {
        guard let session else {
            writer.clear()
            return
        }
        while true {
            guard readAvailable() else { return }
            if spareWanted, let ticket = session.resumableTicket {
                spareWanted = false
                spare.prepare(resuming: ticket)
            }
            if writer.isEmpty || (!flushAll && writer.count < settings.writeBatchSize) { return }
            let result = writer.withUnsafeReadableBytes { bytes in
                session.write(UnsafeRawBufferPointer(rebasing: bytes.prefix(settings.writeBatchSize)))
            }
            switch result {
            case .done(let count):
                writer.removeFirst(count)
            case .wantWrite, .wantRead:
                let events = Int16(POLLIN) | (result == .wantWrite ? Int16(POLLOUT) : 0)
                if session.socket.poll(events: events, timeout: settings.stallTimeout) == 0 {
                    connectionEnded(
                        LegacyAPNsError(
                            .timedOut, "\(session.peer) accepted no data for \(formatSeconds(settings.stallTimeout))"))
                    return
                }
            case .closed:
                // The error response may already be in the receive buffer: read before giving up.
                if readAvailable() {
                    connectionEnded(LegacyAPNsError(.connectionFailed, "\(session.peer) closed the connection"))
                }
                return
            case .failed(let error):
                if readAvailable() { connectionEnded(error) }
                return
            }
        }
    }

    /// Reads and handles everything the gateway has sent so far without blocking. Returns false
    /// when the connection is finished with (a verdict arrived, or it ended).
    private func readAvailable() -> Bool {
        guard let session else { return false }
        while true {
            switch session.read(into: readBuffer) {
            case .done(let count):
                decoder.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
                do {
                    while let frame = try decoder.next() {
                        if case .errorResponse(let response) = frame {
                            // Errors mean reconnects: from now on keep the next connection ready.
                            if response.identifier != barrierIdentifier { usesSpares = true }
                            machine.received(response)
                            writer.clear()  // the gateway discards whatever follows anyway
                            return false
                        }
                    }
                } catch {
                    connectionEnded(
                        LegacyAPNsError(
                            .connectionFailed, "\(session.peer) sent bytes that are not an error response (\(error))"))
                    return false
                }
            case .wantRead, .wantWrite:
                return true
            case .closed:
                connectionEnded(
                    LegacyAPNsError(
                        .connectionFailed, "\(session.peer) closed the connection without an error response"))
                return false
            case .failed(let error):
                connectionEnded(error)
                return false
            }
        }
    }

    /// Waits for the verdict on the barrier (or the end of the connection).
    private func awaitVerdict() {
        let deadline = Monotonic.now() + settings.verdictTimeout
        while let session, readAvailable() {
            let remaining = deadline - Monotonic.now()
            if remaining <= 0 {
                machine.verdictTimedOut()
                return
            }
            _ = session.socket.wait(for: Int16(POLLIN), timeout: remaining)
        }
    }

    /// The connection ended without a verdict.
    private func connectionEnded(_ error: LegacyAPNsError) {
        session?.close()
        session = nil
        writer.clear()
        if error.code == .certificateRejected {
            machine.closed(.certificateRejected(error))
        } else {
            machine.closed(.unexpected(reason: error.reason))
        }
    }
}
