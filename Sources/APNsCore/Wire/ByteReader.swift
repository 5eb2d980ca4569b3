/// Reads big-endian integers and byte ranges from a buffer, NIO style: every read returns `nil`
/// on short input and then consumes nothing.
package struct ByteReader {
    @usableFromInline
    let bytes: UnsafeRawBufferPointer

    @usableFromInline
    var _readerIndex: Int

    /// The index of the next byte to read.
    @inlinable
    package var readerIndex: Int { _readerIndex }

    /// Reads `bytes`, which must stay valid while the reader is used.
    package init(_ bytes: UnsafeRawBufferPointer, readerIndex: Int = 0) {
        self.bytes = bytes
        self._readerIndex = readerIndex
    }

    /// Bytes left to read.
    @inlinable
    package var readableBytes: Int { bytes.count - readerIndex }

    /// Reads an integer, big-endian; nil when fewer than its size remain.
    @inlinable
    package mutating func readInteger<Integer: FixedWidthInteger>(as type: Integer.Type = Integer.self) -> Integer? {
        guard let value = getInteger(at: readerIndex, as: type) else { return nil }
        _readerIndex += MemoryLayout<Integer>.size
        return value
    }

    /// Reads an integer at an absolute index without moving; nil when it would run past the end.
    @inlinable
    package func getInteger<Integer: FixedWidthInteger>(at index: Int, as: Integer.Type = Integer.self) -> Integer? {
        let size = MemoryLayout<Integer>.size
        guard index >= 0, index + size <= bytes.count else { return nil }
        return Integer(bigEndian: bytes.loadUnaligned(fromByteOffset: index, as: Integer.self))
    }

    /// Reads `count` bytes; nil when fewer remain. The view is valid as long as the buffer is.
    @inlinable
    package mutating func readBytes(count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, readerIndex + count <= bytes.count else { return nil }
        defer { _readerIndex += count }
        return UnsafeRawBufferPointer(rebasing: bytes[readerIndex..<(readerIndex + count)])
    }

    /// Skips `count` bytes; false (and no move) when fewer remain.
    @inlinable
    package mutating func moveReaderIndex(forwardBy count: Int) -> Bool {
        guard count >= 0, readerIndex + count <= bytes.count else { return false }
        _readerIndex += count
        return true
    }
}
