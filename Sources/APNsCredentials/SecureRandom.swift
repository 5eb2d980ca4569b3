internal import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's generator (seeded by the kernel, then in
/// user space: no system call per request).
package enum SecureRandom {
    /// Fills `buffer`; false only if OpenSSL's generator failed (it is then not seeded).
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return true }
        return RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1
    }
}
