/// The confirmation barrier: a deliberately invalid enhanced frame that every gateway answers
/// with an error response (status 2, missing device token) naming its identifier.
///
/// ```
/// offset 0      1                5            9                      11                       13
///        +------+----------------+------------+----------------------+------------------------+
///        | 0x01 | identifier (4) | expiry = 0 | token length (2) = 0 | payload length (2) = 0 |
///        +------+----------------+------------+----------------------+------------------------+
/// ```
/// A gateway processes frames in order, so the error response naming the barrier proves that
/// every frame written before it on the connection was accepted: that is how `PushClient`
/// confirms a send instead of assuming success from silence (``DeliveryStateMachine``). Legacy
/// senders never write a frame without token *and* payload, so a gateway can tell a barrier from
/// a broken notification (``FrameDecodingError/isConfirmationBarrier``).
public enum ConfirmationBarrier {
    /// The size of a barrier on the wire.
    public static let byteCount = FrameLayout.Enhanced.overhead

    /// The status a gateway answers a barrier with.
    public static let expectedStatus = StatusCode.missingDeviceToken

    /// Appends a barrier carrying `identifier`.
    public static func encode(identifier: UInt32, into writer: inout ByteWriter) {
        writer.writeWithUnsafeMutableBytes(byteCount: byteCount) { out in
            out.initializeMemory(as: UInt8.self, repeating: 0)
            out.storeBytes(of: Command.enhanced.rawValue, toByteOffset: 0, as: UInt8.self)
            out.storeBytes(of: identifier.bigEndian, toByteOffset: FrameLayout.Enhanced.identifier, as: UInt32.self)
        }
    }

    /// Whether `frame` (the bytes of one frame, at least its first ``byteCount``) has a barrier's
    /// shape: command 1 with token length 0 and payload length 0.
    public static func matches(_ frame: some Collection<UInt8>) -> Bool {
        withContiguousBytes(frame) { matches($0) }
    }

    /// The public `matches(_:)` for a frame in memory (the simulator's read buffer).
    package static func matches(_ frame: UnsafeRawBufferPointer) -> Bool {
        let reader = ByteReader(frame)
        typealias Layout = FrameLayout.Enhanced
        return frame.first == Command.enhanced.rawValue
            && reader.getInteger(at: Layout.tokenLength, as: UInt16.self) == 0
            && reader.getInteger(at: Layout.payloadLength(tokenCount: 0), as: UInt16.self) == 0
    }
}
