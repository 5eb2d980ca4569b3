import LegacyAPNs

/// One checked notification as `send --input` keeps it between the check and the send, so that
/// what is sent is exactly what was checked and no JSON is parsed twice.
///
/// ```
/// offset 0       1              2                   4                8            12          13
///        +-------+--------------+-------------------+----------------+------------+-----------+-------+---------+
///        | flags | token length | payload length (2)| identifier (4) | expiry (4) | priority  | token | payload |
///        +-------+--------------+-------------------+----------------+------------+-----------+-------+---------+
/// ```
/// Integers are **little-endian** (the record never leaves this process, and little-endian is
/// what the machines it runs on store, so encoding is a plain copy). Flags: bit 0 set when the
/// expiry is present, bit 1 when the priority is, bit 2 when the line gave an `id` (without one the
/// notification's identifier stays nil, and reports name it by its line number).
struct SpoolRecord {
    /// Bytes before the token.
    static let headerSize = 13

    private enum Flag {
        static let hasExpiry: UInt8 = 1
        static let hasPriority: UInt8 = 2
        static let hasIdentifier: UInt8 = 4
    }

    /// The size of the record of a notification with these token and payload sizes.
    static func size(tokenCount: Int, payloadCount: Int) -> Int { headerSize + tokenCount + payloadCount }

    /// Appends the record of a checked line to `bytes`.
    static func encode(_ line: NotificationLineParser.ParsedLine, into bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: headerSize))
        bytes.withUnsafeMutableBytes { raw in
            let header = UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + headerSize)])
            header[0] =
                (line.expiration != nil ? Flag.hasExpiry : 0) | (line.priority != nil ? Flag.hasPriority : 0)
                | (line.givenIdentifier != nil ? Flag.hasIdentifier : 0)
            header[1] = UInt8(line.token.count)
            header.storeBytes(of: UInt16(line.payload.count).littleEndian, toByteOffset: 2, as: UInt16.self)
            header.storeBytes(of: (line.givenIdentifier ?? 0).littleEndian, toByteOffset: 4, as: UInt32.self)
            header.storeBytes(of: (line.expiration?.rawValue ?? 0).littleEndian, toByteOffset: 8, as: UInt32.self)
            header[12] = line.priority?.rawValue ?? 0
        }
        line.token.withUnsafeBytes { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: line.payload)
    }

    /// The record at the start of `bytes` and its size, or nil when `bytes` holds less than a
    /// whole record.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> (PushNotification, size: Int)? {
        guard bytes.count >= headerSize else { return nil }
        let flags = bytes[0]
        let tokenCount = Int(bytes[1])
        let payloadCount = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
        let size = size(tokenCount: tokenCount, payloadCount: payloadCount)
        guard bytes.count >= size else { return nil }
        let tokenStart = headerSize
        let payloadStart = tokenStart + tokenCount
        let notification = PushNotification(
            token: DeviceToken(validatedBytes: UnsafeRawBufferPointer(rebasing: bytes[tokenStart..<payloadStart])),
            payload: Payload(unvalidatedBytes: Array(bytes[payloadStart..<size])),
            identifier: flags & Flag.hasIdentifier != 0
                ? UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) : nil,
            expiration: flags & Flag.hasExpiry != 0
                ? Expiration(rawValue: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
                : nil,
            priority: flags & Flag.hasPriority != 0 ? Priority(rawValue: bytes[12]) : nil)
        return (notification, size)
    }
}
