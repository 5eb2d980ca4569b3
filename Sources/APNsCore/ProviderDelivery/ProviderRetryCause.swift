/// Why a notification goes out again (``ProviderEvent/retrying(connection:position:cause:reason:possibleDuplicate:)``):
/// a closed set, so it can be a metrics label. The raw value is that label.
///
/// | cause | what happened | a possible duplicate |
/// | --- | --- | --- |
/// | ``tooManyRequests`` | APNs answered 429 (TooManyRequests, TooManyProviderTokenUpdates) | no |
/// | ``serverError`` | APNs answered 5xx (InternalServerError, ServiceUnavailable, Shutdown) | no |
/// | ``idleTimeout`` | APNs answered 400 IdleTimeout: again on a new connection | no |
/// | ``expiredProviderToken`` | APNs answered 403 ExpiredProviderToken: once more with a fresh token | no |
/// | ``refusedStream`` | the server reset the stream with REFUSED_STREAM (not processed) | no |
/// | ``goaway`` | the stream was above a GOAWAY's last stream id (not processed) | no |
/// | ``streamReset`` | the server reset the stream with another code, or closed it without an answer | yes |
/// | ``requestTimeout`` | no answer within the request timeout: the client reset the stream | yes |
/// | ``connectionLost`` | the connection broke (or a PING went unanswered) with the request in flight | yes |
public enum ProviderRetryCause: String, Hashable, Sendable, CaseIterable {
    /// A 429 answer.
    case tooManyRequests = "too_many_requests"
    /// A 5xx answer.
    case serverError = "server_error"
    /// A 400 IdleTimeout answer.
    case idleTimeout = "idle_timeout"
    /// A 403 ExpiredProviderToken answer.
    case expiredProviderToken = "expired_provider_token"
    /// RST_STREAM REFUSED_STREAM.
    case refusedStream = "refused_stream"
    /// Above a GOAWAY's last stream id.
    case goaway
    /// Reset by the server otherwise, or closed without an answer.
    case streamReset = "stream_reset"
    /// Reset by the client after the request timeout.
    case requestTimeout = "request_timeout"
    /// The connection was lost.
    case connectionLost = "connection_lost"
}
