/// Base64url without padding (RFC 4648 §5, as JWS uses it: RFC 7515 §2), for provider tokens.
///
/// The alphabet is `A-Z a-z 0-9 - _`; no `=` padding is written. Decoding is strict: padding,
/// any character outside the alphabet (including `+`, `/`, white space and line breaks), a length
/// that no encoding can have (4n + 1) and non-zero leftover bits in the last character (a
/// non-canonical encoding, RFC 4648 §3.5) are all rejected, each with its own ``Failure``.
///
/// ```
/// bytes          encoded
/// 66 6f 6f       Zm9v
/// 66 6f          Zm8        (not Zm8=)
/// fb ff          -_8        (base64 would say +/8=)
/// ```
package enum Base64URL {
    /// Why some text is not base64url.
    package enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// A `=` at this offset: JWS base64url has no padding.
        case padding(offset: Int)
        /// A byte outside the base64url alphabet at this offset.
        case invalidCharacter(UInt8, offset: Int)
        /// A length of 4n + 1 characters, which no byte string encodes to.
        case impossibleLength(Int)
        /// The last character carries bits that are not zero: the bytes have another, canonical
        /// encoding, and accepting both would make two texts mean one token.
        case nonCanonical

        /// The problem in words, e.g. "'=' padding at offset 4 (base64url here has no padding)".
        package var description: String {
            switch self {
            case .padding(let offset): "'=' padding at offset \(offset) (base64url here has no padding)"
            case .invalidCharacter(let byte, let offset):
                "\(Base64URL.describe(byte)) at offset \(offset) is not a base64url character (A-Z a-z 0-9 - _)"
            case .impossibleLength(let count): "\(count) characters is not a possible base64url length"
            case .nonCanonical: "the last character has unused bits set (not the canonical encoding)"
            }
        }
    }

    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// The number of characters `byteCount` bytes encode to.
    package static func encodedCount(_ byteCount: Int) -> Int {
        let remainder = byteCount % 3
        return byteCount / 3 * 4 + (remainder == 0 ? 0 : remainder + 1)
    }

    /// Appends the base64url encoding of `bytes` to `output` (ASCII bytes, no padding).
    package static func encode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        output.reserveCapacity(output.count + encodedCount(bytes.count))
        alphabet.withUTF8Buffer { digits in
            var index = 0
            while index + 3 <= bytes.count {
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output.append(digits[Int(group >> 18)])
                output.append(digits[Int(group >> 12 & 0x3F)])
                output.append(digits[Int(group >> 6 & 0x3F)])
                output.append(digits[Int(group & 0x3F)])
                index += 3
            }
            switch bytes.count - index {
            case 1:
                let group = UInt32(bytes[index]) << 16
                output.append(digits[Int(group >> 18)])
                output.append(digits[Int(group >> 12 & 0x3F)])
            case 2:
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                output.append(digits[Int(group >> 18)])
                output.append(digits[Int(group >> 12 & 0x3F)])
                output.append(digits[Int(group >> 6 & 0x3F)])
            default:
                break
            }
        }
    }

    /// Appends the base64url encoding of `bytes` to `output`.
    package static func encode(_ bytes: [UInt8], into output: inout [UInt8]) {
        bytes.withUnsafeBytes { encode($0, into: &output) }
    }

    /// The base64url encoding of `bytes`, without padding.
    package static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        encode(bytes, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base64url text (ASCII bytes), strictly.
    ///
    /// - Throws: ``Failure`` for padding, a character outside the alphabet, a 4n + 1 length or
    ///   non-zero unused bits; offsets count from the start of `text`.
    package static func decode(_ text: UnsafeRawBufferPointer) throws(Failure) -> [UInt8] {
        if text.count % 4 == 1 {
            // Report a bad character before the length: it is the likelier mistake.
            for index in 0..<text.count where value(of: text[index]) == nil {
                throw failure(text[index], at: index)
            }
            throw .impossibleLength(text.count)
        }
        var output: [UInt8] = []
        output.reserveCapacity(text.count / 4 * 3 + 2)
        var group: UInt32 = 0
        var pending = 0
        for index in 0..<text.count {
            guard let digit = value(of: text[index]) else { throw failure(text[index], at: index) }
            group = group << 6 | UInt32(digit)
            pending += 1
            if pending == 4 {
                output.append(UInt8(truncatingIfNeeded: group >> 16))
                output.append(UInt8(truncatingIfNeeded: group >> 8))
                output.append(UInt8(truncatingIfNeeded: group))
                group = 0
                pending = 0
            }
        }
        switch pending {
        case 2:
            // 12 bits: one byte and 4 unused bits.
            guard group & 0xF == 0 else { throw .nonCanonical }
            output.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            // 18 bits: two bytes and 2 unused bits.
            guard group & 0x3 == 0 else { throw .nonCanonical }
            output.append(UInt8(truncatingIfNeeded: group >> 10))
            output.append(UInt8(truncatingIfNeeded: group >> 2))
        default:
            break
        }
        return output
    }

    /// Decodes base64url text, strictly (see ``decode(_:)-(UnsafeRawBufferPointer)``).
    package static func decode(_ text: String) throws(Failure) -> [UInt8] {
        var text = text
        // withUTF8 rethrows untyped errors, so the typed failure travels out in a Result.
        return try text.withUTF8 { utf8 in Result { () throws(Failure) in try decode(UnsafeRawBufferPointer(utf8)) } }
            .get()
    }

    @inline(__always)
    private static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    private static func failure(_ byte: UInt8, at offset: Int) -> Failure {
        byte == UInt8(ascii: "=") ? .padding(offset: offset) : .invalidCharacter(byte, offset: offset)
    }

    private static func describe(_ byte: UInt8) -> String {
        byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte \(JSONScanner.hexByte(byte))"
    }
}
