/// A checked notification kept as the frame that will carry it, between the check of an input and
/// its send: `legacy-push send --input` spools these, ``FrameBatch``-style buffers hold them, and
/// the connection copies each frame to the wire with its own identifier patched in, without
/// building a ``PushNotification``.
///
/// ```
/// offset 0                4         5            6               10           14
///        +----------------+---------+------------+---------------+------------+--------------------------+
///        | frame size (4) | flags   | priority   | caller id (4) | expiry (4) | frame (frame size bytes) |
///        +----------------+---------+------------+---------------+------------+--------------------------+
/// ```
/// The header is **little-endian** (a record never leaves the process); the frame is a complete
/// frame of one ``FrameFormat``, big-endian as on the wire, whose identifier is 0 until it is
/// written (item frames always carry the identifier item). Flags: bit 0 when the notification
/// has the caller's identifier, bit 1 when it has an expiry, bit 2 when it has a priority (the
/// header keeps them so that a report can rebuild the notification exactly, whatever the format
/// carries).
package enum FrameRecord {
    /// Bytes before the frame.
    package static let headerSize = 14

    fileprivate enum Flag {
        static let hasIdentifier: UInt8 = 1
        static let hasExpiry: UInt8 = 2
        static let hasPriority: UInt8 = 4
    }

    /// The size of the record of a notification with these fields.
    package static func size(
        tokenCount: Int, payloadCount: Int, format: FrameFormat, hasExpiration: Bool, hasPriority: Bool
    ) -> Int {
        headerSize
            + FrameEncoder.encodedSize(
                tokenCount: tokenCount, payloadCount: payloadCount, format: format, includesIdentifier: true,
                hasExpiration: hasExpiration, hasPriority: hasPriority)
    }

    /// The size of the record of `notification` as a frame of `format`.
    package static func size(of notification: PushNotification, format: FrameFormat) -> Int {
        size(
            tokenCount: notification.token.count, payloadCount: notification.payload.bytes.count, format: format,
            hasExpiration: notification.expiration != nil, hasPriority: notification.priority != nil)
    }

    /// Writes the record at `base`, which has room for its
    /// ``size(tokenCount:payloadCount:format:hasExpiration:hasPriority:)`` bytes, and returns that
    /// size. The fields must already be checked against the format's limits.
    @discardableResult
    package static func write(
        token: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, identifier: UInt32?,
        expiration: Expiration?, priority: Priority?, format: FrameFormat, to base: UnsafeMutableRawPointer
    ) -> Int {
        let frameSize = FrameEncoder.write(
            token: token, payload: payload, identifier: 0, expiration: expiration, priority: priority, as: format,
            to: base + headerSize)
        base.storeBytes(of: UInt32(frameSize).littleEndian, toByteOffset: 0, as: UInt32.self)
        var flags: UInt8 = 0
        if identifier != nil { flags |= Flag.hasIdentifier }
        if expiration != nil { flags |= Flag.hasExpiry }
        if priority != nil { flags |= Flag.hasPriority }
        base.storeBytes(of: flags, toByteOffset: 4, as: UInt8.self)
        base.storeBytes(of: priority?.rawValue ?? 0, toByteOffset: 5, as: UInt8.self)
        base.storeBytes(of: (identifier ?? 0).littleEndian, toByteOffset: 6, as: UInt32.self)
        base.storeBytes(of: (expiration?.rawValue ?? 0).littleEndian, toByteOffset: 10, as: UInt32.self)
        return headerSize + frameSize
    }

    /// Writes the record of `notification` (checked against the format's limits) at `base`.
    @discardableResult
    package static func write(
        _ notification: PushNotification, format: FrameFormat, to base: UnsafeMutableRawPointer
    ) -> Int {
        notification.token.withUnsafeBytes { token in
            notification.payload.bytes.withUnsafeBytes { payload in
                write(
                    token: token, payload: payload, identifier: notification.identifier,
                    expiration: notification.expiration, priority: notification.priority, format: format, to: base)
            }
        }
    }

    /// The size of the whole record that starts `bytes`, or nil when `bytes` hold less than its
    /// header and frame.
    @inline(__always)
    package static func size(ofRecordAt bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= headerSize else { return nil }
        let size = headerSize + Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
        return size <= bytes.count ? size : nil
    }

    /// One whole record in memory, by address: what the delivery machine keeps of a notification
    /// sent from pre-encoded frames (no copy, no reference count). Valid as long as the memory
    /// holding the record is: its owner keeps it until every notification in it has a verdict.
    package struct Reference: DeliveryItem, @unchecked Sendable {
        // @unchecked: the record's bytes are never written after the record is made, and their
        // owner outlives every reference (see above), so reading them from any thread is safe.

        /// Where the record starts.
        package let address: UnsafeRawPointer

        /// References the record at `address`.
        @inline(__always)
        package init(_ address: UnsafeRawPointer) { self.address = address }

        /// The frame's size in bytes.
        @inline(__always)
        package var frameSize: Int { Int(UInt32(littleEndian: address.loadUnaligned(as: UInt32.self))) }

        /// The record's size in bytes, header and frame.
        @inline(__always)
        package var recordSize: Int { FrameRecord.headerSize + frameSize }

        /// The frame, with identifier 0.
        package var frame: UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: address + FrameRecord.headerSize, count: frameSize)
        }

        private var flags: UInt8 { address.load(fromByteOffset: 4, as: UInt8.self) }

        /// The caller's identifier, if the notification has one.
        package var callerIdentifier: UInt32? {
            flags & Flag.hasIdentifier != 0
                ? UInt32(littleEndian: address.loadUnaligned(fromByteOffset: 6, as: UInt32.self)) : nil
        }

        /// The notification's expiry, if it has one.
        package var expiration: Expiration? {
            flags & Flag.hasExpiry != 0
                ? Expiration(rawValue: UInt32(littleEndian: address.loadUnaligned(fromByteOffset: 10, as: UInt32.self)))
                : nil
        }

        /// The notification's priority, if it has one.
        package var priority: Priority? {
            flags & Flag.hasPriority != 0 ? Priority(rawValue: address.load(fromByteOffset: 5, as: UInt8.self)) : nil
        }

        /// The frame's command.
        private var command: UInt8 { address.load(fromByteOffset: FrameRecord.headerSize, as: UInt8.self) }

        /// Where the token is in the frame and how long it is.
        private var tokenRange: Range<Int> {
            let frame = self.frame
            let (lengthOffset, tokenOffset): (Int, Int) =
                switch command {
                case Command.simple.rawValue: (FrameLayout.Simple.tokenLength, FrameLayout.Simple.token)
                case Command.enhanced.rawValue: (FrameLayout.Enhanced.tokenLength, FrameLayout.Enhanced.token)
                default: (FrameLayout.Itemized.items + 1, FrameLayout.Itemized.items + FrameLayout.Itemized.itemHeader)
                }
            let count = Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: lengthOffset, as: UInt16.self)))
            return tokenOffset..<(tokenOffset + count)
        }

        /// The device token.
        package var token: DeviceToken {
            DeviceToken(validatedBytes: UnsafeRawBufferPointer(rebasing: frame[tokenRange]))
        }

        /// The payload's bytes in the frame.
        package var payload: UnsafeRawBufferPointer {
            let frame = self.frame
            // The payload length follows the token directly in commands 0 and 1, and after the
            // payload item's id in command 2 (whose token item is always first).
            let tokenEnd = tokenRange.upperBound
            let lengthOffset = command == Command.itemized.rawValue ? tokenEnd + 1 : tokenEnd
            let count = Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: lengthOffset, as: UInt16.self)))
            return UnsafeRawBufferPointer(rebasing: frame[(lengthOffset + 2)..<(lengthOffset + 2 + count)])
        }

        /// The notification the record holds, rebuilt (it allocates: for reports, not the hot path).
        package var notification: PushNotification {
            PushNotification(
                token: token, payload: Payload(unvalidatedBytes: Array(payload)), identifier: callerIdentifier,
                expiration: expiration, priority: priority)
        }

        /// Copies the frame to `destination` (room for ``frameSize`` bytes) with `identifier` as its
        /// wire identifier (command 0 carries none), and returns its size.
        @inline(__always)
        @discardableResult
        package func copyFrame(identifier: UInt32, to destination: UnsafeMutableRawPointer) -> Int {
            let size = frameSize
            destination.copyMemory(from: address + FrameRecord.headerSize, byteCount: size)
            switch command {
            case Command.enhanced.rawValue:
                destination.storeBytes(
                    of: identifier.bigEndian, toByteOffset: FrameLayout.Enhanced.identifier, as: UInt32.self)
            case Command.itemized.rawValue:
                destination.storeBytes(
                    of: identifier.bigEndian, toByteOffset: identifierOffsetInItemFrame, as: UInt32.self)
            default:
                break
            }
            return size
        }

        /// Where the identifier item's data is in an item frame written by
        /// ``FrameRecord/write(token:payload:identifier:expiration:priority:format:to:)``: after the
        /// token item and the payload item.
        private var identifierOffsetInItemFrame: Int {
            typealias Layout = FrameLayout.Itemized
            let frame = address + FrameRecord.headerSize
            var offset = Layout.items
            for _ in 0..<2 {
                offset +=
                    Layout.itemHeader
                    + Int(UInt16(bigEndian: frame.loadUnaligned(fromByteOffset: offset + 1, as: UInt16.self)))
            }
            return offset + Layout.itemHeader
        }
    }
}
