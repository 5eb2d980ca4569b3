/// How one binary notification becomes an HTTP/2 request (the mapping in `HTTP2-PROTOCOL.md`):
/// token → `:path`, payload → body, identifier → a deterministic `apns-id` per (sender connection,
/// identifier), expiry → `apns-expiration`, priority → `apns-priority`, the sender's certificate
/// topic (or the configured one) → `apns-topic`, the push type inferred from the payload as the
/// HTTP/2 client infers it. What APNs would refuse is refused here, with the binary status, before
/// any round trip.
public struct BridgeTranslation: Sendable {
    /// The topic every request carries, whatever the sender's certificate says (`--topic`).
    public var fixedTopic: String?
    /// Token authentication upstream (a topic is then required).
    public var usesTokens: Bool
    /// A random number for this bridge run, so that `apns-id`s differ between runs.
    public var run: UInt64

    /// Creates a translation.
    public init(fixedTopic: String? = nil, usesTokens: Bool, run: UInt64) {
        self.fixedTopic = fixedTopic
        self.usesTokens = usesTokens
        self.run = run
    }

    /// The `apns-id` of notification `identifier` on sender connection `connection`: the same
    /// pair always gives the same id within a run, so logs on both sides can be matched. A
    /// version-8 (RFC 9562, custom) UUID.
    public func apnsID(connection: UInt64, identifier: UInt32) -> APNsID {
        var mixer = SplitMix64(seed: run ^ (connection &* 0x9E37_79B9_7F4A_7C15) ^ (UInt64(identifier) << 17))
        let high = mixer.next()
        let low = mixer.next()
        var value = (UInt128(high) << 64) | UInt128(low)
        // Version 8 in bits 48-51, the RFC variant (10) in bits 64-65, counted from the top.
        value &= ~(UInt128(0xF) << 76)
        value |= UInt128(0x8) << 76
        value &= ~(UInt128(0x3) << 62)
        value |= UInt128(0x2) << 62
        return APNsID(rawValue: value)
    }

    /// The request for `notification` from sender connection `connection` whose certificate
    /// names `senderTopic`, or the verdict when it is refused before sending.
    public func request(
        for notification: PushNotification, connection: UInt64, senderTopic: String?
    ) -> Result<ProviderRequest, BridgeRefusal> {
        guard notification.token.count >= DeviceToken.standardByteCount else {
            return .failure(
                BridgeRefusal(
                    status: .invalidTokenSize,
                    reason: "the token has \(notification.token.count) bytes; the HTTP/2 API needs 32"))
        }
        let topic = fixedTopic ?? senderTopic
        let pushType = PushType.inferred(for: notification.payload)
        var priority = notification.priority
        if pushType == .background, priority == .immediate {
            // The binary gateway took priority 10 for content-available pushes; HTTP/2 refuses
            // it (BadPriority). The sender's intent is a background push: send it as one.
            priority = .conservePower
        }
        let identifier = notification.identifier ?? 0
        let request = ProviderRequest(
            validatedToken: notification.token, payload: notification.payload, topic: topic, pushType: pushType,
            apnsID: apnsID(connection: connection, identifier: identifier), expiration: notification.expiration,
            priority: priority, collapseID: nil, authorizationToken: nil, identifier: notification.identifier)
        if topic == nil, usesTokens {
            return .failure(
                BridgeRefusal(
                    status: .missingTopic,
                    reason: "no topic: the sender's certificate names none and the bridge has no --topic"))
        }
        if let (reason, explanation) = request.problem(usesTokens: usesTokens) {
            guard case .rejected(let status, _) = BridgeVerdict(localRefusal: reason, explanation: explanation) else {
                return .failure(BridgeRefusal(status: .processingError, reason: explanation))
            }
            return .failure(BridgeRefusal(status: status, reason: explanation))
        }
        return .success(request)
    }
}

/// A notification the bridge refuses itself: the binary status and why.
public struct BridgeRefusal: Error, Hashable, Sendable {
    /// The status of the error response.
    public var status: StatusCode
    /// Why, in words.
    public var reason: String

    /// Creates a refusal.
    public init(status: StatusCode, reason: String) {
        self.status = status
        self.reason = reason
    }

    /// The refusal as a verdict.
    public var verdict: BridgeVerdict { .rejected(status, reason: reason) }
}
