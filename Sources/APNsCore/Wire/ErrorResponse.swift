/// The gateway's answer to a bad frame, after which it closes the connection.
///
/// ```
/// +------+--------+---------------------+
/// | 0x08 | status | identifier (4, BE)  |
/// +------+--------+---------------------+
///    1       1              4            = 6 bytes
/// ```
/// Everything sent after the named notification on that connection was discarded. With status
/// ``StatusCode/shutdown`` the named notification is the last one that *was* processed.
public struct ErrorResponse: Hashable, Sendable, CustomStringConvertible {
    /// The size of an error response on the wire.
    public static let byteCount = 6

    /// What went wrong (or 10: shutdown).
    public var status: StatusCode
    /// The identifier of the notification the status is about.
    public var identifier: UInt32

    /// Creates an error response.
    public init(status: StatusCode, identifier: UInt32) {
        self.status = status
        self.identifier = identifier
    }

    /// Appends the 6 bytes to `writer`.
    public func encode(into writer: inout ByteWriter) {
        writer.writeInteger(Command.errorResponse.rawValue)
        writer.writeInteger(status.rawValue)
        writer.writeInteger(identifier)
    }

    /// The 6 bytes.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: Self.byteCount)
        encode(into: &writer)
        return writer.bytes
    }

    /// A one-line description.
    public var description: String { "error response: status \(status), identifier \(identifier)" }
}
