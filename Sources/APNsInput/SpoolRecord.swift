import LegacyAPNs

/// One checked notification as `send --input` keeps it between the check and the send, so that
/// what is sent is exactly what was checked and no JSON is parsed twice.
///
/// ```
/// offset 0       1              2                   4                8            12          13
///        +-------+--------------+-------------------+----------------+------------+-----------+-------+---------+
///        | flags | token length | payload length (2)| identifier (4) | expiry (4) | priority  | token | payload |
///        +-------+--------------+-------------------+----------------+------------+-----------+-------+---------+
///
/// then, when flags bit 3 is set (the HTTP/2 fields of `send --http2`):
///        +----------------+--------------+-------------------+--------------+-----------------+--------------------+-----------+
///        | has apns-id (1)| apns-id (16) | topic length (2)  | topic        | push type len (1)| push type | collapse len (2) | collapse id |
///        +----------------+--------------+-------------------+--------------+-----------------+--------------------+-----------+
/// ```
/// Integers are **little-endian** (the record never leaves this process, and little-endian is
/// what the machines it runs on store, so encoding is a plain copy). Flags: bit 0 set when the
/// expiry is present, bit 1 when the priority is, bit 2 when the line gave an `id` (without one the
/// identifier stays nil, and reports name the notification by its line number), bit 3 when the
/// HTTP/2 block follows; the apns-id is written only when present.
struct SpoolRecord {
    /// Bytes before the token.
    static let headerSize = 13

    private enum Flag {
        static let hasExpiry: UInt8 = 1
        static let hasPriority: UInt8 = 2
        static let hasIdentifier: UInt8 = 4
        static let hasHTTP2Fields: UInt8 = 8
    }

    /// A record read back.
    struct Decoded {
        var token: DeviceToken
        var payload: Payload
        var identifier: UInt32?
        var expiration: Expiration?
        var priority: Priority?
        var topic: String?
        var pushType: PushType?
        var collapseID: String?
        var apnsID: APNsID?

        /// For the binary protocol.
        var pushNotification: PushNotification {
            PushNotification(
                token: token, payload: payload, identifier: identifier, expiration: expiration, priority: priority)
        }

        /// For the HTTP/2 API (the token was checked to have at least 32 bytes).
        var providerRequest: ProviderRequest {
            ProviderRequest(
                validatedToken: token, payload: payload, topic: topic, pushType: pushType, apnsID: apnsID,
                expiration: expiration, priority: priority, collapseID: collapseID, authorizationToken: nil,
                identifier: identifier)
        }
    }

    /// Appends the record of a checked line to `bytes`.
    static func encode(_ line: NotificationLineParser.ParsedLine, into bytes: inout [UInt8]) {
        let start = bytes.count
        let hasHTTP2Fields = line.topic != nil || line.pushType != nil || line.collapseID != nil || line.apnsID != nil
        bytes.append(contentsOf: repeatElement(0, count: headerSize))
        bytes.withUnsafeMutableBytes { raw in
            let header = UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + headerSize)])
            header[0] =
                (line.expiration != nil ? Flag.hasExpiry : 0) | (line.priority != nil ? Flag.hasPriority : 0)
                | (line.givenIdentifier != nil ? Flag.hasIdentifier : 0) | (hasHTTP2Fields ? Flag.hasHTTP2Fields : 0)
            header[1] = UInt8(line.token.count)
            header.storeBytes(of: UInt16(line.payload.count).littleEndian, toByteOffset: 2, as: UInt16.self)
            header.storeBytes(of: (line.givenIdentifier ?? 0).littleEndian, toByteOffset: 4, as: UInt32.self)
            header.storeBytes(of: (line.expiration?.rawValue ?? 0).littleEndian, toByteOffset: 8, as: UInt32.self)
            header[12] = line.priority?.rawValue ?? 0
        }
        line.token.withUnsafeBytes { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: line.payload)
        guard hasHTTP2Fields else { return }
        if let id = line.apnsID {
            bytes.append(1)
            withUnsafeBytes(of: id.rawValue.littleEndian) { bytes.append(contentsOf: $0) }
        } else {
            bytes.append(0)
        }
        appendText(line.topic, lengthBytes: 2, to: &bytes)
        appendText(line.pushType?.rawValue, lengthBytes: 1, to: &bytes)
        appendText(line.collapseID, lengthBytes: 2, to: &bytes)
    }

    private static func appendText(_ text: String?, lengthBytes: Int, to bytes: inout [UInt8]) {
        let utf8 = Array((text ?? "").utf8.prefix(lengthBytes == 1 ? 255 : 65535))
        if lengthBytes == 1 {
            bytes.append(UInt8(utf8.count))
        } else {
            withUnsafeBytes(of: UInt16(utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
        }
        bytes.append(contentsOf: utf8)
    }

    /// The record at the start of `bytes` and its size, or nil when `bytes` holds less than a
    /// whole record.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> (Decoded, size: Int)? {
        guard bytes.count >= headerSize else { return nil }
        let flags = bytes[0]
        let tokenCount = Int(bytes[1])
        let payloadCount = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
        let tokenStart = headerSize
        let payloadStart = tokenStart + tokenCount
        var size = payloadStart + payloadCount
        guard bytes.count >= size else { return nil }
        var decoded = Decoded(
            token: DeviceToken(validatedBytes: UnsafeRawBufferPointer(rebasing: bytes[tokenStart..<payloadStart])),
            payload: Payload(unvalidatedBytes: Array(bytes[payloadStart..<size])),
            identifier: flags & Flag.hasIdentifier != 0
                ? UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) : nil,
            expiration: flags & Flag.hasExpiry != 0
                ? Expiration(rawValue: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
                : nil,
            priority: flags & Flag.hasPriority != 0 ? Priority(rawValue: bytes[12]) : nil)
        guard flags & Flag.hasHTTP2Fields != 0 else { return (decoded, size) }
        var reader = ByteCursor(bytes: bytes, offset: size)
        guard let hasID = reader.byte() else { return nil }
        if hasID == 1 {
            guard let raw = reader.bytes(16) else { return nil }
            decoded.apnsID = APNsID(rawValue: UInt128(littleEndian: raw.loadUnaligned(as: UInt128.self)))
        }
        guard let topic = reader.text(lengthBytes: 2), let type = reader.text(lengthBytes: 1),
            let collapse = reader.text(lengthBytes: 2)
        else { return nil }
        decoded.topic = topic.isEmpty ? nil : topic
        decoded.pushType = type.isEmpty ? nil : PushType(rawValue: type)
        decoded.collapseID = collapse.isEmpty ? nil : collapse
        size = reader.offset
        return (decoded, size)
    }

    /// Reads the HTTP/2 block; nil on short input.
    private struct ByteCursor {
        let bytes: UnsafeRawBufferPointer
        var offset: Int

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer? {
            guard offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }

        mutating func text(lengthBytes: Int) -> String? {
            let count: Int
            if lengthBytes == 1 {
                guard let length = byte() else { return nil }
                count = Int(length)
            } else {
                guard let raw = bytes(2) else { return nil }
                count = Int(UInt16(littleEndian: raw.loadUnaligned(as: UInt16.self)))
            }
            guard let raw = bytes(count) else { return nil }
            return String(decoding: raw, as: UTF8.self)
        }
    }
}
