import APNsCore

/// What APNs does with a push for a device that is offline, as a value: events in (a push
/// received, a device going offline or online, time passing), the fates they decide out. Sans-IO:
/// the time is passed in, in UNIX milliseconds, so a test is a script of events.
///
/// Apple's rules (Apple, "Sending notification requests to APNs"; HTTP2-PROTOCOL.md):
/// - a push to an online device is delivered at once;
/// - a push to an offline device is stored, **one per app per device** (here: per `apns-topic`):
///   a newer one replaces the stored one (its fate is ``InboxNotification/Fate/replaced``; the
///   detail says when the two share an `apns-collapse-id`, which coalesces them on the device too);
/// - a stored push is discarded when its `apns-expiration` passes (``InboxNotification/Fate/expired``,
///   at that time); `apns-expiration: 0` means "deliver once, do not store": to an offline device
///   it is discarded at once, as is one whose expiration has already passed; without the header
///   APNs keeps it under its own policy (here: until the device comes online);
/// - when the device comes online, what is stored for it is delivered.
///
/// ```
/// receive(push 1, offline device, topic A)   → [1 stored]
/// receive(push 2, same device, topic A)      → [1 replaced, 2 stored]
/// setOnline(device)                          → [2 delivered]
/// ```
public struct DeviceStorage: Sendable, Hashable {
    /// A push as the storage needs it.
    public struct Push: Sendable, Hashable {
        /// The inbox's id for it (what the changes name).
        public var id: Int
        /// The device.
        public var token: DeviceToken
        /// The app (the `apns-topic`; empty when the request named none).
        public var topic: String
        /// Its `apns-collapse-id`.
        public var collapseID: String?
        /// Its `apns-expiration` in UNIX seconds (0: do not store), nil when absent.
        public var expiration: UInt64?

        /// A push.
        public init(id: Int, token: DeviceToken, topic: String, collapseID: String? = nil, expiration: UInt64? = nil) {
            self.id = id
            self.token = token
            self.topic = topic
            self.collapseID = collapseID
            self.expiration = expiration
        }

        /// When it stops being worth delivering, in UNIX milliseconds (nil: never).
        var expiresAt: Int64? { expiration.map { Int64(clamping: $0) &* 1000 } }
    }

    /// A fate decided: push `id` is now `fate`, since `milliseconds`, for the reason `detail`.
    public struct Change: Sendable, Hashable {
        /// The inbox's id of the push.
        public var id: Int
        /// Its fate now.
        public var fate: InboxNotification.Fate
        /// When it was decided (for an expiry: when the expiration passed), UNIX milliseconds.
        public var milliseconds: Int64
        /// Why, in words.
        public var detail: String?

        /// A change.
        public init(id: Int, fate: InboxNotification.Fate, milliseconds: Int64, detail: String? = nil) {
            self.id = id
            self.fate = fate
            self.milliseconds = milliseconds
            self.detail = detail
        }
    }

    private struct Key: Hashable {
        var token: DeviceToken
        var topic: String
    }

    /// The devices that are offline now.
    public private(set) var offline: Set<DeviceToken>
    private var stored: [Key: Push] = [:]
    /// The earliest expiry of what is stored (nil: nothing stored expires).
    private var nextExpiry: Int64?

    /// Every device online (or those of `offline` offline), nothing stored.
    public init(offline: some Sequence<DeviceToken> = []) {
        self.offline = Set(offline)
    }

    /// Whether nothing can change a push's fate from delivered: every device online, nothing
    /// stored (the inbox's fast path).
    public var isIdle: Bool { offline.isEmpty && stored.isEmpty }

    /// What is stored now, in the order it was received.
    public var storedPushes: [Push] { stored.values.sorted { $0.id < $1.id } }

    /// A push arrived at `now`: what it decides (the push's own fate last; before it, the expiries
    /// that were due and the stored push it replaces).
    public mutating func receive(_ push: Push, now: Int64) -> [Change] {
        var changes = expire(now: now)
        guard offline.contains(push.token) else {
            changes.append(Change(id: push.id, fate: .delivered, milliseconds: now))
            return changes
        }
        if push.expiration == 0 {
            changes.append(
                Change(
                    id: push.id, fate: .expired, milliseconds: now,
                    detail: "apns-expiration 0: delivered only if the device is online, never stored"))
            return changes
        }
        if let expiresAt = push.expiresAt, expiresAt <= now {
            changes.append(
                Change(id: push.id, fate: .expired, milliseconds: now, detail: "apns-expiration had already passed"))
            return changes
        }
        let key = Key(token: push.token, topic: push.topic)
        if let earlier = stored[key] {
            let detail =
                earlier.collapseID != nil && earlier.collapseID == push.collapseID
                ? "coalesced with \(push.id), which has the same apns-collapse-id"
                : "replaced by \(push.id): APNs keeps one notification per app for an offline device"
            changes.append(Change(id: earlier.id, fate: .replaced, milliseconds: now, detail: detail))
        }
        stored[key] = push
        updateNextExpiry()
        changes.append(Change(id: push.id, fate: .stored, milliseconds: now, detail: "the device is offline"))
        return changes
    }

    /// The device went offline at `now` (the expiries due are returned).
    public mutating func setOffline(_ token: DeviceToken, now: Int64) -> [Change] {
        let changes = expire(now: now)
        offline.insert(token)
        return changes
    }

    /// The device came online at `now`: what was stored for it is delivered (after the expiries
    /// that were due).
    public mutating func setOnline(_ token: DeviceToken, now: Int64) -> [Change] {
        var changes = expire(now: now)
        guard offline.remove(token) != nil else { return changes }
        let keys = stored.keys.filter { $0.token == token }
        var delivered: [Push] = []
        for key in keys {
            if let push = stored.removeValue(forKey: key) { delivered.append(push) }
        }
        for push in delivered.sorted(by: { $0.id < $1.id }) {
            changes.append(
                Change(id: push.id, fate: .delivered, milliseconds: now, detail: "the device came online"))
        }
        updateNextExpiry()
        return changes
    }

    /// Discards what expired by `now`, each at the time its expiration passed.
    public mutating func expire(now: Int64) -> [Change] {
        guard let nextExpiry, nextExpiry <= now else { return [] }
        var changes: [Change] = []
        for (key, push) in stored {
            guard let expiresAt = push.expiresAt, expiresAt <= now else { continue }
            stored[key] = nil
            changes.append(
                Change(
                    id: push.id, fate: .expired, milliseconds: expiresAt,
                    detail: "apns-expiration passed while the device was offline"))
        }
        changes.sort { ($0.milliseconds, $0.id) < ($1.milliseconds, $1.id) }
        updateNextExpiry()
        return changes
    }

    private mutating func updateNextExpiry() {
        nextExpiry = stored.values.lazy.compactMap(\.expiresAt).min()
    }
}
