/// One broadcast push (iOS 18, Apple's "Sending broadcast push notification requests to APNs"):
/// a Live Activity update to every device subscribed to a channel.
///
/// ```
/// POST /4/broadcasts/apps/<bundle id>          on api.push.apple.com (api.sandbox... in development)
/// apns-channel-id: <channel id>                required
/// apns-push-type: liveactivity                 required (Apple's text says Liveactivity, its samples liveactivity)
/// apns-priority: 10 | 5 | 1                    required
/// apns-expiration: <UNIX seconds>              required; 0 on a no-message-stored channel
/// apns-request-id: <uuid>                      optional, echoed
/// body: the Live Activity payload, at most 5120 bytes
/// ```
///
/// The bundle id carries no push-type suffix (TopicDisallowed otherwise). The answer is a
/// ``ChannelResponse``: 200 with `apns-request-id` (and `apns-unique-id` in development).
public struct BroadcastRequest: Hashable, Sendable {
    /// The app's bundle id, without a suffix.
    public var bundleID: String
    /// The channel.
    public var channelID: ChannelID
    /// The payload (``LiveActivityPayload/build(forBroadcast:)``).
    public var payload: Payload
    /// `apns-priority` (default 10).
    public var priority: Priority
    /// `apns-expiration` (default 0, the only value a no-message-stored channel takes).
    public var expiration: Expiration
    /// `apns-push-type`: `liveactivity`, as Apple's samples send it.
    public var pushType: PushType
    /// `apns-request-id`, echoed in the answer.
    public var requestID: APNsID?

    /// The path prefix: `/4/broadcasts/apps/`.
    public static let pathPrefix = "/4/broadcasts/apps/"

    /// Creates a broadcast.
    public init(
        bundleID: String, channelID: ChannelID, payload: Payload, priority: Priority = .immediate,
        expiration: Expiration = Expiration(rawValue: 0), pushType: PushType = .liveActivity,
        requestID: APNsID? = nil
    ) {
        self.bundleID = bundleID
        self.channelID = channelID
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.pushType = pushType
        self.requestID = requestID
    }

    /// `/4/broadcasts/apps/<bundle id>`.
    public var path: String { Self.pathPrefix + bundleID }

    /// What APNs would refuse, found without a round trip: the reason and the fix in words, or nil.
    /// Checked: a bundle id with a push-type suffix (TopicDisallowed), an empty payload
    /// (PayloadEmpty), one over 5120 bytes (PayloadTooLarge), a priority other than 10, 5 and 1
    /// (BadPriority), and Apple's Live Activity rules for a broadcast (no `start`:
    /// ``LiveActivityPayload/problem(inPayload:forBroadcast:)``, InvalidPushType).
    public func problem() -> (reason: ProviderReason, explanation: String)? {
        if let suffix = Self.topicSuffix(of: bundleID) {
            return (.topicDisallowed, "a broadcast names the bundle id without a suffix, not '\(bundleID)' (\(suffix))")
        }
        if payload.count == 0 { return (.payloadEmpty, "the payload is empty") }
        if payload.count > PushType.broadcastMaximumPayloadSize {
            return (
                .payloadTooLarge,
                "the payload has \(payload.count) bytes; a broadcast takes at most \(PushType.broadcastMaximumPayloadSize)"
            )
        }
        if !priority.isValidForHTTP2 { return (.badPriority, "priority \(priority) is not 10, 5 or 1") }
        if let problem = LiveActivityPayload.problem(inPayload: payload, forBroadcast: true) {
            return (.invalidPushType, problem)
        }
        return nil
    }

    /// The push-type suffix `topic` ends with (`.push-type.liveactivity`, `.voip`, ...), if any.
    package static func topicSuffix(of topic: String) -> String? {
        PushType.allKnown.lazy.compactMap(\.requiredTopicSuffix).first { topic.hasSuffix($0) }
    }

    /// Appends the request's header fields.
    package func writeHeaders(into headers: inout HTTP2HeaderList, authority: String, authorizationToken: String?) {
        headers.append(name: ":method", value: "POST")
        headers.append(name: ":scheme", value: "https")
        headers.append(name: ":path", value: path, indexing: .never)
        headers.append(name: ":authority", value: authority)
        if let authorizationToken {
            headers.append(name: "authorization", prefix: "bearer ", value: authorizationToken, indexing: .never)
        }
        headers.append(name: "apns-channel-id", value: channelID.rawValue, indexing: .never)
        headers.append(name: "apns-push-type", value: pushType.rawValue)
        headers.append(name: "apns-priority", decimal: UInt64(priority.rawValue))
        headers.append(name: "apns-expiration", decimal: UInt64(expiration.rawValue), indexing: .never)
        if let requestID { headers.append(name: "apns-request-id", value: requestID.description, indexing: .never) }
    }
}
