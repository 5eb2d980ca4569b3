/// The first byte of every frame on a legacy APNs connection.
///
/// An open set: bytes outside the known commands round-trip, so a decoder can name what it saw.
public struct Command: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The command byte.
    public var rawValue: UInt8

    /// Wraps any byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0: token and payload only, no identifier, no error response.
    public static let simple = Command(rawValue: 0)
    /// 1: identifier and expiry, then token and payload.
    public static let enhanced = Command(rawValue: 1)
    /// 2: a length-prefixed list of items (token, payload, identifier, expiry, priority).
    public static let itemized = Command(rawValue: 2)
    /// 8: the gateway's 6-byte error response.
    public static let errorResponse = Command(rawValue: 8)

    /// The command's name and number.
    public var description: String {
        switch self {
        case .simple: "simple (0)"
        case .enhanced: "enhanced (1)"
        case .itemized: "item frame (2)"
        case .errorResponse: "error response (8)"
        default: "unknown command (\(rawValue))"
        }
    }
}

/// Which notification frame to write.
public enum FrameFormat: String, Hashable, Sendable, CaseIterable {
    /// Command 0. The gateway answers a bad frame by closing the connection, with no error
    /// response, so deliveries in this format cannot be attributed.
    case simple
    /// Command 1, the format most legacy senders used.
    case enhanced
    /// Command 2, the item-based frame (the only one with a priority).
    case itemized

    /// The command byte this format writes.
    public var command: Command {
        switch self {
        case .simple: .simple
        case .enhanced: .enhanced
        case .itemized: .itemized
        }
    }

    /// Whether frames of this format carry an identifier the gateway can name in an error response.
    public var carriesIdentifier: Bool { self != .simple }
}
