/// A broadcast channel's `message-storage-policy`, fixed when the channel is created.
///
/// | value | meaning |
/// |---|---|
/// | 0 ``noMessageStored`` | nothing is kept for devices that are offline; a higher publishing budget; every broadcast must have `apns-expiration: 0` |
/// | 1 ``mostRecentMessageStored`` | the most recent message is kept (up to 8 hours) for devices that come online |
///
/// An open struct, so a value Apple adds later survives a read.
public struct MessageStoragePolicy: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The JSON number.
    public var rawValue: Int

    /// Wraps any value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// 0: no message stored.
    public static let noMessageStored = MessageStoragePolicy(rawValue: 0)
    /// 1: the most recent message stored.
    public static let mostRecentMessageStored = MessageStoragePolicy(rawValue: 1)

    /// Whether Apple documents this value (0 or 1).
    public var isKnown: Bool { rawValue == 0 || rawValue == 1 }

    /// "0 (no message stored)", "1 (most recent message stored)".
    public var description: String {
        switch rawValue {
        case 0: "0 (no message stored)"
        case 1: "1 (most recent message stored)"
        default: String(rawValue)
        }
    }
}
