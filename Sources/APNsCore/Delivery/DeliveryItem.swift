/// What a ``DeliveryStateMachine`` keeps of a notification while it has no verdict: the
/// notification itself, or (for `send --input`) a reference to the frame that carries it
/// (``FrameRecord/Reference``). The machine reads the token and the caller's identifier only to
/// name a notification in a report, and the whole notification only for an unconfirmed one.
package protocol DeliveryItem: Sendable {
    /// The device token, for ``Rejection`` and ``PossibleDuplicate``.
    var token: DeviceToken { get }
    /// The caller's identifier (``PushNotification/identifier``), if it had one.
    var callerIdentifier: UInt32? { get }
    /// The notification, for ``UnconfirmedNotification`` (it may be rebuilt, and allocate).
    var notification: PushNotification { get }
}

extension PushNotification: DeliveryItem {
    package var callerIdentifier: UInt32? { identifier }
    package var notification: PushNotification { self }
}
