/// Where every field of the binary frames sits, named once and shared by ``FrameEncoder``,
/// ``FrameDecoder`` and ``ConfirmationBarrier``. All integers are big-endian.
@usableFromInline
enum FrameLayout {
    /// Command 0, the simple format:
    /// ```
    /// offset 0         1                 3         3+T                 5+T
    ///        +---------+-----------------+---------+-------------------+---------+
    ///        | 0x00    | token length (2)| token   | payload length (2)| payload |
    ///        +---------+-----------------+---------+-------------------+---------+
    /// ```
    @usableFromInline
    enum Simple {
        @usableFromInline static let tokenLength = 1
        @usableFromInline static let token = 3
        /// Bytes around the token and the payload: command, two lengths.
        @usableFromInline static let overhead = 5

        /// Offset of the payload length field after a token of `tokenCount` bytes.
        @usableFromInline static func payloadLength(tokenCount: Int) -> Int { token + tokenCount }
    }

    /// Command 1, the enhanced format (45 + P bytes with a 32-byte token):
    /// ```
    /// offset 0      1                5            9                  11      11+T                13+T
    ///        +------+----------------+------------+------------------+-------+-------------------+---------+
    ///        | 0x01 | identifier (4) | expiry (4) | token length (2) | token | payload length (2)| payload |
    ///        +------+----------------+------------+------------------+-------+-------------------+---------+
    /// ```
    @usableFromInline
    enum Enhanced {
        @usableFromInline static let identifier = 1
        @usableFromInline static let expiry = 5
        @usableFromInline static let tokenLength = 9
        @usableFromInline static let token = 11
        /// Bytes around the token and the payload: command, identifier, expiry, two lengths.
        @usableFromInline static let overhead = 13

        /// Offset of the payload length field after a token of `tokenCount` bytes.
        @usableFromInline static func payloadLength(tokenCount: Int) -> Int { token + tokenCount }
    }

    /// Command 2, the item frame:
    /// ```
    /// offset 0      1                  5
    ///        +------+------------------+-----------------------------------------------+
    ///        | 0x02 | frame length (4) | items: id (1) | item length (2) | data, ...   |
    ///        +------+------------------+-----------------------------------------------+
    /// ```
    /// The frame length counts the items only. See ``ItemID`` for the items.
    @usableFromInline
    enum Itemized {
        @usableFromInline static let frameLength = 1
        @usableFromInline static let items = 5
        /// Command and frame length.
        @usableFromInline static let header = 5
        /// Item id and item length.
        @usableFromInline static let itemHeader = 3
        /// Size of the fixed-size items' data: identifier and expiry 4, priority 1.
        @usableFromInline static let identifierSize = 4
        @usableFromInline static let expirySize = 4
        @usableFromInline static let prioritySize = 1
    }
}

/// The item identifiers of a command 2 frame.
public struct ItemID: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The id byte.
    public var rawValue: UInt8

    /// Wraps any byte (unknown ids are a protocol error, but they can be named).
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 1: the device token (1 to 100 bytes; 32 in practice).
    public static let token = ItemID(rawValue: 1)
    /// 2: the payload.
    public static let payload = ItemID(rawValue: 2)
    /// 3: the notification identifier (4 bytes).
    public static let identifier = ItemID(rawValue: 3)
    /// 4: the expiration date (4 bytes, UNIX seconds).
    public static let expiry = ItemID(rawValue: 4)
    /// 5: the priority (1 byte).
    public static let priority = ItemID(rawValue: 5)

    /// The ids a valid frame may carry, in the order the encoder writes them.
    public static let known: ClosedRange<UInt8> = 1...5

    /// The item's name and number.
    public var description: String {
        switch self {
        case .token: "token (1)"
        case .payload: "payload (2)"
        case .identifier: "identifier (3)"
        case .expiry: "expiry (4)"
        case .priority: "priority (5)"
        default: "unknown item (\(rawValue))"
        }
    }
}
