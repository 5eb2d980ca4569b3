/// A notification APNs accepted (a 200).
public struct ProviderAcceptance: Hashable, Sendable {
    /// The notification's 1-based position in the input.
    public var position: UInt64
    /// The caller's tag (``ProviderEntry/tag``).
    public var tag: UInt64
    /// The caller's identifier (``ProviderRequest/identifier``), if it had one.
    public var identifier: UInt32?
    /// The `apns-id` APNs answered with (the one sent, unless APNs chose another).
    public var apnsID: APNsID
    /// From sending the request to its answer.
    public var latency: Duration
    /// An earlier attempt may have been delivered too (its connection was lost before the answer,
    /// and it was sent again): the device may show it twice.
    public var isPossibleDuplicate: Bool
    /// The request's push type, when it named one (for metrics; nil when the client inferred it).
    public var pushType: PushType?

    /// Creates an acceptance.
    public init(
        position: UInt64, tag: UInt64 = 0, identifier: UInt32? = nil, apnsID: APNsID, latency: Duration,
        isPossibleDuplicate: Bool = false
    ) {
        self.position = position
        self.tag = tag
        self.identifier = identifier
        self.apnsID = apnsID
        self.latency = latency
        self.isPossibleDuplicate = isPossibleDuplicate
    }
}

/// A notification APNs refused (or that was refused before sending because APNs would refuse it).
public struct ProviderRejection: Hashable, Sendable {
    /// The notification's 1-based position in the input.
    public var position: UInt64
    /// The caller's tag (``ProviderEntry/tag``).
    public var tag: UInt64 = 0
    /// The caller's identifier (``ProviderRequest/identifier``), if it had one.
    public var identifier: UInt32?
    /// The device token.
    public var token: DeviceToken
    /// The HTTP status (400, 403, 410, 413, 429, 5xx).
    public var status: Int
    /// APNs' reason, if it gave one.
    public var reason: ProviderReason?
    /// For 410: when the token stopped being valid, in milliseconds since 1970.
    public var timestamp: UInt64?
    /// The notification's `apns-id`.
    public var apnsID: APNsID
    /// True when the client refused it without asking APNs (a payload too large, a background push
    /// at priority 10, ...): ``reason`` is what APNs would have answered.
    public var isLocal: Bool
    /// True when an earlier attempt was lost with its connection: APNs may have delivered it
    /// before this answer came.
    public var mayHaveBeenDelivered: Bool
    /// The request's push type, when it named one (for metrics; nil when the client inferred it).
    public var pushType: PushType?
    /// The time from sending the request to APNs's answer (nil for a refusal without a round trip,
    /// ``isLocal``).
    public var latency: Duration?

    /// Creates a rejection.
    public init(
        position: UInt64, identifier: UInt32? = nil, token: DeviceToken, status: Int, reason: ProviderReason?,
        timestamp: UInt64? = nil, apnsID: APNsID, isLocal: Bool = false, mayHaveBeenDelivered: Bool = false,
        tag: UInt64 = 0
    ) {
        self.position = position
        self.tag = tag
        self.identifier = identifier
        self.token = token
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.isLocal = isLocal
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }
}

/// A notification without a verdict: sent, and then its answer was lost (fate unknown), or
/// certainly not delivered (never sent, or every attempt answered with a refusal to retry later).
public struct ProviderUnconfirmed: Hashable, Sendable {
    /// The notification's 1-based position in the input.
    public var position: UInt64
    /// The caller's tag (``ProviderEntry/tag``).
    public var tag: UInt64 = 0
    /// The notification, so it can be sent again.
    public var request: ProviderRequest
    /// Whether APNs may have delivered it (an attempt was lost with its connection, reset or timed
    /// out). False: it certainly was not delivered, and sending it again duplicates nothing.
    public var mayHaveBeenDelivered: Bool
    /// Why there is no verdict ("the connection was lost", "no answer within 30 s", "the send stopped").
    public var why: String

    /// Creates an entry.
    public init(
        position: UInt64, request: ProviderRequest, mayHaveBeenDelivered: Bool, why: String, tag: UInt64 = 0
    ) {
        self.position = position
        self.tag = tag
        self.request = request
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
        self.why = why
    }
}

/// What happened to every notification of one HTTP/2 send.
///
/// Every notification taken from the input ends in exactly one bucket: ``accepted`` (a 200, its
/// `apns-id` reported as an event), ``rejected`` (status, reason, the 410 timestamp),
/// ``unknownFate`` (sent, answer lost) or ``notSent``. So
/// `sent == accepted + rejected.count + unconfirmed.count`, and nothing is counted as accepted
/// that APNs did not answer with 200.
public struct ProviderSendReport: Hashable, Sendable, CustomStringConvertible {
    /// Notifications taken from the input.
    public var sent = 0
    /// Notifications APNs answered with 200.
    public var accepted = 0
    /// Notifications APNs refused (or that the client refused for it).
    public var rejected: [ProviderRejection] = []
    /// Notifications without a verdict: ``unknownFate`` and ``notSent`` together.
    public var unconfirmed: [ProviderUnconfirmed] = []
    /// Requests sent again (after a GOAWAY, a refused or reset stream, a lost connection, 429, 5xx).
    public var retried = 0
    /// Re-sent notifications whose earlier attempt was lost with its connection or timed out: APNs
    /// may have delivered them already.
    public var possibleDuplicates = 0
    /// The notifications behind ``possibleDuplicates``, each once.
    public var possiblyDuplicated: [PossibleDuplicate] = []
    /// Connections opened.
    public var connections = 0
    /// Wall-clock duration of the send, in seconds.
    public var seconds: Double = 0
    /// Why the send stopped before every notification had a verdict, if it did.
    public var failure: LegacyAPNsError?
    /// Rejections counted but not listed in ``rejected`` (a stream with
    /// ``ProviderConnectionMachine/Configuration/keepsVerdictLists`` off; the events had them).
    public var unlistedRejections = 0
    /// Unconfirmed notifications counted but not listed in ``unconfirmed`` (as above).
    public var unlistedUnconfirmed = 0

    /// An empty report.
    public init() {}

    /// Of ``unconfirmed``, the ones APNs may or may not have delivered.
    public var unknownFate: [ProviderUnconfirmed] { unconfirmed.filter(\.mayHaveBeenDelivered) }
    /// Of ``unconfirmed``, the ones certainly not delivered (safe to send again).
    public var notSent: [ProviderUnconfirmed] { unconfirmed.filter { !$0.mayHaveBeenDelivered } }

    /// True when APNs accepted every notification.
    public var isCompleteSuccess: Bool {
        failure == nil && rejected.isEmpty && unconfirmed.isEmpty && unlistedRejections == 0 && unlistedUnconfirmed == 0
    }

    /// Adds another connection's report.
    public mutating func merge(_ other: ProviderSendReport) {
        sent += other.sent
        accepted += other.accepted
        rejected += other.rejected
        unconfirmed += other.unconfirmed
        retried += other.retried
        possibleDuplicates += other.possibleDuplicates
        possiblyDuplicated += other.possiblyDuplicated
        connections += other.connections
        unlistedRejections += other.unlistedRejections
        unlistedUnconfirmed += other.unlistedUnconfirmed
        if failure == nil { failure = other.failure }
    }

    /// "1000 sent: 997 accepted, 3 rejected, 0 unconfirmed, 0 not sent (2 connections)".
    public var description: String {
        let rejections = rejected.count + unlistedRejections
        let unconfirmedText =
            unlistedUnconfirmed == 0
            ? "\(unknownFate.count) unconfirmed, \(notSent.count) not sent"
            : "\(unconfirmed.count + unlistedUnconfirmed) unconfirmed or not sent"
        var text =
            "\(sent) sent: \(accepted) accepted, \(rejections) rejected, \(unconfirmedText)"
            + " (\(connections) connection\(connections == 1 ? "" : "s"))"
        if let failure { text += "; stopped: \(failure.reason)" }
        return text
    }
}
