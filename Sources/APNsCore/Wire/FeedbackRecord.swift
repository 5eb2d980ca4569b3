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

    /// Creates a tuple.
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
    /// A registration in the same second as the tuple is not "after" it, so the token counts as
    /// stale.
    ///
    /// - Parameter lastRegistration: when your server last received this token from the app
    ///   (UNIX seconds), or nil if you do not know.
    /// - Returns: true when the token should no longer be used.
    public func meansStopSending(lastRegistration: UInt32?) -> Bool {
        guard let lastRegistration else { return true }
        return lastRegistration <= timestamp
    }
}

extension Sequence where Element == FeedbackRecord {
    /// Apple's stale-token rule applied to a whole list: the tokens to stop sending to, each once,
    /// in the order they first appear.
    ///
    /// A token listed more than once (e.g. in two polls) is stale when any of its tuples says so,
    /// that is, when its last registration is not after its latest tuple.
    ///
    /// ```swift
    /// let stale = poll.records.tokensToStopSending { token in database.lastRegistration(of: token) }
    /// ```
    ///
    /// - Parameter lastRegistration: when your server last received a token from the app (UNIX
    ///   seconds), or nil if you do not know (the token then counts as stale).
    public func tokensToStopSending(lastRegistration: (DeviceToken) throws -> UInt32?) rethrows -> [DeviceToken] {
        var latest: [DeviceToken: UInt32] = [:]
        var order: [DeviceToken] = []
        for record in self {
            if let seen = latest[record.token] {
                latest[record.token] = Swift.max(seen, record.timestamp)
            } else {
                latest[record.token] = record.timestamp
                order.append(record.token)
            }
        }
        return try order.filter { token in
            try FeedbackRecord(timestamp: latest[token]!, token: token).meansStopSending(
                lastRegistration: lastRegistration(token))
        }
    }
}
