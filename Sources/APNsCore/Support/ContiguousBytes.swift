/// Runs `body` with the bytes of `bytes` in contiguous memory: where they already are (an array,
/// a slice of one, a buffer), else in a copy. How the public byte-collection APIs reach the
/// pointer-based code under them.
@inlinable
func withContiguousBytes<Bytes: Collection<UInt8>, Result>(
    _ bytes: Bytes, _ body: (UnsafeRawBufferPointer) throws -> Result
) rethrows -> Result {
    if let result = try bytes.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return try Array(bytes).withUnsafeBytes(body)
}
