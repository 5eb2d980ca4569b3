import APNsCore
import HTTP2Client

/// Something that happened in a ``Bridge``, for logs and `--json`, delivered as it happens from
/// the bridge's threads (keep the handler quick). `connection` numbers sender connections from 1.
public enum BridgeEvent: Hashable, Sendable {
    /// A legacy sender connected (its certificate accepted).
    case senderConnected(connection: UInt64, client: String, subject: String, topic: String?)
    /// A client was refused: no acceptable certificate, a broken handshake, too many connections.
    case senderRefused(client: String, reason: String)
    /// A sender connection ended; `delivered` counts its notifications delivered (or acknowledged).
    case senderDisconnected(connection: UInt64, delivered: Int, reason: String)
    /// The bridge answered a sender with an error response (nil: closed silently, for a command-0
    /// notification, or for an upstream failure before anything on the connection was delivered) for
    /// notification `identifier`, then closed the connection: the sender resends what followed.
    case answered(
        connection: UInt64, response: ErrorResponse?, identifier: UInt32?, token: DeviceToken?, reason: String)
    /// A sender's confirmation barrier (an enhanced frame with neither token nor payload, which
    /// senders such as `PushClient` write to learn that everything before it was accepted) was
    /// answered with status 2, as Apple's gateway answered it: not a failed notification, and not
    /// counted as one.
    case confirmationAnswered(connection: UInt64, identifier: UInt32)
    /// A notification was refused (upstream or by the bridge's own checks); the sender hears of it
    /// in the error response (``answered(connection:response:identifier:token:reason:)``) if it is
    /// the first failure on its connection.
    case rejected(connection: UInt64, identifier: UInt32, token: DeviceToken, status: StatusCode, reason: String)
    /// HTTP/2 said the token is no longer valid (410): stored for the feedback service.
    case unregistered(topic: String, token: DeviceToken, seconds: UInt32)
    /// A resent notification was answered from memory: its earlier copy was already delivered,
    /// so it was not delivered again.
    case acknowledgedResend(connection: UInt64, identifier: UInt32)
    /// A notification whose earlier copy may have been delivered goes upstream again: a possible
    /// duplicate. The earlier copy's answer was lost upstream (a reset, then 503), or it was in
    /// flight when a bridge on this store stopped without answering (a crash: its resend memory,
    /// restored from the store, has it orphaned).
    case possibleDuplicate(connection: UInt64, identifier: UInt32, token: DeviceToken)
    /// A notification accepted from a sender was not delivered and the sender was never told (it
    /// disconnected first): the bridge reports it here, the only place it is reported.
    case notDelivered(connection: UInt64, identifier: UInt32, token: DeviceToken, reason: String)
    /// The feedback service handed `count` tuples of `topic` to a sender, and forgot them.
    case feedbackServed(client: String, topic: String, count: Int)
    /// The durable store failed: 410 tuples that could not be stored (their notifications were
    /// answered with status 10), or the resend memory that could not be (the reason says which;
    /// reported once per outage).
    case storeFailed(reason: String)
    /// The upstream cannot be had (unreachable past the retry budget, or refusing the bridge's
    /// credentials): until it answers again, new senders are refused before the TLS handshake (so
    /// they have sent nothing), and the bridge tries a fresh connection after a pause that doubles
    /// up to 30 s. Reported once per outage, not per sender.
    case upstreamUnavailable(reason: String)
    /// The upstream answers again after ``upstreamUnavailable(reason:)``; `refusedSenders`
    /// connections were refused meanwhile.
    case upstreamAvailable(refusedSenders: Int)
    /// Something happened upstream (connections, GOAWAY, retries; not per-notification verdicts).
    case upstream(ProviderEvent)
}

/// Counts since the bridge started.
public struct BridgeStatistics: Hashable, Sendable, CustomStringConvertible {
    /// Sender connections accepted.
    public var senderConnections = 0
    /// Of those, the ones that resumed an earlier TLS session (at this bridge, or, with a shared
    /// ``Bridge/Configuration/sessionTicketKey``, at another of its fleet).
    public var resumedSenderConnections = 0
    /// Sender connections refused (certificate, handshake, limit).
    public var refusedConnections = 0
    /// Notifications received from senders (frames decoded).
    public var received = 0
    /// Of those, per command (0, 1, 2).
    public var receivedByCommand = CommandCounts()
    /// Notifications sent upstream (resends answered from memory are not).
    public var forwarded = 0
    /// Accepted upstream (200).
    public var accepted = 0
    /// Answered 410 upstream and stored for the feedback service.
    public var unregistered = 0
    /// Refused (upstream or locally).
    public var rejected = 0
    /// Resends acknowledged from memory without a second delivery.
    public var acknowledgedResends = 0
    /// Resends whose earlier copy may have been delivered (sent upstream again).
    public var possibleDuplicates = 0
    /// Notifications without an upstream verdict (unreachable, stopped).
    public var unavailable = 0
    /// Notifications not delivered and reported only by the bridge (the sender left first).
    public var notDelivered = 0
    /// Error responses (and silent closes) sent to senders for failed notifications.
    public var errorResponses = 0
    /// Confirmation barriers answered (not failures; not in ``errorResponses`` or ``rejected``).
    public var confirmationBarriers = 0
    /// Frames dropped after a failure on their connection (the sender resends them).
    public var dropped = 0
    /// Feedback tuples handed to senders.
    public var feedbackServed = 0

    /// Zero counts.
    public init() {}

    /// One line: "1000 received, 999 forwarded: 990 accepted, 5 unregistered, 4 rejected, ...".
    public var description: String {
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        return "\(received) received, \(forwarded) forwarded: \(accepted) accepted, \(unregistered) unregistered, "
            + "\(rejected) rejected, \(unavailable) unavailable; \(count(acknowledgedResends, "resend")) acknowledged, "
            + "\(count(possibleDuplicates, "possible duplicate")), \(notDelivered) not delivered, "
            + "\(count(errorResponses, "error response")), \(count(feedbackServed, "feedback tuple")) served; "
            + "\(count(senderConnections, "sender connection")) (\(resumedSenderConnections) resumed)"
    }
}
