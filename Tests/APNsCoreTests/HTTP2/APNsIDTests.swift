import APNsCore
import Testing

@Suite struct APNsIDTests {
    @Test func canonicalTextRoundTrips() throws {
        let text = "123e4567-e89b-12d3-a456-4266554400a0"
        let id = try #require(APNsID(text))
        #expect(id.rawValue == 0x123e_4567_e89b_12d3_a456_4266_5544_00a0)
        #expect(id.description == text)
        #expect(APNsID(rawValue: id.rawValue) == id)
    }

    @Test func uppercaseIsReadAndWrittenBackLowercase() throws {
        let id = try #require(APNsID("123E4567-E89B-12D3-A456-4266554400A0"))
        #expect(id.description == "123e4567-e89b-12d3-a456-4266554400a0")
    }

    @Test(arguments: [
        "",
        "123e4567e89b12d3a4564266554400a0",  // no hyphens
        "123e4567-e89b-12d3-a456-4266554400a",  // 35 characters
        "123e4567-e89b-12d3-a456-4266554400a00",  // 37 characters
        "123e4567-e89b-12d3-a4564-266554400a0",  // hyphen moved
        "123e4567-e89b-12d3-a456_4266554400a0",  // not a hyphen
        "123e4567-e89b-12d3-a456-4266554400ag",  // not hex
        "{23e4567-e89b-12d3-a456-4266554400a}",
        " 23e4567-e89b-12d3-a456-4266554400a0",
        "123e4567-e89b-12d3-a456-4266554400é",
    ])
    func anythingButEightFourFourFourTwelveHexIsRejected(text: String) {
        #expect(APNsID(text) == nil)
    }

    @Test func everyDigitPositionIsReadAndEveryNonHexByteThereRefused() throws {
        var generator = SplitMix64(seed: 11)
        for _ in 0..<200 {
            let id = APNsID(rawValue: UInt128(generator.next()) << 64 | UInt128(generator.next()))
            #expect(APNsID(id.description) == id)
            #expect(APNsID(id.description.uppercased()) == id)
        }
        let text = Array("0123abcd-ef45-6789-ABCD-EF0123456789".utf8)
        let digitPositions = (0..<36).filter { ![8, 13, 18, 23].contains($0) }
        // The bytes just outside '0'...'9', 'A'...'F' and 'a'...'f', and ones with the high bit set.
        for position in digitPositions {
            for bad in [0x2F, 0x3A, 0x40, 0x47, 0x60, 0x67, 0x00, 0x2D, 0xB0, 0xE1] as [UInt8] {
                var mutated = text
                mutated[position] = bad
                #expect(mutated.withUnsafeBytes { APNsID(utf8: $0) } == nil, "byte \(bad) at \(position)")
            }
        }
        let parsed = try #require(text.withUnsafeBytes { APNsID(utf8: $0) })
        #expect(parsed.rawValue == 0x0123_abcd_ef45_6789_abcd_ef01_2345_6789)
    }

    @Test func fixedValuesFormatWithLeadingZeros() {
        #expect(APNsID(rawValue: 0).description == "00000000-0000-0000-0000-000000000000")
        #expect(APNsID(rawValue: 1).description == "00000000-0000-0000-0000-000000000001")
        #expect(APNsID(rawValue: .max).description == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test func randomIDsAreVersion4AndReproducibleFromTheirGenerator() throws {
        var first = SplitMix64(seed: 7)
        var second = SplitMix64(seed: 7)
        var seen = Set<APNsID>()
        for _ in 0..<1000 {
            let id = APNsID.random(using: &first)
            #expect(id == APNsID.random(using: &second))
            let text = Array(id.description)
            #expect(text[14] == "4")
            #expect("89ab".contains(text[19]))
            #expect(APNsID(id.description) == id)
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }

    @Test func writesIntoAHeaderBufferWithoutAString() {
        var bytes = [UInt8](repeating: 0, count: 40)
        bytes.withUnsafeMutableBytes { APNsID(rawValue: 0xABCDEF).write(into: $0) }
        #expect(String(decoding: bytes[0..<36], as: UTF8.self) == "00000000-0000-0000-0000-000000abcdef")
        #expect(bytes[36...].allSatisfy { $0 == 0 })
    }

    /// The text (written two digits at a time from a table) against the 128-bit value printed in
    /// base 16 and cut 8-4-4-4-12.
    @Test func theTextIsTheValueInHexCutEightFourFourFourTwelve() {
        var generator = SplitMix64(seed: 12)
        for round in 0..<500 {
            let value =
                round < 3 ? [UInt128(0), 1, .max][round] : UInt128(generator.next()) << 64 | UInt128(generator.next())
            let hex = String(value, radix: 16)
            let digits = Array(String(repeating: "0", count: 32 - hex.count) + hex)
            let expected = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digits[$0]) }.joined(separator: "-")
            #expect(APNsID(rawValue: value).description == expected)
        }
    }

    /// A device token's hex the same way, for every byte value (in tokens of at most the longest
    /// size), and nothing written past it.
    @Test func tokenHexIsEveryByteInTwoLowercaseDigits() throws {
        let bytes = (0...255).map { UInt8($0) }
        for start in stride(from: 0, to: 256, by: DeviceToken.maximumByteCount) {
            let slice = Array(bytes[start..<min(256, start + DeviceToken.maximumByteCount)])
            let token = try DeviceToken(bytes: slice)
            #expect(token.hexString == slice.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        }
        var room = [UInt8](repeating: 0xEE, count: 14)
        let written = bytes.withUnsafeBytes { source in
            room.withUnsafeMutableBytes {
                DeviceToken.writeHex(UnsafeRawBufferPointer(rebasing: source[250...]), into: $0)
            }
        }
        #expect(written == 12)
        #expect(String(decoding: room[0..<12], as: UTF8.self) == "fafbfcfdfeff")
        #expect(room[12...] == [0xEE, 0xEE])
    }
}
