import APNsCore
import Testing

/// The public byte APIs take collections (an array, a slice, anything else of `UInt8`), and give
/// what the pointer-based code under them gives: contiguous bytes are read where they are, others
/// through a copy.
@Suite struct ByteCollectionAPITests {
    /// The same bytes as an array, a slice of a larger array, and a collection without contiguous
    /// storage.
    static func shapes(_ bytes: [UInt8]) -> [any Collection<UInt8>] {
        let padded = [0xEE] + bytes + [0xEE]
        return [bytes, padded[1..<(padded.count - 1)], bytes.reversed().reversed()]
    }

    @Test func aDeviceTokenParsesFromAnyCollectionOfHexBytes() throws {
        let hex = Array((String(repeating: "AB", count: 31) + " 0f").utf8)
        let expected = try hex.withUnsafeBytes { try DeviceToken(hexBytes: $0) }
        for shape in Self.shapes(hex) { #expect(try DeviceToken(hexBytes: shape) == expected) }
        #expect(throws: LegacyAPNsError.self) { try DeviceToken(hexBytes: Array("xyz".utf8)) }
    }

    @Test func anAPNsIDParsesFromAnyCollectionOfUTF8() {
        let text = "3D5A1E3F-9C2B-4D3A-8E1F-0A1B2C3D4E5F"
        for shape in Self.shapes(Array(text.utf8)) { #expect(APNsID(utf8: shape) == APNsID(text)) }
        #expect(APNsID(utf8: Array("not an id".utf8)) == nil)
    }

    @Test func aResponseBodyAndAGoawayDecodeFromAnyCollection() throws {
        let body = Array(#"{"reason":"BadDeviceToken"}"#.utf8)
        for shape in Self.shapes(body) {
            #expect(try ProviderResponse.decodeBody(shape).get().reason == .badDeviceToken)
            #expect(ProviderGoaway(lastStreamID: 7, errorCode: .noError, debugData: shape).reason == .badDeviceToken)
        }
        let text = ProviderGoaway(lastStreamID: 1, errorCode: .protocolError, debugData: Array("plain text".utf8))
        #expect(text.reason == nil)
        #expect(text.debugText == "plain text")
    }

    @Test func aLineParsesFromAnyCollection() throws {
        let line = Array(#"{"token":"\#(String(repeating: "ab", count: 32))","payload":{"aps":{}},"id":9}"#.utf8)
        let parser = NotificationLineParser()
        let expected = try line.withUnsafeBytes { try parser.parse($0, lineNumber: 1) }
        #expect(expected?.identifier == 9)
        for shape in Self.shapes(line) { #expect(try parser.parse(shape, lineNumber: 1) == expected) }
    }

    @Test func decodersTakeAnyCollection() throws {
        var writer = ByteWriter()
        ConfirmationBarrier.encode(identifier: 5, into: &writer)
        let barrier = writer.bytes
        for shape in Self.shapes(barrier) {
            let matches = ConfirmationBarrier.matches(shape)
            #expect(matches)
        }
        #expect(!ConfirmationBarrier.matches([UInt8](repeating: 0, count: barrier.count)))

        let record = FeedbackRecord(timestamp: 1, token: try DeviceToken(hexString: String(repeating: "cd", count: 32)))
        var encoded = ByteWriter()
        record.encode(into: &encoded)
        for shape in Self.shapes(encoded.bytes) {
            var decoder = FeedbackDecoder()
            decoder.append(shape)
            var records: [FeedbackRecord] = []
            var raw: [UInt8] = []
            try decoder.decodeAvailable(into: &records) { raw += $0 }
            #expect(records == [record])
            #expect(raw == encoded.bytes)
        }
    }
}
