extension NotificationLineParser {
    /// The fields of a line in the common shape, read by a fast scan: an object whose members are
    /// `token` (64 plain hex digits), `payload` (an object) and any of `id`, `expiry` and
    /// `priority` (plain numbers), in any order, with any white space. The payload is checked by
    /// ``JSONScanner/fastSkipValue(_:from:)`` and the token decoded sixteen digits at a time.
    ///
    /// Anything else (a blank line, other keys, a repeated key, `null`, a payload given as a
    /// string, escapes in keys or the token, a number out of range, invalid JSON) returns nil, and
    /// the full parser decides: it reads the line or says what is wrong with it. Wherever this
    /// returns fields, they are the ones the full parser reads from the line.
    package func fastFields(_ line: UnsafeRawBufferPointer) -> FastFields? {
        guard let base = line.baseAddress else { return nil }
        let end = line.count
        var index: Int
        var seen: UInt8 = 0
        var token: DeviceToken?
        var payload: Range<Int>?
        var identifier: UInt32?
        var expiration: Expiration?
        var priority: Priority?
        // The value the compact start ends with, read before the loop (nil: none was).
        var valueRead: Int?
        if let start = Self.compactStart(base, end: end) {
            // `{"token":"<64 digits>","payload":{`, the start of a compact line in the usual order:
            // read at once, as the loop below would read it member by member.
            guard let decoded = DeviceToken(plainHex64: base + start.token),
                let objectEnd = JSONScanner.fastSkipValue(line, from: start.payload)
            else { return nil }
            token = decoded
            payload = start.payload..<objectEnd
            seen = FastKey.token.rawValue | FastKey.payload.rawValue
            valueRead = objectEnd
            index = objectEnd
        } else {
            index = JSONScanner.fastSkipWhitespace(base, from: 0, end: end)
            guard index < end, base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "{") else {
                return nil
            }
            index = JSONScanner.fastSkipWhitespace(base, from: index + 1, end: end)
        }
        while true {
            let valueEnd: Int
            if let read = valueRead {
                valueEnd = read
                valueRead = nil
            } else {
                guard let (key, valueStart) = Self.fastKey(base, at: index, end: end), seen & key.rawValue == 0 else {
                    return nil
                }
                seen |= key.rawValue
                switch key {
                case .token:
                    // A quote, 64 hex digits, a quote.
                    guard valueStart + 66 <= end,
                        base.load(fromByteOffset: valueStart, as: UInt8.self) == UInt8(ascii: "\""),
                        base.load(fromByteOffset: valueStart + 65, as: UInt8.self) == UInt8(ascii: "\""),
                        let decoded = DeviceToken(plainHex64: base + valueStart + 1)
                    else { return nil }
                    token = decoded
                    valueEnd = valueStart + 66
                case .payload:
                    guard valueStart < end,
                        base.load(fromByteOffset: valueStart, as: UInt8.self) == UInt8(ascii: "{"),
                        let objectEnd = JSONScanner.fastSkipValue(line, from: valueStart)
                    else { return nil }
                    payload = valueStart..<objectEnd
                    valueEnd = objectEnd
                case .id, .expiry:
                    guard
                        let (value, numberEnd) = Self.fastUnsigned(
                            base, at: valueStart, end: end, maximum: 0xFFFF_FFFF)
                    else { return nil }
                    if key == .id {
                        identifier = UInt32(value)
                    } else {
                        expiration = Expiration(rawValue: UInt32(value))
                    }
                    valueEnd = numberEnd
                case .priority:
                    guard let (value, numberEnd) = Self.fastUnsigned(base, at: valueStart, end: end, maximum: 255),
                        value == 10 || value == 5 || (value == 1 && dialect == .http2)
                    else { return nil }
                    priority = Priority(rawValue: UInt8(value))
                    valueEnd = numberEnd
                }
            }
            index = JSONScanner.fastSkipWhitespace(base, from: valueEnd, end: end)
            guard index < end else { return nil }
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            index = JSONScanner.fastSkipWhitespace(base, from: index + 1, end: end)
            if byte == UInt8(ascii: "}") { break }
            guard byte == UInt8(ascii: ",") else { return nil }
        }
        guard index == end, let token, let payload else { return nil }
        return FastFields(
            token: token, payload: payload, identifier: identifier, expiration: expiration, priority: priority)
    }

    /// Where the token's digits and the payload start in a line that begins
    /// `{"token":"<64 bytes>","payload":{` (no white space, this order), or nil for any other
    /// line: recognised by comparing words, without reading the keys one by one.
    @inline(__always)
    private static func compactStart(_ base: UnsafeRawPointer, end: Int) -> (token: Int, payload: Int)? {
        // 10 bytes, the digits, 12 bytes, the payload's brace (and at least its closing one).
        guard end >= 10 + 64 + 12 + 2,
            UInt64(littleEndian: base.loadUnaligned(as: UInt64.self)) == CompactWord.openToken,
            UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt16.self)) == CompactWord.colonQuote,
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 74, as: UInt64.self)) == CompactWord.quotePayload,
            UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 82, as: UInt32.self)) == CompactWord.payloadColon,
            base.load(fromByteOffset: 86, as: UInt8.self) == UInt8(ascii: "{")
        else { return nil }
        return (10, 86)
    }

    /// The fixed parts of a compact line's start, as the little-endian words they load as (the
    /// first byte lowest).
    enum CompactWord {
        /// `{"token"`
        static let openToken: UInt64 = 0x226E_656B_6F74_227B
        /// `:"`
        static let colonQuote: UInt16 = 0x223A
        /// `","paylo`
        static let quotePayload: UInt64 = 0x6F6C_7961_7022_2C22
        /// `ad":`
        static let payloadColon: UInt32 = 0x3A22_6461
    }

    /// What ``fastFields(_:)`` reads from a line.
    package struct FastFields {
        /// The device token.
        package var token: DeviceToken
        /// Where the payload object is in the line.
        package var payload: Range<Int>
        /// The line's `id`, if any.
        package var identifier: UInt32?
        /// The line's `expiry`, if any.
        package var expiration: Expiration?
        /// The line's `priority`, if any.
        package var priority: Priority?
    }

    /// The keys of the common shape, one bit each.
    private enum FastKey: UInt8 {
        case token = 1
        case payload = 2
        case id = 4
        case expiry = 8
        case priority = 16
    }

    /// The key whose quote is at `start` and where its value starts (after the colon and white
    /// space), or nil for anything but the five plain keys.
    @inline(__always)
    private static func fastKey(_ base: UnsafeRawPointer, at start: Int, end: Int) -> (FastKey, Int)? {
        // The longest key has eight characters: one word holds any key, and its closing quote is
        // the first byte that needs attention (or, for an eight-letter key, the byte after it).
        guard start < end, base.load(fromByteOffset: start, as: UInt8.self) == UInt8(ascii: "\"") else {
            return nil
        }
        var word: UInt64
        if start + 9 <= end {
            word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: start + 1, as: UInt64.self))
        } else {
            // Near the end of the line (`"id":7}`): the bytes there are, then zeros, which the
            // mask marks as control characters, so the key never runs past the line.
            word = 0
            for offset in 0..<(end - start - 1) {
                word |= UInt64(base.load(fromByteOffset: start + 1 + offset, as: UInt8.self)) << (offset * 8)
            }
        }
        let mask = JSONScanner.attentionMask(word)
        let length = mask == 0 ? 8 : mask.trailingZeroBitCount >> 3
        guard start + 1 + length < end,
            base.load(fromByteOffset: start + 1 + length, as: UInt8.self) == UInt8(ascii: "\"")
        else { return nil }
        let name = length == 8 ? word : word & ((1 << (length * 8)) - 1)
        let key: FastKey
        switch (length, name) {
        case (5, KeyWord.token): key = .token
        case (7, KeyWord.payload): key = .payload
        case (2, KeyWord.id): key = .id
        case (6, KeyWord.expiry): key = .expiry
        case (8, KeyWord.priority): key = .priority
        default: return nil
        }
        let colon = JSONScanner.fastSkipWhitespace(base, from: start + 2 + length, end: end)
        guard colon < end, base.load(fromByteOffset: colon, as: UInt8.self) == UInt8(ascii: ":") else { return nil }
        return (key, JSONScanner.fastSkipWhitespace(base, from: colon + 1, end: end))
    }

    /// The keys' letters as little-endian words, the first letter lowest.
    enum KeyWord {
        static let token: UInt64 = 0x6E_65_6B_6F_74
        static let payload: UInt64 = 0x64_61_6F_6C_79_61_70
        static let id: UInt64 = 0x64_69
        static let expiry: UInt64 = 0x79_72_69_70_78_65
        static let priority: UInt64 = 0x79_74_69_72_6F_69_72_70
    }

    /// A plain non-negative integer of at most `maximum` at `start` and the index after it, or nil
    /// for anything the full parser should judge: `null`, a sign, a leading zero, a fraction, an
    /// exponent, too large a value.
    @inline(__always)
    private static func fastUnsigned(_ base: UnsafeRawPointer, at start: Int, end: Int, maximum: UInt64) -> (
        UInt64, Int
    )? {
        var index = start
        var value: UInt64 = 0
        while index < end {
            let digit = base.load(fromByteOffset: index, as: UInt8.self) &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            // A leading zero is a number of its own in JSON: "01" is not one.
            if index > start, value == 0 { return nil }
            value = value &* 10 &+ UInt64(digit)
            guard value <= maximum else { return nil }
            index += 1
        }
        guard index > start, index < end else { return nil }
        let next = base.load(fromByteOffset: index, as: UInt8.self)
        guard next != UInt8(ascii: "."), next | 0x20 != UInt8(ascii: "e") else { return nil }
        return (value, index)
    }
}
