/// One notification on its way through an HTTP/2 send: the request and its history. It travels
/// between the shared queue and the connections of a pool until it has a verdict.
///
/// Entries move a lot (the shared queue, a connection's buffer, its streams table, the actions of
/// its machine), so the request, about 200 bytes with several reference-counted fields, is kept
/// once in an immutable box: moving or copying an entry moves a few words and retains one
/// reference, where copying the request itself would copy it all and retain every field.
public struct ProviderEntry: Hashable, Sendable {
    /// The 1-based position in the input: the notification's identity for the whole send.
    public let position: UInt64
    /// The request (its `apns-id` is set before the first attempt and kept for every retry).
    public var request: ProviderRequest {
        // Read in place (a getter would hand out a copy, retaining every field), and inlined: a
        // read coroutine called across modules allocates its frame, several times per request
        // in the HTTP/2 client's submit path.
        @inlinable _read { yield storage.request }
        @inlinable set { storage = Storage(newValue) }
    }
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

    @usableFromInline var storage: Storage

    /// The boxed request, never changed (a new request is a new box).
    @usableFromInline final class Storage: Sendable {
        @usableFromInline let request: ProviderRequest

        @usableFromInline init(_ request: ProviderRequest) { self.request = request }
    }

    /// Wraps a request taken from the input at `position`.
    public init(position: UInt64, request: ProviderRequest, tag: UInt64 = 0) {
        self.position = position
        self.storage = Storage(request)
        self.tag = tag
    }

    /// The `apns-id` (always set by the time the entry is sent).
    public var apnsID: APNsID { storage.request.apnsID ?? APNsID(rawValue: UInt128(position)) }

    /// Equal entries have equal positions, histories and requests (a shared box is equal at once).
    public static func == (lhs: ProviderEntry, rhs: ProviderEntry) -> Bool {
        lhs.position == rhs.position && lhs.tag == rhs.tag && lhs.attempts == rhs.attempts && lhs.sends == rhs.sends
            && lhs.possiblyDelivered == rhs.possiblyDelivered && lhs.listedAsDuplicate == rhs.listedAsDuplicate
            && lhs.usedTokenRetry == rhs.usedTokenRetry && lhs.notBefore == rhs.notBefore
            && (lhs.storage === rhs.storage || lhs.request == rhs.request)
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(position)
        hasher.combine(tag)
        hasher.combine(attempts)
        hasher.combine(sends)
        hasher.combine(notBefore)
        hasher.combine(request)
    }
}
