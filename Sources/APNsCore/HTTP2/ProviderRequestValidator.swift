/// The request rules of the HTTP/2 provider API, as a server applies them: a pure function from
/// the received headers, the body and the connection's authorization to "accepted" or the failure
/// response.
///
/// Apple lists the reasons (HNR) but documents no order of checking; this is the order used, and
/// the first failing row decides the response:
///
/// | # | check | failure |
/// |---|---|---|
/// | 1 | `:method` is `POST` | 405 MethodNotAllowed |
/// | 2 | `:path` starts with `/3/device/` | 404 BadPath |
/// | 3 | something follows `/3/device/` | 400 MissingDeviceToken |
/// | 4 | it is an even number, 64 to 200, of hex digits | 400 BadDeviceToken |
/// | 5 | no kept header (pseudo-headers, `authorization`, `apns-*`) arrived twice | 400 DuplicateHeaders |
/// | 6 | token auth: the caller's verdict on the bearer token accepts it | its reason (403 ...) |
/// | 7 | `apns-topic` present, or certificate auth with exactly one topic | 400 MissingTopic |
/// | 8 | `apns-topic` is visible ASCII, not empty | 400 BadTopic |
/// | 9 | the certificate (or the accepted token's team, when known) allows the topic | 400 TopicDisallowed |
/// | 10 | `apns-push-type`, if present, is a documented type | 400 InvalidPushType |
/// | 11 | `apns-priority`, if present, is `10`, `5` or `1` | 400 BadPriority |
/// | 12 | `apns-expiration`, if present, is decimal UNIX seconds that fit 32 bits | 400 BadExpirationDate |
/// | 13 | `apns-id`, if present, is an 8-4-4-4-12 UUID (either case) | 400 BadMessageId |
/// | 14 | `apns-collapse-id`, if present, has at most 64 bytes | 400 BadCollapseId |
/// | 15 | the body is not empty | 400 PayloadEmpty |
/// | 16 | the body fits the push type (4096 bytes, 5120 for `voip`) | 413 PayloadTooLarge |
/// | 17 | the priority, if given, is one the push type allows (`background` 5, `liveactivity` 5 or 10) | 400 BadPriority |
/// | 18 | the topic ends with the suffix the push type requires (`.voip`, `.complication`, ...) | 400 BadTopic |
/// | 19 | a token-only type (`location`, `liveactivity`) does not arrive over certificate auth | 400 TopicDisallowed |
/// | 20 | the payload suits the type (`widgets`: `{"aps":{"content-changed":true}}`; `liveactivity`: an `aps.event`, content state and attributes of 4096 bytes at most) | 400 InvalidPushType / 413 PayloadTooLarge |
///
/// Why this order: a request that is not a push at all (1-4) is refused before anything else is
/// read; duplicates (5) come before any single value is judged, because a repeated header has no
/// one value to judge; the credential (6) comes before the topic, because which topics are allowed
/// depends on it; then each header alone in the order of Apple's header table (7-14), the body
/// (15-16), and last the rules that relate two fields (17-18).
///
/// Decisions where Apple is silent or ambiguous:
/// - Row 9 answers **TopicDisallowed** ("pushing to this topic is not allowed"), keeping BadTopic
///   for a malformed value.
/// - Row 17 answers **BadPriority**: SNR says a background push must use priority 5 and "using
///   priority 10 is an error", and gives a Live Activity 5 or 10; the priority is the offending
///   value, the push type is fine. Only an explicit `apns-priority` is judged: an absent header,
///   though it means 10 for alerts, is what most clients send for background pushes.
/// - Row 19 answers **TopicDisallowed**: Apple says `location` and `liveactivity` need token auth
///   but not what a certificate connection gets; the certificate does not grant the topic
///   (``PushType/problem(usesTokens:)``).
/// - Row 20 answers **InvalidPushType** for a payload that does not match its type (SNR: the type
///   "must match the payload") and **PayloadTooLarge** for an oversized content state or
///   attributes; Apple names no reason for either. Only `widgets` and `liveactivity` payloads
///   are read; every other payload is taken as it is.
/// - Row 18 answers **BadTopic**: the push type is valid, the topic is not the one that type
///   requires. DeviceTokenNotForTopic is about the device token (registered for another app), which
///   only a server that knows its devices can decide, after this validation.
/// - Row 12 accepts 32-bit values only, like the binary protocol and ``Expiration``.
/// - Other bodies' JSON is not checked: Apple documents no reason for a malformed payload.
/// - Device state (BadDeviceToken for the wrong environment, DeviceTokenNotForTopic, Unregistered,
///   TooManyRequests) is the caller's to decide after an accepted validation.
///
/// A failure response echoes the request's `apns-id` when it parsed; otherwise its ``ProviderResponse/apnsID``
/// is nil and the server generates one.
package enum ProviderRequestValidator {
    /// What validation decided.
    package enum Outcome: Hashable, Sendable {
        /// The request is valid: here it is as a value (topic resolved for single-topic
        /// certificates; absent optional headers stay nil).
        case accepted(ProviderRequest)
        /// The response to send.
        case rejected(ProviderResponse)
    }

    /// The most hex digits a token may have (``DeviceToken/maximumByteCount`` bytes).
    package static let maximumTokenHexDigits = 2 * DeviceToken.maximumByteCount
    /// The longest `apns-collapse-id` accepted, in bytes.
    package static let maximumCollapseIDCount = 64

    /// Applies the rules above in order.
    ///
    /// - Parameter keepingAuthorizationToken: whether an accepted request carries its bearer token
    ///   (``ProviderRequest/authorizationToken``); a server that does not keep it saves a `String`
    ///   per request.
    package static func validate(
        _ head: ProviderRequestHead, body: [UInt8], authorization: ProviderAuthorization,
        keepingAuthorizationToken: Bool = true
    ) -> Outcome {
        let apnsID = head.withValue(.apnsID) { $0.flatMap(APNsID.init(utf8:)) }
        func reject(_ reason: ProviderReason) -> Outcome {
            .rejected(ProviderResponse(rejecting: reason, apnsID: apnsID))
        }

        // 1-4: method and path.
        let isPost = head.withValue(.method) { $0.map { ProviderResponse.equals($0, "POST") } ?? false }
        guard isPost else { return reject(.methodNotAllowed) }
        let token: DeviceToken
        switch head.withValue(.path, parseToken) {
        case .token(let parsed): token = parsed
        case .invalid(let reason): return reject(reason)
        }

        // 5: duplicates.
        if head.duplicate != nil { return reject(.duplicateHeaders) }

        // 6: the credential.
        var allowedTopics: [String]?
        var bearer: String?
        switch authorization {
        case .certificate(let topics):
            allowedTopics = topics
        case .token(.rejected(let reason)):
            return reject(reason)
        case .token(.accepted(let topics)):
            allowedTopics = topics
            if keepingAuthorizationToken { bearer = head.bearerToken }
        }

        // 7-9: the topic.
        let topic: String
        if let given = head.string(.topic) {
            guard !given.isEmpty, given.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return reject(.badTopic) }
            if let allowedTopics, !allowedTopics.contains(given) { return reject(.topicDisallowed) }
            topic = given
        } else if case .certificate(let topics) = authorization, topics.count == 1 {
            topic = topics[0]
        } else {
            return reject(.missingTopic)
        }

        // 10-14: one header at a time.
        let pushType = head.string(.pushType).map(PushType.init(rawValue:))
        if let pushType, !pushType.isKnown { return reject(.invalidPushType) }
        var priority: Priority?
        if head.contains(.priority) {
            guard let parsed = head.withValue(.priority, { $0.flatMap(Priority.init(http2HeaderValue:)) }) else {
                return reject(.badPriority)
            }
            priority = parsed
        }
        var expiration: Expiration?
        if head.contains(.expiration) {
            guard let seconds = head.withValue(.expiration, { $0.flatMap(parseSeconds) }) else {
                return reject(.badExpirationDate)
            }
            expiration = Expiration(rawValue: seconds)
        }
        if head.contains(.apnsID), apnsID == nil { return reject(.badMessageId) }
        let collapseID = head.string(.collapseID)
        if let collapseID, collapseID.utf8.count > maximumCollapseIDCount { return reject(.badCollapseId) }

        // 15-16: the body.
        guard !body.isEmpty else { return reject(.payloadEmpty) }
        guard body.count <= (pushType ?? .alert).maximumPayloadSize else { return reject(.payloadTooLarge) }

        // 17-20: fields that must agree.
        if let pushType {
            if let priority, pushType.problem(priority: priority) != nil { return reject(.badPriority) }
            if let suffix = pushType.requiredTopicSuffix, !topic.hasSuffix(suffix) { return reject(.badTopic) }
            if let (reason, _) = pushType.problem(usesTokens: !authorization.isCertificate) { return reject(reason) }
            if let (reason, _) = body.withUnsafeBytes({ pushType.problem(payloadJSON: $0) }) { return reject(reason) }
        }

        return .accepted(
            ProviderRequest(
                validatedToken: token, payload: Payload(unvalidatedBytes: body), topic: topic, pushType: pushType,
                apnsID: apnsID, expiration: expiration, priority: priority, collapseID: collapseID,
                authorizationToken: bearer))
    }

    private enum PathToken {
        case token(DeviceToken)
        case invalid(ProviderReason)
    }

    /// Rows 2-4 on a `:path` value.
    private static func parseToken(_ path: UnsafeRawBufferPointer?) -> PathToken {
        let prefix: StaticString = "/3/device/"
        guard let path, path.count >= prefix.utf8CodeUnitCount,
            ProviderResponse.equals(UnsafeRawBufferPointer(rebasing: path.prefix(prefix.utf8CodeUnitCount)), prefix)
        else { return .invalid(.badPath) }
        let hex = UnsafeRawBufferPointer(rebasing: path[prefix.utf8CodeUnitCount...])
        guard !hex.isEmpty else { return .invalid(.missingDeviceToken) }
        // The common token, 64 digits, eight at a time (every request's path goes through here).
        if hex.count == 2 * DeviceToken.standardByteCount, let token = DeviceToken(plainHex64: hex.baseAddress!) {
            return .token(token)
        }
        guard hex.count >= 2 * DeviceToken.standardByteCount, hex.count <= maximumTokenHexDigits,
            hex.count % 2 == 0, hex.allSatisfy({ JSONScanner.hexValue($0) != nil }),
            let token = try? DeviceToken(hexBytes: hex)
        else { return .invalid(.badDeviceToken) }
        return .token(token)
    }

    /// Row 12: decimal digits only, fitting 32 bits.
    private static func parseSeconds(_ text: UnsafeRawBufferPointer) -> UInt32? {
        guard !text.isEmpty, text.count <= 10 else { return nil }
        var value: UInt64 = 0
        for byte in text {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + UInt64(digit)
        }
        return UInt32(exactly: value)
    }
}
