import APNsCore
import APNsCredentials
internal import APNsRuntime
import HTTP2Client
import Synchronization

/// What every thread of a running bridge shares: the configuration, the upstream, the resend
/// memory, the store, the sender sessions by id, the counts, and the event handler. It routes
/// each upstream verdict (an event carrying the tag the session submitted with) back to its
/// session.
final class BridgeCore: Sendable {
    let configuration: Bridge.Configuration
    /// The translation without a route's topic (the run's `apns-id` seed, `--topic`).
    let translationBase: BridgeTranslation
    /// The routes, their upstream pools and the senders' TLS context (replaced by a reload).
    let routing: Mutex<BridgeRouting>
    /// The pools' event boxes (let go by ``detach()``).
    let boxes = Mutex<[UpstreamBox]>([])
    /// The resend memory; reach it through ``withMemory(_:)``, which hands its changes to the store.
    let memory: Mutex<BridgeResendMemory>
    /// Entries of the resend memory the store kept from an earlier run.
    let restoredWindow: Int
    let statistics = Mutex(BridgeStatistics())
    let stopping = Atomic<Bool>(false)
    private let sessions = Mutex<[UInt32: SenderSession]>([:])
    /// What was read from sender certificates, by SHA-256 fingerprint (see ``senderIdentity(of:fingerprint:)``).
    private let identities = Mutex<[[UInt8]: SenderIdentity]>([:])
    private let nextSession = Atomic<UInt32>(0)
    private let nextConnection = Atomic<UInt64>(0)
    // Set once in `init` (the store's callback needs `self`); read-only afterwards.
    nonisolated(unsafe) private(set) var store: BridgeStore!
    /// How the client's and the store's callbacks reach this core (see ``detach()``).
    let router: EventRouter
    /// Where idle sender connections wait without a thread (nil: ``Bridge/Configuration/parkAfter`` is nil).
    let idleSenders: IdleSenders?

    init(configuration: Bridge.Configuration, store: any BridgeStorage, claims: (any BridgeStorage)? = nil) throws {
        self.configuration = configuration
        self.idleSenders = try configuration.parkAfter.map { _ in
            try IdleSenders(idleTimeout: configuration.idleTimeout)
        }
        // Checked before anything else is made (a mistake here leaves nothing running).
        let context = try Self.senderContext(configuration, routes: configuration.routes)
        self.translationBase = BridgeTranslation(
            fixedTopic: configuration.topic, usesTokens: configuration.upstream.credentials.usesTokens,
            run: UInt64.random(in: 0...UInt64.max))
        // The memory is journaled into the store and starts from what the store kept: a sender
        // answered before a crash resends after the restart, and finds its notifications here.
        var memoryConfiguration = configuration.resendMemory
        memoryConfiguration.journals = true
        var memory = BridgeResendMemory(configuration: memoryConfiguration)
        let kept = try store.resendWindow(
            lifetime: memoryConfiguration.lifetime, capacity: memoryConfiguration.capacity)
        memory.restore(kept, now: .seconds(Monotonic.now()))
        self.memory = Mutex(memory)
        self.restoredWindow = kept.count
        // The client's event handler needs the core; the core is complete before any event fires
        // (nothing connects until the first submission).
        let router = EventRouter()
        self.router = router
        self.routing = Mutex(
            BridgeRouting(routes: [], configured: false, pools: [:], senderContext: context))
        let (routing, _) = try makeRouting(configuration.routes, keeping: [:])
        self.routing.withLock { $0 = routing }
        router.core = self
        self.store = BridgeStore(
            store: store, claims: claims, windowLifetime: memoryConfiguration.lifetime,
            stored: { batch, failure in router.core?.stored(batch, failure: failure) },
            windowFailed: { failure in
                router.core?.emit(
                    .storeFailed(
                        reason: "the resend memory could not be stored (a crash of the bridge now would let "
                            + "resends through twice): \(failure.reason)"))
            })
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Lets the core go: the callbacks' strong reference to it (a cycle through the client and
    /// the store) is dropped. Called when the ``Bridge`` goes away, when none of them can fire
    /// any more (its threads have ended, the upstream has finished or never connected).
    func detach() {
        router.core = nil
        boxes.withLock { boxes in for box in boxes { box.upstream = nil } }
    }

    /// The senders' TLS context now.
    var senderContext: TLSContext { routing.withLock { $0.senderContext } }

    /// Every upstream pool, current and retired.
    var allUpstreams: [BridgeUpstream] { routing.withLock { $0.allUpstreams } }

    /// The route every sender takes when no routes file is configured, else nil (the route is
    /// known only once the sender's certificate is).
    var singleRoute: ActiveRoute? { routing.withLock { $0.configured ? nil : $0.routes.first } }

    func emit(_ event: BridgeEvent) {
        configuration.events?(event)
    }

    /// Runs `body` on the resend memory under its lock, and queues what it changed for the store
    /// (under the same lock, so the store commits the changes in the order they were made). The
    /// ticket, when anything changed, is what ``BridgeStore/waitForWindow(_:)`` waits for.
    func withMemory<Result>(_ body: (inout BridgeResendMemory) -> Result) -> (
        result: Result, ticket: BridgeStore.WindowTicket?
    ) {
        memory.withLock { memory in
            let result = body(&memory)
            var ticket: BridgeStore.WindowTicket?
            memory.drainJournal { ticket = store.window($0) }
            return (result, ticket)
        }
    }

    func count(_ change: (inout BridgeStatistics) -> Void) {
        statistics.withLock { change(&$0) }
    }

    // MARK: - Sessions

    /// The topic and subject of a sender's certificate, parsed once per certificate: a sender
    /// meeting bad tokens reconnects after every error response with the same certificate, and
    /// reading its names (an OpenSSL name walk, then string escaping) cost about as much as the
    /// resumed handshake's own record work. The fingerprint names the certificate's exact bytes,
    /// so a hit is the same certificate. Bounded: emptied when it reaches 256 certificates.
    func senderIdentity(of certificate: Certificate?, fingerprint: [UInt8]) -> SenderIdentity {
        guard let certificate else { return SenderIdentity(topic: nil, subject: nil) }
        if let known = identities.withLock({ $0[fingerprint] }) { return known }
        let identity = SenderIdentity(topic: certificate.topic, subject: certificate.subject)
        identities.withLock { cache in
            if cache.count >= 256 { cache.removeAll() }
            cache[fingerprint] = identity
        }
        return identity
    }

    /// The TLS handshake with a sender on either port: the session, or nil when the sender was
    /// refused (counted and reported), or closed in its handshake to make room for a new sender
    /// (`pending` evicted by the accept thread at ``Bridge/Configuration/maximumConnections``).
    func acceptSender(_ socket: Socket, client: String, pending: PendingHandshake) -> TLSSession? {
        let evicted = "closed in its TLS handshake to make room for a new sender"
        guard !pending.isEvicted else {
            socket.close()
            refused(client, reason: evicted)
            return nil
        }
        do {
            let session = try TLSSession.accept(
                socket, context: senderContext, peer: client,
                timeout: configuration.handshakeTimeout.inSeconds, drainTimeout: 1,
                interruption: pending.interruption(reason: evicted))
            guard pending.finish() else {
                session.close()
                refused(client, reason: evicted)
                return nil
            }
            return session
        } catch {
            pending.finish()
            refused(client, reason: (error as? LegacyAPNsError)?.reason ?? "\(error)")
            return nil
        }
    }

    /// A sender refused after (or in) the handshake.
    func refused(_ client: String, reason: String) {
        count { $0.refusedConnections += 1 }
        emit(.senderRefused(client: client, reason: reason))
    }

    /// Registers a new session; returns its id (the high half of its tags) and its connection number.
    func register(_ make: (UInt32, UInt64) -> SenderSession) -> SenderSession {
        let connection = nextConnection.add(1, ordering: .relaxed).newValue
        return sessions.withLock { sessions in
            var id = nextSession.add(1, ordering: .relaxed).newValue
            while sessions[id] != nil || id == 0 { id = nextSession.add(1, ordering: .relaxed).newValue }
            let session = make(id, connection)
            sessions[id] = session
            return session
        }
    }

    func unregister(_ id: UInt32) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }

    func session(tag: UInt64) -> SenderSession? {
        sessions.withLock { $0[UInt32(truncatingIfNeeded: tag >> 32)] }
    }

    var allSessions: [SenderSession] { sessions.withLock { Array($0.values) } }

    // MARK: - Verdicts

    /// An event of pool `upstream`: verdicts go to their sessions, the rest to the event handler.
    func route(_ event: ProviderEvent, from upstream: BridgeUpstream) {
        switch event {
        case .accepted(_, let acceptance):
            upstream.noteAnswer()
            count {
                $0.accepted += 1
                if acceptance.isPossibleDuplicate { $0.possibleDuplicates += 1 }
            }
            session(tag: acceptance.tag)?.settle(
                tag: acceptance.tag, verdict: .accepted, possibleDuplicate: acceptance.isPossibleDuplicate)
        case .rejected(_, let rejection):
            let verdict = BridgeVerdict(rejection: rejection)
            guard let session = session(tag: rejection.tag) else { return }
            switch verdict {
            case .unregistered(let seconds):
                // Let go only once it is on disk (``stored(_:failure:)``).
                store.add(
                    BridgeStore.Addition(
                        topic: session.topic ?? "", record: FeedbackRecord(timestamp: seconds, token: rejection.token),
                        tag: rejection.tag))
                return
            case .rejected(let status, let reason):
                upstream.noteAnswer()
                count { $0.rejected += 1 }
                emit(
                    .rejected(
                        connection: session.connection, identifier: rejection.identifier ?? 0, token: rejection.token,
                        status: status, reason: reason))
            case .unavailable:
                // An earlier attempt's answer may have been lost (a reset) before this 503.
                unavailable(
                    session, identifier: rejection.identifier, token: rejection.token,
                    mayHaveBeenDelivered: rejection.mayHaveBeenDelivered)
            case .accepted:
                break
            }
            session.settle(tag: rejection.tag, verdict: verdict)
        case .unconfirmed(_, let unconfirmed):
            let session = session(tag: unconfirmed.tag)
            unavailable(
                session, identifier: unconfirmed.request.identifier, token: unconfirmed.request.deviceToken,
                mayHaveBeenDelivered: unconfirmed.mayHaveBeenDelivered)
            session?.settle(tag: unconfirmed.tag, verdict: .unavailable(reason: "upstream: \(unconfirmed.why)"))
        case .sent, .retrying, .streamReset:
            break
        case .connected:
            upstream.noteConnected()
            emit(.upstream(event))
        case .connectionFailed(_, let reason, _):
            upstream.noteConnectFailed(reason)
            emit(.upstream(event))
        default:
            emit(.upstream(event))
        }
    }

    /// An upstream failure (given up unconfirmed, or answered 503 and the like): the sender hears
    /// status 10 and sends the notification again, so when an earlier attempt may have been
    /// delivered it may arrive twice: counted and named.
    private func unavailable(
        _ session: SenderSession?, identifier: UInt32?, token: DeviceToken, mayHaveBeenDelivered: Bool
    ) {
        count {
            $0.unavailable += 1
            if mayHaveBeenDelivered { $0.possibleDuplicates += 1 }
        }
        guard mayHaveBeenDelivered, let session else { return }
        emit(.possibleDuplicate(connection: session.connection, identifier: identifier ?? 0, token: token))
    }

    /// The store thread committed (or failed to commit) 410 tuples.
    private func stored(_ batch: [BridgeStore.Addition], failure: LegacyAPNsError?) {
        if let failure {
            emit(.storeFailed(reason: failure.reason))
            count { $0.unavailable += batch.count }
        } else {
            count { $0.unregistered += batch.count }
        }
        for addition in batch {
            if failure == nil {
                emit(
                    .unregistered(
                        topic: addition.topic, token: addition.record.token, seconds: addition.record.timestamp))
            }
            let verdict: BridgeVerdict =
                failure.map { .unavailable(reason: "the 410 could not be stored: \($0.reason)") }
                ?? .unregistered(seconds: addition.record.timestamp)
            session(tag: addition.tag)?.settle(tag: addition.tag, verdict: verdict)
        }
    }

    /// What a verdict means for the resend memory or the reports, once the sender no longer hears of it.
    func handle(_ aftermath: BridgeSenderMachine.Aftermath, connection: UInt64) {
        switch aftermath {
        case .none:
            return
        case .resolve(let key, let verdict):
            let resolution = withMemory {
                $0.resolve(key, verdict: verdict, now: Duration.seconds(Monotonic.now()))
            }.result
            for waiter in resolution.waiters {
                guard let session = session(tag: waiter) else { continue }
                if let verdict = resolution.verdict {
                    if verdict.isSuccess { count { $0.acknowledgedResends += 1 } }
                    session.settle(tag: waiter, verdict: verdict, fromMemory: true)
                } else {
                    session.forwardHeld(tag: waiter)
                }
            }
        case .unreported(let item, let verdict):
            let reason: String
            switch verdict {
            case .rejected(let status, let why): reason = "\(why) (status \(status.rawValue))"
            case .unavailable(let why): reason = why
            case .accepted, .unregistered: return
            }
            count { $0.notDelivered += 1 }
            emit(
                .notDelivered(
                    connection: connection, identifier: item.identifier, token: item.token,
                    reason: "\(reason); the sender had disconnected"))
        }
    }
}

/// Lets the client's event handler (and the store's) reach the core created after it.
///
/// Strong, not weak: a weak reference gives the core a side table, which sends every retain and
/// release of it down the slow path (4 % less bridge CPU without it in one A/B sitting, within
/// the noise in another). The cycle it makes (core, upstream, client, handler, router) is broken
/// by ``BridgeCore/detach()``.
final class EventRouter: @unchecked Sendable {
    // @unchecked: written in BridgeCore.init before any event can fire and by `detach()` once none
    // can; only read in between.
    var core: BridgeCore?
}

/// What the bridge takes from a sender's certificate.
struct SenderIdentity: Sendable {
    /// The topic (bundle identifier) it is for, if it names one.
    var topic: String?
    /// Its subject, for the logs.
    var subject: String?
}
