import APNsCore
import Synchronization

/// A server connection between its accept and the end of its TLS handshake, which the accepting
/// thread may close to make room for a new client at the server's connection limit.
///
/// A thread-per-connection server (the bridge, `serve --http2`) gives each accepted connection a
/// slot and a thread before the handshake; clients that never complete it would hold the slots
/// for the whole handshake deadline. A real client's handshake takes milliseconds, so the one in
/// its handshake longest is the one to close: the server keeps its pending handshakes, evicts the
/// oldest with ``evictOldest(_:)``, and the connection's thread, waiting in
/// `TLSSession.accept(...interruption:)` with ``interruption(reason:)``, closes it at once.
package final class PendingHandshake: Sendable {
    /// When the connection was accepted (monotonic seconds).
    package let acceptedAt: Double
    /// Signalled on eviction, so the handshake ends at once (nil: the handshake looks every
    /// `TLSSession.interruptionCheckInterval`).
    package let wake: WakeSignal?
    private let phase = Atomic<UInt8>(Phase.handshaking)

    private enum Phase {
        static let handshaking: UInt8 = 0
        static let finished: UInt8 = 1
        static let evicted: UInt8 = 2
    }

    /// A connection accepted now (or at `acceptedAt`), whose thread waits on `wake`, if given.
    package init(acceptedAt: Double = Monotonic.now(), wake: WakeSignal? = nil) {
        self.acceptedAt = acceptedAt
        self.wake = wake
    }

    /// Whether its handshake is still under way (neither finished nor evicted).
    package var isPending: Bool { phase.load(ordering: .acquiring) == Phase.handshaking }

    /// Whether it was closed to make room.
    package var isEvicted: Bool { phase.load(ordering: .acquiring) == Phase.evicted }

    /// The handshake is over, whatever its outcome: the connection can no longer be evicted as a
    /// pending handshake. False when it was evicted first.
    @discardableResult
    package func finish() -> Bool {
        phase.compareExchange(expected: Phase.handshaking, desired: Phase.finished, ordering: .acquiringAndReleasing)
            .exchanged
    }

    /// Marks it evicted if its handshake is still under way; true when it was (its thread closes
    /// it at its next look, at once when woken).
    package func evict() -> Bool {
        let evicted = phase.compareExchange(
            expected: Phase.handshaking, desired: Phase.evicted, ordering: .acquiringAndReleasing
        ).exchanged
        if evicted { wake?.signal() }
        return evicted
    }

    /// What `TLSSession.accept` needs to end the handshake once this is evicted, with `reason`
    /// as the error's text.
    package func interruption(reason: String) -> TLSSession.Interruption {
        (wake: wake, abandoned: { self.isEvicted ? LegacyAPNsError(.cancelled, reason) : nil })
    }

    /// Evicts the one of `pending` in its handshake longest, and returns it (nil when none is).
    package static func evictOldest(_ pending: some Sequence<PendingHandshake>) -> PendingHandshake? {
        var candidates = pending.filter(\.isPending)
        candidates.sort { $0.acceptedAt < $1.acceptedAt }
        return candidates.first { $0.evict() }
    }
}
