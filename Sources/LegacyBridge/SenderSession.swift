import APNsCore
import APNsCredentials
internal import APNsRuntime

/// One legacy sender connection: a thread that reads its frames, admits them into a
/// ``BridgeSenderMachine``, sends them upstream with the session's tags, and writes the one answer
/// the binary protocol allows; verdicts arrive on the upstream threads through ``settle(tag:verdict:fromMemory:)``.
///
/// The session outlives its thread: after the answer (or the sender's disconnect) it stays
/// registered until the last of its notifications has its verdict, which then goes to the resend
/// memory or the reports.
final class SenderSession: @unchecked Sendable {
    // @unchecked: `machine`, `held`, `waitingForVerdicts`, `threadEnded` and `topic` are guarded by
    // `lock` (topic is written once before the session's first submission); the rest is immutable
    // or owned by the session thread.
    let id: UInt32
    let connection: UInt64
    let client: String
    private unowned let core: BridgeCore
    private let lock = ConditionLock()
    private var machine: BridgeSenderMachine
    /// Resends waiting for their earlier copy's verdict (by sequence): sent upstream themselves if
    /// that copy gets none.
    private var held: [UInt64: ProviderRequest] = [:]
    private var waitingForVerdicts = false
    private var threadEnded = false
    private(set) var topic: String?
    /// The identifier of the confirmation barrier that ended the input, if one did.
    private var barrier: UInt32?
    /// When the sender last completed a frame (or connected): how idle it is, for eviction.
    private var lastFrameAt = Monotonic.now()
    /// Set by the accept thread at the connection limit: close to make room for a new sender.
    private var evictRequested = false
    /// From the accept to the end of the TLS handshake (the upstream's readiness included): the
    /// accept thread may close the connection meanwhile to make room (see ``Bridge``).
    let handshake: PendingHandshake
    private let wake: WakeSignal
    /// The requests one `admit` sends upstream (the session thread's, kept for its capacity).
    private var forwarding: [(request: ProviderRequest, tag: UInt64)] = []

    /// The largest frame payload taken (a VoIP push's HTTP/2 limit); the push type's own limit is
    /// checked per notification.
    static let maximumPayloadSize = 5120

    init(id: UInt32, connection: UInt64, client: String, core: BridgeCore, handshake: PendingHandshake) {
        self.id = id
        self.handshake = handshake
        self.wake = handshake.wake ?? WakeSignal()
        self.connection = connection
        self.client = client
        self.core = core
        var machineConfiguration = BridgeSenderMachine.Configuration()
        machineConfiguration.window = core.configuration.strictOrder ? 1 : core.configuration.window
        self.machine = BridgeSenderMachine(configuration: machineConfiguration)
    }

    private func tag(_ sequence: UInt64) -> UInt64 { (UInt64(id) << 32) | (sequence & 0xFFFF_FFFF) }

    /// Wakes the session thread (the bridge is stopping).
    func poke() { wake.signal() }

    /// How long the sender has gone without completing a frame while nothing of it is in flight,
    /// or nil when it is busy, still in its handshake (``handshake`` decides then) or already
    /// leaving: the accept thread's measure for eviction.
    func idleness(now: Double) -> Double? {
        guard !handshake.isPending else { return nil }
        return lock.withLock {
            guard !evictRequested, !threadEnded, machine.outstanding == 0, machine.isAdmitting else { return nil }
            return now - lastFrameAt
        }
    }

    /// Asks the session to close (gently) so a new sender can be served.
    func evict() {
        lock.withLock { evictRequested = true }
        wake.signal()
    }

    // MARK: - Verdicts (upstream threads)

    /// The verdict for the notification with `tag`.
    ///
    /// `fromMemory`: the verdict is an earlier copy's (a resend acknowledged without delivery).
    /// `possibleDuplicate`: upstream sent it again after an attempt that may have been delivered.
    func settle(tag: UInt64, verdict: BridgeVerdict, fromMemory: Bool = false, possibleDuplicate: Bool = false) {
        let sequence = tag & 0xFFFF_FFFF
        let (aftermath, wakeThread, finished, item):
            (BridgeSenderMachine.Aftermath, Bool, Bool, BridgeSenderMachine.Item?) = lock.withLock {
                held[sequence] = nil
                let item = fromMemory || possibleDuplicate ? machine.item(sequence: sequence) : nil
                let aftermath = machine.settle(sequence: sequence, verdict: verdict)
                var finished = false
                if threadEnded, case .finished = machine.nextAction() { finished = true }
                // An answer due wakes the thread wherever it waits: a sender that has stopped
                // writing leaves it waiting on the socket, not for verdicts, and its error
                // response must not wait for the poll's time-out.
                let due = !threadEnded && machine.hasActionDue
                return (aftermath, due || (waitingForVerdicts && worthWaking), finished, item)
            }
        if let item {
            if fromMemory, verdict.isSuccess {
                core.emit(.acknowledgedResend(connection: connection, identifier: item.identifier))
            }
            if possibleDuplicate {
                core.emit(.possibleDuplicate(connection: connection, identifier: item.identifier, token: item.token))
            }
        }
        core.handle(aftermath, connection: connection)
        if wakeThread { wake.signal() }
        if finished { core.unregister(id) }
    }

    /// Whether a thread waiting for verdicts has something to do now (under `lock`): an answer or
    /// the end is due, or, while frames are admitted, the window has a good part free. Waking it
    /// for every verdict would make it admit one frame per wake-up with a full window, and look at
    /// a failure not yet answerable after every verdict (a system call and a context switch per
    /// notification); an eighth of the window at a time keeps the pipeline full at a fraction of
    /// the cost.
    private var worthWaking: Bool {
        if machine.hasActionDue { return true }
        guard machine.isAdmitting else { return false }
        return machine.outstanding == 0 || machine.room >= Swift.max(1, machine.configuration.window / 8)
    }

    /// A resend held for its earlier copy goes upstream itself (that copy got no verdict).
    ///
    /// Only while the sender is still to be answered: once it was (or left), its next copy is the
    /// one to deliver, and delivering this one too would deliver it twice.
    func forwardHeld(tag: UInt64) {
        let sequence = tag & 0xFFFF_FFFF
        let (request, willAnswer): (ProviderRequest?, Bool) = lock.withLock {
            (held.removeValue(forKey: sequence), machine.willAnswer)
        }
        guard let request else { return }
        if willAnswer {
            forward(request, sequence: sequence)
        } else {
            settle(
                tag: tag, verdict: .unavailable(reason: "its earlier copy got no verdict; the sender sends it again"))
        }
    }

    /// Sends the admitted requests upstream in one submission (what a read of the sender's frames
    /// admitted), each settled as unavailable if the upstream takes none of them.
    private func forwardAll(_ batch: [(request: ProviderRequest, tag: UInt64)]) {
        guard !batch.isEmpty else { return }
        core.count { $0.forwarded += batch.count }
        if let failure = core.upstream.submit(contentsOf: batch) {
            core.count { $0.unavailable += batch.count }
            for (_, tag) in batch {
                settle(tag: tag, verdict: .unavailable(reason: "upstream unavailable: \(failure.reason)"))
            }
        }
    }

    private func forward(_ request: ProviderRequest, sequence: UInt64) {
        core.count { $0.forwarded += 1 }
        if let failure = core.upstream.submit(request, tag: tag(sequence)) {
            core.count { $0.unavailable += 1 }
            settle(tag: tag(sequence), verdict: .unavailable(reason: "upstream unavailable: \(failure.reason)"))
        }
    }

    // MARK: - The session thread

    /// Serves the sender until the answer, its disconnect, an idle timeout or the bridge's stop.
    func run(_ socket: Socket) {
        if core.upstream.readiness(timeout: core.configuration.handshakeTimeout.inSeconds) != nil {
            // Nothing it sent could be delivered: refused before the handshake, so it has sent
            // nothing (the outage is reported once, not per sender; the feedback port stays open).
            core.count { $0.refusedConnections += 1 }
            handshake.finish()
            socket.close()
            end(reason: nil)
            return
        }
        guard let session = core.acceptSender(socket, client: client, pending: handshake) else {
            end(reason: nil)
            return
        }
        let certificate = session.peerCertificate
        let fingerprint = certificate?.sha256Fingerprint ?? []
        let identity = core.senderIdentity(of: certificate, fingerprint: fingerprint)
        let senderTopic = core.translation.fixedTopic ?? identity.topic
        lock.withLock {
            topic = senderTopic
            lastFrameAt = Monotonic.now()  // idle from the end of its handshake on
        }
        core.count { $0.senderConnections += 1 }
        core.emit(
            .senderConnected(
                connection: connection, client: client, subject: identity.subject ?? "(none)", topic: senderTopic))
        let reason = serve(session, fingerprint: fingerprint, senderTopic: identity.topic)
        end(reason: reason)
    }

    private func end(reason: String?) {
        let (finished, delivered): (Bool, Int) = lock.withLock {
            threadEnded = true
            waitingForVerdicts = false
            if case .finished = machine.nextAction() { return (true, machine.delivered) }
            return (false, machine.delivered)
        }
        if let reason { core.emit(.senderDisconnected(connection: connection, delivered: delivered, reason: reason)) }
        if finished { core.unregister(id) }
    }

    private struct Decoded {
        var notification: PushNotification
        var command: Command
        var key: BridgeResendKey
    }

    /// The read loop; returns why it ended.
    private func serve(_ session: TLSSession, fingerprint: [UInt8], senderTopic: String?) -> String {
        let configuration = core.configuration
        var decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: Self.maximumPayloadSize, acceptsNotifications: true, acceptsErrorResponses: false))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        let digest = ContentDigest()
        var decoded: [Decoded] = []
        decoded.reserveCapacity(256)
        var lastActivity = Monotonic.now()
        var partialSince: Double?
        var stopDeadline: Double?
        var mayHaveFrames = false
        /// Whether the last read took everything the sender had sent (it paused).
        var readAll = false

        while true {
            // 1. Answer when the machine says so; leave when it is over.
            let (action, room, admitting) = lock.withLock { () -> (BridgeSenderMachine.Action, Int, Bool) in
                let action = machine.nextAction()
                if case .answer(let answer) = action {
                    // Remembered under the session's lock, so no verdict for these can slip past.
                    core.memory.withLock { memory in
                        let now = Duration.seconds(Monotonic.now())
                        for item in answer.settledAfter {
                            if let verdict = item.verdict { memory.remember(item.key, verdict: verdict, now: now) }
                        }
                        for item in answer.pendingAfter { memory.rememberPending(item.key) }
                    }
                }
                let room = machine.room
                return (action, room, machine.isAdmitting)
            }
            switch action {
            case .answer(let answer):
                return deliver(answer, on: session)
            case .finished:
                session.closeGently(drainTimeout: 0.5)
                return "closed"
            case .none:
                break
            }

            // 2. The bridge is stopping: take nothing more, drain, then give up on what is left.
            let now = Monotonic.now()
            if core.isStopping, stopDeadline == nil {
                stopDeadline = now + configuration.drainTimeout.inSeconds
                lock.withLock { machine.stop() }
                continue
            }
            if let deadline = stopDeadline, now >= deadline {
                let aftermaths = lock.withLock { machine.abandon(reason: "the bridge is stopping") }
                for aftermath in aftermaths { core.handle(aftermath, connection: connection) }
                stopDeadline = .infinity
                continue
            }

            // 3. Complete frames already buffered go first.
            if admitting, room > 0, mayHaveFrames {
                let (ended, filled) = admit(
                    from: &decoder, room: room, into: &decoded, digest: digest, fingerprint: fingerprint,
                    senderTopic: senderTopic)
                if let ended { return ended }
                mayHaveFrames = filled
                if !filled, readAll, let doomed = decoder.pendingFailure {
                    // The sender paused inside a frame that no bytes can make valid (an item frame
                    // longer than any, a payload over the limit): answered now, not at the frame
                    // deadline.
                    lock.withLock { noteMalformed(doomed) }
                }
                if !decoded.isEmpty { lock.withLock { lastFrameAt = now } }
                // The clock runs from the first byte of a frame that is not complete yet: a frame
                // completed restarts it, so a sender streaming at full speed is never cut off.
                if decoder.bufferedByteCount == 0 {
                    partialSince = nil
                } else if !decoded.isEmpty || partialSince == nil {
                    partialSince = now
                }
                continue
            }

            // 4. Wait: for the sender's bytes when they are wanted (or dropped, once failing), for
            //    verdicts when the window is full or an answer waits for them.
            let readsSocket = room > 0 || !admitting
            lock.withLock { waitingForVerdicts = !admitting || room == 0 }
            guard readsSocket else {
                _ = wake.wait(timeout: 0.5)
                // Not reading is the bridge's doing (a full window): the sender's frame clock stops.
                if partialSince != nil { partialSince = Monotonic.now() }
                continue
            }
            _ = session.wait(for: .readable, timeout: 0.5, wake: wake)

            // 5. Read what arrived (bytes after a failure are read and dropped: they no longer count).
            var gotData = false
            readAll = false
            reading: while true {
                switch session.read(into: buffer) {
                case .done(let count):
                    gotData = true
                    guard admitting else { continue }
                    decoder.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    mayHaveFrames = true
                    if decoder.bufferedByteCount >= 256 * 1024 { break reading }  // decode before reading on
                case .wantRead, .wantWrite:
                    readAll = true
                    break reading
                case .closed:
                    return senderLeft("the sender closed the connection", session)
                case .failed(let error):
                    return senderLeft(error.reason, session)
                }
            }
            let afterRead = Monotonic.now()
            if gotData { lastActivity = afterRead }
            if lock.withLock({ evictRequested }) {
                return senderLeft(
                    "closed to make room for a new sender (idle, nothing in flight)", session, closing: true)
            }
            if let partialSince, afterRead - partialSince > configuration.frameTimeout.inSeconds {
                // A sender trickling a frame cannot hold its slot.
                return senderLeft(
                    "no complete frame within \(configuration.frameTimeout) (\(decoder.bufferedByteCount) bytes "
                        + "pending)", session, closing: true)
            } else if !gotData, lock.withLock({ machine.outstanding == 0 }),
                afterRead - lastActivity > configuration.idleTimeout.inSeconds
            {
                return senderLeft("idle for \(configuration.idleTimeout)", session, closing: true)
            }
        }
    }

    /// Decodes up to `room` frames, admits them, and sends them on (or answers them from memory
    /// or locally). Returns why the session must end, if it must (never, so far), and whether the
    /// room was filled (more complete frames may be buffered).
    private func admit(
        from decoder: inout FrameDecoder, room: Int, into decoded: inout [Decoded], digest: ContentDigest,
        fingerprint: [UInt8], senderTopic: String?
    ) -> (ended: String?, filledRoom: Bool) {
        decoded.removeAll(keepingCapacity: true)
        var malformed: FrameDecodingError?
        while decoded.count < room {
            do {
                guard case .notification(let notification, let command)? = try decoder.next() else { break }
                decoded.append(
                    Decoded(
                        notification: notification, command: command,
                        key: Self.key(for: notification, fingerprint: fingerprint, digest: digest)))
            } catch {
                malformed = error
                break
            }
        }
        let filledRoom = decoded.count == room && malformed == nil
        guard !decoded.isEmpty || malformed != nil else { return (nil, false) }
        core.count { $0.received += decoded.count }

        // Admit in order; resends are looked up in the memory under the session's lock, so that a
        // resolution for them cannot arrive before they are held.
        var sequences: [UInt64?] = []
        sequences.reserveCapacity(decoded.count)
        var recalls: [BridgeResendMemory.Recall] = []
        recalls.reserveCapacity(decoded.count)
        // Translated only where the memory will not answer: a resend whose earlier copy is
        // remembered needs no request unless it has to wait for that copy (about half the frames of
        // a sender that keeps meeting bad tokens are such resends).
        let translate = { (entry: Decoded) in
            self.core.translation.request(
                for: entry.notification, connection: self.connection, senderTopic: senderTopic)
        }
        let remembered: [Bool] = core.memory.withLock { memory in
            memory.count == 0 ? [] : decoded.map { memory.contains($0.key) }
        }
        let memoryInUse = !remembered.isEmpty
        var requests: [Result<ProviderRequest, BridgeRefusal>?] = []
        requests.reserveCapacity(decoded.count)
        for (index, entry) in decoded.enumerated() {
            requests.append(memoryInUse && remembered[index] ? nil : translate(entry))
        }
        // Resends the memory answers are settled right here, under the same lock (one lock and one
        // clock reading for the lot, not a round trip per frame: about half of a bad-token
        // sender's frames are such resends).
        var answered: [(sequence: UInt64, verdict: BridgeVerdict)] = []
        var waiting: [(index: Int, sequence: UInt64)] = []
        var aftermaths: [BridgeSenderMachine.Aftermath] = []
        var acknowledged = 0
        lock.withLock {
            // `lookUp` asks the memory (whose lock the caller holds) about a resend.
            func admitAll(lookUp: (BridgeResendKey, UInt64) -> BridgeResendMemory.Recall) {
                for (index, entry) in decoded.enumerated() {
                    let sequence = machine.admit(
                        identifier: entry.notification.identifier ?? 0, command: entry.command,
                        token: entry.notification.token, key: entry.key)
                    sequences.append(sequence)
                    var recall = BridgeResendMemory.Recall.unknown
                    // A frame the gateway would refuse is refused again, never looked up.
                    let refused = requests[index].map { if case .failure = $0 { true } else { false } } ?? false
                    if let sequence, memoryInUse, !refused {
                        recall = lookUp(entry.key, tag(sequence))
                        switch recall {
                        case .settled(let verdict): answered.append((sequence, verdict))
                        case .pending: waiting.append((index, sequence))
                        case .unknown: break  // translated when it is sent on, below
                        }
                    }
                    recalls.append(recall)
                }
            }
            if memoryInUse {
                core.memory.withLock { memory in
                    let now = Duration.seconds(Monotonic.now())
                    admitAll { key, waiter in memory.recall(key, waiter: waiter, now: now) }
                }
            } else {
                admitAll { _, _ in .unknown }
            }
            // Held under this lock (not the memory's, which the upstream threads need meanwhile),
            // since the earlier copy's resolution needs this lock to reach them. One that cannot be
            // translated after all is refused below (a later resolution for it finds it settled
            // and is ignored).
            for (index, sequence) in waiting {
                if requests[index] == nil { requests[index] = translate(decoded[index]) }
                if case .success(let request)? = requests[index] {
                    held[sequence] = request
                } else {
                    recalls[index] = .unknown
                }
            }
            if let malformed { noteMalformed(malformed) }
            // Settled after every frame of the read is admitted, as their verdicts from upstream
            // would be: a resend answered with a rejection does not stop the frames after it.
            for (sequence, verdict) in answered {
                if verdict.isSuccess { acknowledged += 1 }
                let aftermath = machine.settle(sequence: sequence, verdict: verdict)
                if aftermath != .none { aftermaths.append(aftermath) }
            }
        }
        if acknowledged > 0 { core.count { $0.acknowledgedResends += acknowledged } }
        for aftermath in aftermaths { core.handle(aftermath, connection: connection) }
        var dropped = 0
        forwarding.removeAll(keepingCapacity: true)
        for (index, entry) in decoded.enumerated() {
            guard let sequence = sequences[index] else {
                dropped += 1
                continue
            }
            switch recalls[index] {
            case .settled(let verdict):
                if verdict.isSuccess {
                    core.emit(
                        .acknowledgedResend(connection: connection, identifier: entry.notification.identifier ?? 0))
                }
                continue
            case .pending:
                continue  // its earlier copy's verdict will settle it (or send it)
            case .unknown:
                break
            }
            switch requests[index] ?? translate(entry) {
            case .success(let request):
                forwarding.append((request, tag(sequence)))
            case .failure(let refusal):
                core.count { $0.rejected += 1 }
                core.emit(
                    .rejected(
                        connection: connection, identifier: entry.notification.identifier ?? 0,
                        token: entry.notification.token, status: refusal.status, reason: refusal.reason))
                settle(tag: tag(sequence), verdict: refusal.verdict)
            }
        }
        if dropped > 0 { core.count { $0.dropped += dropped } }
        forwardAll(forwarding)
        return (nil, filledRoom)
    }

    /// A malformed frame ends the sender's input: the machine answers it in its turn (under `lock`).
    private func noteMalformed(_ malformed: FrameDecodingError) {
        if malformed.isConfirmationBarrier { self.barrier = malformed.identifier }
        machine.malformed(
            malformed.errorResponse, command: malformed.command, reason: "byte \(malformed.offset): \(malformed.reason)"
        )
    }

    /// The resend key: identifier and a digest of the sender's certificate and the content.
    private static func key(for notification: PushNotification, fingerprint: [UInt8], digest: ContentDigest)
        -> BridgeResendKey
    {
        digest.begin()
        fingerprint.withUnsafeBytes { digest.update($0) }
        let identifier = notification.identifier ?? 0
        digest.update(integer: identifier)
        notification.token.withUnsafeBytes { digest.update($0) }
        digest.update(integer: UInt32(notification.token.count))
        notification.payload.bytes.withUnsafeBytes { digest.update($0) }
        digest.update(integer: notification.expiration?.rawValue ?? UInt32.max)
        digest.update(integer: UInt16(notification.priority?.rawValue ?? 0xFF))
        return BridgeResendKey(identifier: identifier, digest: digest.finish())
    }

    /// Writes the answer and closes.
    private func deliver(_ answer: BridgeSenderMachine.Answer, on session: TLSSession) -> String {
        let barrier = lock.withLock { self.barrier }
        let isBarrier =
            barrier != nil && answer.response?.identifier == barrier
            && answer.response?.status == ConfirmationBarrier.expectedStatus
        if isBarrier, let barrier {
            core.count { $0.confirmationBarriers += 1 }
            core.emit(.confirmationAnswered(connection: connection, identifier: barrier))
        } else {
            core.count { $0.errorResponses += 1 }
            core.emit(
                .answered(
                    connection: connection, response: answer.response, identifier: answer.failing?.identifier,
                    token: answer.failing?.token, reason: answer.reason))
        }
        if let response = answer.response {
            var writer = ByteWriter(capacity: ErrorResponse.byteCount)
            response.encode(into: &writer)
            _ = session.writeAll(writer.bytes, timeout: 5)
        }
        session.closeGently(drainTimeout: 1)
        if isBarrier { return "confirmed by the sender's end-of-send barrier" }
        if let response = answer.response { return "answered \(response)" }
        if answer.failing?.command == .simple {
            return "closed without a word (a command-0 notification failed: \(answer.reason))"
        }
        return "closed without a word (nothing delivered on this connection to name: \(answer.reason))"
    }

    /// The sender left (or is made to): the failures nobody will hear of are reported.
    private func senderLeft(_ reason: String, _ session: TLSSession, closing: Bool = false) -> String {
        let failed = lock.withLock { machine.senderGone() }
        for item in failed {
            if let verdict = item.verdict { core.handle(.unreported(item, verdict), connection: connection) }
        }
        if closing { session.closeGently(drainTimeout: 0.5) } else { session.close() }
        return reason
    }
}
