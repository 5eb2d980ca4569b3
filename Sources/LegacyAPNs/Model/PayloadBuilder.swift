/// Builds a payload with an `aps` dictionary and custom keys, as compact JSON.
///
/// The output is stable, so fixtures and tests can compare bytes:
/// - `aps` comes first, then custom keys in the order they were added;
/// - inside `aps`: `alert`, `badge`, `sound`, `content-available`, `mutable-content`, `category`,
///   `thread-id`;
/// - inside an alert dictionary: `title`, `subtitle`, `body`, `loc-key`, `loc-args`,
///   `title-loc-key`, `title-loc-args`, `action-loc-key`, `launch-image`;
/// - fields that are `nil` (or `false` for the two flags) are left out; no white space.
///
/// ```swift
/// var builder = PayloadBuilder(alert: "You have a new message")
/// builder.badge = 3
/// builder.sound = "ping.aiff"
/// let payload = try builder.build()   // {"aps":{"alert":"You have a new message","badge":3,"sound":"ping.aiff"}}
/// ```
public struct PayloadBuilder: Hashable, Sendable {
    /// The `alert` of `aps`: a plain string, or a dictionary of localisable parts.
    public enum Alert: Hashable, Sendable, ExpressibleByStringLiteral {
        case text(String)
        case dictionary(AlertDictionary)

        public init(stringLiteral value: String) { self = .text(value) }
    }

    /// The dictionary form of `alert`.
    public struct AlertDictionary: Hashable, Sendable {
        public var title: String?
        public var subtitle: String?
        public var body: String?
        public var locKey: String?
        public var locArgs: [String]?
        public var titleLocKey: String?
        public var titleLocArgs: [String]?
        public var actionLocKey: String?
        public var launchImage: String?

        public init(
            title: String? = nil, subtitle: String? = nil, body: String? = nil, locKey: String? = nil,
            locArgs: [String]? = nil, titleLocKey: String? = nil, titleLocArgs: [String]? = nil,
            actionLocKey: String? = nil, launchImage: String? = nil
        ) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.locKey = locKey
            self.locArgs = locArgs
            self.titleLocKey = titleLocKey
            self.titleLocArgs = titleLocArgs
            self.actionLocKey = actionLocKey
            self.launchImage = launchImage
        }

        var members: [(String, JSONValue)] {
            var members: [(String, JSONValue)] = []
            func add(_ key: String, _ text: String?) { if let text { members.append((key, .string(text))) } }
            func add(_ key: String, _ list: [String]?) {
                if let list { members.append((key, .array(list.map { .string($0) }))) }
            }
            add("title", title)
            add("subtitle", subtitle)
            add("body", body)
            add("loc-key", locKey)
            add("loc-args", locArgs)
            add("title-loc-key", titleLocKey)
            add("title-loc-args", titleLocArgs)
            add("action-loc-key", actionLocKey)
            add("launch-image", launchImage)
            return members
        }
    }

    public var alert: Alert?
    public var badge: Int?
    public var sound: String?
    /// Writes `"content-available":1` (a silent, background push).
    public var contentAvailable: Bool
    /// Writes `"mutable-content":1` (a notification service extension may change it).
    public var mutableContent: Bool
    public var category: String?
    public var threadID: String?
    /// Top-level keys beside `aps`, written in this order.
    public var customKeys: [JSONMember]

    public init(
        alert: Alert? = nil, badge: Int? = nil, sound: String? = nil, contentAvailable: Bool = false,
        mutableContent: Bool = false, category: String? = nil, threadID: String? = nil,
        customKeys: [JSONMember] = []
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.category = category
        self.threadID = threadID
        self.customKeys = customKeys
    }

    /// Adds a top-level key after the ones already added.
    public mutating func setCustomKey(_ key: String, to value: JSONValue) {
        if let index = customKeys.firstIndex(where: { $0.key == key }) {
            customKeys[index].value = value
        } else {
            customKeys.append(JSONMember(key, value))
        }
    }

    /// Serialises the payload.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` when a custom key is `aps`
    ///   or repeats, or a number is not finite.
    public func build() throws -> Payload {
        var aps: [(String, JSONValue)] = []
        switch alert {
        case .text(let text): aps.append(("alert", .string(text)))
        case .dictionary(let dictionary):
            aps.append(("alert", .object(dictionary.members.map { JSONMember($0.0, $0.1) })))
        case nil: break
        }
        if let badge { aps.append(("badge", .integer(badge))) }
        if let sound { aps.append(("sound", .string(sound))) }
        if contentAvailable { aps.append(("content-available", 1)) }
        if mutableContent { aps.append(("mutable-content", 1)) }
        if let category { aps.append(("category", .string(category))) }
        if let threadID { aps.append(("thread-id", .string(threadID))) }

        if customKeys.contains(where: { $0.key == "aps" }) {
            throw LegacyAPNsError(.invalidPayload, "custom key \"aps\" would replace the aps dictionary")
        }
        var writer = JSONWriter()
        try writer.writeObject(
            [("aps", .object(aps.map { JSONMember($0.0, $0.1) }))] + customKeys.map { ($0.key, $0.value) })
        return Payload(unvalidatedBytes: writer.bytes)
    }
}
