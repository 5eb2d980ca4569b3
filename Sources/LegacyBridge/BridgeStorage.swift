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
/// - ``apply(_:expiring:)`` commits resend-memory changes in order, before the answer that relies
///   on them is written; ``resendWindow(lifetime:capacity:)`` is what a restarted bridge starts
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
    /// Commits changes of the resend memory, in order; with `expiring`, also deletes the entries
    /// stored that long ago or longer.
    func apply(_ changes: [BridgeResendMemory.Change], expiring: Duration?) throws
    /// What the store kept of the resend memory for this bridge to start from, oldest first.
    func resendWindow(lifetime: Duration, capacity: Int) throws -> [BridgeResendMemory.Record]
    /// What the store knows of `keys` that other bridges on it wrote (nil for a store only one
    /// bridge uses: its own memory already knows everything).
    func lookUp(_ keys: [BridgeResendKey], lifetime: Duration) throws -> [BridgeResendKey: SharedWindowEntry]?
    /// Says this bridge is alive (other bridges treat the pending entries of one silent for
    /// ``PostgresStore/ownerTimeout`` as orphaned); called every second or so.
    func heartbeat() throws
    /// Closes the store; nothing can be read or stored afterwards.
    func close()
}

/// What a shared store knows of one notification another bridge remembered.
public enum SharedWindowEntry: Hashable, Sendable {
    /// Its earlier copy has this verdict.
    case settled(BridgeVerdict)
    /// Its earlier copy is still upstream at a bridge that is alive: wait for its verdict.
    case pending
    /// Its earlier copy was upstream at a bridge that has gone silent: it may have been delivered.
    case orphaned
}

extension BridgeStorage {
    /// Nothing to give back: a store one bridge uses hands out tuples without claiming them.
    public func giveBack(_ records: [FeedbackRecord], topic: String) throws {}

    /// Nil: a store one bridge uses has nothing its memory does not know.
    public func lookUp(_ keys: [BridgeResendKey], lifetime: Duration) throws -> [BridgeResendKey: SharedWindowEntry]? {
        nil
    }

    /// Nothing to say: no other bridge asks.
    public func heartbeat() throws {}
}
