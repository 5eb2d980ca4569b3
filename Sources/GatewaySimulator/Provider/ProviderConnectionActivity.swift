internal import APNsRuntime
import Synchronization

/// What the accept thread knows of one connection of a ``ProviderSimulator``, to choose which to
/// close when a new client arrives at ``ProviderSimulator/Limits/maximumConnections``: whether it
/// is still in its TLS handshake (``handshake``), when it last made progress (its handshake, a
/// complete request), and whether the simulator owes it anything (a stream open, a response held
/// back). The connection's thread reports; the accept thread reads and evicts.
final class ProviderConnectionActivity: Sendable {
    /// From the accept to the end of the TLS handshake.
    let handshake = PendingHandshake()
    /// The monotonic time of the last progress, as its bit pattern.
    private let lastProgress = Atomic<UInt64>(Monotonic.now().bitPattern)
    private let owesNothing = Atomic<Bool>(true)
    private let evicted = Atomic<Bool>(false)

    /// The connection made progress at `now` (its handshake ended, a request arrived whole).
    func progressed(now: Double) { lastProgress.store(now.bitPattern, ordering: .relaxed) }

    /// Whether the simulator owes the client nothing now (no open stream, no held-back response).
    func setOwesNothing(_ value: Bool) { owesNothing.store(value, ordering: .relaxed) }

    /// Seconds without progress, owing nothing, past the handshake; nil when it is busy, in its
    /// handshake (``handshake`` decides then) or already evicted.
    func idleness(now: Double) -> Double? {
        guard !handshake.isPending, !isEvicted, owesNothing.load(ordering: .relaxed) else { return nil }
        return now - Double(bitPattern: lastProgress.load(ordering: .relaxed))
    }

    /// Asks the connection to close to make room; true when it was not asked before.
    func evict() -> Bool {
        !evicted.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Whether it was asked to close to make room (noticed within ``ProviderConnectionLoop/tick``).
    var isEvicted: Bool { evicted.load(ordering: .acquiring) }

    /// Which of `connections` makes room for a new client: the one longest in its TLS handshake
    /// (evicted there), or else the one idle longest, if for at least `grace` seconds (evicted
    /// here). Nil when every connection is busy or has made progress more recently.
    static func makeRoom(in connections: [Int: ProviderConnectionActivity], now: Double, grace: Double) -> Int? {
        if let oldest = PendingHandshake.evictOldest(connections.values.map(\.handshake)) {
            return connections.first { $0.value.handshake === oldest }?.key
        }
        var best: (key: Int, idle: Double)?
        for (key, activity) in connections {
            guard let idle = activity.idleness(now: now), idle >= grace else { continue }
            if best == nil || idle > best!.idle { best = (key, idle) }
        }
        guard let best, connections[best.key]!.evict() else { return nil }
        return best.key
    }
}
