/// The `reason` string of an APNs error response (Apple's "Handling notification responses from
/// APNs", HNR), or of a GOAWAY's debug data.
///
/// | status | reasons |
/// |---|---|
/// | 400 | BadCollapseId, BadDeviceToken, BadExpirationDate, BadMessageId, BadPriority, BadTopic, DeviceTokenNotForTopic, DuplicateHeaders, IdleTimeout, InvalidPushType, MissingDeviceToken, MissingTopic, PayloadEmpty, TopicDisallowed |
/// | 403 | BadCertificate, BadCertificateEnvironment, ExpiredProviderToken, Forbidden, InvalidProviderToken, MissingProviderToken, UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken (also seen as BadEnvironmentKeyInToken) |
/// | 404 | BadPath |
/// | 405 | MethodNotAllowed |
/// | 410 | ExpiredToken, Unregistered |
/// | 413 | PayloadTooLarge |
/// | 429 | TooManyProviderTokenUpdates, TooManyRequests |
/// | 500 | InternalServerError |
/// | 503 | ServiceUnavailable, Shutdown |
///
/// Channel management and broadcast add ``channelReasons`` (400 unless noted: FeatureNotEnabled,
/// MissingChannelId, BadChannelId, ChannelNotRegistered, BadRequestParams, BadRequestPayload,
/// MissingPushType, CannotCreateChannelConfig, 403 TopicMismatch).
///
/// An open struct: a reason Apple adds later survives decoding as itself (``status`` is nil for
/// it), so nothing is lost and nothing crashes.
public struct ProviderReason: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The reason as APNs spells it.
    public var rawValue: String

    /// Wraps any reason string.
    public init(rawValue: String) { self.rawValue = rawValue }

    // MARK: 400

    /// The `apns-collapse-id` is longer than 64 bytes.
    public static let badCollapseId = ProviderReason(rawValue: "BadCollapseId")
    /// The device token is invalid, or for the other environment.
    public static let badDeviceToken = ProviderReason(rawValue: "BadDeviceToken")
    /// The `apns-expiration` value is invalid.
    public static let badExpirationDate = ProviderReason(rawValue: "BadExpirationDate")
    /// The `apns-id` value is invalid.
    public static let badMessageId = ProviderReason(rawValue: "BadMessageId")
    /// The `apns-priority` value is invalid.
    public static let badPriority = ProviderReason(rawValue: "BadPriority")
    /// The `apns-topic` value is invalid.
    public static let badTopic = ProviderReason(rawValue: "BadTopic")
    /// The device token does not match the topic.
    public static let deviceTokenNotForTopic = ProviderReason(rawValue: "DeviceTokenNotForTopic")
    /// One or more headers are repeated.
    public static let duplicateHeaders = ProviderReason(rawValue: "DuplicateHeaders")
    /// The connection was idle too long (typically a GOAWAY reason).
    public static let idleTimeout = ProviderReason(rawValue: "IdleTimeout")
    /// The `apns-push-type` value is invalid.
    public static let invalidPushType = ProviderReason(rawValue: "InvalidPushType")
    /// The `:path` has no device token.
    public static let missingDeviceToken = ProviderReason(rawValue: "MissingDeviceToken")
    /// `apns-topic` is required (token auth, or a certificate with several topics) and absent.
    public static let missingTopic = ProviderReason(rawValue: "MissingTopic")
    /// The body is empty.
    public static let payloadEmpty = ProviderReason(rawValue: "PayloadEmpty")
    /// Pushing to this topic is not allowed.
    public static let topicDisallowed = ProviderReason(rawValue: "TopicDisallowed")

    // MARK: 403

    /// The certificate is invalid.
    public static let badCertificate = ProviderReason(rawValue: "BadCertificate")
    /// The client certificate is for the other environment.
    public static let badCertificateEnvironment = ProviderReason(rawValue: "BadCertificateEnvironment")
    /// The provider token is older than an hour: make a new one.
    public static let expiredProviderToken = ProviderReason(rawValue: "ExpiredProviderToken")
    /// The action is not allowed.
    public static let forbidden = ProviderReason(rawValue: "Forbidden")
    /// The provider token is not valid, or its signature does not verify.
    public static let invalidProviderToken = ProviderReason(rawValue: "InvalidProviderToken")
    /// Neither a client certificate nor a provider token was given.
    public static let missingProviderToken = ProviderReason(rawValue: "MissingProviderToken")
    /// The token's key id is not the key id of the connection's first token.
    public static let unrelatedKeyIdInToken = ProviderReason(rawValue: "UnrelatedKeyIdInToken")
    /// The token's key is for the other environment.
    public static let badEnvironmentKeyIdInToken = ProviderReason(rawValue: "BadEnvironmentKeyIdInToken")
    /// ``badEnvironmentKeyIdInToken`` as it has also been seen spelt.
    public static let badEnvironmentKeyInToken = ProviderReason(rawValue: "BadEnvironmentKeyInToken")

    // MARK: 404, 405

    /// The `:path` is not `/3/device/<token>`.
    public static let badPath = ProviderReason(rawValue: "BadPath")
    /// The `:method` is not `POST`.
    public static let methodNotAllowed = ProviderReason(rawValue: "MethodNotAllowed")

    // MARK: 410

    /// The device token has expired.
    public static let expiredToken = ProviderReason(rawValue: "ExpiredToken")
    /// The device token is no longer active for the topic (the app was removed): stop sending to it.
    public static let unregistered = ProviderReason(rawValue: "Unregistered")

    // MARK: 413

    /// The body exceeds the push type's limit (4096 bytes; 5120 for VoIP).
    public static let payloadTooLarge = ProviderReason(rawValue: "PayloadTooLarge")

    // MARK: 429

    /// The provider token was replaced more often than every 20 minutes on one connection.
    public static let tooManyProviderTokenUpdates = ProviderReason(rawValue: "TooManyProviderTokenUpdates")
    /// Too many requests to the same device token in a row.
    public static let tooManyRequests = ProviderReason(rawValue: "TooManyRequests")

    // MARK: 500, 503

    /// An internal server error.
    public static let internalServerError = ProviderReason(rawValue: "InternalServerError")
    /// The service is unavailable.
    public static let serviceUnavailable = ProviderReason(rawValue: "ServiceUnavailable")
    /// The server is shutting down.
    public static let shutdown = ProviderReason(rawValue: "Shutdown")

    // MARK: Channels and broadcast (Apple's "Handling error responses from APNs")

    /// The app has no broadcast capability (the bundle id is not enabled for channels).
    public static let featureNotEnabled = ProviderReason(rawValue: "FeatureNotEnabled")
    /// The request needs `apns-channel-id` and has none.
    public static let missingChannelId = ProviderReason(rawValue: "MissingChannelId")
    /// The `apns-channel-id` is not a channel id (not base64).
    public static let badChannelId = ProviderReason(rawValue: "BadChannelId")
    /// No channel of this app and environment has that id (never created, or deleted).
    public static let channelNotRegistered = ProviderReason(rawValue: "ChannelNotRegistered")
    /// The body names a JSON attribute the API does not know, or a value it does not take.
    public static let badRequestParams = ProviderReason(rawValue: "BadRequestParams")
    /// The body is not parseable JSON.
    public static let badRequestPayload = ProviderReason(rawValue: "BadRequestPayload")
    /// The request needs a push type (`push-type` in a channel's body, `apns-push-type` on a
    /// broadcast) and has none.
    public static let missingPushType = ProviderReason(rawValue: "MissingPushType")
    /// The channel cannot be created: the app has its 10,000 channels in this environment.
    public static let cannotCreateChannelConfig = ProviderReason(rawValue: "CannotCreateChannelConfig")
    /// The bundle id in the path is not one the credential may use (403).
    public static let topicMismatch = ProviderReason(rawValue: "TopicMismatch")
    /// 503 as Apple spells it in the channel article ("Service Unavailable", with a space).
    public static let serviceUnavailableSpaced = ProviderReason(rawValue: "Service Unavailable")

    /// The reasons Apple lists for channel management and broadcast requests, beyond those of the
    /// HNR table they share (BadExpirationDate, TopicDisallowed, BadPriority, PayloadEmpty,
    /// BadMessageId, InvalidPushType, BadPath, MethodNotAllowed, PayloadTooLarge, ...).
    public static let channelReasons: [ProviderReason] = [
        .featureNotEnabled, .missingChannelId, .badChannelId, .channelNotRegistered, .badRequestParams,
        .badRequestPayload, .missingPushType, .cannotCreateChannelConfig, .topicMismatch,
    ]

    /// Every reason in the HNR table with its status, in the table's order.
    public static let allKnown: [ProviderReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
        .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken,
        .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
    ]

    /// The HTTP status APNs answers this reason with; nil for a reason the HNR table does not list.
    public var status: Int? {
        switch rawValue {
        case "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
            "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
            "MissingTopic", "PayloadEmpty", "TopicDisallowed", "FeatureNotEnabled", "MissingChannelId",
            "BadChannelId", "ChannelNotRegistered", "BadRequestParams", "BadRequestPayload", "MissingPushType",
            "CannotCreateChannelConfig":
            400
        case "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden",
            "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken",
            "BadEnvironmentKeyInToken", "TopicMismatch":
            403
        case "BadPath": 404
        case "MethodNotAllowed": 405
        case "ExpiredToken", "Unregistered": 410
        case "PayloadTooLarge": 413
        case "TooManyProviderTokenUpdates", "TooManyRequests": 429
        case "InternalServerError": 500
        case "ServiceUnavailable", "Shutdown", "Service Unavailable": 503
        default: nil
        }
    }

    /// Whether Apple lists this reason (the HNR table, or the channel and broadcast one).
    public var isKnown: Bool { status != nil }

    /// The reason string.
    public var description: String { rawValue }
}
