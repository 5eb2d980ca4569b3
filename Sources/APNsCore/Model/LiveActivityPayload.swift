/// Builds the payload of a Live Activity push (ActivityKit): `start`, `update` or `end`, with
/// Apple's rules checked before anything is sent.
///
/// ```
/// {"aps":{"event":"update","timestamp":1767225600,"content-state":{...},"stale-date":...,
///         "dismissal-date":...,"relevance-score":...,"alert":...,
///         "attributes-type":"...","attributes":{...},"input-push-token":1,"input-push-channel":"..."}}
/// ```
///
/// Keys are written in that order, absent ones left out, no white space. The rules (Apple's
/// "Starting and updating Live Activities with ActivityKit push notifications"), checked by
/// ``build(forBroadcast:)`` and, on any payload, by ``problem(inPayload:forBroadcast:)``:
///
/// | rule | events |
/// |---|---|
/// | `timestamp` (seconds) and `content-state` (an object, at most 4096 bytes) are present | all |
/// | `alert`, `attributes-type` and `attributes` (an object, at most 4096 bytes) are present | start |
/// | `input-push-token` and `input-push-channel` (not both) | start only |
/// | `dismissal-date` | end only |
/// | `stale-date`, `dismissal-date` are whole seconds, `relevance-score` a number | all |
/// | a broadcast cannot start an activity | broadcast |
///
/// The push goes with `apns-push-type: liveactivity`, a topic ending in `.push-type.liveactivity`,
/// priority 5 or 10, and token authentication (``PushType/liveActivity``).
///
/// ```swift
/// struct Score: Encodable { var home: Int; var away: Int }
/// var update = try LiveActivityPayload(event: .update, timestamp: now, contentState: Score(home: 2, away: 1))
/// update.staleDate = now + 600
/// let payload = try update.build()
/// ```
public struct LiveActivityPayload: Hashable, Sendable {
    /// `aps.event`.
    public enum Event: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// Starts an activity remotely (iOS 17.2 and later).
        case start
        /// Updates a running activity.
        case update
        /// Ends it (it stays on screen until the dismissal date, by default up to four hours).
        case end

        /// The key's value.
        public var description: String { rawValue }
    }

    /// `aps.event`.
    public var event: Event
    /// `aps.timestamp`: when the update was made, in seconds since 1970 (the device keeps the
    /// newest).
    public var timestamp: Int64
    /// `aps.content-state`: the activity's dynamic state, a JSON object (at most 4096 bytes).
    public var contentState: JSONValue
    /// `aps.stale-date` (seconds since 1970): when the system marks the activity out of date.
    public var staleDate: Int64?
    /// `aps.dismissal-date` (seconds since 1970, `end` only): when an ended activity leaves the
    /// screen; one in the past dismisses it at once.
    public var dismissalDate: Int64?
    /// `aps.relevance-score`: which of an app's activities is shown most prominently.
    public var relevanceScore: Double?
    /// `aps.alert` (required for `start`, optional for `update`).
    public var alert: PayloadBuilder.Alert?
    /// `aps.attributes-type` (`start`): the name of the app's `ActivityAttributes` type.
    public var attributesType: String?
    /// `aps.attributes` (`start`): the activity's static attributes, a JSON object (at most 4096
    /// bytes).
    public var attributes: JSONValue?
    /// `aps.input-push-token: 1` (`start`, iOS 18): the started activity hands out a push token for
    /// its updates.
    public var inputPushToken: Bool
    /// `aps.input-push-channel` (`start`, iOS 18): the broadcast channel the started activity
    /// subscribes to.
    public var inputPushChannel: String?

    /// Creates a payload from its parts (``build(forBroadcast:)`` checks them).
    public init(
        event: Event, timestamp: Int64, contentState: JSONValue, staleDate: Int64? = nil, dismissalDate: Int64? = nil,
        relevanceScore: Double? = nil, alert: PayloadBuilder.Alert? = nil, attributesType: String? = nil,
        attributes: JSONValue? = nil, inputPushToken: Bool = false, inputPushChannel: String? = nil
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
    }

    /// Creates a payload whose content state is any `Encodable` (your `ContentState`), encoded
    /// with ``JSONValueEncoder``.
    public init(event: Event, timestamp: Int64, contentState: some Encodable) throws {
        self.init(event: event, timestamp: timestamp, contentState: try JSONValue(encoding: contentState))
    }

    /// A `start` payload: the alert, the attributes type and the attributes (any `Encodable`, your
    /// `ActivityAttributes`) are required.
    public static func start(
        timestamp: Int64, contentState: some Encodable, alert: PayloadBuilder.Alert, attributesType: String,
        attributes: some Encodable
    ) throws -> LiveActivityPayload {
        var payload = try LiveActivityPayload(event: .start, timestamp: timestamp, contentState: contentState)
        payload.alert = alert
        payload.attributesType = attributesType
        payload.attributes = try JSONValue(encoding: attributes)
        return payload
    }

    /// Replaces the content state with any `Encodable`.
    public mutating func setContentState(encoding value: some Encodable) throws {
        contentState = try JSONValue(encoding: value)
    }

    /// Replaces the attributes with any `Encodable`.
    public mutating func setAttributes(encoding value: some Encodable) throws {
        attributes = try JSONValue(encoding: value)
    }

    /// Serialises the payload and checks it with ``problem(inPayload:forBroadcast:)``.
    ///
    /// - Parameter forBroadcast: true for a broadcast on a channel, which cannot start an activity
    ///   and may carry 5120 bytes instead of 4096.
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` naming the rule broken.
    public func build(forBroadcast: Bool = false) throws -> Payload {
        var writer = JSONWriter()
        writer.writeRaw(#"{"aps":{"event":"#)
        writer.writeString(event.rawValue)
        writer.writeRaw(#","timestamp":"#)
        writer.writeRaw(String(timestamp))
        writer.writeRaw(#","content-state":"#)
        try writer.write(contentState)
        if let staleDate { writer.writeRaw(#","stale-date":\#(staleDate)"#) }
        if let dismissalDate { writer.writeRaw(#","dismissal-date":\#(dismissalDate)"#) }
        if let relevanceScore {
            writer.writeRaw(#","relevance-score":"#)
            try writer.write(.double(relevanceScore))
        }
        switch alert {
        case .text(let text):
            writer.writeRaw(#","alert":"#)
            writer.writeString(text)
        case .dictionary(let dictionary):
            writer.writeRaw(#","alert":"#)
            try writer.writeObject(dictionary.members)
        case nil: break
        }
        if let attributesType {
            writer.writeRaw(#","attributes-type":"#)
            writer.writeString(attributesType)
        }
        if let attributes {
            writer.writeRaw(#","attributes":"#)
            try writer.write(attributes)
        }
        if inputPushToken { writer.writeRaw(#","input-push-token":1"#) }
        if let inputPushChannel {
            writer.writeRaw(#","input-push-channel":"#)
            writer.writeString(inputPushChannel)
        }
        writer.writeRaw("}}")
        let payload = Payload(unvalidatedBytes: writer.bytes)
        if let problem = Self.problem(inPayload: payload, forBroadcast: forBroadcast) {
            throw LegacyAPNsError(.invalidPayload, problem)
        }
        return payload
    }
}
