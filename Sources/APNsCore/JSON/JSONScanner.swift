/// A strict (RFC 8259) JSON validator and string decoder that works on raw UTF-8 bytes.
///
/// It never builds an object graph: it only finds where values start and end, checks every byte on
/// the way, and decodes the strings the caller asks for. That is what payload validation and the
/// JSON Lines reader need, at a fraction of the cost of `JSONSerialization`. Nesting is limited to
/// ``maximumDepth`` so hostile input cannot exhaust the stack.
package enum JSONScanner {
    /// Deeper nesting than this is rejected.
    package static let maximumDepth = 256

    /// A position in the input and what is wrong there.
    package struct Failure: Error, Hashable, Sendable {
        /// Byte offset into the scanned buffer.
        package var offset: Int
        package var message: String
    }

    /// Checks that `bytes` hold exactly one JSON value, optionally surrounded by white space.
    package static func validateDocument(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        var index = skipWhitespace(bytes, from: 0)
        guard index < bytes.count else { throw Failure(offset: index, message: "no JSON value") }
        index = try skipValue(bytes, from: index, depth: 0)
        index = skipWhitespace(bytes, from: index)
        if index < bytes.count {
            throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)) after the JSON value")
        }
    }

    @inline(__always)
    package static func skipWhitespace(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return index
            }
        }
        return index
    }

    /// Returns the index just past the value that starts at `start` (which must not be white space).
    package static func skipValue(_ bytes: UnsafeRawBufferPointer, from start: Int, depth: Int) throws(Failure) -> Int {
        guard start < bytes.count else { throw Failure(offset: start, message: "unexpected end of JSON") }
        switch bytes[start] {
        case UInt8(ascii: "{"): return try skipObject(bytes, from: start, depth: depth + 1)
        case UInt8(ascii: "["): return try skipArray(bytes, from: start, depth: depth + 1)
        case UInt8(ascii: "\""): return try skipString(bytes, from: start)
        case UInt8(ascii: "t"): return try skipLiteral("true", bytes, from: start)
        case UInt8(ascii: "f"): return try skipLiteral("false", bytes, from: start)
        case UInt8(ascii: "n"): return try skipLiteral("null", bytes, from: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try skipNumber(bytes, from: start)
        default:
            throw Failure(offset: start, message: "unexpected \(describe(bytes, at: start)), expected a JSON value")
        }
    }

    private static func skipObject(_ bytes: UnsafeRawBufferPointer, from start: Int, depth: Int) throws(Failure) -> Int
    {
        guard depth <= maximumDepth else {
            throw Failure(offset: start, message: "JSON nested deeper than \(maximumDepth) levels")
        }
        var index = skipWhitespace(bytes, from: start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return index + 1 }
        while true {
            guard index < bytes.count else {
                throw Failure(offset: index, message: "unexpected end of JSON in an object")
            }
            guard bytes[index] == UInt8(ascii: "\"") else {
                throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)), expected a string key")
            }
            index = try skipString(bytes, from: index)
            index = skipWhitespace(bytes, from: index)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)), expected ':'")
            }
            index = skipWhitespace(bytes, from: index + 1)
            index = try skipValue(bytes, from: index, depth: depth)
            index = skipWhitespace(bytes, from: index)
            guard index < bytes.count else {
                throw Failure(offset: index, message: "unexpected end of JSON in an object")
            }
            switch bytes[index] {
            case UInt8(ascii: ","): index = skipWhitespace(bytes, from: index + 1)
            case UInt8(ascii: "}"): return index + 1
            default:
                throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)), expected ',' or '}'")
            }
        }
    }

    private static func skipArray(_ bytes: UnsafeRawBufferPointer, from start: Int, depth: Int) throws(Failure) -> Int {
        guard depth <= maximumDepth else {
            throw Failure(offset: start, message: "JSON nested deeper than \(maximumDepth) levels")
        }
        var index = skipWhitespace(bytes, from: start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return index + 1 }
        while true {
            index = try skipValue(bytes, from: index, depth: depth)
            index = skipWhitespace(bytes, from: index)
            guard index < bytes.count else {
                throw Failure(offset: index, message: "unexpected end of JSON in an array")
            }
            switch bytes[index] {
            case UInt8(ascii: ","): index = skipWhitespace(bytes, from: index + 1)
            case UInt8(ascii: "]"): return index + 1
            default:
                throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)), expected ',' or ']'")
            }
        }
    }

    private static func skipLiteral(_ literal: StaticString, _ bytes: UnsafeRawBufferPointer, from start: Int)
        throws(Failure) -> Int
    {
        let count = literal.utf8CodeUnitCount
        let matches = literal.withUTF8Buffer { expected in
            guard start + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[start + offset] != expected[offset] { return false }
            return true
        }
        guard matches else { throw Failure(offset: start, message: "invalid literal, expected '\(literal)'") }
        return start + count
    }

    private static func skipNumber(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        var index = start
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw Failure(offset: index, message: "invalid number: expected a digit")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw Failure(offset: index, message: "invalid number: expected a digit after '.'")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw Failure(offset: index, message: "invalid number: expected a digit in the exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return index
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    /// Returns the index just past the string that starts (with its quote) at `start`, checking
    /// escapes and UTF-8 on the way. Plain ASCII runs are skipped eight bytes at a time.
    package static func skipString(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        var index = start + 1
        while true {
            while index + 8 <= bytes.count,
                !needsAttention(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            {
                index += 8
            }
            guard index < bytes.count else { break }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                return index + 1
            case UInt8(ascii: "\\"):
                index = try skipEscape(bytes, at: index)
            case 0x00..<0x20:
                throw Failure(offset: index, message: "control character \(hexByte(byte)) in a string must be escaped")
            case 0x20..<0x80:
                index += 1
            default:
                index = try skipUTF8Sequence(bytes, at: index)
            }
        }
        throw Failure(offset: index, message: "unterminated string")
    }

    /// Whether any of 8 bytes is a quote, a backslash, a control character or non-ASCII (SWAR:
    /// the classic "has zero byte" and "has byte less than n" tricks on a 64-bit word).
    @inline(__always)
    static func needsAttention(_ word: UInt64) -> Bool { attentionMask(word) != 0 }

    /// The high bit of bytes of `word` equal to `byte` (and perhaps of some after the first one;
    /// any set bit means a match somewhere): the "has zero byte" trick on `word ^ byte...`.
    @inline(__always)
    package static func matchMask(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let difference = word ^ (ones &* UInt64(byte))
        return (difference &- ones) & ~difference & 0x8080_8080_8080_8080
    }

    private static func skipEscape(_ bytes: UnsafeRawBufferPointer, at index: Int) throws(Failure) -> Int {
        guard index + 1 < bytes.count else { throw Failure(offset: index, message: "unterminated string") }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return index + 2
        case UInt8(ascii: "u"):
            guard index + 6 <= bytes.count else { throw Failure(offset: index, message: "truncated \\u escape") }
            for offset in 2..<6 where hexValue(bytes[index + offset]) == nil {
                throw Failure(offset: index + offset, message: "invalid \\u escape: expected 4 hex digits")
            }
            return index + 6
        default:
            throw Failure(offset: index + 1, message: "invalid escape '\\\(describe(bytes, at: index + 1))'")
        }
    }

    /// Whether `bytes` are well-formed UTF-8.
    package static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < bytes.count {
            if bytes[index] < 0x80 {
                index += 1
                continue
            }
            guard let next = try? skipUTF8Sequence(bytes, at: index) else { return false }
            index = next
        }
        return true
    }

    /// A multi-byte UTF-8 sequence's length and the range its second byte must fall in (which
    /// rules out overlongs, surrogates and code points above U+10FFFF), by its lead byte; nil for
    /// a byte that cannot lead one. Shared by both scanners.
    @inline(__always)
    static func utf8SequenceShape(lead: UInt8) -> (length: Int, lower: UInt8, upper: UInt8)? {
        switch lead {
        case 0xC2...0xDF: (2, 0x80, 0xBF)
        case 0xE0: (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (3, 0x80, 0xBF)
        case 0xED: (3, 0x80, 0x9F)
        case 0xF0: (4, 0x90, 0xBF)
        case 0xF1...0xF3: (4, 0x80, 0xBF)
        case 0xF4: (4, 0x80, 0x8F)
        default: nil
        }
    }

    /// Validates one multi-byte UTF-8 sequence (no overlongs, no surrogates, at most U+10FFFF).
    private static func skipUTF8Sequence(_ bytes: UnsafeRawBufferPointer, at index: Int) throws(Failure) -> Int {
        let lead = bytes[index]
        guard let (length, lower, upper) = utf8SequenceShape(lead: lead) else {
            throw Failure(offset: index, message: "invalid UTF-8 byte \(hexByte(lead))")
        }
        guard index + length <= bytes.count else { throw Failure(offset: index, message: "truncated UTF-8 sequence") }
        let second = bytes[index + 1]
        guard second >= lower, second <= upper else {
            throw Failure(offset: index + 1, message: "invalid UTF-8 byte \(hexByte(second))")
        }
        for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 {
            throw Failure(offset: index + offset, message: "invalid UTF-8 byte \(hexByte(bytes[index + offset]))")
        }
        return index + length
    }

    @inline(__always)
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Decodes the (already validated) string whose opening quote is at `start` and whose closing
    /// quote is at `end - 1`, appending its UTF-8 bytes to `output`. Runs without escapes are
    /// copied in one piece.
    package static func decodeString(
        _ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, into output: inout [UInt8]
    ) {
        var index = start + 1
        let stop = end - 1
        while index < stop {
            var run = index
            while run < stop, bytes[run] != UInt8(ascii: "\\") { run += 1 }
            if run > index {
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<run]))
                index = run
                continue
            }
            let escaped = bytes[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = readHex4(bytes, at: index)
                index += 4
                if (0xD800..<0xDC00).contains(scalar), index + 6 <= stop, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                {
                    let low = readHex4(bytes, at: index + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    }
                }
                // A lone surrogate cannot be UTF-8: it becomes U+FFFD, as Foundation does.
                let value = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                output.append(contentsOf: UTF8.encode(value)!)
            default: output.append(escaped)
            }
        }
    }

    /// Whether the string between `start` (its quote) and `end` has no escapes, so its bytes can be
    /// used as they are.
    package static func isPlainString(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Bool {
        var index = start + 1
        while index < end - 1 {
            if bytes[index] == UInt8(ascii: "\\") { return false }
            index += 1
        }
        return true
    }

    private static func readHex4(_ bytes: UnsafeRawBufferPointer, at index: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 { value = value << 4 | UInt32(hexValue(bytes[index + offset]) ?? 0) }
        return value
    }

    package static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }

    package static func describe(_ bytes: UnsafeRawBufferPointer, at index: Int) -> String {
        guard index < bytes.count else { return "end of input" }
        let byte = bytes[index]
        if byte >= 0x21, byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte \(hexByte(byte))"
    }
}
