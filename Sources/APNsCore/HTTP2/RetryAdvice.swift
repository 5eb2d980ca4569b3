/// What a sender should do after an APNs response, or after a GOAWAY: a value, so the decision is
/// made (and tested) in one place.
///
/// | advice | responses | why |
/// |---|---|---|
/// | ``delivered`` | 200 | accepted |
/// | ``doNotRetry`` | every 400 but IdleTimeout; Forbidden; 404 BadPath; 405 MethodNotAllowed; 413 PayloadTooLarge; an unknown 4xx | HNR: "don't retry" BadDeviceToken, DeviceTokenNotForTopic, Forbidden, PayloadTooLarge; the rest name a fault in the request, which cannot succeed unchanged |
/// | ``discardDeviceToken`` | 410 ExpiredToken, Unregistered (and any 410) | HNR: never retry; 410 replaces the feedback service, so the token should be dropped (`timestamp` says since when) |
/// | ``retryAfterDelay`` | 429 TooManyRequests (and an unknown 429) | HNR: retry after a delay; the limit is per device token |
/// | ``retryWithBackoff`` | 500 InternalServerError, 503 ServiceUnavailable, 503 Shutdown, any 5xx; 429 TooManyProviderTokenUpdates | HNR: 5xx may be retried with backoff. Shutdown means this server is going away: retry on another connection. TooManyProviderTokenUpdates leaves the connection unusable for a while (users' reports, pushy#931): back off, then use a new connection with its own token |
/// | ``retryOnNewConnection`` | 400 IdleTimeout | the connection was closed for idling; the request was not the problem |
/// | ``refreshTokenAndRetryOnce`` | 403 ExpiredProviderToken | TOK: the token is older than an hour; sign a new one, send it on a new connection, once |
/// | ``stopSending`` | 403 BadCertificate, BadCertificateEnvironment, InvalidProviderToken, MissingProviderToken, UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken (either spelling) | the credential or its environment is wrong: every notification of the send would fail the same way, so stop and report |
///
/// An unknown 403 counts as ``doNotRetry`` (it may concern only that notification; stopping a
/// whole send on a reason nobody knows would be worse). Other statuses outside 2xx count as
/// ``doNotRetry`` (4xx) or ``retryWithBackoff`` (5xx).
///
/// For GOAWAY see ``init(goawayErrorCode:reason:)``.
public enum RetryAdvice: Hashable, Sendable {
    /// APNs accepted the notification.
    case delivered
    /// The request cannot succeed unchanged: report it, do not send it again.
    case doNotRetry
    /// The device token is no longer valid: never retry, and stop sending to it.
    case discardDeviceToken
    /// Send it again later (rate limited for this device).
    case retryAfterDelay
    /// Send it again with exponential backoff.
    case retryWithBackoff
    /// Send it again on a new connection (nothing was wrong with it).
    case retryOnNewConnection
    /// Sign a fresh provider token, open a new connection with it, and send it again once.
    case refreshTokenAndRetryOnce
    /// The connection's credentials cannot succeed: stop the whole send.
    case stopSending

    /// The advice for a response.
    public init(_ response: ProviderResponse) {
        self.init(status: response.status, reason: response.reason)
    }

    /// The advice for a status and reason (see the table above).
    public init(status: Int, reason: ProviderReason?) {
        if status == 200 {
            self = .delivered
            return
        }
        if let reason, let advice = Self.byReason(reason) {
            self = advice
            return
        }
        switch status {
        case 410: self = .discardDeviceToken
        case 429: self = .retryAfterDelay
        case 500...599: self = .retryWithBackoff
        default: self = .doNotRetry
        }
    }

    /// What a GOAWAY means for the connection, from its error code and the `reason` of its debug
    /// data (APNs sends `{"reason":"..."}` there).
    ///
    /// Streams *above* the GOAWAY's last-stream-id were not processed: send them again on a new
    /// connection whatever this advice says, without counting an attempt (RFC 9113 §6.8). Streams at
    /// or below it get their responses. This advice is about the connection:
    ///
    /// - a reason that condemns the credentials (``stopSending`` above) stops the send;
    /// - ExpiredProviderToken: ``refreshTokenAndRetryOnce``;
    /// - Shutdown with NO_ERROR (a graceful close: this server is going away, the work was fine):
    ///   ``retryOnNewConnection``, at once;
    /// - ServiceUnavailable, InternalServerError, TooManyProviderTokenUpdates, Shutdown with an
    ///   error code, and any error code other than NO_ERROR without a known reason:
    ///   ``retryWithBackoff`` (a new connection, not in a tight loop: "APNs treats rapid connection
    ///   and disconnection as a denial-of-service attack");
    /// - IdleTimeout, or NO_ERROR without a reason (a graceful close): ``retryOnNewConnection``;
    /// - any other known reason (a 4xx about one request): ``retryOnNewConnection``.
    ///
    /// A connection that wound down after a graceful GOAWAY before a single answer made no
    /// progress: its reconnect backs off all the same (``ProviderConnectionMachine``), so a server
    /// saying GOAWAY over and over is not met with a storm.
    public init(goawayErrorCode: HTTP2ErrorCode, reason: ProviderReason?) {
        if goawayErrorCode == .noError, reason == .shutdown {
            self = .retryOnNewConnection
            return
        }
        if let reason, reason.isKnown {
            switch RetryAdvice(status: reason.status ?? 400, reason: reason) {
            case .stopSending: self = .stopSending
            case .refreshTokenAndRetryOnce: self = .refreshTokenAndRetryOnce
            case .retryWithBackoff, .retryAfterDelay: self = .retryWithBackoff
            case .delivered, .doNotRetry, .discardDeviceToken, .retryOnNewConnection: self = .retryOnNewConnection
            }
            return
        }
        self = goawayErrorCode == .noError ? .retryOnNewConnection : .retryWithBackoff
    }

    private static func byReason(_ reason: ProviderReason) -> RetryAdvice? {
        switch reason {
        case .badCertificate, .badCertificateEnvironment, .invalidProviderToken, .missingProviderToken,
            .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
            .stopSending
        case .expiredProviderToken: .refreshTokenAndRetryOnce
        case .idleTimeout: .retryOnNewConnection
        case .tooManyRequests: .retryAfterDelay
        case .tooManyProviderTokenUpdates, .internalServerError, .serviceUnavailable, .shutdown: .retryWithBackoff
        case .expiredToken, .unregistered: .discardDeviceToken
        default: reason.isKnown ? .doNotRetry : nil
        }
    }

    /// Whether the notification may be sent again (after whatever the advice says).
    public var allowsRetry: Bool {
        switch self {
        case .retryAfterDelay, .retryWithBackoff, .retryOnNewConnection, .refreshTokenAndRetryOnce: true
        case .delivered, .doNotRetry, .discardDeviceToken, .stopSending: false
        }
    }
}
