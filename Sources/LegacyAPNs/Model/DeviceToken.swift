/// A device token: the opaque address APNs gave one app on one device.
///
/// Tokens are 32 bytes in practice. The item-based frame (command 2) allowed up to 100 bytes in
/// the final specification, so a token holds 1...100 bytes; the frame encoder checks the length
/// a given format needs.
///
/// Tokens of up to 32 bytes are stored inline (no heap allocation), so parsing and copying them on
/// a hot path costs nothing but the bytes.
public struct DeviceToken: Hashable, Sendable {
    /// The largest token the item-based frame can carry.
    public static let maximumByteCount = 100
    /// The size every real APNs token has, and the only one commands 0 and 1 carry.
    public static let standardByteCount = 32

    @usableFromInline
    enum Storage: Hashable, Sendable {
        /// 1...32 bytes; unused tail bytes are zero so equality and hashing are plain.
        case compact(SIMD32<UInt8>, count: UInt8)
        /// 33...100 bytes.
        case extended([UInt8])
    }

    @usableFromInline
    var storage: Storage

    /// Creates a token from raw bytes.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidToken`` when there are no bytes or more
    ///   than ``maximumByteCount``.
    public init(bytes: some Collection<UInt8>) throws {
        let count = bytes.count
        guard count > 0 else { throw LegacyAPNsError(.invalidToken, "token is empty") }
        guard count <= Self.maximumByteCount else {
            throw LegacyAPNsError(
                .invalidToken, "token has \(count) bytes, at most \(Self.maximumByteCount) are allowed")
        }
        if count <= 32 {
            var vector = SIMD32<UInt8>()
            var index = 0
            for byte in bytes {
                vector[index] = byte
                index += 1
            }
            storage = .compact(vector, count: UInt8(count))
        } else {
            storage = .extended(Array(bytes))
        }
    }

    /// Creates a token from bytes the caller has already validated (1...100 of them).
    @usableFromInline
    init(validatedBytes bytes: UnsafeRawBufferPointer) {
        if bytes.count <= 32 {
            var vector = SIMD32<UInt8>()
            withUnsafeMutableBytes(of: &vector) { raw in
                raw.copyMemory(from: bytes)
            }
            storage = .compact(vector, count: UInt8(bytes.count))
        } else {
            storage = .extended(Array(bytes))
        }
    }

    /// Parses a token written in hex, as apps log them.
    ///
    /// Case is ignored, and so are spaces and the `<` `>` that `-[NSData description]` put around
    /// tokens on old iOS versions: `<740f4707 bebcf74f ...>` parses.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidToken`` naming the first offending
    ///   character, an odd digit count, or a bad length.
    public init(hexString: some StringProtocol) throws {
        var text = String(hexString)
        self = try text.withUTF8 { try DeviceToken(hexBytes: UnsafeRawBufferPointer($0)) }
    }

    /// Parses hex from UTF-8 bytes with the rules of ``init(hexString:)``, without allocating for
    /// tokens of up to 32 bytes.
    public init(hexBytes text: UnsafeRawBufferPointer) throws {
        var vector = SIMD32<UInt8>()
        var extended: [UInt8] = []
        var count = 0
        var high: UInt8? = nil
        var position = 0
        var index = 0
        while index < text.count {
            let byte = text[index]
            index += 1
            position += 1
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - 55
            case UInt8(ascii: " "), UInt8(ascii: "<"), UInt8(ascii: ">"): continue
            default:
                // Name the whole character, even if it is several UTF-8 bytes.
                var end = index
                while end < text.count, text[end] & 0xC0 == 0x80 { end += 1 }
                let character = String(
                    decoding: UnsafeRawBufferPointer(rebasing: text[(index - 1)..<end]), as: UTF8.self)
                throw LegacyAPNsError(
                    .invalidToken,
                    "token has \(Self.describe(character.unicodeScalars.first ?? "?")) at position \(position), expected hex digits"
                )
            }
            guard let pending = high else {
                high = nibble
                continue
            }
            high = nil
            let value = pending << 4 | nibble
            if count < 32 {
                vector[count] = value
            } else {
                if count == 32 { extended = Swift.withUnsafeBytes(of: vector) { Array($0) } }
                extended.append(value)
            }
            count += 1
        }
        if high != nil {
            throw LegacyAPNsError(.invalidToken, "token has an odd number of hex digits (\(count * 2 + 1))")
        }
        guard count > 0 else { throw LegacyAPNsError(.invalidToken, "token is empty") }
        guard count <= Self.maximumByteCount else {
            throw LegacyAPNsError(
                .invalidToken, "token has \(count) bytes, at most \(Self.maximumByteCount) are allowed")
        }
        storage = count <= 32 ? .compact(vector, count: UInt8(count)) : .extended(extended)
    }

    private static func describe(_ scalar: Unicode.Scalar) -> String {
        if scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F {
            return "U+\(String(scalar.value, radix: 16, uppercase: true))"
        }
        return "'\(scalar)'"
    }

    /// How many bytes the token has.
    @inlinable
    public var count: Int {
        switch storage {
        case .compact(_, let count): Int(count)
        case .extended(let bytes): bytes.count
        }
    }

    /// Calls `body` with the token's bytes. The pointer is valid only inside `body`.
    @inlinable
    public func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        switch storage {
        case .compact(let vector, let count):
            return try Swift.withUnsafeBytes(of: vector) { raw in
                try body(UnsafeRawBufferPointer(rebasing: raw.prefix(Int(count))))
            }
        case .extended(let bytes):
            return try bytes.withUnsafeBytes(body)
        }
    }

    /// The token's bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The token as lowercase hex, the form APNs and the HTTP/2 API use.
    public var hexString: String {
        withUnsafeBytes { raw in
            String(unsafeUninitializedCapacity: raw.count * 2) { output in
                Self.writeHex(raw, into: UnsafeMutableRawBufferPointer(output))
            }
        }
    }

    /// Writes `bytes` as lowercase hex into `output` (which needs `2 * bytes.count` bytes) and
    /// returns how many bytes it wrote.
    @inlinable
    public static func writeHex(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        let digits: StaticString = "0123456789abcdef"
        return digits.withUTF8Buffer { table in
            var index = 0
            for byte in bytes {
                output[index] = table[Int(byte >> 4)]
                output[index + 1] = table[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}

extension DeviceToken: CustomStringConvertible {
    public var description: String { hexString }
}
