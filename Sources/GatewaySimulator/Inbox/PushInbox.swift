import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// The last notifications a simulator received, accepted or rejected, for a person to look at
/// (``InboxServer``'s page) and for tests to assert on (its JSON API, or ``notifications(matching:)``).
///
/// Bounded: it keeps the newest ``capacity`` notifications in a ring and forgets the oldest, so
/// its memory stays flat however long the simulator runs. It is fed by the simulators'
/// existing hand-overs, a batch at a time (one lock per batch of accepted notifications, not one
/// per notification) and by their rejection events: connect it with
/// ``GatewaySimulator/Configuration/showInInbox(_:)`` or
/// ``ProviderSimulator/Configuration/showInInbox(_:)``. A binary sender's confirmation barrier is
/// not a notification and never appears.
///
/// ```swift
/// let inbox = PushInbox()
/// var configuration = GatewaySimulator.Configuration(identity: identity, clientTrust: trust)
/// configuration.showInInbox(inbox)
/// // ... send ...
/// let rejected = inbox.notifications(matching: .init(status: "rejected"))
/// ```
public final class PushInbox: Sendable {
    /// The default ``capacity``.
    public static let defaultCapacity = 10_000

    /// How many notifications it keeps (the newest).
    public let capacity: Int

    private struct State {
        var ring: [InboxNotification?]
        /// Where the next notification goes.
        var next = 0
        /// The id the next notification gets (ids start at 1 and are never reused).
        var nextID = 1
        var subscribers: [Int: AsyncStream<InboxNotification>.Continuation] = [:]
        var nextSubscriber = 0
    }

    private let state: Mutex<State>

    /// An empty inbox keeping the newest `capacity` notifications (at least 1).
    public init(capacity: Int = PushInbox.defaultCapacity) {
        let capacity = Swift.max(1, capacity)
        self.capacity = capacity
        self.state = Mutex(State(ring: Array(repeating: nil, count: capacity)))
    }

    /// Adds notifications received together (their ids are given here, in order), under one lock.
    /// Each element's ``InboxNotification/id`` is replaced.
    public func add(_ notifications: [InboxNotification]) {
        guard !notifications.isEmpty else { return }
        state.withLock { state in
            for var notification in notifications {
                notification.id = state.nextID
                state.nextID += 1
                state.ring[state.next] = notification
                state.next = (state.next + 1) % capacity
                for continuation in state.subscribers.values { continuation.yield(notification) }
            }
        }
    }

    /// The id the most recent notification got (0 before the first).
    public var latestID: Int { state.withLock { $0.nextID - 1 } }

    /// How many notifications it holds now (at most ``capacity``).
    public var count: Int { state.withLock { state in Swift.min(state.nextID - 1, capacity) } }

    /// Forgets every notification (ids go on counting).
    public func removeAll() {
        state.withLock { state in
            for index in state.ring.indices { state.ring[index] = nil }
        }
    }

    /// The notification with `id`, while it is kept.
    public func notification(id: Int) -> InboxNotification? {
        state.withLock { state in
            guard id >= 1, id < state.nextID, state.nextID - id <= capacity else { return nil }
            let index = ((state.next - (state.nextID - id)) % capacity + capacity) % capacity
            return state.ring[index]
        }
    }

    /// The notifications that match `filter`, newest first.
    public func notifications(matching filter: InboxFilter = InboxFilter()) -> [InboxNotification] {
        state.withLock { state in
            var found: [InboxNotification] = []
            let kept = Swift.min(state.nextID - 1, capacity)
            var index = state.next
            for _ in 0..<kept {
                index = (index - 1 + capacity) % capacity
                guard let notification = state.ring[index] else { continue }
                if let after = filter.after, notification.id <= after { break }
                guard filter.matches(notification) else { continue }
                found.append(notification)
                if let limit = filter.limit, found.count >= limit { break }
            }
            return found
        }
    }

    /// Every notification added from now on, as it is added, until the caller stops iterating.
    /// A subscriber that falls more than ``capacity`` notifications behind loses the oldest.
    public func updates() -> AsyncStream<InboxNotification> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: InboxNotification.self, bufferingPolicy: .bufferingNewest(capacity))
        let key = state.withLock { state in
            let key = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[key] = continuation
            return key
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }
}

/// What ``PushInbox/notifications(matching:)`` returns: every condition set must hold.
public struct InboxFilter: Sendable, Hashable {
    /// The device token (hex, any case).
    public var token: String?
    /// The topic, exactly.
    public var topic: String?
    /// `accepted`, `rejected` (anything not accepted), or a status exactly as the inbox shows it
    /// (`BadDeviceToken`, `8 invalid token`).
    public var status: String?
    /// Received at or after this UNIX time in milliseconds.
    public var sinceMilliseconds: Int64?
    /// Only notifications with a greater id.
    public var after: Int?
    /// At most this many (the newest).
    public var limit: Int?

    /// A filter; nil conditions match everything.
    public init(
        token: String? = nil, topic: String? = nil, status: String? = nil, sinceMilliseconds: Int64? = nil,
        after: Int? = nil, limit: Int? = nil
    ) {
        self.token = token?.lowercased()
        self.topic = topic
        self.status = status
        self.sinceMilliseconds = sinceMilliseconds
        self.after = after
        self.limit = limit
    }

    /// Whether `notification` passes (``after`` and ``limit`` aside).
    public func matches(_ notification: InboxNotification) -> Bool {
        if let token, notification.token?.hexString != token { return false }
        if let topic, notification.topic != topic { return false }
        if let sinceMilliseconds, notification.receivedMilliseconds < sinceMilliseconds { return false }
        switch status {
        case nil: return true
        case "accepted": return notification.isAccepted
        case "rejected": return !notification.isAccepted
        case let status?: return notification.status == status
        }
    }
}
