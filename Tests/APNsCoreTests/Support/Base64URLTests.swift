import APNsCore
import Testing

@Suite struct Base64URLTests {
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func encodesTheRFC4648VectorsWithoutPadding(plain: String, encoded: String) throws {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(try Base64URL.decode(encoded) == Array(plain.utf8))
        #expect(Base64URL.encodedCount(plain.utf8.count) == encoded.utf8.count)
    }

    @Test func usesDashAndUnderscoreWhereBase64HasPlusAndSlash() throws {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([0xFF, 0xFF, 0xFE]) == "___-")
        #expect(try Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    @Test func everyByteValueAndLengthRoundTrips() throws {
        var bytes: [UInt8] = []
        for length in 0..<300 {
            let encoded = Base64URL.encode(bytes)
            #expect(encoded.utf8.count == Base64URL.encodedCount(length))
            #expect(!encoded.contains("="))
            #expect(try Base64URL.decode(encoded) == bytes, "length \(length)")
            bytes.append(UInt8(truncatingIfNeeded: length &* 167 &+ 13))
        }
    }

    @Test func appendsToExistingBytes() {
        var output = Array("x.".utf8)
        Base64URL.encode(Array("foo".utf8), into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "x.Zm9v")
    }

    @Test(arguments: [
        ("Zg==", Base64URL.Failure.padding(offset: 2)),
        ("Zm8=", .padding(offset: 3)),
        ("Zm9v+A", .invalidCharacter(UInt8(ascii: "+"), offset: 4)),
        ("Zm9v/A", .invalidCharacter(UInt8(ascii: "/"), offset: 4)),
        ("Zm 9v", .invalidCharacter(0x20, offset: 2)),
        ("Zm9v\n", .invalidCharacter(0x0A, offset: 4)),
        ("Zm9vé", .invalidCharacter(0xC3, offset: 4)),
        ("Z", .impossibleLength(1)),
        ("Zm9vY", .impossibleLength(5)),
        ("Zh", .nonCanonical),  // 'h' leaves unused bits set: "Zg" is the one encoding of "f"
        ("Zm9", .nonCanonical),  // "Zm8" is the one encoding of "fo"
    ])
    func decodingIsStrict(text: String, failure: Base64URL.Failure) {
        #expect(throws: failure) { try Base64URL.decode(text) }
    }

    @Test func failuresSayWhatIsWrong() {
        #expect(
            Base64URL.Failure.padding(offset: 2).description
                == "'=' padding at offset 2 (base64url here has no padding)")
        #expect(
            Base64URL.Failure.invalidCharacter(UInt8(ascii: "+"), offset: 4).description
                == "'+' at offset 4 is not a base64url character (A-Z a-z 0-9 - _)")
        #expect(
            Base64URL.Failure.invalidCharacter(0x0A, offset: 0).description
                == "byte 0x0A at offset 0 is not a base64url character (A-Z a-z 0-9 - _)")
        #expect(Base64URL.Failure.impossibleLength(5).description == "5 characters is not a possible base64url length")
    }
}
