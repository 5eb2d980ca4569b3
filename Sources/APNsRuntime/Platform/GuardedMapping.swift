internal import CFileGuard

#if canImport(Glibc)
    import Glibc
#endif

/// A read-only mapping of part of a file that survives the file being truncated meanwhile.
///
/// A mapped file that another process truncates would kill the reader with SIGBUS at the first
/// page past the new end: the mapping is guarded (CFileGuard), so such a page reads as zeros
/// instead, and ``wasTruncated`` says so. The bytes stay readable while the value lives; it
/// unmaps itself when it goes.
package struct GuardedMapping: ~Copyable {
    /// Why a range could not be mapped (read it another way then).
    package enum Failure: Error {
        /// `mmap` failed.
        case cannotMap(SystemError)
        /// Every guard slot is taken (or the SIGBUS handler cannot be installed).
        case noGuardLeft
    }

    /// The bytes of the range asked for.
    package let bytes: UnsafeRawBufferPointer
    private let mapping: UnsafeMutableRawPointer
    private let length: Int
    private let slot: Int32

    /// Maps `range` of the file open at `descriptor` (read ahead at once: `MAP_POPULATE`).
    package init(_ descriptor: Int32, range: Range<Int>) throws(Failure) {
        let start = range.lowerBound & ~(Host.pageSize - 1)
        let length = range.upperBound - start
        guard let mapping = mmap(nil, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, descriptor, off_t(start)),
            mapping != MAP_FAILED
        else { throw .cannotMap(.last) }
        let slot = lp_file_guard_register(mapping, length)
        guard slot >= 0 else {
            munmap(mapping, length)
            throw .noGuardLeft
        }
        self.mapping = mapping
        self.length = length
        self.slot = slot
        bytes = UnsafeRawBufferPointer(start: mapping + (range.lowerBound - start), count: range.count)
    }

    /// Whether a page of the range was past the file's end when it was read (the file was
    /// truncated meanwhile): it read as zeros.
    package var wasTruncated: Bool { lp_file_guard_hit(slot) }

    deinit {
        _ = lp_file_guard_release(slot)
        munmap(mapping, length)
    }
}
