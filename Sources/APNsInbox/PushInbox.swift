import APNsCore
internal import APNsRuntime
import Synchronization

/// The last notifications a simulator or a bridge received, accepted or rejected, for a person to
/// look at (``InboxServer``'s page) and for tests to assert on (its JSON API, or
/// ``notifications(matching:)``).
///
/// Bounded: it keeps the newest ``capacity`` notifications in a ring and forgets the oldest, so
/// its memory stays flat however long the simulator runs. It is fed by the simulators'
/// existing hand-overs, a batch at a time (one lock per batch of accepted notifications, not one
/// per notification) and by their rejection events: connect it with the simulators'
/// `Configuration.showInInbox(_:)` (GatewaySimulator) or the bridge's `Configuration.inbox`
/// (LegacyBridge). A binary sender's confirmation barrier is not a notification and never appears.
///
/// With ``simulatesDevices`` (the HTTP/2 simulator's inbox), devices can be offline
/// (``setOffline(_:)``): each accepted push then has a ``InboxNotification/fate`` decided by
/// ``DeviceStorage``, Apple's store-and-forward rules, and a delivery log.
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

    /// Whether its pushes go to simulated devices that can be offline (``setOffline(_:)``).
    public let simulatesDevices: Bool

    /// Where a stream has read up to (``changes(since:limit:)``): the newest id it saw, and the number of
    /// updates it saw.
    public struct Cursor: Sendable, Hashable {
        /// The newest notification seen.
        public var id: Int
        /// Updates seen (a fate changed).
        public var revision: Int
    }

    /// A batch kept as the receiver handed it over (a binary simulator's decoded frames, an HTTP/2
    /// simulator's accepted requests): a ring slot of one of its notifications is the batch and the
    /// notification's place, so nothing is built, retained or freed per notification until someone
    /// reads it; `make` builds the record then.
    private final class LazyBatch: Sendable {
        let make: @Sendable (Int) -> InboxNotification

        init(make: @escaping @Sendable (Int) -> InboxNotification) {
            self.make = make
        }
    }

    private struct FramedSlot {
        let batch: LazyBatch
        let index: Int
    }

    private struct State {
        /// The kept records, by slot (nil where the slot holds a frame of a batch, or nothing)...
        var ring: [InboxNotification?]
        /// ...the frames kept as their batch, by slot...
        var framed: [FramedSlot?]
        /// ...and which of the two each slot holds (0: nothing, 1: a record, 2: a frame), so that a
        /// write looks at one byte, not at a cold record.
        var kinds: [UInt8]
        /// Where the next notification goes.
        var next = 0
        /// The id the next notification gets (ids start at 1 and are never reused).
        var nextID = 1
        var subscribers: [Int: AsyncStream<InboxNotification>.Continuation] = [:]
        var nextSubscriber = 0
        /// The simulated devices (their offline state and stored pushes).
        var devices: DeviceStorage
        /// How many updates there were; `updates` holds the ids of the latest ones.
        var revision = 0
        var updates: [(revision: Int, id: Int)] = []

        /// The notification in `slot`, whose id is `id`.
        func entry(_ slot: Int, id: Int) -> InboxNotification? {
            switch kinds[slot] {
            case 1: return ring[slot]
            case 2:
                guard let framed = framed[slot] else { return nil }
                var made = framed.batch.make(framed.index)
                made.id = id
                return made
            default: return nil
            }
        }

        /// Puts a record in `slot`, letting go of what was there.
        mutating func keep(_ notification: InboxNotification, at slot: Int) {
            if kinds[slot] == 2 { framed[slot] = nil }
            ring[slot] = notification
            kinds[slot] = 1
        }

        /// Puts frame `index` of `batch` in `slot`, letting go of what was there.
        mutating func keep(_ batch: LazyBatch, _ index: Int, at slot: Int) {
            if kinds[slot] == 1 { ring[slot] = nil }
            framed[slot] = FramedSlot(batch: batch, index: index)
            kinds[slot] = 2
        }

        func index(of id: Int, capacity: Int) -> Int? {
            guard id >= 1, id < nextID, nextID - id <= capacity else { return nil }
            return ((next - (nextID - id)) % capacity + capacity) % capacity
        }

        /// Applies fates the devices decided to the notifications still kept (except `skipping`,
        /// which is not in the ring yet).
        mutating func apply(_ changes: [DeviceStorage.Change], capacity: Int, skipping: Int? = nil) {
            for change in changes where change.id != skipping {
                guard let index = index(of: change.id, capacity: capacity), kinds[index] == 1, var kept = ring[index]
                else { continue }
                kept.record(change)
                ring[index] = kept
                revision += 1
                if updates.count >= capacity { updates.removeFirst(updates.count / 2) }
                updates.append((revision, change.id))
            }
        }
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> Int64

    /// An empty inbox keeping the newest `capacity` notifications (at least 1).
    ///
    /// - Parameters:
    ///   - capacity: how many notifications are kept (the oldest go first).
    ///   - simulatesDevices: pushes go to simulated devices (the HTTP/2 simulator): accepted
    ///     HTTP/2 requests get a fate, and `offline` devices store them.
    ///   - offline: the devices offline from the start.
    ///   - clock: UNIX time in milliseconds (nil: the system's; tests pass their own).
    public init(
        capacity: Int = PushInbox.defaultCapacity, simulatesDevices: Bool = false, offline: [DeviceToken] = [],
        clock: (@Sendable () -> Int64)? = nil
    ) {
        let capacity = Swift.max(1, capacity)
        self.capacity = capacity
        self.simulatesDevices = simulatesDevices
        self.clock = clock ?? { Host.unixMilliseconds() }
        self.state = Mutex(
            State(
                ring: Array(repeating: nil, count: capacity), framed: Array(repeating: nil, count: capacity),
                kinds: Array(repeating: 0, count: capacity), devices: DeviceStorage(offline: offline)))
    }

    /// Adds notifications received together (their ids are given here, in order), under one lock.
    /// Each element's ``InboxNotification/id`` is replaced. A notification with a
    /// ``InboxNotification/fate`` (an accepted HTTP/2 push) goes to its device: delivered at once
    /// while every device is online, else as ``DeviceStorage`` decides.
    public func add(_ notifications: [InboxNotification]) {
        add(count: notifications.count) { notifications[$0] }
    }

    /// Adds `count` notifications, the one `make` returns for each index (nil: none for it), each
    /// made under the inbox's one lock and put straight into the ring: the simulators' hand-over,
    /// which makes no array of them first (``add(_:)-([InboxNotification])``'s rules otherwise).
    public func add(count: Int, _ make: (Int) -> InboxNotification?) {
        guard count > 0 else { return }
        let capacity = self.capacity
        state.withLock { state in
            for index in 0..<count {
                guard var notification = make(index) else { continue }
                let id = state.nextID
                notification.id = id
                var changes: [DeviceStorage.Change] = []
                if notification.fate != nil, !state.devices.isIdle, let request = notification.request {
                    changes = state.devices.receive(
                        DeviceStorage.Push(
                            id: id, token: request.deviceToken, topic: request.topic ?? "",
                            collapseID: request.collapseID, expiration: request.expiration.map { UInt64($0.rawValue) }),
                        now: notification.receivedMilliseconds)
                    for change in changes where change.id == id { notification.record(change) }
                }
                let slot = state.next
                state.keep(notification, at: slot)
                state.next = (slot + 1) % capacity
                state.nextID += 1
                if !changes.isEmpty { state.apply(changes, capacity: capacity, skipping: id) }
                if !state.subscribers.isEmpty, let added = state.ring[slot] {
                    for continuation in state.subscribers.values { continuation.yield(added) }
                }
            }
        }
    }

    /// Adds a binary simulator's accepted frames of one connection (what is not a notification is
    /// left out), under one lock. The batch is kept as it is (``add(lazily:needsDevices:_:)``).
    public func add(frames: [Frame], connection: Int) {
        guard !frames.isEmpty else { return }
        let now = clock()
        let make: @Sendable (Int) -> InboxNotification = { index in
            guard case .notification(let notification, _) = frames[index] else {
                return InboxNotification(
                    receivedMilliseconds: now, transport: .binary, connection: connection, token: nil,
                    status: "accepted", statusCode: 0, content: .frame(frames[index]))
            }
            return InboxNotification(
                receivedMilliseconds: now, transport: .binary, connection: connection, token: notification.token,
                status: "accepted", statusCode: 0, content: .frame(frames[index]))
        }
        if frames.allSatisfy({ if case .notification = $0 { true } else { false } }) {
            add(lazily: frames.count, needsDevices: false, make)
        } else {
            let notifications = frames.indices.filter { if case .notification = frames[$0] { true } else { false } }
            add(count: notifications.count) { make(notifications[$0]) }
        }
    }

    /// Adds `count` notifications received together, kept as their batch: each ring slot names
    /// the batch and the index, and `make(index)` builds the record only when it is read (it must
    /// give the same record every time; ids are the inbox's). The receiver's hand-over, made as
    /// cheap per notification as a slot and a retain. `needsDevices`: the records have a fate (an
    /// HTTP/2 simulator's pushes); while a device is offline or something is stored, they are
    /// built now instead and go to their devices (``add(count:_:)``).
    public func add(lazily count: Int, needsDevices: Bool, _ make: @escaping @Sendable (Int) -> InboxNotification) {
        guard count > 0 else { return }
        let batch = LazyBatch(make: make)
        let capacity = self.capacity
        let built: Bool = state.withLock { state in
            if needsDevices, !state.devices.isIdle { return false }
            for index in 0..<count {
                let slot = state.next
                state.keep(batch, index, at: slot)
                state.next = (slot + 1) % capacity
                state.nextID += 1
                if !state.subscribers.isEmpty, let added = state.entry(slot, id: state.nextID - 1) {
                    for continuation in state.subscribers.values { continuation.yield(added) }
                }
            }
            return true
        }
        if !built { add(count: count) { make($0) } }
    }

    /// The inbox's clock now: UNIX time in milliseconds (what the simulators stamp received
    /// notifications with, so that fates and expiries agree with it).
    public var nowMilliseconds: Int64 { clock() }

    /// The id the most recent notification got (0 before the first).
    public var latestID: Int { state.withLock { $0.nextID - 1 } }

    /// How many notifications it holds now (at most ``capacity``).
    public var count: Int { state.withLock { state in Swift.min(state.nextID - 1, capacity) } }

    /// Forgets every notification (ids go on counting; what devices store stays stored).
    public func removeAll() {
        state.withLock { state in
            for index in state.ring.indices {
                state.ring[index] = nil
                state.framed[index] = nil
                state.kinds[index] = 0
            }
        }
    }

    /// The notification with `id`, while it is kept.
    public func notification(id: Int) -> InboxNotification? {
        expireDue()
        return state.withLock { state in
            state.index(of: id, capacity: capacity).flatMap { state.entry($0, id: id) }
        }
    }

    /// The notification answered with `apns-unique-id` `uniqueID`, while it is kept: its delivery
    /// log is ``InboxNotification/deliveryLog``.
    public func notification(uniqueID: APNsID) -> InboxNotification? {
        expireDue()
        return state.withLock { state in
            // Newest first; a batch kept as handed over is read record by record.
            var id = state.nextID - 1
            while id >= 1, let slot = state.index(of: id, capacity: capacity) {
                if let kept = state.entry(slot, id: id), kept.uniqueID == uniqueID { return kept }
                id -= 1
            }
            return nil
        }
    }

    /// The notifications that match `filter`, newest first.
    public func notifications(matching filter: InboxFilter = InboxFilter()) -> [InboxNotification] {
        expireDue()
        return state.withLock { state in
            var found: [InboxNotification] = []
            let kept = Swift.min(state.nextID - 1, capacity)
            var index = state.next
            var id = state.nextID
            for _ in 0..<kept {
                index = (index - 1 + capacity) % capacity
                id -= 1
                guard let notification = state.entry(index, id: id) else { continue }
                if let after = filter.after, notification.id <= after { break }
                guard filter.matches(notification) else { continue }
                found.append(notification)
                if let limit = filter.limit, found.count >= limit { break }
            }
            return found
        }
    }

    /// Where the inbox is now, for ``changes(since:limit:)``.
    public var cursor: Cursor { state.withLock { Cursor(id: $0.nextID - 1, revision: $0.revision) } }

    /// What happened after `cursor`: the notifications added (oldest first, as they are now; at
    /// most the newest `limit`), those the reader had whose fate changed (as they are now, oldest
    /// change first, each once), how many added ones it skips (no longer kept, or beyond `limit`),
    /// and the cursor to ask with next. A reader more than ``capacity`` updates behind misses the
    /// oldest of them.
    public func changes(since cursor: Cursor, limit: Int = .max) -> (
        added: [InboxNotification], updated: [InboxNotification], skipped: Int, cursor: Cursor
    ) {
        expireDue()
        let capacity = self.capacity
        return state.withLock { state in
            var added: [InboxNotification] = []
            let newest = state.nextID - 1
            if newest > cursor.id {
                // After a clear (or a slow turn), what is not kept is skipped.
                let oldest = Swift.max(cursor.id + 1, newest - Swift.min(capacity, Swift.max(1, limit)) + 1)
                for id in oldest...newest {
                    if let index = state.index(of: id, capacity: capacity), let kept = state.entry(index, id: id) {
                        added.append(kept)
                    }
                }
            }
            var updated: [InboxNotification] = []
            if state.revision > cursor.revision {
                var seen = Set<Int>()
                for (revision, id) in state.updates where revision > cursor.revision && id <= cursor.id {
                    guard seen.insert(id).inserted, let index = state.index(of: id, capacity: capacity),
                        let kept = state.entry(index, id: id)
                    else { continue }
                    updated.append(kept)
                }
            }
            let skipped = Swift.max(0, newest - cursor.id - added.count)
            return (added, updated, skipped, Cursor(id: Swift.max(cursor.id, newest), revision: state.revision))
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

    // MARK: - Devices

    /// The devices offline now.
    public var offlineDevices: Set<DeviceToken> { state.withLock { $0.devices.offline } }

    /// What the devices store now (oldest first).
    public var storedPushes: [DeviceStorage.Push] {
        expireDue()
        return state.withLock { $0.devices.storedPushes }
    }

    /// Takes the device offline: pushes to it are stored from now on (one per app).
    public func setOffline(_ token: DeviceToken) {
        let now = clock()
        state.withLock { state in
            let changes = state.devices.setOffline(token, now: now)
            state.apply(changes, capacity: capacity)
        }
    }

    /// Brings the device online: what is stored for it is delivered now.
    public func setOnline(_ token: DeviceToken) {
        let now = clock()
        state.withLock { state in
            let changes = state.devices.setOnline(token, now: now)
            state.apply(changes, capacity: capacity)
        }
    }

    /// Discards the stored pushes whose expiration has passed (asked before every read, so what
    /// is read is as of now).
    public func expireDue() {
        guard simulatesDevices else { return }
        let now = clock()
        state.withLock { state in
            guard !state.devices.isIdle else { return }
            let changes = state.devices.expire(now: now)
            state.apply(changes, capacity: capacity)
        }
    }
}

extension InboxNotification {
    /// Takes a fate the devices decided, and logs it.
    mutating func record(_ change: DeviceStorage.Change) {
        fate = change.fate
        deliveryLog.append(
            DeliveryEvent(event: change.fate.rawValue, milliseconds: change.milliseconds, detail: change.detail))
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
    /// The fate (`delivered`, `stored`, `replaced`, `expired`).
    public var fate: InboxNotification.Fate?

    /// A filter; nil conditions match everything.
    public init(
        token: String? = nil, topic: String? = nil, status: String? = nil, sinceMilliseconds: Int64? = nil,
        after: Int? = nil, limit: Int? = nil, fate: InboxNotification.Fate? = nil
    ) {
        self.token = token?.lowercased()
        self.topic = topic
        self.status = status
        self.sinceMilliseconds = sinceMilliseconds
        self.after = after
        self.limit = limit
        self.fate = fate
    }

    /// Whether `notification` passes (``after`` and ``limit`` aside).
    public func matches(_ notification: InboxNotification) -> Bool {
        if let token, notification.token?.hexString != token { return false }
        if let topic, notification.topic != topic { return false }
        if let sinceMilliseconds, notification.receivedMilliseconds < sinceMilliseconds { return false }
        if let fate, notification.fate != fate { return false }
        switch status {
        case nil: return true
        case "accepted": return notification.isAccepted
        case "rejected": return !notification.isAccepted
        case let status?: return notification.status == status
        }
    }
}
