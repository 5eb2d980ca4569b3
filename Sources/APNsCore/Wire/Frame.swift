/// One decoded unit of a legacy APNs byte stream.
public enum Frame: Hashable, Sendable {
    /// A notification frame (command 0, 1 or 2). Fields the command lacks are `nil`: command 0
    /// has no identifier or expiry, command 1 always has both, command 2 has what items it carried.
    case notification(PushNotification, command: Command)
    /// A gateway's error response (command 8).
    case errorResponse(ErrorResponse)

    /// The command byte that started the frame.
    public var command: Command {
        switch self {
        case .notification(_, let command): command
        case .errorResponse: .errorResponse
        }
    }
}

/// Why bytes are not a valid frame, what a gateway would answer, and where.
public struct FrameDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status a gateway answers for this problem (2, 4, 5, 7, or 128 for broken structure).
    public var status: StatusCode
    /// The identifier the gateway would name: the frame's own when it could be read, else 0.
    public var identifier: UInt32
    /// Absolute stream offset of the offending bytes.
    public var offset: Int
    /// Absolute stream offset where the bad frame starts.
    public var frameOffset: Int
    /// What is wrong, in words.
    public var reason: String
    /// The stream ended inside a frame (only ``FrameDecoder/finish()`` reports this).
    public var isTruncation: Bool
    /// The first byte of the bad frame. A gateway answers a bad command 0 frame by closing the
    /// connection without an error response.
    public var command: Command
    /// Whether the bad frame is a ``ConfirmationBarrier`` (an enhanced frame with neither token nor
    /// payload): a sender proving its earlier frames, not a broken notification.
    public var isConfirmationBarrier = false

    /// Creates an error value.
    public init(
        status: StatusCode, identifier: UInt32, offset: Int, frameOffset: Int, reason: String,
        isTruncation: Bool = false, command: Command
    ) {
        self.command = command
        self.status = status
        self.identifier = identifier
        self.offset = offset
        self.frameOffset = frameOffset
        self.reason = reason
        self.isTruncation = isTruncation
    }

    /// The error response a gateway would send.
    public var errorResponse: ErrorResponse { ErrorResponse(status: status, identifier: identifier) }

    /// `byte N: reason (status S, words)`.
    public var description: String {
        "byte \(offset): \(reason) (status \(status.rawValue), \(status.reason))"
    }
}
