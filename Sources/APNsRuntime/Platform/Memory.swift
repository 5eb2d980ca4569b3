#if canImport(Glibc)
    import Glibc
#endif

/// The C library's byte searches and comparisons, for the hot paths above the runtime (inlined
/// into their callers: no call more than before), and page-aligned memory.
package enum Memory {
    /// Whether the two byte ranges hold the same bytes (`memcmp`).
    @inlinable
    package static func equal(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        guard first.count == second.count else { return false }
        guard first.count > 0 else { return true }
        return memcmp(first.baseAddress!, second.baseAddress!, first.count) == 0
    }

    /// The offset of the first `byte` in `bytes` at or after `start`, or nil (`memchr`).
    @inlinable
    package static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
            let found = memchr(base + start, Int32(byte), bytes.count - start)
        else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// `size` bytes aligned to `size` (a power of two), on huge pages where the system offers
    /// them (`MADV_HUGEPAGE`); nil when the memory cannot be had. Give it back with
    /// ``deallocateAligned(_:)``.
    package static func allocateAligned(_ size: Int) -> UnsafeMutableRawPointer? {
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, size, size) == 0, let memory else { return nil }
        _ = madvise(memory, size, MADV_HUGEPAGE)
        return memory
    }

    /// Gives back memory from ``allocateAligned(_:)``.
    package static func deallocateAligned(_ memory: UnsafeMutableRawPointer) { free(memory) }
}
