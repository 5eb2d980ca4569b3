/// The `apns-id` header: a UUID naming one notification, echoed in its response.
///
/// ```
/// 8-4-4-4-12 hex digits, 36 bytes:   123e4567-e89b-42d3-a456-4266554400a0
///                                    |  high 64 bits   | |  low 64 bits   |
///                                    version nibble ^       ^ variant bits (random IDs)
/// ```
///
/// **Case.** Apple calls the canonical form "32 lowercase hexadecimal digits" in five groups, and
/// this type always *writes* that form. It *reads* either case: Foundation's `uuidString` is
/// uppercase and several clients send it as is, so a server that refused uppercase would be
/// stricter than the clients it must serve. Anything that is not 8-4-4-4-12 hex digits is rejected
/// (a server answers `BadMessageId`).
///
/// The 128 bits are the value: ``init(rawValue:)`` makes deterministic identifiers (a bridge can
/// derive one from a connection and a binary identifier), ``random(using:)`` makes UUIDv4-shaped
/// ones from the caller's generator. Neither needs Foundation.
public struct APNsID: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The UUID's 16 bytes as one big-endian number.
    public var rawValue: UInt128

    /// Wraps 128 bits as they are (no version or variant bits are set).
    public init(rawValue: UInt128) { self.rawValue = rawValue }

    /// The length of the text form.
    public static let textCount = 36

    /// Parses the 8-4-4-4-12 text form, in either case; nil for anything else.
    public init?(_ text: some StringProtocol) {
        var copy = String(text)
        guard let parsed = copy.withUTF8({ APNsID(utf8: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = parsed
    }

    /// Parses the 8-4-4-4-12 text form from UTF-8 bytes (a header value), in either case; nil for
    /// anything else.
    public init?(utf8 text: some Collection<UInt8>) {
        guard let parsed = withContiguousBytes(text, { APNsID(utf8: $0) }) else { return nil }
        self = parsed
    }

    /// Parses the 8-4-4-4-12 text form from UTF-8 bytes in memory (the HTTP/2 session's header
    /// value, read once per notification).
    package init?(utf8 text: UnsafeRawBufferPointer) {
        guard text.count == Self.textCount else { return nil }
        let dash = UInt8(ascii: "-")
        guard text[8] == dash, text[13] == dash, text[18] == dash, text[23] == dash else { return nil }
        // The 32 digits side by side, then eight at a time in a 64-bit word (a response's apns-id
        // is read once per notification).
        var digits = SIMD32<UInt8>()
        var value = SIMD16<UInt8>()
        let valid = withUnsafeMutableBytes(of: &digits) { out in
            let base = text.baseAddress!
            out.baseAddress!.copyMemory(from: base, byteCount: 8)
            (out.baseAddress! + 8).copyMemory(from: base + 9, byteCount: 4)
            (out.baseAddress! + 12).copyMemory(from: base + 14, byteCount: 4)
            (out.baseAddress! + 16).copyMemory(from: base + 19, byteCount: 4)
            (out.baseAddress! + 20).copyMemory(from: base + 24, byteCount: 12)
            return withUnsafeMutableBytes(of: &value) { bytes in
                var valid = true
                for word in 0..<4 {
                    let (decoded, ok) = DeviceToken.decodeHexWord(
                        UInt64(littleEndian: out.loadUnaligned(fromByteOffset: word &* 8, as: UInt64.self)))
                    valid = valid && ok
                    bytes.storeBytes(of: decoded.littleEndian, toByteOffset: word &* 4, as: UInt32.self)
                }
                return valid
            }
        }
        guard valid else { return nil }
        rawValue = withUnsafeBytes(of: value) { UInt128(bigEndian: $0.loadUnaligned(as: UInt128.self)) }
    }

    /// A random version 4 UUID (RFC 9562 §5.4) drawn from `generator`.
    public static func random(using generator: inout some RandomNumberGenerator) -> APNsID {
        var high = generator.next()
        var low = generator.next()
        high = (high & ~0xF000) | 0x4000  // version 4
        low = (low & ~(0xC0 << 56)) | (0x80 << 56)  // variant 10xx
        return APNsID(rawValue: UInt128(high) << 64 | UInt128(low))
    }

    /// Writes the lowercase text form into the first 36 bytes of `output`.
    package func write(into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= Self.textCount, "an apns-id needs \(Self.textCount) bytes")
        let out = output.baseAddress!
        HexPairs.table.withUTF8Buffer { table in
            let pairs = UnsafeRawPointer(table.baseAddress!)
            withUnsafeBytes(of: rawValue.bigEndian) { bytes in
                var at = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: at, as: UInt8.self)
                        at += 1
                    }
                    HexPairs.write(bytes[index], to: out + at, pairs: pairs)
                    at += 2
                }
            }
        }
    }

    /// The lowercase 8-4-4-4-12 form.
    public var description: String {
        String(unsafeUninitializedCapacity: Self.textCount) { buffer in
            write(into: UnsafeMutableRawBufferPointer(buffer))
            return Self.textCount
        }
    }
}
