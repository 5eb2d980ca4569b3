import LegacyAPNs

/// One tuple from the feedback service: a device that stopped accepting this app's
/// notifications, and when APNs noticed.
///
/// ```
/// +-------------------+--------------------+--------------+
/// | time (4, BE, u32) | token length (2)   | token        |
/// +-------------------+--------------------+--------------+
/// ```
/// 38 bytes for a 32-byte token. The time is unsigned UNIX seconds, so it reaches 2106.
public struct FeedbackRecord: Hashable, Sendable {
    /// When APNs determined that the app no longer exists on the device (UNIX seconds).
    public var timestamp: UInt32
    /// The device token.
    public var token: DeviceToken

    public init(timestamp: UInt32, token: DeviceToken) {
        self.timestamp = timestamp
        self.token = token
    }

    /// The size of this tuple on the wire.
    public var encodedByteCount: Int { 6 + token.count }

    /// Appends the tuple's bytes to `writer`.
    public func encode(into writer: inout ByteWriter) {
        writer.writeInteger(timestamp)
        writer.writeInteger(UInt16(token.count))
        token.withUnsafeBytes { writer.writeBytes($0) }
    }

    /// Apple's rule for acting on a tuple: stop sending to the token only if it was not registered
    /// again after the tuple's time (the user may have reinstalled the app).
    ///
    /// - Parameter lastRegistration: when your server last received this token from the app
    ///   (UNIX seconds), or nil if you do not know.
    /// - Returns: true when the token should no longer be used.
    public func meansStopSending(lastRegistration: UInt32?) -> Bool {
        guard let lastRegistration else { return true }
        return lastRegistration <= timestamp
    }
}
