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
    text.withUTF8 { appendJSONString(UnsafeRawBufferPointer($0), to: &bytes) }
}

/// Appends `raw` as a JSON string literal: quotes, backslashes and control characters escaped,
/// everything else (including non-ASCII UTF-8) as is. Bytes that are not valid UTF-8 are repaired
/// to U+FFFD so the output is always valid JSON.
package func appendJSONString(_ raw: [UInt8], to bytes: inout [UInt8]) {
    raw.withUnsafeBytes { appendJSONString($0, to: &bytes) }
}

/// ``JSONCursor/writeString(_:)``, appended (written in room on the stack
/// first, or on the heap for long text).
private func appendJSONString(_ raw: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
    withUnsafeTemporaryAllocation(byteCount: JSONCursor.stringBound(raw.count), alignment: 1) { room in
        var cursor = JSONCursor(room.baseAddress!)
        cursor.writeString(raw)
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: room.baseAddress, count: cursor.written))
    }
}

/// Writes JSON text through a pointer, into room the caller reserved beforehand from the bounds
/// given here (``stringBound(_:)``, ``decimalBound``): no capacity check or uniqueness check per
/// byte, which is what appending to an array costs.
package struct JSONCursor {
    /// Where the next byte goes.
    package private(set) var next: UnsafeMutableRawPointer
    private let start: UnsafeMutableRawPointer

    /// A cursor writing from `start`.
    package init(_ start: UnsafeMutableRawPointer) {
        self.start = start
        self.next = start
    }

    /// The bytes written so far.
    package var written: Int { next - start }

    /// At most how many bytes a string of `count` bytes takes as a literal: each byte escaped as
    /// `\u00XX`, or repaired (an invalid byte becomes U+FFFD, three bytes), plus the quotes.
    @inline(__always)
    package static func stringBound(_ count: Int) -> Int { 6 * count + 2 }

    /// At most how many bytes ``writeDecimal(_:)`` takes (`UInt64.max` has 20 digits).
    package static let decimalBound = 20

    /// Writes `text` as it is (ASCII without anything to escape: the caller's literals).
    @inline(__always)
    package mutating func write(_ text: StaticString) {
        next.copyMemory(from: text.utf8Start, byteCount: text.utf8CodeUnitCount)
        next += text.utf8CodeUnitCount
    }

    /// Writes raw bytes as they are.
    @inline(__always)
    package mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        next.copyMemory(from: base, byteCount: bytes.count)
        next += bytes.count
    }

    /// Gives `body` the next `count` bytes to fill (all of them).
    @inline(__always)
    package mutating func fill(_ count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
        body(UnsafeMutableRawBufferPointer(start: next, count: count))
        next += count
    }

    /// Writes one byte.
    @inline(__always)
    package mutating func write(byte: UInt8) {
        next.storeBytes(of: byte, as: UInt8.self)
        next += 1
    }

    /// Writes `value` in decimal.
    package mutating func writeDecimal(_ value: UInt64) {
        var digitCount = 1
        var probe = value
        while probe >= 10 {
            probe /= 10
            digitCount += 1
        }
        var remaining = value
        var index = digitCount - 1
        repeat {
            next.storeBytes(of: UInt8(ascii: "0") + UInt8(remaining % 10), toByteOffset: index, as: UInt8.self)
            remaining /= 10
            index -= 1
        } while index >= 0
        next += digitCount
    }

    /// Writes valid UTF-8 as a JSON string literal: quotes, backslashes and control characters
    /// escaped, everything else (including non-ASCII UTF-8) as is, runs that need no escaping
    /// copied in one go.
    package mutating func writeEscaped(_ text: UnsafeRawBufferPointer) {
        write(byte: UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<text.count {
            let byte = text[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            write(UnsafeRawBufferPointer(rebasing: text[runStart..<index]))
            runStart = index + 1
            write(byte: 0x5C)
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): write(byte: byte)
            case 0x0A: write(byte: UInt8(ascii: "n"))
            case 0x0D: write(byte: UInt8(ascii: "r"))
            case 0x09: write(byte: UInt8(ascii: "t"))
            default:
                write(byte: UInt8(ascii: "u"))
                write(byte: 0x30)
                write(byte: 0x30)
                write(byte: hexDigit(byte >> 4))
                write(byte: hexDigit(byte & 0xF))
            }
        }
        write(UnsafeRawBufferPointer(rebasing: text[runStart...]))
        write(byte: UInt8(ascii: "\""))
    }

    /// Writes `text` as a JSON string literal, or `null` when there is none.
    package mutating func writeString(orNull text: String?) {
        guard var text else { return write("null") }
        text.withUTF8 { writeEscaped(UnsafeRawBufferPointer($0)) }
    }

    /// Writes `value` in decimal, or `null` when there is none.
    package mutating func writeDecimal(orNull value: UInt64?) {
        guard let value else { return write("null") }
        writeDecimal(value)
    }

    /// Writes any bytes as a JSON string literal; bytes that are not valid UTF-8 are repaired to
    /// U+FFFD so the output is always valid JSON (within ``stringBound(_:)`` of the input).
    package mutating func writeString(_ raw: UnsafeRawBufferPointer) {
        if JSONScanner.isValidUTF8(raw) {
            writeEscaped(raw)
        } else {
            var repaired = String(decoding: raw, as: UTF8.self)
            repaired.withUTF8 { writeEscaped(UnsafeRawBufferPointer($0)) }
        }
    }
}

@inline(__always)
private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}
