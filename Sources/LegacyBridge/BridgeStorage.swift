import APNsCore

/// What the bridge keeps durably, whichever database keeps it: the 410 tuples for the feedback
/// service and the resend memory's journal. ``FeedbackStore`` (an SQLite file, one bridge) and
/// ``PostgresStore`` (a PostgreSQL database shared by a fleet of bridges) conform; the bridge's
/// store thread is the only user of an instance.
///
/// The contract each store keeps:
/// - ``add(_:)`` returns once the tuples are durable (the notification then counts as delivered);
///   one tuple per (topic, token), the latest time winning.
/// - ``tuples(topic:limit:)`` hands tuples to one feedback reader; ``forget(_:topic:)`` deletes
///   those written to it completely (a tuple updated since, with a later time, stays);
///   ``giveBack(_:topic:)`` returns those it could not write.
/// - ``commit(_:expiring:)`` commits window changes in order, the resend memory's before the
///   answer that relies on them is written; ``resendWindow(lifetime:capacity:)`` is what a restarted bridge starts
///   from.
public protocol BridgeStorage: AnyObject {
    /// Where the store is, for messages (a path, or a connection string without its password).
    var location: String { get }
    /// Stores tuples durably, in one transaction.
    func add(_ tuples: [(topic: String, record: FeedbackRecord)]) throws
    /// Up to `limit` tuples of `topic` for one reader, oldest first.
    func tuples(topic: String, limit: Int) throws -> [FeedbackRecord]
    /// Forgets tuples written to a reader completely.
    func forget(_ records: [FeedbackRecord], topic: String) throws
    /// Returns tuples a reader was handed but could not be written (a broken connection).
    func giveBack(_ records: [FeedbackRecord], topic: String) throws
    /// Tuples held, all topics.
    func count() throws -> Int
    /// Commits changes of the window, in order: the resend memory's and, in a store bridges
    /// share, what became of this bridge's claims; with `expiring`, also deletes the memory's
    /// entries stored that long ago or longer (and settled claims past the claims' lifetime).
    func commit(_ changes: [BridgeWindowChange], expiring: Duration?) throws
    /// What the store kept of the resend memory for this bridge to start from, oldest first.
    func resendWindow(lifetime: Duration, capacity: Int) throws -> [BridgeResendMemory.Record]
    /// Claims `keys` for this bridge before it forwards them, in one statement: each key no
    /// bridge holds (or whose entry is past its lifetime, or pending at a bridge gone silent) is
    /// now this bridge's (``SharedWindowEntry/claimed`` or ``SharedWindowEntry/orphaned``); for
    /// the others it says what the store knows. A key missing from the answer was claimed by
    /// another bridge in the same instant: ask again. Nil for a store only one bridge uses (its
    /// own memory already knows everything, and nobody else forwards).
    func claim(_ keys: [BridgeResendKey], lifetime: Duration) throws -> [BridgeResendKey: SharedWindowEntry]?
    /// Says this bridge is alive (other bridges treat the pending entries of one silent for
    /// ``PostgresStore/ownerTimeout`` as orphaned); called every second or so.
    func heartbeat() throws
    /// Closes the store; nothing can be read or stored afterwards.
    func close()
}

/// What a shared store says of one notification a bridge is about to forward.
public enum SharedWindowEntry: Hashable, Sendable {
    /// No bridge knew it: it is now claimed by this one (pending), to forward.
    case claimed
    /// Its earlier copy has this verdict: answer the resend with it.
    case settled(BridgeVerdict)
    /// Its earlier copy is still upstream at a bridge that is alive: wait for its verdict.
    case pending
    /// Its earlier copy was upstream at a bridge that has gone silent (or for longer than any
    /// answer takes): it may have been delivered. Claimed by this one now; forward it as a
    /// possible duplicate.
    case orphaned
}

/// One change to the window a store keeps: the resend memory's journal, and in a store bridges
/// share, what became of the notifications this bridge claimed before forwarding them.
public enum BridgeWindowChange: Hashable, Sendable {
    /// A change of the resend memory (what a sender will send again).
    case memory(BridgeResendMemory.Change)
    /// A notification this bridge forwarded, or answered from the resend memory, got its
    /// verdict: a resend of it, at any bridge, is answered with it for the claims' lifetime
    /// (an entry the memory has written since, or another bridge's claim, stays theirs).
    case claimSettled(BridgeResendKey, verdict: BridgeVerdict)
    /// A claim given up: the notification was not forwarded, or nothing was decided upstream.
    case claimReleased(BridgeResendKey)
}

extension BridgeStorage {
    /// Nothing to give back: a store one bridge uses hands out tuples without claiming them.
    public func giveBack(_ records: [FeedbackRecord], topic: String) throws {}

    /// Nil: a store one bridge uses has nothing its memory does not know.
    public func claim(_ keys: [BridgeResendKey], lifetime: Duration) throws -> [BridgeResendKey: SharedWindowEntry]? {
        nil
    }

    /// Commits changes of the resend memory alone (``commit(_:expiring:)``).
    public func apply(_ changes: [BridgeResendMemory.Change], expiring: Duration? = nil) throws {
        try commit(changes.map { .memory($0) }, expiring: expiring)
    }

    /// Nothing to say: no other bridge asks.
    public func heartbeat() throws {}
}
