/// Something that happened during an HTTP/2 send, for metrics and logs, delivered as it happens.
/// `connection` numbers the pool's connections from 0.
public enum ProviderEvent: Hashable, Sendable {
    /// A connection is up (`attempt` counts connections of this slot from 1).
    case connected(connection: Int, attempt: Int)
    /// A connection could not be opened or was lost; the slot retries after `delay`, or stops.
    case connectionFailed(connection: Int, reason: String, delay: Duration?)
    /// A connection ended (after the send, a GOAWAY, or a failure).
    case connectionClosed(connection: Int, reason: String)
    /// A request went out on a stream.
    case sent(connection: Int, position: UInt64, apnsID: APNsID)
    /// APNs accepted a notification.
    case accepted(connection: Int, ProviderAcceptance)
    /// APNs (or the client, for a request APNs would refuse) rejected a notification.
    case rejected(connection: Int, ProviderRejection)
    /// A notification goes out again: `cause` says why as a bounded value (for metrics), `reason`
    /// in words; `possibleDuplicate` when its earlier attempt may have been delivered.
    case retrying(
        connection: Int, position: UInt64, cause: ProviderRetryCause, reason: String, possibleDuplicate: Bool)
    /// A stream ended without an answer because it was reset: by the client (`byClient`: it sent
    /// RST_STREAM CANCEL for a request unanswered for the request timeout) or by the server (its
    /// RST_STREAM, e.g. REFUSED_STREAM, or the stream closed early).
    case streamReset(connection: Int, stream: Int32, errorCode: HTTP2ErrorCode, byClient: Bool)
    /// A notification ends without a verdict (`connection` is -1 for those no connection held
    /// when the send stopped: waiting to be retried, or never taken).
    case unconfirmed(connection: Int, ProviderUnconfirmed)
    /// The server sent GOAWAY.
    case goaway(connection: Int, ProviderGoaway)
    /// A fresh provider token was signed for the connection (token auth).
    case tokenRefreshed(connection: Int)
    /// The number of streams the connection may use changed.
    case streamLimit(connection: Int, limit: Int)
}
