/// One notification: where it goes, what it says, and the optional frame fields.
///
/// Optional fields that are `nil` are left out of an item-based frame (command 2) and written as
/// zero in an enhanced frame (command 1). The simple format (command 0) carries only the token and
/// the payload.
///
/// When a `PushClient` (LegacyAPNs) sends notifications it puts identifiers of its own on the wire, so that
/// resend bookkeeping never depends on the caller's numbering; ``identifier`` is kept and reported
/// back in the ``SendReport``.
public struct PushNotification: Hashable, Sendable {
    /// The device to deliver to.
    public var token: DeviceToken
    /// The JSON body.
    public var payload: Payload
    /// The caller's identifier, echoed back in reports (and written on the wire by the frame
    /// encoder when it encodes a single frame).
    public var identifier: UInt32?
    /// When APNs may stop trying to deliver; ``Expiration/doNotStore`` means deliver now or never.
    public var expiration: Expiration?
    /// Delivery priority; commands 0 and 1 always mean ``Priority/immediate``.
    public var priority: Priority?

    /// Creates a notification; optional fields left `nil` are omitted where the format allows.
    public init(
        token: DeviceToken,
        payload: Payload,
        identifier: UInt32? = nil,
        expiration: Expiration? = nil,
        priority: Priority? = nil
    ) {
        self.token = token
        self.payload = payload
        self.identifier = identifier
        self.expiration = expiration
        self.priority = priority
    }
}
