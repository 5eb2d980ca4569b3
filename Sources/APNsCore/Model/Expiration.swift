/// The expiry field of a frame: UNIX seconds, big-endian, unsigned 32 bits.
///
/// APNs stores a notification for an offline device until this time. Zero means "do not store":
/// deliver at once or drop it.
public struct Expiration: Hashable, Sendable, RawRepresentable, Comparable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z; 0 is ``doNotStore``.
    public var rawValue: UInt32

    /// Creates an expiration from UNIX seconds.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Creates an expiration from UNIX seconds.
    public init(secondsSince1970: UInt32) { self.rawValue = secondsSince1970 }

    /// Deliver at once or not at all.
    public static let doNotStore = Expiration(rawValue: 0)

    /// Earlier expirations sort first.
    public static func < (lhs: Expiration, rhs: Expiration) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The seconds, noting 0 as "do not store".
    public var description: String { rawValue == 0 ? "0 (do not store)" : String(rawValue) }
}
