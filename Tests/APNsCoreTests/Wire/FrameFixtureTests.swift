import APNsCore
import TestSupport
import Testing

/// Every fixture in `Fixtures/frames`: the annotated hex equals the binary, the encoder writes the
/// binary, and the decoder reads it back whole, one byte at a time, and concatenated.
@Suite struct FrameFixtureTests {
    @Test func manifestCoversEveryKind() {
        #expect(FrameFixtures.notifications.count >= 15)
        #expect(FrameFixtures.errorResponses.count == StatusCode.allKnown.count)
        #expect(FrameFixtures.malformed.count >= 15)
    }

    @Test(arguments: FrameFixtures.all)
    func annotatedHexSpellsTheBinary(_ fixture: FrameFixtures.Entry) {
        #expect(!fixture.bin.isEmpty)
        #expect(FrameFixtures.bytes(fromAnnotatedHex: fixture.hexText) == fixture.bin)
    }

    @Test(arguments: FrameFixtures.notifications)
    func encoderWritesTheFixtureBytes(_ fixture: FrameFixtures.Entry) throws {
        var writer = ByteWriter()
        try FrameEncoder().encode(fixture.notification(), as: fixture.format, into: &writer)
        #expect(writer.bytes == fixture.bin)
    }

    @Test(arguments: FrameFixtures.notifications)
    func decoderReadsTheFixtureWholeAndDripFed(_ fixture: FrameFixtures.Entry) throws {
        let expected = Frame.notification(try fixture.notification(), command: fixture.format.command)
        #expect(try decodeAll(fixture.bin, chunk: fixture.bin.count) == [expected])
        #expect(try decodeAll(fixture.bin, chunk: 1) == [expected])
    }

    @Test(arguments: FrameFixtures.errorResponses)
    func errorResponsesRoundTrip(_ fixture: FrameFixtures.Entry) throws {
        let response = ErrorResponse(
            status: StatusCode(rawValue: UInt8(fixture.int("status")!)), identifier: UInt32(fixture.int("id")!))
        #expect(response.bytes == fixture.bin)
        #expect(try decodeAll(fixture.bin, chunk: 1) == [.errorResponse(response)])
    }

    @Test(arguments: FrameFixtures.malformed)
    func malformedStreamsAreRejectedWithTheGatewayStatusAndOffset(_ fixture: FrameFixtures.Entry) throws {
        for chunk in [fixture.bin.count, 1, 7] {
            var decoder = FrameDecoder(configuration: .any)
            var frames = 0
            var failure: FrameDecodingError?
            var index = 0
            do {
                while index < fixture.bin.count {
                    let end = min(index + chunk, fixture.bin.count)
                    decoder.append(fixture.bin[index..<end])
                    index = end
                    while try decoder.next() != nil { frames += 1 }
                }
                try decoder.finish()
            } catch {
                failure = error
            }
            let error = try #require(failure, "\(fixture.name) decoded without error (chunk \(chunk))")
            #expect(frames == fixture.int("framesBefore"))
            #expect(error.status.rawValue == UInt8(fixture.int("status")!))
            #expect(error.offset == fixture.int("offset"))
            #expect(error.identifier == UInt32(fixture.int("id")!))
            #expect(error.isTruncation == fixture.fields["truncated"]!.bool)
        }
    }

    @Test func concatenatedFixturesDecodeInOrderInAnySplit() throws {
        var stream: [UInt8] = []
        var expected: [Frame] = []
        for fixture in FrameFixtures.notifications {
            stream += fixture.bin
            expected.append(.notification(try fixture.notification(), command: fixture.format.command))
        }
        for fixture in FrameFixtures.errorResponses {
            stream += fixture.bin
            expected.append(
                .errorResponse(
                    ErrorResponse(
                        status: StatusCode(rawValue: UInt8(fixture.int("status")!)),
                        identifier: UInt32(fixture.int("id")!))))
        }
        #expect(try decodeAll(stream, chunk: stream.count) == expected)
        #expect(try decodeAll(stream, chunk: 1) == expected)
        #expect(try decodeAll(stream, chunk: 97) == expected)
        var generator = SplitMix64(seed: 2195)
        #expect(try decodeAll(stream, chunkSizes: { Int(generator.next() % 300) + 1 }) == expected)
    }

    @Test func decoderNeverConsumesOnShortInput() throws {
        let bytes = FrameFixtures.all.first { $0.name == "frame-all-items" }!.bin
        var decoder = FrameDecoder()
        for index in 0..<(bytes.count - 1) {
            decoder.append([bytes[index]])
            #expect(try decoder.next() == nil)
            #expect(decoder.consumedByteCount == 0)
            #expect(decoder.bufferedByteCount == index + 1)
        }
        decoder.append([bytes.last!])
        #expect(try decoder.next() != nil)
        #expect(decoder.consumedByteCount == bytes.count)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func gatewayDecoderRefusesErrorResponsesAndProviderDecoderRefusesNotifications() throws {
        let response = FrameFixtures.errorResponses[0].bin
        var gateway = FrameDecoder(configuration: .gateway)
        gateway.append(response)
        #expect(throws: FrameDecodingError.self) { try gateway.next() }

        let notification = FrameFixtures.notifications[0].bin
        var provider = FrameDecoder(configuration: .provider)
        provider.append(notification)
        #expect(throws: FrameDecodingError.self) { try provider.next() }
    }

    @Test func aFailedDecoderStaysFailed() throws {
        var decoder = FrameDecoder()
        decoder.append([0x03, 0x00])
        #expect(throws: FrameDecodingError.self) { try decoder.next() }
        decoder.append(FrameFixtures.notifications[0].bin)
        #expect(throws: FrameDecodingError.self) { try decoder.next() }
    }

    @Test func aLowerPayloadLimitTurnsLargePayloadsIntoStatus7() throws {
        let fixture = FrameFixtures.all.first { $0.name == "enhanced-payload-2048" }!
        var decoder = FrameDecoder(
            configuration: .init(
                maximumPayloadSize: 256, acceptsNotifications: true, acceptsErrorResponses: false))
        decoder.append(fixture.bin)
        let error = try #require(throws: FrameDecodingError.self) { try decoder.next() }
        #expect(error.status == .invalidPayloadSize)
        #expect(error.identifier == 2048)
        #expect(error.offset == 43)
    }

    private func decodeAll(_ bytes: [UInt8], chunk: Int) throws -> [Frame] {
        try decodeAll(bytes, chunkSizes: { chunk })
    }

    private func decodeAll(_ bytes: [UInt8], chunkSizes: () -> Int) throws -> [Frame] {
        var decoder = FrameDecoder(configuration: .any)
        var frames: [Frame] = []
        var index = 0
        while index < bytes.count {
            let end = min(index + max(1, chunkSizes()), bytes.count)
            decoder.append(bytes[index..<end])
            index = end
            while let frame = try decoder.next() { frames.append(frame) }
        }
        try decoder.finish()
        return frames
    }
}
