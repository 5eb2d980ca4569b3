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

    /// The pointer writer the recorder uses: the same text as `appendJSONString` for every byte
    /// alone and for mixed runs, and never more than its bound (the worst cases: all control
    /// characters, all invalid bytes).
    @Test func theCursorWritesTheSameWithinItsBound() {
        func viaCursor(_ raw: [UInt8]) -> [UInt8] {
            let bound = JSONCursor.stringBound(raw.count)
            var room = [UInt8](repeating: 0xEE, count: bound + 8)
            let written = room.withUnsafeMutableBytes { out in
                var cursor = JSONCursor(out.baseAddress!)
                raw.withUnsafeBytes { cursor.writeString($0) }
                return cursor.written
            }
            #expect(written <= bound, "\(raw.prefix(8)) wrote \(written) of \(bound)")
            #expect(room[bound...].allSatisfy { $0 == 0xEE })
            return Array(room[0..<written])
        }
        func viaArray(_ raw: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = []
            appendJSONString(raw, to: &bytes)
            return bytes
        }
        var samples: [[UInt8]] = (0...255).map { [UInt8($0)] }
        samples.append(Array(0...0x1F))
        samples.append([UInt8](repeating: 0xFF, count: 100))
        samples.append(Array(#"{"aps":{"alert":"a \"quoted\" été 😀"},"n":"\\"}"#.utf8))
        samples.append([])
        var random = SplitMix64(seed: 7)
        for _ in 0..<200 {
            samples.append((0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
        for sample in samples { #expect(viaCursor(sample) == viaArray(sample), "\(sample)") }
        #expect(JSONCursor.stringBound(32) == 6 * 32 + 2)
    }

    @Test func theCursorWritesDecimalsAsSwiftPrintsThem() {
        for value: UInt64 in [0, 7, 9, 10, 99, 100, 4_294_967_295, 9_999_999_999, .max] {
            var room = [UInt8](repeating: 0, count: JSONCursor.decimalBound)
            let written = room.withUnsafeMutableBytes { out in
                var cursor = JSONCursor(out.baseAddress!)
                cursor.writeDecimal(value)
                return cursor.written
            }
            #expect(String(decoding: room[0..<written], as: UTF8.self) == String(value))
        }
    }
}
