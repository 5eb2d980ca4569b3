/// A growable byte buffer for building frames, in NIO's vocabulary.
///
/// The storage is kept between uses (``clear()`` does not free it), so after warm-up, encoding
/// frames into the same writer allocates nothing. Integers are written big-endian.
public struct ByteWriter: Sendable {
    /// Capacity; only the first `count` bytes are meaningful.
    @usableFromInline
    var storage: [UInt8]

    @usableFromInline
    var _count: Int

    /// How many bytes have been written.
    @inlinable
    public var count: Int { _count }

    /// Creates a writer with room for `capacity` bytes.
    public init(capacity: Int = 0) {
        storage = [UInt8](repeating: 0, count: capacity)
        _count = 0
    }

    /// Whether nothing has been written.
    public var isEmpty: Bool { count == 0 }

    /// How many bytes fit before the storage has to grow.
    public var capacity: Int { storage.count }

    /// Makes sure `additional` more bytes fit without growing.
    @inlinable
    public mutating func reserveCapacity(additional: Int) {
        let needed = count + additional
        if needed > storage.count { grow(to: needed) }
    }

    @usableFromInline
    mutating func grow(to needed: Int) {
        let newCapacity = Swift.max(needed, storage.count * 2, 64)
        storage.append(contentsOf: repeatElement(0, count: newCapacity - storage.count))
    }

    /// Gives `body` the next `byteCount` bytes to fill, and counts them as written.
    ///
    /// `body` must initialise all of them.
    @inlinable
    package mutating func writeWithUnsafeMutableBytes(
        byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows {
        reserveCapacity(additional: byteCount)
        let start = count
        try storage.withUnsafeMutableBytes { raw in
            try body(UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + byteCount)]))
        }
        _count += byteCount
    }

    /// Gives `body` room for up to `maximumCount` bytes, and counts as written the number it
    /// returns (which it must have initialised, from the start of the room).
    @inlinable
    package mutating func writeWithUnsafeMutableBytes(
        upTo maximumCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Int
    ) rethrows {
        reserveCapacity(additional: maximumCount)
        let start = count
        let written = try storage.withUnsafeMutableBytes { raw in
            try body(UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + maximumCount)]))
        }
        precondition(written >= 0 && written <= maximumCount, "wrote past the room given")
        _count += written
    }

    /// Writes an integer, big-endian.
    @inlinable
    public mutating func writeInteger<Integer: FixedWidthInteger>(_ value: Integer) {
        let size = MemoryLayout<Integer>.size
        writeWithUnsafeMutableBytes(byteCount: size) { raw in
            raw.storeBytes(of: value.bigEndian, toByteOffset: 0, as: Integer.self)
        }
    }

    /// Writes bytes in memory as they are.
    @inlinable
    package mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        writeWithUnsafeMutableBytes(byteCount: bytes.count) { raw in
            raw.copyMemory(from: bytes)
        }
    }

    /// Writes bytes as they are.
    @inlinable
    public mutating func writeBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeBytes($0) }
    }

    /// Calls `body` with the written bytes.
    @inlinable
    package func withUnsafeReadableBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        try storage.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[0..<count]))
        }
    }

    /// A copy of the written bytes.
    public var bytes: [UInt8] { Array(storage[0..<count]) }

    /// Forgets the written bytes and keeps the storage.
    public mutating func clear() { _count = 0 }

    /// Drops the first `byteCount` written bytes (already sent), keeping the rest in order.
    public mutating func removeFirst(_ byteCount: Int) {
        precondition(byteCount >= 0 && byteCount <= count, "removeFirst beyond written bytes")
        guard byteCount > 0 else { return }
        let remaining = count - byteCount
        if remaining > 0 {
            storage.withUnsafeMutableBytes { raw in
                raw.baseAddress!.copyMemory(from: raw.baseAddress! + byteCount, byteCount: remaining)
            }
        }
        _count = remaining
    }
}
