import APNsCore
import Testing

/// A ``FrameRecord`` holds exactly the frame the encoder writes for its notification, gives the
/// notification back whole, and sends with any wire identifier patched in.
@Suite struct FrameRecordTests {
    /// Notifications with every combination of the optional fields, tokens of several sizes.
    static let notifications: [PushNotification] = {
        var result: [PushNotification] = []
        for tokenCount in [32, 1, 100] {
            for (index, fields) in [
                (false, false, false), (true, true, true), (true, false, true), (false, true, false),
            ]
            .enumerated() {
                let token = try! DeviceToken(
                    bytes: (0..<tokenCount).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
                let payload = Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"n\#(index)"}}"#.utf8))
                result.append(
                    PushNotification(
                        token: token, payload: payload, identifier: fields.0 ? UInt32(0xCAFE_0000 + index) : nil,
                        expiration: fields.1 ? Expiration(rawValue: 1_700_000_000) : nil,
                        priority: fields.2 ? .conservePower : nil))
            }
        }
        return result
    }()

    static func record(_ notification: PushNotification, format: FrameFormat) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xEE, count: FrameRecord.size(of: notification, format: format))
        let written = bytes.withUnsafeMutableBytes {
            FrameRecord.write(notification, format: format, to: $0.baseAddress!)
        }
        #expect(written == bytes.count)
        return bytes
    }

    @Test(arguments: [FrameFormat.simple, .enhanced, .itemized])
    func theFrameIsTheEncodersWithTheWireIdentifierPatchedIn(_ format: FrameFormat) {
        for notification in Self.notifications where format == .itemized || notification.token.count == 32 {
            let record = Self.record(notification, format: format)
            for identifier: UInt32 in [0, 1, 0x8000_0001, .max] {
                var expected = ByteWriter()
                FrameEncoder.encodeValidated(notification, as: format, identifier: identifier, into: &expected)
                let copied = record.withUnsafeBytes { raw in
                    let reference = FrameRecord.Reference(raw.baseAddress!)
                    var out = [UInt8](repeating: 0, count: reference.frameSize)
                    let size = out.withUnsafeMutableBytes {
                        reference.copyFrame(identifier: identifier, to: $0.baseAddress!)
                    }
                    #expect(size == out.count)
                    #expect(reference.recordSize == record.count)
                    return out
                }
                #expect(copied == expected.bytes, "\(format) \(notification) id \(identifier)")
                // And the decoder reads it back as the same notification with that identifier.
                var decoder = FrameDecoder()
                decoder.append(copied)
                guard case .notification(let decoded, _) = try? decoder.next() else {
                    Issue.record("no frame decoded")
                    continue
                }
                #expect(decoded.token == notification.token)
                #expect(decoded.payload == notification.payload)
            }
        }
    }

    @Test(arguments: [FrameFormat.simple, .enhanced, .itemized])
    func aRecordGivesBackTheWholeNotification(_ format: FrameFormat) {
        for notification in Self.notifications where format == .itemized || notification.token.count == 32 {
            let record = Self.record(notification, format: format)
            record.withUnsafeBytes { raw in
                let reference = FrameRecord.Reference(raw.baseAddress!)
                #expect(reference.notification == notification)
                #expect(reference.token == notification.token)
                #expect(reference.callerIdentifier == notification.identifier)
                #expect(FrameRecord.size(ofRecordAt: raw) == raw.count)
                #expect(FrameRecord.size(ofRecordAt: UnsafeRawBufferPointer(rebasing: raw.dropLast())) == nil)
                #expect(FrameRecord.size(ofRecordAt: UnsafeRawBufferPointer(rebasing: raw.prefix(13))) == nil)
            }
        }
    }
}
