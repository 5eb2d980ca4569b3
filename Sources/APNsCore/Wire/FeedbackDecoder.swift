/// Incremental decoder for the feedback stream: feed bytes in any split, pull ``FeedbackRecord``s.
///
/// Follows the same contract as ``FrameDecoder``: `nil` when more bytes are needed (nothing is
/// consumed), a record when one is complete, and at the end ``finish()`` throws if a tuple was cut
/// short, after every complete tuple before it was returned.
///
/// The decoder keeps one byte buffer. Consumed bytes are dropped when they make up at least half
/// of it (or all of it), so each byte is moved at most a constant number of times: a list of any
/// length decodes in linear time, with a buffer no larger than about twice the largest read.
///
/// ```swift
/// var decoder = FeedbackDecoder()
/// decoder.append(chunk)
/// while let record = try decoder.next() { handle(record) }
/// // ... at end of stream:
/// try decoder.finish()
/// ```
public struct FeedbackDecoder: Sendable {
    /// Bytes of the fixed part of a tuple: time (4) and token length (2).
    public static let headerByteCount = 6

    private var buffer: [UInt8] = []
    private var readIndex = 0

    /// Bytes consumed so far (the stream offset of the next tuple).
    public private(set) var consumedByteCount = 0

    /// Creates a decoder at the start of a stream.
    public init() {}

    /// Bytes received but not yet decoded.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Bytes the internal buffer holds, consumed ones included (for tests of memory use).
    package var storageByteCount: Int { buffer.count }

    /// Adds received bytes in memory (the connection's read buffer).
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex * 2 >= buffer.count {
            // At least half the buffer is consumed: moving the (smaller) rest costs no more than
            // the bytes consumed since the last move, so the total stays linear.
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        withContiguousBytes(bytes) { append($0) }
    }

    /// The next complete tuple, or nil when more bytes are needed.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/malformedFrame`` for a tuple whose token
    ///   length is 0 or over 100 bytes (no real service sends one). Nothing is consumed, so every
    ///   later call throws the same error.
    public mutating func next() throws -> FeedbackRecord? {
        let available = buffer.count - readIndex
        guard available >= Self.headerByteCount else { return nil }
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
            let size = Self.headerByteCount + length
            guard available >= size else { return nil }
            let token = try DeviceToken(
                bytes: UnsafeRawBufferPointer(rebasing: raw[(start + Self.headerByteCount)..<(start + size)]))
            readIndex += size
            consumedByteCount += size
            return FeedbackRecord(timestamp: timestamp, token: token)
        }
    }

    /// Decodes every complete tuple buffered, appending them to `records`, and shows `rawBytes`
    /// the exact wire bytes of those tuples (one contiguous range, only when there were any).
    ///
    /// `rawBytes` is called even when a malformed tuple stops decoding, for the complete tuples
    /// before it, which are then in `records` as well.
    ///
    /// - Throws: what ``next()`` throws.
    public mutating func decodeAvailable(
        into records: inout [FeedbackRecord], rawBytes: (ArraySlice<UInt8>) -> Void = { _ in }
    ) throws {
        let start = readIndex
        defer {
            if readIndex > start { rawBytes(buffer[start..<readIndex]) }
        }
        while let record = try next() { records.append(record) }
    }

    /// Declares the end of the stream: throws if part of a tuple remains.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/malformedFrame`` naming how many bytes were
    ///   left over and where the incomplete tuple starts.
    public func finish() throws {
        let remaining = bufferedByteCount
        guard remaining > 0 else { return }
        throw LegacyAPNsError(
            .malformedFrame,
            "feedback stream ends inside a tuple: \(remaining) bytes left at byte \(consumedByteCount)")
    }
}
