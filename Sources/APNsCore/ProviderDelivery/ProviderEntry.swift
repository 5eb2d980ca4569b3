/// One notification on its way through an HTTP/2 send: the request and its history. It travels
/// between the shared queue and the connections of a pool until it has a verdict.
public struct ProviderEntry: Hashable, Sendable {
    /// The 1-based position in the input: the notification's identity for the whole send.
    public let position: UInt64
    /// The request (its `apns-id` is set before the first attempt and kept for every retry).
    public var request: ProviderRequest
    /// The caller's tag for the notification (``ProviderAcceptance/tag``,
    /// ``ProviderRejection/tag``, ``ProviderUnconfirmed/tag``): how a long-running producer
    /// routes each verdict back to where the notification came from. Never sent.
    public var tag: UInt64 = 0
    /// Attempts that got no verdict: answered 429/5xx, lost with a connection, timed out.
    public var attempts = 0
    /// Sends that went out (the first, and every retry).
    public var sends = 0
    /// An earlier attempt was lost with its connection, reset or timed out: APNs may have
    /// delivered it.
    public var possiblyDelivered = false
    /// Already named as a possible duplicate.
    public var listedAsDuplicate = false
    /// ExpiredProviderToken was answered once already: the one retry with a fresh token is spent.
    public var usedTokenRetry = false
    /// Not to be sent before this moment (a 429 or 5xx asked for a delay).
    public var notBefore: Duration?
    /// The answer to the last attempt, for the verdict when attempts run out.
    public var lastResponse: ProviderResponse?

    /// Wraps a request taken from the input at `position`.
    public init(position: UInt64, request: ProviderRequest, tag: UInt64 = 0) {
        self.position = position
        self.request = request
        self.tag = tag
    }

    /// The `apns-id` (always set by the time the entry is sent).
    public var apnsID: APNsID { request.apnsID ?? APNsID(rawValue: UInt128(position)) }
}
