extension JSONScanner {
    /// The index just past the JSON value that starts at `start`, found by a scan built for speed
    /// (no recursion, no errors to build, strings crossed eight bytes at a time), or nil when the
    /// value is not valid JSON or nests deeper than ``fastMaximumDepth`` levels.
    ///
    /// It accepts exactly what ``skipValue(_:from:depth:)`` accepts at that depth and returns the
    /// same index; when it returns nil, `skipValue` has the last word (and the words for what is
    /// wrong). It is the common case of checking a payload: valid, shallow, mostly ASCII.
    package static func fastSkipValue(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let end = bytes.count
        var index = start
        // One bit a level, the innermost lowest: 1 for an object, 0 for an array.
        var containers: UInt64 = 0
        var depth = 0
        value: while true {
            guard index < end else { return nil }
            switch base.load(fromByteOffset: index, as: UInt8.self) {
            case UInt8(ascii: "\""):
                guard let next = fastSkipString(base, from: index, end: end) else { return nil }
                index = next
            case UInt8(ascii: "{"):
                guard depth < fastMaximumDepth else { return nil }
                index = fastSkipWhitespace(base, from: index + 1, end: end)
                guard index < end else { return nil }
                if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "}") {
                    index += 1
                } else {
                    depth += 1
                    containers = containers << 1 | 1
                    guard let next = fastSkipKey(base, from: index, end: end) else { return nil }
                    index = next
                    continue value
                }
            case UInt8(ascii: "["):
                guard depth < fastMaximumDepth else { return nil }
                index = fastSkipWhitespace(base, from: index + 1, end: end)
                guard index < end else { return nil }
                if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "]") {
                    index += 1
                } else {
                    depth += 1
                    containers <<= 1
                    continue value
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard let next = fastSkipNumber(base, from: index, end: end) else { return nil }
                index = next
            case UInt8(ascii: "t"):
                guard index + 4 <= end, base.loadUnaligned(fromByteOffset: index, as: UInt32.self) == Literal.true
                else { return nil }
                index += 4
            case UInt8(ascii: "f"):
                guard index + 5 <= end,
                    base.loadUnaligned(fromByteOffset: index + 1, as: UInt32.self) == Literal.alse
                else { return nil }
                index += 5
            case UInt8(ascii: "n"):
                guard index + 4 <= end, base.loadUnaligned(fromByteOffset: index, as: UInt32.self) == Literal.null
                else { return nil }
                index += 4
            default:
                return nil
            }
            // After a value: close what ends here, or go on to the next element.
            while depth > 0 {
                index = fastSkipWhitespace(base, from: index, end: end)
                guard index < end else { return nil }
                let byte = base.load(fromByteOffset: index, as: UInt8.self)
                let inObject = containers & 1 == 1
                if byte == UInt8(ascii: ",") {
                    index = fastSkipWhitespace(base, from: index + 1, end: end)
                    if inObject {
                        guard let next = fastSkipKey(base, from: index, end: end) else { return nil }
                        index = next
                    }
                    continue value
                }
                guard byte == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return nil }
                index += 1
                depth -= 1
                containers >>= 1
            }
            return index
        }
    }

    /// The deepest nesting ``fastSkipValue(_:from:)`` follows (`skipValue` follows more).
    package static let fastMaximumDepth = 64

    /// Four bytes of a literal as a little-endian integer (`false` is checked after its `f`).
    private enum Literal {
        static let `true` = UInt32(littleEndian: 0x6575_7274)
        static let alse = UInt32(littleEndian: 0x6573_6C61)
        static let null = UInt32(littleEndian: 0x6C6C_756E)
    }

    @inline(__always)
    package static func fastSkipWhitespace(_ base: UnsafeRawPointer, from start: Int, end: Int) -> Int {
        var index = start
        while index < end {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            guard byte <= 0x20, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D else { break }
            index += 1
        }
        return index
    }

    /// A member's key at `start` (its quote), white space and the colon: returns where the value
    /// starts, or nil.
    @inline(__always)
    private static func fastSkipKey(_ base: UnsafeRawPointer, from start: Int, end: Int) -> Int? {
        guard start < end, base.load(fromByteOffset: start, as: UInt8.self) == UInt8(ascii: "\""),
            let keyEnd = fastSkipString(base, from: start, end: end)
        else { return nil }
        let colon = fastSkipWhitespace(base, from: keyEnd, end: end)
        guard colon < end, base.load(fromByteOffset: colon, as: UInt8.self) == UInt8(ascii: ":") else { return nil }
        return fastSkipWhitespace(base, from: colon + 1, end: end)
    }

    /// The index just past the string whose quote is at `start`, or nil when it is not a valid
    /// JSON string. Plain ASCII is crossed eight bytes at a time; the first byte that needs a look
    /// (quote, backslash, control character, non-ASCII) is found exactly from the word's mask.
    @inline(__always)
    package static func fastSkipString(_ base: UnsafeRawPointer, from start: Int, end: Int) -> Int? {
        // The common case inline: plain ASCII up to the closing quote. Anything else (an escape,
        // a control character, non-ASCII, the end of the input) is the outlined scan's, from
        // the byte that needs a look.
        var index = start + 1
        while index + 8 <= end {
            let mask = attentionMask(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            if mask != 0 {
                index += mask.trailingZeroBitCount >> 3
                if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "\"") { return index + 1 }
                break
            }
            index += 8
        }
        return fastSkipStringRest(base, at: index, end: end)
    }

    /// The rest of a string from `start`, a byte inside it (after the opening quote): what
    /// ``fastSkipString(_:from:end:)`` does past its inline common case.
    @inline(never)
    private static func fastSkipStringRest(_ base: UnsafeRawPointer, at start: Int, end: Int) -> Int? {
        var index = start
        while true {
            while index + 8 <= end {
                let mask = attentionMask(
                    UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                if mask != 0 {
                    index += mask.trailingZeroBitCount >> 3
                    break
                }
                index += 8
            }
            guard index < end else { return nil }
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            switch byte {
            case UInt8(ascii: "\""):
                return index + 1
            case UInt8(ascii: "\\"):
                guard index + 1 < end else { return nil }
                switch base.load(fromByteOffset: index + 1, as: UInt8.self) {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard index + 6 <= end else { return nil }
                    for offset in 2..<6 where hexValue(base.load(fromByteOffset: index + offset, as: UInt8.self)) == nil
                    {
                        return nil
                    }
                    index += 6
                default:
                    return nil
                }
            case 0x00..<0x20:
                return nil
            case 0x20..<0x80:
                index += 1
            default:
                guard let next = fastSkipUTF8Sequence(base, at: index, end: end) else { return nil }
                index = next
            }
        }
    }

    /// The high bit of every byte of `word` (its first byte lowest) that is a quote, a backslash, a control
    /// character or non-ASCII, and perhaps of some bytes after the first such byte: the lowest set
    /// bit is always exact, which is all a scan needs. (The "has zero byte" and "has byte less than
    /// n" tricks: a borrow only ever marks bytes above a true match.)
    @inline(__always)
    static func attentionMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let hasControl = (word &- ones &* 0x20) & ~word
        return matchMask(word, 0x22) | matchMask(word, 0x5C) | (hasControl | word) & 0x8080_8080_8080_8080
    }

    /// The high bit of every byte of `word` (its first byte lowest) that is not an ASCII digit,
    /// and perhaps of some bytes after the first such byte: the lowest set bit is exact. Below
    /// `0`: the "has byte less than n" borrow trick (which marks only bytes above a true match);
    /// above `9`: adding 0x46 to the low seven bits carries into the high bit exactly from 0x3A
    /// on, never into the next byte; non-ASCII: the high bit itself.
    @inline(__always)
    static func nonDigitMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below0 = (word &- ones &* 0x30) & ~word & highs
        let above9 = ((word & ~highs) &+ ones &* (0x80 - 0x3A)) & highs
        return below0 | above9 | word & highs
    }

    /// One multi-byte UTF-8 sequence with the rules of `skipUTF8Sequence` (no overlongs, no
    /// surrogates, at most U+10FFFF), or nil.
    @inline(__always)
    private static func fastSkipUTF8Sequence(_ base: UnsafeRawPointer, at index: Int, end: Int) -> Int? {
        let lead = base.load(fromByteOffset: index, as: UInt8.self)
        guard let (length, lower, upper) = utf8SequenceShape(lead: lead), index + length <= end else { return nil }
        let second = base.load(fromByteOffset: index + 1, as: UInt8.self)
        guard second >= lower, second <= upper else { return nil }
        for offset in 2..<length where base.load(fromByteOffset: index + offset, as: UInt8.self) & 0xC0 != 0x80 {
            return nil
        }
        return index + length
    }

    /// The index just past the number at `start` (`-`? then `0` or `1-9` digits, then an optional
    /// fraction and exponent, as `skipNumber` reads it), or nil.
    @inline(__always)
    private static func fastSkipNumber(_ base: UnsafeRawPointer, from start: Int, end: Int) -> Int? {
        @inline(__always) func isDigit(_ index: Int) -> Bool {
            index < end && base.load(fromByteOffset: index, as: UInt8.self) &- UInt8(ascii: "0") < 10
        }
        // A run of digits, eight at a time while eight bytes are left.
        @inline(__always) func skipDigits(_ start: Int) -> Int {
            var index = start
            while index + 8 <= end {
                let mask = nonDigitMask(
                    UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                if mask != 0 { return index + mask.trailingZeroBitCount >> 3 }
                index += 8
            }
            while isDigit(index) { index += 1 }
            return index
        }
        var index = start
        if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else { return nil }
        if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "0") {
            index += 1
        } else {
            index = skipDigits(index + 1)
        }
        if index < end, base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { return nil }
            index = skipDigits(index + 1)
        }
        if index < end, base.load(fromByteOffset: index, as: UInt8.self) | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < end {
                let sign = base.load(fromByteOffset: index, as: UInt8.self)
                if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
            }
            guard isDigit(index) else { return nil }
            while isDigit(index) { index += 1 }
        }
        return index
    }
}
