import APNsCore
import TestSupport
import Testing

/// ``FrameDecoder/pendingFailure`` judges a frame cut short: nil while bytes still to come could
/// make it valid, the error when none can; ``FrameDecoder/next()`` keeps waiting either way.
@Suite struct FrameDecoderPendingFailureTests {
    static let configuration = FrameDecoder.Configuration(
        maximumPayloadSize: 2048, acceptsNotifications: true, acceptsErrorResponses: false)

    static func decoder(_ bytes: [UInt8]) -> FrameDecoder {
        var decoder = FrameDecoder(configuration: configuration)
        decoder.append(bytes)
        return decoder
    }

    @Test(
        arguments: [
            // A frame length no valid frame can have, nothing more: status 7, the identifier unknown.
            ([0x02, 0xFF, 0xFF, 0xFF, 0xFF], StatusCode.invalidPayloadSize, UInt32(0)),
            // The same with its identifier item first: named.
            ([0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x2A], .invalidPayloadSize, 42),
            // A plausible length whose payload item is over the limit.
            (FrameFixtures.itemFrameHead(length: 2100, identifier: 7, payloadLength: 2049), .invalidPayloadSize, 7),
            // A plausible length with an empty token item, or an unknown item.
            ([0x02, 0x00, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00], .missingDeviceToken, 0),
            ([0x02, 0x00, 0x00, 0x00, 0x40, 0x09, 0x00, 0x01], .protocolError, 0),
        ] as [([UInt8], StatusCode, UInt32)])
    func aFrameNoBytesCanSaveFailsNowAndNextStillWaits(bytes: [UInt8], status: StatusCode, identifier: UInt32) throws {
        var decoder = Self.decoder(bytes)
        let failure = try #require(decoder.pendingFailure)
        #expect(failure.errorResponse == ErrorResponse(status: status, identifier: identifier))
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == bytes.count)
    }

    /// Every prefix of valid frames of each command has no pending failure.
    @Test func aValidFrameCutAnywhereHasNoPendingFailure() {
        let notification = PushNotification(
            token: try! DeviceToken(bytes: [UInt8](repeating: 0x5A, count: 32)),
            payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"hi"}}"#.utf8)), identifier: 9,
            expiration: Expiration(rawValue: 1_700_000_000), priority: .immediate)
        for command in FrameFormat.allCases {
            var writer = ByteWriter(capacity: 256)
            FrameEncoder.encodeValidated(notification, as: command, identifier: 9, into: &writer)
            let frame = writer.bytes
            for cut in 1..<frame.count {
                #expect(Self.decoder(Array(frame[0..<cut])).pendingFailure == nil, "\(command) cut at \(cut)")
            }
        }
    }
}
