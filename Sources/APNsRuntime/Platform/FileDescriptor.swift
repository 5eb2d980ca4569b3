import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// Plain file-descriptor helpers shared by the targets.
package enum FileDescriptor {
    /// Writes every byte, retrying after signals and short writes. Returns nil on success, or the
    /// `errno` of the failure.
    @discardableResult
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if written == 0 { return EIO }
            offset += written
        }
        return nil
    }

    /// Writes every byte of `bytes`; nil on success, else the `errno`.
    @discardableResult
    package static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        bytes.withUnsafeBytes { writeAll($0, to: descriptor) }
    }

    /// Raises this process's soft limit on open descriptors to `count` (at most the hard limit),
    /// for a server that holds many connections. Never lowers it.
    package static func raiseLimit(to count: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
        limit.rlim_cur = Swift.min(rlim_t(count), limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
