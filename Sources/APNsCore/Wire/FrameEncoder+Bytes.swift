extension FrameEncoder {
    /// The size of a frame of `format` carrying a token and a payload of these sizes, with or
    /// without the optional items (only item frames leave items out; commands 0 and 1 have a
    /// fixed layout).
    @inlinable
    package static func encodedSize(
        tokenCount: Int, payloadCount: Int, format: FrameFormat, includesIdentifier: Bool, hasExpiration: Bool,
        hasPriority: Bool
    ) -> Int {
        switch format {
        case .simple:
            return FrameLayout.Simple.overhead + tokenCount + payloadCount
        case .enhanced:
            return FrameLayout.Enhanced.overhead + tokenCount + payloadCount
        case .itemized:
            typealias Item = FrameLayout.Itemized
            var size = Item.header + Item.itemHeader + tokenCount + Item.itemHeader + payloadCount
            if includesIdentifier { size += Item.itemHeader + Item.identifierSize }
            if hasExpiration { size += Item.itemHeader + Item.expirySize }
            if hasPriority { size += Item.itemHeader + Item.prioritySize }
            return size
        }
    }

    /// Writes one frame of `format` at `base` from a token's and a payload's bytes, and returns its
    /// size: the bytes ``encodeValidated(_:as:identifier:into:)`` writes for the same notification
    /// (item frames carry the identifier item when `identifier` is not nil). `base` must have room
    /// for ``encodedSize(tokenCount:payloadCount:format:includesIdentifier:hasExpiration:hasPriority:)``
    /// bytes, and the fields must already be checked against the format's limits. For callers that
    /// keep frames in buffers of their own (the frame spool of `send --input`).
    @discardableResult
    package static func write(
        token: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, identifier: UInt32?,
        expiration: Expiration?, priority: Priority?, as format: FrameFormat, to base: UnsafeMutableRawPointer
    ) -> Int {
        let tokenCount = token.count
        switch format {
        case .simple:
            typealias Layout = FrameLayout.Simple
            let payloadLength = Layout.payloadLength(tokenCount: tokenCount)
            base.storeBytes(of: Command.simple.rawValue, as: UInt8.self)
            base.storeBytes(of: UInt16(tokenCount).bigEndian, toByteOffset: Layout.tokenLength, as: UInt16.self)
            copy(token, to: base + Layout.token)
            base.storeBytes(of: UInt16(payload.count).bigEndian, toByteOffset: payloadLength, as: UInt16.self)
            copy(payload, to: base + payloadLength + 2)
            return payloadLength + 2 + payload.count
        case .enhanced:
            typealias Layout = FrameLayout.Enhanced
            let payloadLength = Layout.payloadLength(tokenCount: tokenCount)
            base.storeBytes(of: Command.enhanced.rawValue, as: UInt8.self)
            base.storeBytes(of: (identifier ?? 0).bigEndian, toByteOffset: Layout.identifier, as: UInt32.self)
            base.storeBytes(
                of: (expiration?.rawValue ?? 0).bigEndian, toByteOffset: Layout.expiry, as: UInt32.self)
            base.storeBytes(of: UInt16(tokenCount).bigEndian, toByteOffset: Layout.tokenLength, as: UInt16.self)
            copy(token, to: base + Layout.token)
            base.storeBytes(of: UInt16(payload.count).bigEndian, toByteOffset: payloadLength, as: UInt16.self)
            copy(payload, to: base + payloadLength + 2)
            return payloadLength + 2 + payload.count
        case .itemized:
            typealias Layout = FrameLayout.Itemized
            base.storeBytes(of: Command.itemized.rawValue, as: UInt8.self)
            var offset = Layout.items
            offset = writeItem(.token, token, at: offset, base)
            offset = writeItem(.payload, payload, at: offset, base)
            if let identifier {
                offset = withUnsafeBytes(of: identifier.bigEndian) { writeItem(.identifier, $0, at: offset, base) }
            }
            if let expiration {
                offset = withUnsafeBytes(of: expiration.rawValue.bigEndian) { writeItem(.expiry, $0, at: offset, base) }
            }
            if let priority {
                offset = withUnsafeBytes(of: priority.rawValue) { writeItem(.priority, $0, at: offset, base) }
            }
            base.storeBytes(
                of: UInt32(offset - Layout.header).bigEndian, toByteOffset: Layout.frameLength, as: UInt32.self)
            return offset
        }
    }

    /// Writes one item (id, length, data) at `offset` and returns the offset after it.
    @inline(__always)
    private static func writeItem(
        _ id: ItemID, _ data: UnsafeRawBufferPointer, at offset: Int, _ base: UnsafeMutableRawPointer
    ) -> Int {
        base.storeBytes(of: id.rawValue, toByteOffset: offset, as: UInt8.self)
        base.storeBytes(of: UInt16(data.count).bigEndian, toByteOffset: offset + 1, as: UInt16.self)
        copy(data, to: base + offset + FrameLayout.Itemized.itemHeader)
        return offset + FrameLayout.Itemized.itemHeader + data.count
    }

    /// Copies `bytes` (which may be empty) to `destination`.
    @inline(__always)
    private static func copy(_ bytes: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        destination.copyMemory(from: source, byteCount: bytes.count)
    }
}
