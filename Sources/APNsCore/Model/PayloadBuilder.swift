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
    ///
    /// A string literal, interpolated or not, is a ``text(_:)`` alert, so
    /// `PayloadBuilder(alert: "Message \(i)")` writes `"alert":"Message 7"`. Build the other form
    /// with ``dictionary(_:)``:
    ///
    /// ```swift
    /// PayloadBuilder(alert: .dictionary(.init(title: "Game request", body: "Bob wants to play")))
    /// ```
    public enum Alert: Hashable, Sendable, ExpressibleByStringInterpolation {
        /// `"alert":"<text>"`: the text shown, as it is (the string is escaped for JSON).
        case text(String)
        /// `"alert":{...}`: title, body, localisation keys (``AlertDictionary``).
        case dictionary(AlertDictionary)

        /// A plain text alert: ``text(_:)``.
        public init(stringLiteral value: String) { self = .text(value) }
    }

    /// The dictionary form of `alert`.
    public struct AlertDictionary: Hashable, Sendable {
        /// `title`: a short title (Apple Watch and iOS 8.2+).
        public var title: String?
        /// `subtitle` (iOS 10+).
        public var subtitle: String?
        /// `body`: the alert text.
        public var body: String?
        /// `loc-key`: a key in the app's `Localizable.strings` for the body.
        public var locKey: String?
        /// `loc-args`: format arguments for `loc-key`.
        public var locArgs: [String]?
        /// `title-loc-key`: a localization key for the title.
        public var titleLocKey: String?
        /// `title-loc-args`: format arguments for `title-loc-key`.
        public var titleLocArgs: [String]?
        /// `action-loc-key`: a localization key for the action button.
        public var actionLocKey: String?
        /// `launch-image`: the launch image to show.
        public var launchImage: String?

        /// Creates an alert dictionary; `nil` fields are left out.
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

    /// `aps.alert`: text or a dictionary.
    public var alert: Alert?
    /// `aps.badge`: the number on the app icon (0 removes it).
    public var badge: Int?
    /// `aps.sound`: a sound file in the app bundle, or `default`.
    public var sound: String?
    /// Writes `"content-available":1` (a silent, background push).
    public var contentAvailable: Bool
    /// Writes `"mutable-content":1` (a notification service extension may change it).
    public var mutableContent: Bool
    /// `aps.category`: the notification category (actions).
    public var category: String?
    /// `aps.thread-id`: groups notifications in Notification Center.
    public var threadID: String?
    /// Top-level keys beside `aps`, written in this order.
    public var customKeys: [JSONMember]

    /// Creates a builder; anything left `nil` (or `false`) is not written.
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

    /// Adds a top-level key after the ones already added (or replaces the value of one added
    /// before, keeping its place).
    ///
    /// ```swift
    /// builder.setCustomKey("conversation", to: ["id": 42, "unread": true, "from": "Bob \(surname)"])
    /// ```
    public mutating func setCustomKey(_ key: String, to value: JSONValue) {
        if let index = customKeys.firstIndex(where: { $0.key == key }) {
            customKeys[index].value = value
        } else {
            customKeys.append(JSONMember(key, value))
        }
    }

    /// Adds a top-level key whose value is any `Encodable`, encoded with ``JSONValueEncoder``
    /// (keys in the order the type encodes them, `nil` optionals left out).
    ///
    /// ```swift
    /// struct Message: Encodable { var id: Int; var sender: String; var tags: [String] }
    /// try builder.setCustomKey("message", encoding: Message(id: 7, sender: "bob", tags: ["new"]))
    /// // ..."message":{"id":7,"sender":"bob","tags":["new"]}
    /// ```
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` when the value cannot be
    ///   written as JSON (a non-finite number, an integer outside `Int`, a key encoded twice).
    public mutating func setCustomKey(_ key: String, encoding value: some Encodable) throws {
        setCustomKey(key, to: try JSONValue(encoding: value))
    }

    /// Serialises the payload.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` when a custom key is `aps`
    ///   or repeats, or a number is not finite.
    public func build() throws -> Payload {
        var writer = JSONWriter()
        writer.bytes.reserveCapacity(128)
        writer.writeRaw(#"{"aps":{"#)
        var first = true
        func key(_ name: StaticString) {
            if !first { writer.bytes.append(UInt8(ascii: ",")) }
            first = false
            writer.bytes.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { writer.bytes.append(contentsOf: $0) }
            writer.bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }
        switch alert {
        case .text(let text):
            key("alert")
            writer.writeString(text)
        case .dictionary(let dictionary):
            key("alert")
            try writer.writeObject(dictionary.members)
        case nil: break
        }
        if let badge {
            key("badge")
            appendDecimal(UInt64(badge.magnitude), to: &writer.bytes, negative: badge < 0)
        }
        if let sound {
            key("sound")
            writer.writeString(sound)
        }
        if contentAvailable {
            key("content-available")
            writer.bytes.append(UInt8(ascii: "1"))
        }
        if mutableContent {
            key("mutable-content")
            writer.bytes.append(UInt8(ascii: "1"))
        }
        if let category {
            key("category")
            writer.writeString(category)
        }
        if let threadID {
            key("thread-id")
            writer.writeString(threadID)
        }
        writer.bytes.append(UInt8(ascii: "}"))
        for (index, member) in customKeys.enumerated() {
            if member.key == "aps" {
                throw LegacyAPNsError(.invalidPayload, "custom key \"aps\" would replace the aps dictionary")
            }
            if customKeys[..<index].contains(where: { $0.key == member.key }) {
                throw LegacyAPNsError(.invalidPayload, "key \"\(member.key)\" appears twice in one JSON object")
            }
            writer.bytes.append(UInt8(ascii: ","))
            writer.writeString(member.key)
            writer.bytes.append(UInt8(ascii: ":"))
            try writer.write(member.value)
        }
        writer.bytes.append(UInt8(ascii: "}"))
        return Payload(unvalidatedBytes: writer.bytes)
    }
}
