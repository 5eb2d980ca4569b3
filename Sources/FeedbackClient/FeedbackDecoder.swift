import LegacyAPNs

/// Incremental decoder for the feedback stream: feed bytes in any split, pull ``FeedbackRecord``s.
///
/// Follows the same contract as ``FrameDecoder``: `nil` when more bytes are needed (nothing is
/// consumed), a record when one is complete, and at the end ``finish()`` throws if a tuple was cut
/// short, after every complete tuple before it was returned. Consumed bytes are dropped in bulk,
/// so a long list streams in linear time with a buffer no larger than the reads.
public struct FeedbackDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var readIndex = 0

    /// Bytes consumed so far (the stream offset of the next tuple).
    public private(set) var consumedByteCount = 0

    public init() {}

    /// Bytes received but not yet decoded.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Adds received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= 4096, readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete tuple, or nil when more bytes are needed.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/malformedFrame`` for a tuple whose token
    ///   length is 0 or over 100 bytes (no real service sends one).
    public mutating func next() throws -> FeedbackRecord? {
        let available = buffer.count - readIndex
        guard available >= 6 else { return nil }
        let start = readIndex
        return try buffer.withUnsafeBytes { raw -> FeedbackRecord? in
            let reader = ByteReader(UnsafeRawBufferPointer(rebasing: raw[start...]))
            let timestamp = reader.getInteger(at: 0, as: UInt32.self)!
            let length = Int(reader.getInteger(at: 4, as: UInt16.self)!)
            guard length > 0, length <= DeviceToken.maximumByteCount else {
                throw LegacyAPNsError(
                    .malformedFrame,
                    "feedback tuple at byte \(consumedByteCount) has a token length of \(length) (expected 1...\(DeviceToken.maximumByteCount))"
                )
            }
            guard available >= 6 + length else { return nil }
            let token = try DeviceToken(
                bytes: UnsafeRawBufferPointer(rebasing: raw[(start + 6)..<(start + 6 + length)]))
            readIndex += 6 + length
            consumedByteCount += 6 + length
            return FeedbackRecord(timestamp: timestamp, token: token)
        }
    }

    /// Declares the end of the stream: throws if part of a tuple remains.
    public func finish() throws {
        let remaining = bufferedByteCount
        guard remaining > 0 else { return }
        throw LegacyAPNsError(
            .malformedFrame,
            "feedback stream ends inside a tuple: \(remaining) bytes left at byte \(consumedByteCount)")
    }
}
