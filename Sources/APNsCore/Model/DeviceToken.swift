internal import CHexDecode

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

    /// Hashes the bytes in one go. The synthesized hash went through `SIMD32`'s, which feeds the
    /// hasher one byte at a time (32 calls per token, on every dictionary lookup of a token).
    @inlinable
    public func hash(into hasher: inout Hasher) {
        switch storage {
        case .compact(let vector, let count):
            hasher.combine(count)
            Swift.withUnsafeBytes(of: vector) { hasher.combine(bytes: $0) }
        case .extended(let bytes):
            hasher.combine(UInt8(truncatingIfNeeded: bytes.count))
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// Creates a token from raw bytes.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidToken`` when there are no bytes or more
    ///   than ``maximumByteCount``.
    public init(bytes: some Collection<UInt8>) throws {
        let count = bytes.count
        guard count > 0 else {
            throw LegacyAPNsError(.invalidToken, "token is empty, expected \(Self.standardByteCount) bytes")
        }
        guard count <= Self.maximumByteCount else { throw Self.tooLong(count) }
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
    package init(validatedBytes bytes: UnsafeRawBufferPointer) {
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

    /// Parses hex from UTF-8 bytes with the rules of ``init(hexString:)``.
    public init(hexBytes text: some Collection<UInt8>) throws {
        self = try withContiguousBytes(text) { try DeviceToken(hexBytes: $0) }
    }

    /// Parses hex from UTF-8 bytes with the rules of ``init(hexString:)``, without allocating for
    /// tokens of up to 32 bytes.
    package init(hexBytes text: UnsafeRawBufferPointer) throws {
        // The common case, 64 plain hex digits: two at a time, no per-character branching on spaces.
        if text.count == 64, let compact = Self.decode64(text) {
            storage = .compact(compact, count: 32)
            return
        }
        var vector = SIMD32<UInt8>()
        var extended: [UInt8] = []
        var count = 0
        var pending: UInt8 = 0
        var haveHigh = false
        try withUnsafeMutableBytes(of: &vector) { compact in
            var index = 0
            while index < text.count {
                let byte = text[index]
                index += 1
                let nibble: UInt8
                let digit = byte &- UInt8(ascii: "0")
                let letter = (byte | 0x20) &- UInt8(ascii: "a")
                if digit < 10 {
                    nibble = digit
                } else if letter < 6 {
                    nibble = letter + 10
                } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") {
                    continue
                } else {
                    throw Self.badCharacter(text, at: index - 1)
                }
                guard haveHigh else {
                    pending = nibble
                    haveHigh = true
                    continue
                }
                haveHigh = false
                let value = pending << 4 | nibble
                if count < 32 {
                    compact[count] = value
                } else {
                    if count == 32 { extended = Array(compact) }
                    extended.append(value)
                }
                count += 1
            }
        }
        if haveHigh { throw Self.oddDigitCount(count * 2 + 1) }
        guard count > 0 else {
            throw LegacyAPNsError(
                .invalidToken,
                "token is empty, expected \(Self.standardByteCount * 2) hex digits (\(Self.standardByteCount) bytes)")
        }
        guard count <= Self.maximumByteCount else { throw Self.tooLong(count) }
        storage = count <= 32 ? .compact(vector, count: UInt8(count)) : .extended(extended)
    }

    /// Decodes exactly 64 hex digits (either case, nothing else) at `text` into a 32-byte token, or
    /// returns nil when any of them is not a hex digit: the common token of a JSON Lines input,
    /// decoded sixteen digits at a time with SSE2 (CHexDecode).
    package init?(plainHex64 text: UnsafeRawPointer) {
        var vector = SIMD32<UInt8>()
        guard withUnsafeMutableBytes(of: &vector, { lp_hex_decode64(text, $0.baseAddress!) }) else { return nil }
        storage = .compact(vector, count: 32)
    }

    /// Eight hex digits (the first in the lowest byte) as four bytes (the first lowest), and
    /// whether all eight were hex digits. SWAR: with every byte below 0x80, adding a constant to
    /// each byte carries into its high bit exactly when the byte is at least some value, and never
    /// into the next byte.
    @inline(__always)
    package static func decodeHexWord(_ word: UInt64) -> (UInt32, Bool) {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let ascii = word & highs == 0
        let atLeast0 = (word &+ ones &* (0x80 - 0x30)) & highs
        let above9 = (word &+ ones &* (0x80 - 0x3A)) & highs
        let lower = word | ones &* 0x20
        let atLeastA = (lower &+ ones &* (0x80 - 0x61)) & highs
        let aboveF = (lower &+ ones &* (0x80 - 0x67)) & highs
        let isDigit = atLeast0 & ~above9
        let isLetter = atLeastA & ~aboveF
        let valid = ascii && (isDigit | isLetter) == highs
        // '0'...'9' end in 0...9, 'a'...'f' and 'A'...'F' in 1...6: add 9 to letters.
        let nibbles = (word & (ones &* 0x0F)) &+ (isLetter >> 7) &* 9
        // Pairs into bytes (the first digit of a pair is the high nibble), then bytes together.
        var packed = (nibbles & 0x000F_000F_000F_000F) << 4 | (nibbles >> 8) & 0x000F_000F_000F_000F
        packed = (packed | packed >> 8) & 0x0000_FFFF_0000_FFFF
        packed = (packed | packed >> 16) & 0xFFFF_FFFF
        return (UInt32(truncatingIfNeeded: packed), valid)
    }

    /// "token has 63 hex digits, expected 64 (32 bytes)".
    private static func oddDigitCount(_ digits: Int) -> LegacyAPNsError {
        let expected = "expected \(standardByteCount * 2) (\(standardByteCount) bytes)"
        let longer =
            digits > standardByteCount * 2 ? ", or an even number up to \(maximumByteCount * 2) for item frames" : ""
        return LegacyAPNsError(.invalidToken, "token has \(digits) hex digits, \(expected)\(longer)")
    }

    /// "token has 101 bytes, expected 32 (at most 100 in item frames)".
    private static func tooLong(_ count: Int) -> LegacyAPNsError {
        LegacyAPNsError(
            .invalidToken,
            "token has \(count) bytes, expected \(standardByteCount) (at most \(maximumByteCount) in item frames)")
    }

    /// "token has 31 bytes, expected 32 (64 hex digits) in enhanced frames": the error for a token
    /// whose length the frame format cannot carry (commands 0 and 1 carry exactly 32 bytes).
    @usableFromInline
    package static func wrongLength(_ count: Int, format: String) -> LegacyAPNsError {
        LegacyAPNsError(
            .invalidToken,
            "token has \(count) byte\(count == 1 ? "" : "s"), expected \(standardByteCount) (\(standardByteCount * 2) hex digits) "
                + "in \(format) frames")
    }

    @inline(__always)
    private static func nibble(_ character: UInt8) -> UInt8 {
        let digit = character &- UInt8(ascii: "0")
        if digit < 10 { return digit }
        let letter = (character | 0x20) &- UInt8(ascii: "a")
        return letter < 6 ? letter &+ 10 : 0xFF
    }

    private static func decode64(_ text: UnsafeRawBufferPointer) -> SIMD32<UInt8>? {
        var result = SIMD32<UInt8>()
        var invalid: UInt8 = 0
        withUnsafeMutableBytes(of: &result) { out in
            for index in 0..<32 {
                let high = nibble(text[2 &* index])
                let low = nibble(text[2 &* index &+ 1])
                invalid |= (high | low) & 0xF0
                out[index] = high &<< 4 | (low & 0x0F)
            }
        }
        return invalid == 0 ? result : nil
    }

    /// "token has 'x' at position 3, expected hex digits", naming a whole multi-byte character.
    private static func badCharacter(_ text: UnsafeRawBufferPointer, at index: Int) -> LegacyAPNsError {
        var end = index + 1
        while end < text.count, text[end] & 0xC0 == 0x80 { end += 1 }
        let character = String(decoding: UnsafeRawBufferPointer(rebasing: text[index..<end]), as: UTF8.self)
        // Positions count characters, as people read them.
        let position = String(decoding: UnsafeRawBufferPointer(rebasing: text[0..<index]), as: UTF8.self).count + 1
        return LegacyAPNsError(
            .invalidToken,
            "token has \(describe(character.unicodeScalars.first ?? "?")) at position \(position), expected hex digits")
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
    package func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        switch storage {
        case .compact(let vector, let count):
            return try Swift.withUnsafeBytes(of: vector) { raw in
                // Not `raw.prefix(_:)`: a generic call per token on the hot paths.
                try body(UnsafeRawBufferPointer(start: raw.baseAddress, count: Int(count)))
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
    package static func writeHex(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        precondition(output.count >= 2 * bytes.count, "hex needs two bytes per byte")
        guard let out = output.baseAddress else { return 0 }
        return HexPairs.table.withUTF8Buffer { table in
            let pairs = UnsafeRawPointer(table.baseAddress!)
            for (index, byte) in bytes.enumerated() { HexPairs.write(byte, to: out + 2 * index, pairs: pairs) }
            return 2 * bytes.count
        }
    }
}

extension DeviceToken: CustomStringConvertible {
    /// The token as lowercase hex.
    public var description: String { hexString }
}
