/// One notification of one legacy sender, recognisable when the sender sends it again on a new
/// connection: its identifier and a digest over the sender's certificate and the notification's
/// content (token, payload, expiry, priority), because senders reuse identifiers.
public struct BridgeResendKey: Hashable, Sendable {
    /// The binary identifier.
    public var identifier: UInt32
    /// 128 bits of a digest (SHA-256) of the sender's certificate fingerprint and the content.
    public var digest: UInt128

    /// Creates a key.
    public init(identifier: UInt32, digest: UInt128) {
        self.identifier = identifier
        self.digest = digest
    }
}

/// What the bridge remembers about notifications a sender is about to send again.
///
/// After an error response naming *x*, a legacy sender resends everything it sent after *x*. The
/// bridge, being pipelined, may already have delivered some of those upstream; it remembers them
/// here, so that the resend is acknowledged without a second delivery. Entries are one-shot (a
/// recall consumes one), bounded in number and age, and keyed by content, not only identifier.
/// A notification whose upstream verdict is still outstanding when the sender resends it is
/// *pending*: the resend waits for that verdict instead of going upstream a second time.
///
/// The memory can outlive the process: with ``Configuration/journals`` on, every change is also
/// written to a journal (``drainJournal(_:)``) that the bridge commits to its store before the
/// answer that relies on it, and a restarted bridge ``restore(_:now:)``s what the store kept.
/// A notification still upstream when its bridge died comes back *orphaned*: nobody knows whether
/// it was delivered, so its resend goes upstream again as a possible duplicate.
///
/// Pure and single-threaded; the bridge guards one instance with a lock.
public struct BridgeResendMemory: Sendable {
    /// Bounds.
    public struct Configuration: Hashable, Sendable {
        /// Settled entries kept at most (the oldest go first). Pending ones are not counted: they
        /// are bounded by the notifications in flight.
        public var capacity = 100_000
        /// Settled entries older than this are forgotten (senders resend within seconds).
        public var lifetime: Duration = .seconds(600)
        /// Whether every change is written to the journal as well (for a store that keeps the
        /// memory across restarts).
        public var journals = false

        /// The defaults above.
        public init() {}
    }

    /// What the memory says about a notification sent again.
    public enum Recall: Hashable, Sendable {
        /// Nothing known: send it upstream.
        case unknown
        /// Its earlier copy already has this verdict (accepted, unregistered or rejected): answer
        /// with it, without going upstream.
        case settled(BridgeVerdict)
        /// Its earlier copy is still upstream: the caller waits for ``resolve(_:verdict:now:)`` to
        /// name it among the waiters.
        case pending
        /// Its earlier copy was upstream when the bridge that sent it stopped (a crash, a kill):
        /// it may or may not have been delivered. Send it, and report it as a possible duplicate.
        case orphaned
    }

    /// One change to the memory, for a store that keeps it (``Configuration/journals``).
    public enum Change: Hashable, Sendable {
        /// `key` now has this verdict (nil: pending, its earlier copy still upstream).
        case stored(BridgeResendKey, verdict: BridgeVerdict?)
        /// `key` is forgotten (recalled, resolved for its waiters, or given up).
        case forgotten(BridgeResendKey)
    }

    /// What a store kept of the memory, for ``restore(_:now:)``.
    public struct Record: Hashable, Sendable {
        /// The notification.
        public var key: BridgeResendKey
        /// Its verdict, or nil when it was still upstream (it comes back orphaned).
        public var verdict: BridgeVerdict?
        /// How long ago it was stored.
        public var age: Duration

        /// Creates a record.
        public init(key: BridgeResendKey, verdict: BridgeVerdict?, age: Duration) {
            self.key = key
            self.verdict = verdict
            self.age = age
        }
    }

    /// What to do with the waiters of a pending entry once the earlier copy has its verdict.
    public struct Resolution: Hashable, Sendable {
        /// The waiters (the tags they registered with).
        public var waiters: [UInt64]
        /// The verdict for them, or nil when the earlier copy got none: they go upstream themselves.
        public var verdict: BridgeVerdict?

        /// Creates a resolution.
        public init(waiters: [UInt64], verdict: BridgeVerdict?) {
            self.waiters = waiters
            self.verdict = verdict
        }
    }

    private enum Entry: Hashable, Sendable {
        case settled(BridgeVerdict, stamp: UInt64)
        /// Restored as pending: its bridge stopped before the verdict (evicted as settled ones are).
        case orphaned(stamp: UInt64)
        /// `keep`: a waiter's own connection has answered meanwhile, so the sender will send it
        /// once more; the verdict stays remembered for that copy.
        case pending(waiters: [UInt64], keep: Bool)
    }

    /// The configuration.
    public let configuration: Configuration
    private var entries: [BridgeResendKey: Entry] = [:]
    /// Settled entries in the order they were stored (with their stamp, so an entry recalled and
    /// stored again is not evicted by its old place in line).
    private var order = Ring<(key: BridgeResendKey, stamp: UInt64, at: Duration)>(capacity: 64)
    private var nextStamp: UInt64 = 1
    /// Recalls answered from memory so far.
    public private(set) var hits = 0
    /// Changes not yet drained (with ``Configuration/journals``).
    private var journal: [Change] = []

    /// An empty memory.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Entries held (settled and pending).
    public var count: Int { entries.count }

    /// Whether anything is remembered under `key` (settled or pending; possibly old enough to be
    /// forgotten at the next ``recall(_:waiter:now:)``). Changes nothing: a shell asks it to skip
    /// work for frames the memory will answer.
    public func contains(_ key: BridgeResendKey) -> Bool { entries[key] != nil }

    /// Remembers the verdict of a notification the sender will send again. Verdicts that are not
    /// worth remembering (``BridgeVerdict/unavailable(reason:)``: nothing was decided) are not.
    public mutating func remember(_ key: BridgeResendKey, verdict: BridgeVerdict, now: Duration) {
        if case .unavailable = verdict { return }
        store(key, verdict: verdict, now: now)
    }

    /// Remembers that a notification the sender will send again is still waiting for its verdict.
    public mutating func rememberPending(_ key: BridgeResendKey) {
        if case .pending(let waiters, _)? = entries[key] {
            // Already pending: a resend waiting here belongs to a connection that has now answered.
            if !waiters.isEmpty { entries[key] = .pending(waiters: waiters, keep: true) }
            return
        }
        entries[key] = .pending(waiters: [], keep: false)
        note(.stored(key, verdict: nil))
    }

    /// Remembers what an answer says the sender will send again: the notifications after the
    /// failure, with their verdicts, or pending.
    public mutating func remember(_ answer: BridgeSenderMachine.Answer, now: Duration) {
        for item in answer.settledAfter {
            if let verdict = item.verdict { remember(item.key, verdict: verdict, now: now) }
        }
        for item in answer.pendingAfter { rememberPending(item.key) }
    }

    /// A sender sent `key` again. Settled entries are consumed; for a pending one, `waiter` is
    /// registered to be named in the ``Resolution``.
    public mutating func recall(_ key: BridgeResendKey, waiter: UInt64, now: Duration) -> Recall {
        evict(now: now)
        switch entries[key] {
        case nil:
            return .unknown
        case .settled(let verdict, _)?:
            entries[key] = nil
            hits += 1
            note(.forgotten(key))
            return .settled(verdict)
        case .orphaned?:
            entries[key] = nil
            note(.forgotten(key))
            return .orphaned
        case .pending(var waiters, let keep)?:
            waiters.append(waiter)
            entries[key] = .pending(waiters: waiters, keep: keep)
            hits += 1
            return .pending
        }
    }

    /// The earlier copy of a pending notification got `verdict`. Waiters get it (and the entry is
    /// used up); with no waiters yet, it is remembered for a later resend. When the verdict
    /// decides nothing (unavailable), the entry goes, and waiters are told to send it themselves.
    public mutating func resolve(_ key: BridgeResendKey, verdict: BridgeVerdict, now: Duration) -> Resolution {
        guard case .pending(let waiters, let keep)? = entries[key] else {
            return Resolution(waiters: [], verdict: nil)
        }
        if case .unavailable = verdict {
            entries[key] = nil
            note(.forgotten(key))
            return Resolution(waiters: waiters, verdict: nil)
        }
        if waiters.isEmpty || keep {
            store(key, verdict: verdict, now: now)
        } else {
            entries[key] = nil
            note(.forgotten(key))
        }
        return Resolution(waiters: waiters, verdict: verdict)
    }

    private mutating func store(_ key: BridgeResendKey, verdict: BridgeVerdict, now: Duration) {
        let stamp = nextStamp
        nextStamp += 1
        entries[key] = .settled(verdict, stamp: stamp)
        order.append((key, stamp, now))
        note(.stored(key, verdict: verdict))
        evict(now: now)
    }

    /// Takes back what a store kept (oldest first), as a restarted bridge's memory: settled
    /// entries answer their resends as before; pending ones come back ``Recall/orphaned``.
    /// Records as old as the lifetime are skipped; nothing is journaled (the store has them).
    public mutating func restore(_ records: some Sequence<Record>, now: Duration) {
        for record in records where record.age < configuration.lifetime {
            let stamp = nextStamp
            nextStamp += 1
            entries[record.key] = record.verdict.map { .settled($0, stamp: stamp) } ?? .orphaned(stamp: stamp)
            order.append((record.key, stamp, now - record.age))
        }
        evict(now: now, journaling: false)
    }

    /// Hands the changes made since the last drain to `body` (a store commits them, in order),
    /// and empties the journal, keeping its storage.
    public mutating func drainJournal(_ body: ([Change]) -> Void) {
        guard !journal.isEmpty else { return }
        body(journal)
        journal.removeAll(keepingCapacity: true)
    }

    private mutating func note(_ change: Change) {
        if configuration.journals { journal.append(change) }
    }

    /// Drops settled (and orphaned) entries beyond the capacity or older than the lifetime; those
    /// dropped for the capacity are journaled (a store forgets the old ones by their age itself).
    private mutating func evict(now: Duration, journaling: Bool = true) {
        while let oldest = order.first {
            let settledCount = order.count
            let expired = now - oldest.at >= configuration.lifetime
            guard settledCount > configuration.capacity || expired else { return }
            _ = order.removeFirst()
            switch entries[oldest.key] {
            case .settled(_, let stamp)? where stamp == oldest.stamp, .orphaned(let stamp)? where stamp == oldest.stamp:
                entries[oldest.key] = nil
                if journaling, !expired { note(.forgotten(oldest.key)) }
            default:
                break
            }
        }
    }
}
