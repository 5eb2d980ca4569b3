import Testing

@testable import APNsCore

/// The JSON string writer (`appendJSONString`): quotes, backslashes and control characters
/// escaped, everything else as is, invalid UTF-8 repaired.
@Suite struct JSONEscapingTests {
    static func escaped(_ raw: [UInt8]) -> String {
        var bytes: [UInt8] = []
        appendJSONString(raw, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func everyByteThatMustBeEscapedIsAndNothingElse() {
        #expect(Self.escaped(Array(#"plain "quoted" back\slash"#.utf8)) == #""plain \"quoted\" back\\slash""#)
        #expect(Self.escaped([0x0A, 0x0D, 0x09]) == #""\n\r\t""#)
        #expect(Self.escaped([0x00, 0x01, 0x1F, 0x20]) == #""\u0000\u0001\u001f ""#)
        #expect(Self.escaped(Array("été 😀 /".utf8)) == "\"été 😀 /\"")
        #expect(Self.escaped([]) == #""""#)
        #expect(Self.escaped([0x61, 0xFF, 0x62]) == "\"a\u{FFFD}b\"")
    }

    /// Every byte value alone, as the JSON scanner reads the result back: the same byte (or
    /// U+FFFD for a lone byte that is not UTF-8).
    @Test func whatIsWrittenReadsBackAsWhatWasGiven() throws {
        for value in 0...255 {
            var bytes: [UInt8] = []
            appendJSONString([UInt8(value)], to: &bytes)
            let read = try bytes.withUnsafeBytes { raw in
                let end = try JSONScanner.skipString(raw, from: 0)
                #expect(end == raw.count, "\(value)")
                var decoded: [UInt8] = []
                JSONScanner.decodeString(raw, from: 0, to: end, into: &decoded)
                return decoded
            }
            #expect(read == (value < 0x80 ? [UInt8(value)] : Array("\u{FFFD}".utf8)), "\(value)")
        }
    }
}
