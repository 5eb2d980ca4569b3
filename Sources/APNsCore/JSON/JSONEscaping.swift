/// Appends the decimal digits of `value` (with a minus sign when `negative`), without
/// intermediate strings.
package func appendDecimal(_ value: UInt64, to bytes: inout [UInt8], negative: Bool = false) {
    if negative && value != 0 { bytes.append(UInt8(ascii: "-")) }
    var digitCount = 1
    var probe = value
    while probe >= 10 {
        probe /= 10
        digitCount += 1
    }
    let start = bytes.count
    bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digitCount))
    var remaining = value
    var index = start + digitCount - 1
    while remaining > 0 {
        bytes[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
        remaining /= 10
        index -= 1
    }
}

/// Appends `text` as a JSON string literal (see the `[UInt8]` variant).
package func appendJSONString(_ text: String, to bytes: inout [UInt8]) {
    var text = text
    text.withUTF8 { utf8 in appendEscaped(UnsafeRawBufferPointer(utf8), to: &bytes) }
}

/// Appends `raw` as a JSON string literal: quotes, backslashes and control characters escaped,
/// everything else (including non-ASCII UTF-8) as is. Bytes that are not valid UTF-8 are repaired
/// to U+FFFD so the output is always valid JSON.
package func appendJSONString(_ raw: [UInt8], to bytes: inout [UInt8]) {
    if raw.withUnsafeBytes({ JSONScanner.isValidUTF8($0) }) {
        raw.withUnsafeBytes { appendEscaped($0, to: &bytes) }
    } else {
        appendJSONString(String(decoding: raw, as: UTF8.self), to: &bytes)
    }
}

/// Appends valid UTF-8 as a JSON string literal, copying runs that need no escaping in one go.
private func appendEscaped(_ text: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "\""))
    var runStart = 0
    for index in 0..<text.count {
        let byte = text[index]
        guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[runStart..<index]))
        runStart = index + 1
        // Byte by byte, not from array literals: each literal is a static object retained and
        // released per escape (a payload's every quote).
        bytes.append(0x5C)
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            bytes.append(UInt8(ascii: "u"))
            bytes.append(0x30)
            bytes.append(0x30)
            bytes.append(hexDigit(byte >> 4))
            bytes.append(hexDigit(byte & 0xF))
        }
    }
    bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[runStart...]))
    bytes.append(UInt8(ascii: "\""))
}

@inline(__always)
private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}
