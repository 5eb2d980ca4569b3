import APNsCore

/// Hex text as the annotated fixtures write it (`Fixtures/frames/*.hex`) and `frame encode --hex`
/// prints it: pairs of hex digits, white space anywhere, and `#` starting a comment that runs to
/// the end of the line.
///
/// ```
/// # enhanced-basic: command 1, identifier 1234, expiry 0
/// 01                  # command 1: enhanced
/// 00 00 04 d2         # identifier: 1234
/// ```
public enum HexText {
    /// The bytes the text spells.
    ///
    /// - Throws: ``LegacyAPNsError`` (`.malformedInput`) naming the line of a character that is not a hex digit, and an odd
    ///   number of digits.
    public static func decode(_ text: [UInt8], name: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 3)
        var high: UInt8?
        var line = 1
        var inComment = false
        for character in text {
            if character == 0x0A {
                line += 1
                inComment = false
                continue
            }
            if inComment { continue }
            switch character {
            case UInt8(ascii: "#"):
                inComment = true
            case 0x20, 0x09, 0x0D, 0x0B, 0x0C:
                continue
            default:
                guard let nibble = nibble(character) else {
                    let shown =
                        character >= 0x21 && character < 0x7F
                        ? "'\(Character(Unicode.Scalar(character)))'" : "byte 0x\(String(character, radix: 16))"
                    throw LegacyAPNsError(
                        .malformedInput,
                        "\(name) line \(line): \(shown) is not a hex digit (--hex reads hex pairs, # comments and "
                            + "white space)")
                }
                if let pending = high {
                    bytes.append(pending << 4 | nibble)
                    high = nil
                } else {
                    high = nibble
                }
            }
        }
        if high != nil {
            throw LegacyAPNsError(.malformedInput, "\(name) ends with half a byte: an odd number of hex digits")
        }
        return bytes
    }

    /// `bytes` as lowercase hex pairs, `perLine` a line, each line ending in a newline.
    public static func encode(_ bytes: [UInt8], perLine: Int = 16) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 3 + bytes.count / perLine + 1)
        for (index, byte) in bytes.enumerated() {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
            out.append(index % perLine == perLine - 1 || index == bytes.count - 1 ? "\n" : " ")
        }
        return out
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
