internal import APNsRuntime

/// The connections a ``ProviderClient`` keeps open between its sends: a send that completes
/// leaves each healthy connection here, and the next send's slots take them instead of dialing,
/// so a client that sends again and again uses one TLS connection and one provider token, as Apple
/// asks (it treats rapid connecting and disconnecting as a denial-of-service attack).
///
/// At most `capacity` (the client's `connections`) are kept; ``shutDown()`` closes them and keeps
/// none from then on, and the pool's `deinit` closes those left when the last copy of the client
/// goes away.
final class ProviderConnectionPool: @unchecked Sendable {
    // @unchecked: `kept` and `isShutDown` are guarded by `lock`; a connection in `kept` is used by
    // no thread until `take()` hands it to one.
    private let lock = ConditionLock()
    private var kept: [ProviderConnection] = []
    private var isShutDown = false
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    deinit {
        for connection in kept { connection.discard() }
    }

    /// A kept connection for a new send's slot (the most recently kept one), or nil: dial.
    func take() -> ProviderConnection? {
        lock.withLock { kept.popLast() }
    }

    /// Keeps `connection` (``ProviderConnection/isKept``) for a later send; false when the pool is
    /// full or shut down, and then the caller closes it.
    func keep(_ connection: ProviderConnection) -> Bool {
        lock.withLock {
            guard !isShutDown, kept.count < capacity else { return false }
            kept.append(connection)
            return true
        }
    }

    /// Closes the kept connections, on the calling thread, and keeps none from now on.
    func shutDown() {
        let closing: [ProviderConnection] = lock.withLock {
            isShutDown = true
            defer { kept = [] }
            return kept
        }
        for connection in closing { connection.discard() }
    }
}
