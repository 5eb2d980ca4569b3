import APNsCore

/// Feedback tuples for tests (readers pointed at test services are added by the integration tests).
package enum FeedbackSamples {
    /// A deterministic tuple: a `length`-byte token whose last 8 bytes are `index` (for length
    /// 8 and more), at `timestamp` (default: a time derived from `index`).
    package static func record(_ index: Int, tokenLength: Int = 32, timestamp: UInt32? = nil) -> FeedbackRecord {
        var bytes = [UInt8](repeating: 0xC5, count: tokenLength)
        let tail = withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) }
        for offset in 0..<min(8, tokenLength) {
            bytes[tokenLength - 1 - offset] = tail[7 - offset]
        }
        return FeedbackRecord(
            timestamp: timestamp ?? 1_769_860_800 &+ UInt32(truncatingIfNeeded: index),
            token: try! DeviceToken(bytes: bytes))
    }

    /// `count` standard tuples numbered from `start`.
    package static func records(_ count: Int, from start: Int = 1) -> [FeedbackRecord] {
        (start..<(start + count)).map { record($0) }
    }

    /// The wire bytes of `records`.
    package static func encode(_ records: [FeedbackRecord]) -> [UInt8] {
        var writer = ByteWriter(capacity: records.count * 38)
        for record in records { record.encode(into: &writer) }
        return writer.bytes
    }
}
