/// Writes notification frames (commands 0, 1 and 2) into a reusable ``ByteWriter``.
///
/// ```
/// command 0 (simple):    00 | token length (2) | token | payload length (2) | payload
/// command 1 (enhanced):  01 | identifier (4) | expiry (4) | token length (2) | token
///                           | payload length (2) | payload                     = 45 + P bytes
/// command 2 (itemized):  02 | frame length (4) | items, each: id (1) | length (2) | data
///                        items in ascending id order: 1 token, 2 payload, and when present
///                        3 identifier (4), 4 expiry (4), 5 priority (1)        = 61 + P bytes
/// ```
/// All integers big-endian; the offsets are named once, in `FrameLayout` (shared with the decoder
/// and the confirmation barrier), and the item ids in ``ItemID``. Commands 0 and 1 take 32-byte tokens only; command 2 takes 1...100.
///
/// Each frame is written with one capacity check and direct stores, so once the writer has grown
/// to its working size, encoding allocates nothing and never re-serialises the payload.
public struct FrameEncoder: Hashable, Sendable {
    /// Payloads larger than this are refused (default 2048; 256 for gateways older than iOS 8).
    public var maximumPayloadSize: Int

    /// Creates an encoder with a payload limit.
    public init(maximumPayloadSize: Int = Payload.defaultMaximumSize) {
        self.maximumPayloadSize = maximumPayloadSize
    }

    /// The size of `notification` as a frame of `format`, without encoding it.
    @inlinable
    public static func encodedSize(
        of notification: PushNotification, format: FrameFormat, includesIdentifier: Bool
    ) -> Int {
        encodedSize(
            tokenCount: notification.token.count, payloadCount: notification.payload.bytes.count, format: format,
            includesIdentifier: includesIdentifier, hasExpiration: notification.expiration != nil,
            hasPriority: notification.priority != nil)
    }

    /// The status a gateway would answer for `notification` as a frame of `format`, or nil when
    /// it is valid: 5 for a token of the wrong size, 4 for an empty payload, 7 for one over the
    /// limit. Cheap enough for the hot path.
    @inlinable
    public func gatewayStatus(for notification: PushNotification, format: FrameFormat) -> StatusCode? {
        if format != .itemized, notification.token.count != DeviceToken.standardByteCount { return .invalidTokenSize }
        let payload = notification.payload.bytes.count
        if payload == 0 { return .missingPayload }
        if payload > maximumPayloadSize || payload > Int(UInt16.max) { return .invalidPayloadSize }
        return nil
    }

    /// Checks that `notification` fits `format` under this encoder's limits.
    @inlinable
    public func validate(_ notification: PushNotification, format: FrameFormat) throws {
        guard gatewayStatus(for: notification, format: format) != nil else { return }
        let token = notification.token.count
        if format != .itemized, token != DeviceToken.standardByteCount {
            throw DeviceToken.wrongLength(token, format: format.rawValue)
        }
        let payload = notification.payload.bytes.count
        if payload == 0 {
            throw LegacyAPNsError(.invalidPayload, "payload is empty")
        }
        throw LegacyAPNsError(
            .payloadTooLarge,
            "payload has \(payload) bytes, the limit is \(Swift.min(maximumPayloadSize, Int(UInt16.max)))")
    }

    /// Appends `notification` as one frame of `format`, with the notification's own identifier
    /// (`nil` writes 0 in an enhanced frame and leaves item 3 out of an item frame).
    @inlinable
    public func encode(_ notification: PushNotification, as format: FrameFormat, into writer: inout ByteWriter) throws {
        try validate(notification, format: format)
        Self.encodeValidated(notification, as: format, identifier: notification.identifier, into: &writer)
    }

    /// Appends `notification` as one frame of `format` carrying `identifier` instead of the
    /// notification's own (what `PushClient` does: it numbers frames itself).
    @inlinable
    public func encode(
        _ notification: PushNotification, as format: FrameFormat, identifier: UInt32, into writer: inout ByteWriter
    ) throws {
        try validate(notification, format: format)
        Self.encodeValidated(notification, as: format, identifier: identifier, into: &writer)
    }

    /// Encodes without checking limits: the caller has called ``validate(_:format:)``.
    @inlinable
    public static func encodeValidated(
        _ notification: PushNotification, as format: FrameFormat, identifier: UInt32?, into writer: inout ByteWriter
    ) {
        let size = encodedSize(of: notification, format: format, includesIdentifier: identifier != nil)
        let tokenCount = notification.token.count
        notification.payload.bytes.withUnsafeBytes { payload in
            notification.token.withUnsafeBytes { token in
                writer.writeWithUnsafeMutableBytes(byteCount: size) { out in
                    let base = out.baseAddress!
                    switch format {
                    case .simple:
                        typealias Layout = FrameLayout.Simple
                        let payloadLength = Layout.payloadLength(tokenCount: tokenCount)
                        out.storeBytes(of: Command.simple.rawValue, toByteOffset: 0, as: UInt8.self)
                        Self.storeTokenAndPayload(
                            token, payload, into: out, tokenLength: Layout.tokenLength, payloadLength: payloadLength)
                    case .enhanced:
                        typealias Layout = FrameLayout.Enhanced
                        let payloadLength = Layout.payloadLength(tokenCount: tokenCount)
                        out.storeBytes(of: Command.enhanced.rawValue, toByteOffset: 0, as: UInt8.self)
                        out.storeBytes(
                            of: (identifier ?? 0).bigEndian, toByteOffset: Layout.identifier, as: UInt32.self)
                        out.storeBytes(
                            of: (notification.expiration?.rawValue ?? 0).bigEndian, toByteOffset: Layout.expiry,
                            as: UInt32.self)
                        Self.storeTokenAndPayload(
                            token, payload, into: out, tokenLength: Layout.tokenLength, payloadLength: payloadLength)
                    case .itemized:
                        typealias Layout = FrameLayout.Itemized
                        out.storeBytes(of: Command.itemized.rawValue, toByteOffset: 0, as: UInt8.self)
                        out.storeBytes(
                            of: UInt32(size - Layout.header).bigEndian, toByteOffset: Layout.frameLength,
                            as: UInt32.self
                        )
                        var offset = Layout.items
                        /// Writes one item header and returns the offset of its data.
                        func item(_ id: ItemID, length: Int) -> Int {
                            out.storeBytes(of: id.rawValue, toByteOffset: offset, as: UInt8.self)
                            out.storeBytes(of: UInt16(length).bigEndian, toByteOffset: offset + 1, as: UInt16.self)
                            defer { offset += Layout.itemHeader + length }
                            return offset + Layout.itemHeader
                        }
                        let tokenData = item(.token, length: tokenCount)
                        (base + tokenData).copyMemory(from: token.baseAddress!, byteCount: tokenCount)
                        let payloadData = item(.payload, length: payload.count)
                        (base + payloadData).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
                        if let identifier {
                            let data = item(.identifier, length: Layout.identifierSize)
                            out.storeBytes(of: identifier.bigEndian, toByteOffset: data, as: UInt32.self)
                        }
                        if let expiration = notification.expiration {
                            let data = item(.expiry, length: Layout.expirySize)
                            out.storeBytes(of: expiration.rawValue.bigEndian, toByteOffset: data, as: UInt32.self)
                        }
                        if let priority = notification.priority {
                            let data = item(.priority, length: Layout.prioritySize)
                            out.storeBytes(of: priority.rawValue, toByteOffset: data, as: UInt8.self)
                        }
                    }
                }
            }
        }
    }

    /// Writes a command 0 or 1 frame's token length, token, payload length and payload, the
    /// token length at `tokenLength` and the payload length at `payloadLength`.
    @inlinable @inline(__always)
    static func storeTokenAndPayload(
        _ token: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
        tokenLength: Int, payloadLength: Int
    ) {
        let base = out.baseAddress!
        out.storeBytes(of: UInt16(token.count).bigEndian, toByteOffset: tokenLength, as: UInt16.self)
        (base + tokenLength + 2).copyMemory(from: token.baseAddress!, byteCount: token.count)
        out.storeBytes(of: UInt16(payload.count).bigEndian, toByteOffset: payloadLength, as: UInt16.self)
        (base + payloadLength + 2).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
    }
}
