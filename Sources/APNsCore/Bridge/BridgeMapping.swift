/// How the bridge turns an HTTP/2 answer into what a legacy binary sender understands (the table
/// in `HTTP2-PROTOCOL.md`, "From the binary protocol to this one").
public enum BridgeVerdict: Hashable, Sendable {
    /// Delivered (a 200), or acknowledged because the same notification was already delivered.
    case accepted
    /// The device token is no longer valid (410 Unregistered or ExpiredToken): not an error for
    /// the sender, as Apple's gateway accepted such notifications; the token goes to the feedback
    /// service with `seconds` (the 410 timestamp ÷ 1000).
    case unregistered(seconds: UInt32)
    /// Refused: the sender gets an error response with this status, naming the notification.
    case rejected(StatusCode, reason: String)
    /// No verdict could be had upstream (unreachable past the retry budget, credentials that
    /// cannot succeed, the bridge stopping): the sender gets status 10 (shutdown) naming the last
    /// notification before this one, so it reconnects and sends this one and everything after
    /// again.
    case unavailable(reason: String)

    /// True for the verdicts after which the sender needs no word: accepted and unregistered.
    public var isSuccess: Bool {
        switch self {
        case .accepted, .unregistered: true
        case .rejected, .unavailable: false
        }
    }

    /// False for ``unavailable(reason:)``: nothing was decided upstream.
    public var isDecided: Bool {
        if case .unavailable = self { false } else { true }
    }

    /// The verdict for an HTTP/2 rejection.
    ///
    /// | HTTP/2 | binary |
    /// |---|---|
    /// | 410 Unregistered / ExpiredToken (any 410) | accepted; the token becomes a feedback tuple |
    /// | 400 BadDeviceToken, DeviceTokenNotForTopic | 8 invalid token |
    /// | 413 PayloadTooLarge | 7 invalid payload size |
    /// | 400 PayloadEmpty | 4 missing payload |
    /// | 400 MissingTopic | 3 missing topic |
    /// | 400 BadTopic, TopicDisallowed | 6 invalid topic size (the binary protocol's topic status) |
    /// | 403 certificate or token refused, 5xx after every retry | 10 shutdown: the bridge's trouble, the sender resends later |
    /// | anything else that cannot be retried | 1 processing error |
    public init(rejection: ProviderRejection) {
        let reason = rejection.reason
        let text = "HTTP/2 \(rejection.status)" + (reason.map { " \($0.rawValue)" } ?? "")
        if rejection.status == 410 {
            let milliseconds = rejection.timestamp ?? 0
            self = .unregistered(seconds: UInt32(clamping: milliseconds / 1000))
            return
        }
        switch reason {
        case .badDeviceToken?, .deviceTokenNotForTopic?:
            self = .rejected(.invalidToken, reason: text)
        case .payloadTooLarge?:
            self = .rejected(.invalidPayloadSize, reason: text)
        case .payloadEmpty?:
            self = .rejected(.missingPayload, reason: text)
        case .missingTopic?:
            self = .rejected(.missingTopic, reason: text)
        case .badTopic?, .topicDisallowed?:
            self = .rejected(.invalidTopicSize, reason: text)
        case .missingDeviceToken?:
            self = .rejected(.missingDeviceToken, reason: text)
        default:
            if rejection.status == 413 {
                self = .rejected(.invalidPayloadSize, reason: text)
            } else if RetryAdvice(status: rejection.status, reason: reason) == .stopSending
                || (500...599).contains(rejection.status) || rejection.status == 403
            {
                self = .unavailable(reason: "upstream answered \(text)")
            } else {
                self = .rejected(.processingError, reason: text)
            }
        }
    }

    /// The binary status for what the client refused before sending (``ProviderRequest``'s checks,
    /// the reasons APNs would have answered).
    public init(localRefusal reason: ProviderReason, explanation: String) {
        let rejection = ProviderRejection(
            position: 0, token: DeviceToken.placeholder, status: reason.status ?? 400, reason: reason,
            apnsID: APNsID(rawValue: 0), isLocal: true)
        switch BridgeVerdict(rejection: rejection) {
        case .rejected(let status, _): self = .rejected(status, reason: explanation)
        default: self = .rejected(.processingError, reason: explanation)
        }
    }
}

extension DeviceToken {
    /// A 32-byte zero token, for building values that need one.
    static let placeholder = try! DeviceToken(bytes: [UInt8](repeating: 0, count: 32))
}
