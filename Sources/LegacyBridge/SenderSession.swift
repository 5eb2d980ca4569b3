import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// One legacy sender connection: a thread that reads its frames, admits them into a
/// ``BridgeSenderMachine``, sends them upstream with the session's tags, and writes the one answer
/// the binary protocol allows; verdicts arrive on the upstream threads through ``settle(tag:verdict:fromMemory:)``.
///
/// The session outlives its thread: after the answer (or the sender's disconnect) it stays
/// registered until the last of its notifications has its verdict, which then goes to the resend
/// memory or the reports.
final class SenderSession: @unchecked Sendable {
    // @unchecked: what changes is in `state` (one lock over one value) or owned by the session
    // thread (`remembered`, `admissions`, `forwarding`); `topic` and `route` are written once,
    // before the session's first submission; the rest is immutable.
    //
    // Lock order: `state`'s lock, then the core's resend memory (``BridgeCore/withMemory(_:)``),
    // then the store's queue; never the other way round. Upstream threads take the memory's lock
    // alone, and a session's only after letting it go.
    let id: UInt32
    let connection: UInt64
    let client: String
    private unowned let core: BridgeCore
    private let state: Mutex<State>
    private(set) var topic: String?
    /// The sender's route (its upstream pool and translation), chosen at its handshake and written
    /// once, before the session's first submission; its pool counts the session as a user until
    /// the session's thread ends (a pool retired by a reload closes when its last user has gone).
    private(set) var route: ActiveRoute?
    /// From the accept to the end of the TLS handshake (the upstream's readiness included): the
    /// accept thread may close the connection meanwhile to make room (see ``Bridge``).
    let handshake: PendingHandshake
    private let wake: WakeSignal
    /// Per frame of one read: whether the resend memory seemed to know it (the session thread's,
    /// kept for its capacity).
    private var remembered: [Bool] = []
    /// What one read admitted (the session thread's, kept for its capacity).
    private var admissions: [BridgeSenderState.Admission] = []
    /// The sender certificate's fingerprint and topic, set once at the handshake (the session
    /// thread's, read again when an idle connection resumes on a new thread).
    private var fingerprint: [UInt8] = []
    private var certificateTopic: String?
    /// The requests one read sends upstream (the session thread's, kept for its capacity).
    private var forwarding: [(request: ProviderRequest, tag: UInt64)] = []
    /// Where the sender's notifications are shown (``Bridge/Configuration/inbox``), if anywhere.
    private let inbox: PushInbox?
    /// The sender as the inbox names it: its certificate's subject, or its address (written once,
    /// before the session's first frame).
    private var senderName: String?
    /// What one read claimed in a fleet's shared store (the session thread's): fresh claims, and
    /// pending copies of silent bridges taken over (forwarded as possible duplicates).
    private var claimed = Set<BridgeResendKey>()
    private var orphaned = Set<BridgeResendKey>()

    /// Everything the session thread and the upstream threads share.
    private struct State {
        /// The binary protocol's promises, the held resends, the barrier: the admission rule.
        var sender: BridgeSenderState
        /// The session thread waits for verdicts (not for the sender's bytes).
        var waitingForVerdicts = false
        var threadEnded = false
        /// When the sender last completed a frame (or connected): how idle it is, for eviction.
        var lastFrameAt = Monotonic.now()
        /// Set by the accept thread at the connection limit: close to make room for a new sender.
        var evictRequested = false
        /// With an inbox: the notifications upstream, by sequence, waiting for their verdicts...
        var inboxPending: [UInt64: InboxNotification] = [:]
        /// ...and those with their verdict, for the session thread to hand over in one batch.
        var inboxDone: [InboxNotification] = []

        /// Takes the verdict of the notification with `sequence` for the inbox; what the inbox
        /// should get now (the thread has ended: nobody else hands it over).
        mutating func inboxSettle(_ sequence: UInt64, _ verdict: BridgeVerdict) -> [InboxNotification] {
            guard var entry = inboxPending.removeValue(forKey: sequence) else { return [] }
            (entry.status, entry.statusCode) = SenderSession.inboxVerdict(verdict)
            inboxDone.append(entry)
            return threadEnded ? takeInboxDone() : []
        }

        /// The notifications with verdicts, and, once the session is over, those that will get none.
        mutating func takeInboxDone() -> [InboxNotification] {
            if isFinished, !inboxPending.isEmpty {
                for sequence in inboxPending.keys.sorted() {
                    var entry = inboxPending[sequence]!
                    (entry.status, entry.statusCode) = ("10 no verdict: the bridge stopped waiting for it", 10)
                    inboxDone.append(entry)
                }
                inboxPending.removeAll()
            }
            defer { inboxDone.removeAll() }
            return inboxDone
        }

        /// Whether a thread waiting for verdicts has something to do now: an answer or the end is
        /// due, or, while frames are admitted, the window has a good part free. Waking it for
        /// every verdict would make it admit one frame per wake-up with a full window, and look
        /// at a failure not yet answerable after every verdict (a system call and a context
        /// switch per notification); an eighth of the window at a time keeps the pipeline full at
        /// a fraction of the cost.
        var worthWaking: Bool {
            let machine = sender.machine
            if machine.hasActionDue { return true }
            guard machine.isAdmitting else { return false }
            return machine.outstanding == 0 || machine.room >= Swift.max(1, machine.configuration.window / 8)
        }

        /// The thread has ended and no verdict can come any more: every one is in, and either the
        /// sender was answered (or left) or nothing of it is held (refused before or in its
        /// handshake: a health check's TCP probe, a failed handshake). The session can go.
        var isFinished: Bool {
            let machine = sender.machine
            return threadEnded && machine.inFlight == 0 && (!machine.willAnswer || machine.outstanding == 0)
        }
    }

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
        self.inbox = core.configuration.inbox
        var machineConfiguration = BridgeSenderMachine.Configuration()
        machineConfiguration.window = core.configuration.strictOrder ? 1 : core.configuration.window
        self.state = Mutex(State(sender: BridgeSenderState(configuration: machineConfiguration)))
    }

    private func tag(_ sequence: UInt64) -> UInt64 { (UInt64(id) << 32) | (sequence & 0xFFFF_FFFF) }

    /// Wakes the session thread (the bridge is stopping).
    func poke() { wake.signal() }

    /// How long the sender has gone without completing a frame while nothing of it is in flight,
    /// or nil when it is busy, still in its handshake (``handshake`` decides then) or already
    /// leaving: the accept thread's measure for eviction.
    func idleness(now: Double) -> Double? {
        guard !handshake.isPending else { return nil }
        return state.withLock { state in
            let machine = state.sender.machine
            guard !state.evictRequested, !state.threadEnded, machine.outstanding == 0, machine.isAdmitting else {
                return nil
            }
            return now - state.lastFrameAt
        }
    }

    /// Asks the session to close (gently) so a new sender can be served.
    func evict() {
        state.withLock { $0.evictRequested = true }
        wake.signal()
        core.idleSenders?.wake()
    }

    /// Whether ``evict()`` was asked (the parker of idle connections looks).
    var isEvictionRequested: Bool { state.withLock { $0.evictRequested } }

    // MARK: - Verdicts (upstream threads)

    /// The verdict for the notification with `tag`.
    ///
    /// `fromMemory`: the verdict is an earlier copy's (a resend acknowledged without delivery).
    /// `possibleDuplicate`: upstream sent it again after an attempt that may have been delivered.
    func settle(tag: UInt64, verdict: BridgeVerdict, fromMemory: Bool = false, possibleDuplicate: Bool = false) {
        let sequence = tag & 0xFFFF_FFFF
        var shown: [InboxNotification] = []
        let shared = core.store.isShared
        let (aftermath, wakeThread, finished, item):
            (BridgeSenderMachine.Aftermath, Bool, Bool, BridgeSenderMachine.Item?) = state.withLock { state in
                let item =
                    fromMemory || possibleDuplicate || shared ? state.sender.machine.item(sequence: sequence) : nil
                let aftermath = state.sender.settle(sequence: sequence, verdict: verdict)
                if inbox != nil { shown = state.inboxSettle(sequence, verdict) }
                // An answer due wakes the thread wherever it waits: a sender that has stopped
                // writing leaves it waiting on the socket, not for verdicts, and its error
                // response must not wait for the poll's time-out.
                let due = !state.threadEnded && state.sender.machine.hasActionDue
                return (aftermath, due || (state.waitingForVerdicts && state.worthWaking), state.isFinished, item)
            }
        if shared, let item {
            // A fleet's claim gets its verdict (any bridge answers a resend with it), or is given
            // up when nothing was decided; queued before the memory hears of it, so that what
            // the memory writes for the same notification comes after. A resend answered from
            // the memory gets its verdict written too: the memory's entry is used up, and if this
            // bridge dies before the sender hears, its next copy must still find it.
            if case .unavailable = verdict {
                if !fromMemory { core.store.claim(.claimReleased(item.key)) }
            } else {
                core.store.claim(.claimSettled(item.key, verdict: verdict))
            }
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
        if let inbox, !shown.isEmpty { inbox.add(shown) }
        if finished { core.unregister(id) }
    }

    /// A resend held for its earlier copy goes upstream itself (that copy got no verdict).
    ///
    /// Only while the sender is still to be answered: once it was (or left), its next copy is the
    /// one to deliver, and delivering this one too would deliver it twice.
    func forwardHeld(tag: UInt64) {
        let sequence = tag & 0xFFFF_FFFF
        let (request, willAnswer): (ProviderRequest?, Bool) = state.withLock { state in
            (state.sender.releaseHeld(sequence: sequence), state.sender.machine.willAnswer)
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
        if let failure = route!.upstream.submit(contentsOf: batch) {
            core.count { $0.unavailable += batch.count }
            for (_, tag) in batch {
                settle(tag: tag, verdict: .unavailable(reason: "upstream unavailable: \(failure.reason)"))
            }
        }
    }

    private func forward(_ request: ProviderRequest, sequence: UInt64) {
        core.count { $0.forwarded += 1 }
        if let failure = route!.upstream.submit(request, tag: tag(sequence)) {
            core.count { $0.unavailable += 1 }
            settle(tag: tag(sequence), verdict: .unavailable(reason: "upstream unavailable: \(failure.reason)"))
        }
    }

    // MARK: - The session thread

    /// Serves the sender until the answer, its disconnect, an idle timeout or the bridge's stop.
    /// Returns true when the connection went to the parker of idle connections instead
    /// (``IdleSenders``: it is still open, and ``resume(_:)`` serves it again).
    func run(_ socket: Socket) -> Bool {
        // Without routes the pool is known before the handshake; with them, only after it.
        let single = core.singleRoute
        if let single, single.upstream.readiness(timeout: core.configuration.handshakeTimeout.inSeconds) != nil {
            // Nothing it sent could be delivered: refused before the handshake, so it has sent
            // nothing (the outage is reported once, not per sender; the feedback port stays open).
            core.count { $0.refusedConnections += 1 }
            handshake.finish()
            socket.close()
            end(reason: nil)
            return false
        }
        guard let session = core.acceptSender(socket, client: client, pending: handshake) else {
            end(reason: nil)
            return false
        }
        let certificate = session.peerCertificate
        let fingerprint = certificate?.sha256Fingerprint ?? []
        let identity = core.senderIdentity(of: certificate, fingerprint: fingerprint)
        guard let chosen = single ?? chosenRoute(certificate, identity: identity, fingerprint: fingerprint, session)
        else {
            end(reason: nil)
            return false
        }
        route = chosen
        core.attach(chosen)
        let senderTopic = chosen.translation.fixedTopic ?? identity.topic
        topic = senderTopic
        senderName = identity.subject ?? client
        state.withLock { $0.lastFrameAt = Monotonic.now() }  // idle from the end of its handshake on
        let resumed = session.didResume
        core.count {
            $0.senderConnections += 1
            if resumed { $0.resumedSenderConnections += 1 }
        }
        core.emit(
            .senderConnected(
                connection: connection, client: client, subject: identity.subject ?? "(none)", topic: senderTopic))
        self.fingerprint = fingerprint
        self.certificateTopic = identity.topic
        return finish(serve(session, lastActivity: Monotonic.now(), parkable: core.idleSenders != nil), on: session)
    }

    /// Serves a parked connection again, on a new thread (there is something to do: bytes, an
    /// eviction, the idle timeout, the bridge stopping). True when it was parked again.
    func resume(_ parked: IdleSenders.Parked) -> Bool {
        finish(serve(parked.transport, lastActivity: parked.lastActivity, parkable: true), on: parked.transport)
    }

    /// How a turn of ``serve(_:lastActivity:parkable:)`` ended: the connection is over, or idle.
    private enum ServeOutcome {
        case ended(String)
        /// Nothing in flight, nothing buffered, nothing from the sender since `lastActivity`.
        case idle(lastActivity: Double)
    }

    /// Ends the session, or parks its idle connection (true): its TLS buffers freed, the thread
    /// let go. Once the parker has ended (the bridge stopped) the thread serves on.
    private func finish(_ outcome: ServeOutcome, on session: TLSSession) -> Bool {
        switch outcome {
        case .ended(let reason):
            end(reason: reason)
            return false
        case .idle(let lastActivity):
            // What a turn kept for its capacity goes too: a parked connection holds only its state.
            session.releaseBuffers()
            remembered = []
            admissions = []
            forwarding = []
            claimed = []
            orphaned = []
            if let parker = core.idleSenders,
                parker.park(IdleSenders.Parked(session: self, transport: session, lastActivity: lastActivity))
            {
                return true
            }
            return finish(serve(session, lastActivity: lastActivity, parkable: false), on: session)
        }
    }

    /// The first route that takes the sender, once its pool can deliver; nil when none takes it
    /// (the sender refused, before it is read from, with a line saying why) or its pool cannot
    /// (refused as before the handshake without routes: the pool reports its outage once).
    private func chosenRoute(
        _ certificate: Certificate?, identity: SenderIdentity, fingerprint: [UInt8], _ session: TLSSession
    ) -> ActiveRoute? {
        guard
            let chosen = core.route(
                for: certificate, presented: session.peerChain, topic: identity.topic, fingerprint: fingerprint)
        else {
            session.close()
            core.refused(
                client,
                reason: "no route matches its certificate (subject \(identity.subject ?? "(none)"), topic "
                    + "\(identity.topic ?? "(none)"), SHA-256 \(Self.hex(fingerprint)))")
            return nil
        }
        if chosen.upstream.readiness(timeout: core.configuration.handshakeTimeout.inSeconds) != nil {
            // As without routes: counted, and the outage reported once (by the pool), not per sender.
            session.close()
            core.count { $0.refusedConnections += 1 }
            return nil
        }
        return chosen
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: text, as: UTF8.self)
    }

    private func end(reason: String?) {
        let (finished, delivered, shown): (Bool, Int, [InboxNotification]) = state.withLock { state in
            state.threadEnded = true
            state.waitingForVerdicts = false
            return (state.isFinished, state.sender.machine.delivered, inbox == nil ? [] : state.takeInboxDone())
        }
        if let inbox, !shown.isEmpty { inbox.add(shown) }
        if let reason { core.emit(.senderDisconnected(connection: connection, delivered: delivered, reason: reason)) }
        if let route { core.release(route) }
        if finished { core.unregister(id) }
    }

    /// The read loop over the sender's `Transport` (the TLS session, once its handshake is done and
    /// its route chosen); returns why it ended, or, when `parkable`, that the connection is idle
    /// (``Bridge/Configuration/parkAfter``).
    private func serve(_ session: any Transport, lastActivity idleSince: Double, parkable: Bool) -> ServeOutcome {
        let configuration = core.configuration
        let fingerprint = self.fingerprint
        let senderTopic = certificateTopic
        let parkAfter = configuration.parkAfter?.inSeconds ?? .infinity
        var decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: Self.maximumPayloadSize, acceptsNotifications: true, acceptsErrorResponses: false))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        let digest = ContentDigest()
        var frames: [BridgeSenderState.Frame] = []
        frames.reserveCapacity(256)
        var lastActivity = idleSince
        var partialSince: Double?
        var stopDeadline: Double?
        var mayHaveFrames = false
        /// Whether the last read took everything the sender had sent (it paused).
        var readAll = false

        while true {
            // 0. What got its verdict since the last turn goes to the inbox, in one batch.
            if let inbox {
                let shown = state.withLock { $0.takeInboxDone() }
                if !shown.isEmpty { inbox.add(shown) }
            }
            // 1. Answer when the machine says so; leave when it is over.
            var remembering: BridgeStore.WindowTicket?
            let (action, room, admitting) = state.withLock { state -> (BridgeSenderMachine.Action, Int, Bool) in
                // What the sender will send again is remembered under the session's lock, so no
                // verdict for it can slip past.
                let action = state.sender.nextAction { answer in
                    remembering = core.withMemory { $0.remember(answer, now: .seconds(Monotonic.now())) }.ticket
                }
                return (action, state.sender.machine.room, state.sender.machine.isAdmitting)
            }
            switch action {
            case .answer(let answer):
                // The answer relies on the memory: it survives a crash of the bridge only once the
                // store has it (a sender answered now resends after a restart too).
                if let remembering, core.store.waitForWindow(remembering) {
                    core.emit(
                        .storeFailed(
                            reason: "the store has not committed the resend memory within "
                                + "\(Int(BridgeStore.windowWait)) s; answering anyway (a crash before it commits "
                                + "could deliver a resend twice)"))
                }
                return .ended(deliver(answer, on: session))
            case .finished:
                session.closeGently(drainTimeout: 0.5)
                return .ended("closed")
            case .none:
                break
            }

            // 2. The bridge is stopping: take nothing more, drain, then give up on what is left.
            let now = Monotonic.now()
            if core.isStopping, stopDeadline == nil {
                stopDeadline = now + configuration.drainTimeout.inSeconds
                state.withLock { $0.sender.stop() }
                continue
            }
            if let deadline = stopDeadline, now >= deadline {
                let aftermaths = state.withLock { $0.sender.abandon(reason: "the bridge is stopping") }
                for aftermath in aftermaths { core.handle(aftermath, connection: connection) }
                stopDeadline = .infinity
                continue
            }

            // 3. Complete frames already buffered go first.
            if admitting, room > 0, mayHaveFrames {
                let (ended, filled) = admit(
                    from: &decoder, room: room, into: &frames, digest: digest, fingerprint: fingerprint,
                    senderTopic: senderTopic)
                if let ended { return .ended(ended) }
                mayHaveFrames = filled
                if !filled, readAll, let doomed = decoder.pendingFailure {
                    // The sender paused inside a frame that no bytes can make valid (an item frame
                    // longer than any, a payload over the limit): answered now, not at the frame
                    // deadline.
                    state.withLock { $0.sender.noteMalformed(doomed) }
                }
                if !frames.isEmpty { state.withLock { $0.lastFrameAt = now } }
                // The clock runs from the first byte of a frame that is not complete yet: a frame
                // completed restarts it, so a sender streaming at full speed is never cut off.
                if decoder.bufferedByteCount == 0 {
                    partialSince = nil
                } else if !frames.isEmpty || partialSince == nil {
                    partialSince = now
                }
                continue
            }

            // 4. Wait: for the sender's bytes when they are wanted (or dropped, once failing), for
            //    verdicts when the window is full or an answer waits for them.
            let readsSocket = room > 0 || !admitting
            state.withLock { $0.waitingForVerdicts = !admitting || room == 0 }
            guard readsSocket else {
                _ = wake.wait(timeout: 0.5)
                // Not reading is the bridge's doing (a full window): the sender's frame clock stops.
                if partialSince != nil { partialSince = Monotonic.now() }
                continue
            }
            if parkable, readAll, admitting, !mayHaveFrames, decoder.bufferedByteCount == 0, stopDeadline == nil,
                !core.isStopping, case let idle = Monotonic.now() - lastActivity, idle >= parkAfter,
                idle < configuration.idleTimeout.inSeconds,
                state.withLock({ state in
                    !state.evictRequested && state.sender.machine.outstanding == 0 && !state.sender.machine.hasActionDue
                })
            {
                // Idle: the connection waits without a thread (``IdleSenders``) until it has
                // something to do. What got its verdict this turn goes to the inbox first.
                if let inbox {
                    let shown = state.withLock { $0.takeInboxDone() }
                    if !shown.isEmpty { inbox.add(shown) }
                }
                return .idle(lastActivity: lastActivity)
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
                    return .ended(senderLeft("the sender closed the connection", session))
                case .failed(let error):
                    return .ended(senderLeft(error.reason, session))
                }
            }
            let afterRead = Monotonic.now()
            if gotData { lastActivity = afterRead }
            if state.withLock({ $0.evictRequested }) {
                return .ended(
                    senderLeft(
                        "closed to make room for a new sender (idle, nothing in flight)", session, closing: true))
            }
            if let partialSince, afterRead - partialSince > configuration.frameTimeout.inSeconds {
                // A sender trickling a frame cannot hold its slot.
                return .ended(
                    senderLeft(
                        "no complete frame within \(configuration.frameTimeout) (\(decoder.bufferedByteCount) bytes "
                            + "pending)", session, closing: true))
            } else if !gotData, state.withLock({ $0.sender.machine.outstanding == 0 }),
                afterRead - lastActivity > configuration.idleTimeout.inSeconds
            {
                return .ended(senderLeft("idle for \(configuration.idleTimeout)", session, closing: true))
            }
        }
    }

    /// Decodes up to `room` frames, admits them (``BridgeSenderState/admit(_:malformed:recall:translate:into:)``:
    /// the rule), and carries out what it decided: sends them on, reports refusals and resends
    /// answered from memory. Returns why the session must end, if it must (never, so far), and
    /// whether the room was filled (more complete frames may be buffered).
    private func admit(
        from decoder: inout FrameDecoder, room: Int, into frames: inout [BridgeSenderState.Frame],
        digest: ContentDigest, fingerprint: [UInt8], senderTopic: String?
    ) -> (ended: String?, filledRoom: Bool) {
        frames.removeAll(keepingCapacity: true)
        var malformed: FrameDecodingError?
        var commands = CommandCounts()
        while frames.count < room {
            do {
                guard case .notification(let notification, let command)? = try decoder.next() else { break }
                commands.add(command)
                frames.append(
                    BridgeSenderState.Frame(
                        notification: notification, command: command,
                        key: Self.key(for: notification, fingerprint: fingerprint, digest: digest)))
            } catch {
                malformed = error
                break
            }
        }
        let filledRoom = frames.count == room && malformed == nil
        guard !frames.isEmpty || malformed != nil else { return (nil, false) }
        core.count {
            $0.received += frames.count
            $0.receivedByCommand.add(commands)
        }

        // Translated here, outside every lock, unless the memory seems to know the frame: a
        // resend whose earlier copy is remembered needs no request unless it has to wait for that
        // copy (about half the frames of a sender that keeps meeting bad tokens are such resends).
        let translation = route!.translation
        let connection = self.connection
        let translate = { (frame: BridgeSenderState.Frame) in
            translation.request(for: frame.notification, connection: connection, senderTopic: senderTopic)
        }
        remembered.removeAll(keepingCapacity: true)
        let memoryInUse: Bool = core.memory.withLock { memory in
            guard memory.count > 0 else { return false }
            for frame in frames { remembered.append(memory.contains(frame.key)) }
            return true
        }
        // A fleet's shared store knows what the other bridges remembered: the frames this memory
        // does not know are looked up there (one round trip per read). When it cannot be asked,
        // they are not sent: a resend another bridge already delivered would go out twice.
        let storeUnreachable = core.store.isShared ? learnFromSharedStore(frames, known: memoryInUse) : nil
        let memoryNowInUse = memoryInUse || core.memory.withLock { $0.count > 0 }
        if memoryNowInUse, !memoryInUse {
            remembered.removeAll(keepingCapacity: true)
            core.memory.withLock { memory in for frame in frames { remembered.append(memory.contains(frame.key)) } }
        }
        for index in frames.indices where !(memoryNowInUse && remembered[index]) {
            frames[index].request = translate(frames[index])
        }
        // Admitted in order, resends looked up in the memory under the session's lock, so that a
        // resolution for them cannot arrive before they are held.
        admissions.removeAll(keepingCapacity: true)
        var shown = inbox == nil ? [] : inboxEntries(frames, malformed: malformed, translate: translate)
        state.withLock { state in
            defer { if !shown.isEmpty { Self.register(&shown, admissions, in: &state) } }
            if memoryNowInUse {
                _ = core.withMemory { memory in
                    let now = Duration.seconds(Monotonic.now())
                    state.sender.admit(
                        frames, malformed: malformed,
                        recall: { key, sequence in memory.recall(key, waiter: self.tag(sequence), now: now) },
                        translate: translate, into: &admissions)
                }
            } else {
                state.sender.admit(
                    frames, malformed: malformed, recall: { _, _ in .unknown }, translate: translate, into: &admissions)
            }
        }
        var dropped = 0
        var acknowledged = 0
        var refused = 0
        var duplicates = 0
        forwarding.removeAll(keepingCapacity: true)
        for (index, admission) in admissions.enumerated() {
            let notification = frames[index].notification
            switch admission {
            case .dropped:
                dropped += 1
                releaseClaim(frames[index].key)
            case .refused(_, let refusal):
                refused += 1
                releaseClaim(frames[index].key)
                core.emit(
                    .rejected(
                        connection: connection, identifier: notification.identifier ?? 0, token: notification.token,
                        status: refusal.status, reason: refusal.reason))
            case .answered(_, let verdict):
                // Answered from the memory (which let its entry go): written for a later copy,
                // should this bridge die before the sender hears (see ``settle``).
                if core.store.isShared, verdict.isDecided {
                    core.store.claim(.claimSettled(frames[index].key, verdict: verdict))
                }
                guard verdict.isSuccess else { continue }
                acknowledged += 1
                core.emit(.acknowledgedResend(connection: connection, identifier: notification.identifier ?? 0))
            case .held:
                continue  // its earlier copy's verdict will settle it (or send it)
            case .forwarded(let sequence, _, _) where storeUnreachable != nil:
                settle(
                    tag: tag(sequence),
                    verdict: .unavailable(reason: "the shared store cannot be asked: \(storeUnreachable!.reason)"))
            case .forwarded(let sequence, let request, let possibleDuplicate):
                if possibleDuplicate || orphaned.contains(frames[index].key) {
                    // Its earlier copy was upstream when a bridge on this store stopped.
                    duplicates += 1
                    core.emit(
                        .possibleDuplicate(
                            connection: connection, identifier: notification.identifier ?? 0,
                            token: notification.token))
                }
                forwarding.append((request, tag(sequence)))
            }
        }
        if dropped + acknowledged + refused + duplicates > 0 {
            core.count {
                $0.dropped += dropped
                $0.acknowledgedResends += acknowledged
                $0.rejected += refused
                $0.possibleDuplicates += duplicates
            }
        }
        forwardAll(forwarding)
        return (nil, filledRoom)
    }

    /// The inbox's entries for the frames of one read (and the malformed frame that ended it,
    /// unless it is the sender's confirmation barrier), each waiting for its admission.
    /// A frame not translated yet (a resend the memory knows) is translated for the inbox: its
    /// request is the one its earlier copy went upstream as.
    private func inboxEntries(
        _ frames: [BridgeSenderState.Frame], malformed: FrameDecodingError?,
        translate: (BridgeSenderState.Frame) -> Result<ProviderRequest, BridgeRefusal>
    ) -> [InboxNotification] {
        let now = inbox?.nowMilliseconds ?? 0
        var entries = frames.map { frame in
            var entry = InboxNotification(
                receivedMilliseconds: now, transport: .binary, connection: Int(connection),
                token: frame.notification.token, status: "pending", statusCode: 0,
                content: .bridged(
                    .notification(frame.notification, command: frame.command),
                    upstream: try? (frame.request ?? translate(frame)).get()))
            entry.sender = senderName
            return entry
        }
        if let malformed, !malformed.isConfirmationBarrier {
            var entry = InboxNotification(
                receivedMilliseconds: now, transport: .binary, connection: Int(connection), token: nil,
                status: "\(malformed.status.rawValue) byte \(malformed.offset): \(malformed.reason)",
                statusCode: Int(malformed.status.rawValue), content: .rejected)
            entry.sender = senderName
            entries.append(entry)
        }
        return entries
    }

    /// Gives each entry of one read the fate its admission decided (under the session's lock,
    /// so no verdict can come before its entry waits for it): a verdict now, or a wait for one.
    private static func register(
        _ entries: inout [InboxNotification], _ admissions: [BridgeSenderState.Admission], in state: inout State
    ) {
        for (index, admission) in admissions.enumerated() where index < entries.count {
            var entry = entries[index]
            switch admission {
            case .dropped:
                (entry.status, entry.statusCode) = ("dropped: after a failure on its connection (sent again)", 0)
            case .refused(_, let refusal):
                (entry.status, entry.statusCode) = inboxVerdict(.rejected(refusal.status, reason: refusal.reason))
            case .answered(_, let verdict):
                (entry.status, entry.statusCode) = inboxVerdict(verdict)
            case .held(let sequence):
                state.inboxPending[sequence] = entry
                continue
            case .forwarded(let sequence, let request, _):
                if case .bridged(let frame, _) = entry.content { entry.content = .bridged(frame, upstream: request) }
                state.inboxPending[sequence] = entry
                continue
            }
            state.inboxDone.append(entry)
        }
        // The malformed frame that ended the read: its status is its verdict.
        if entries.count > admissions.count { state.inboxDone.append(contentsOf: entries[admissions.count...]) }
        entries.removeAll()
    }

    /// The inbox's status and code for a verdict: `accepted` (code 0: the sender hears nothing),
    /// or the binary status and why (`8 HTTP/2 400 BadDeviceToken`).
    static func inboxVerdict(_ verdict: BridgeVerdict) -> (String, Int) {
        switch verdict {
        case .accepted: ("accepted", 0)
        case .unregistered: ("unregistered: HTTP/2 410, the token went to the feedback service", 0)
        case .rejected(let status, let reason): ("\(status.rawValue) \(reason)", Int(status.rawValue))
        case .unavailable(let reason): ("10 \(reason)", 10)
        }
    }

    /// Gives up this read's claim on `key` (the frame is not forwarded).
    private func releaseClaim(_ key: BridgeResendKey) {
        if claimed.remove(key) != nil || orphaned.remove(key) != nil { core.store.claim(.claimReleased(key)) }
    }

    /// How long a resend waits for the verdict of its earlier copy, still upstream at another
    /// bridge of the fleet, before it is sent as a possible duplicate.
    static let sharedPendingWait = PostgresStore.ownerTimeout.inSeconds

    /// Claims in the shared store the frames this bridge's memory does not know, before any is
    /// forwarded (one statement per read, shared with the sessions asking at the same moment),
    /// and puts what the store knows of the others into the memory (a verdict). A frame whose
    /// earlier copy is still upstream at a bridge that is alive waits for that verdict (asked
    /// again every millisecond, up to ``sharedPendingWait``, then sent as a possible duplicate);
    /// one whose copy was pending at a bridge gone silent is taken over and sent as a possible
    /// duplicate. Returns why the store could not be asked, if it could not.
    private func learnFromSharedStore(_ frames: [BridgeSenderState.Frame], known: Bool) -> LegacyAPNsError? {
        claimed.removeAll(keepingCapacity: true)
        orphaned.removeAll(keepingCapacity: true)
        var keys: [BridgeResendKey] = []
        for (index, frame) in frames.enumerated() where !(known && remembered[index]) { keys.append(frame.key) }
        let deadline = Monotonic.now() + Self.sharedPendingWait
        var learned: [BridgeResendMemory.Record] = []
        while !keys.isEmpty {
            let found: [BridgeResendKey: SharedWindowEntry]
            let (result, firstFailure) = core.store.claim(keys)
            switch result {
            case .failure(let error):
                if firstFailure {
                    core.emit(
                        .storeFailed(
                            reason: "the shared resend memory cannot be asked (senders get status 10 for what is "
                                + "not known here until it answers again): \(error.reason)"))
                }
                // What an earlier round claimed is not forwarded now: given back.
                for key in claimed.union(orphaned) { core.store.claim(.claimReleased(key)) }
                claimed.removeAll(keepingCapacity: true)
                orphaned.removeAll(keepingCapacity: true)
                return error
            case .success(let answer):
                found = answer ?? [:]
            }
            var waiting: [BridgeResendKey] = []
            for key in keys {
                switch found[key] {
                case .claimed?: claimed.insert(key)
                case .orphaned?: orphaned.insert(key)
                case .settled(let verdict)?: learned.append(.init(key: key, verdict: verdict, age: .zero))
                case .pending?, nil: waiting.append(key)  // nil: claimed elsewhere this instant
                }
            }
            keys = waiting
            guard !keys.isEmpty else { break }
            if Monotonic.now() >= deadline || core.isStopping {
                // Its bridge says it is alive but gives no verdict: sent, as a possible duplicate.
                learned += keys.map { .init(key: $0, verdict: nil, age: .zero) }
                break
            }
            // Its owner journals the verdict within milliseconds of having it.
            Monotonic.sleep(0.001)
        }
        if !learned.isEmpty {
            core.memory.withLock { $0.restore(learned, now: .seconds(Monotonic.now())) }
        }
        return nil
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
    private func deliver(_ answer: BridgeSenderMachine.Answer, on session: any Transport) -> String {
        let barrier = state.withLock { $0.sender.barrier }
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
    private func senderLeft(_ reason: String, _ session: any Transport, closing: Bool = false) -> String {
        let failed = state.withLock { $0.sender.senderGone() }
        for item in failed {
            if let verdict = item.verdict { core.handle(.unreported(item, verdict), connection: connection) }
        }
        if closing { session.closeGently(drainTimeout: 0.5) } else { session.close() }
        return reason
    }
}
