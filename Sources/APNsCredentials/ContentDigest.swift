internal import COpenSSL

/// SHA-256 over pieces of bytes, reusable without allocating: one per thread (not `Sendable`).
/// The bridge keys its resend memory with it.
package final class ContentDigest {
    // nonisolated(unsafe): fetched once, then only read; OpenSSL's EVP_MD objects are immutable and
    // thread-safe to share.
    nonisolated(unsafe) private static let algorithm: OpaquePointer = {
        guard let digest = EVP_MD_fetch(OpenSSLLibrary.shared.context, "SHA256", nil) else {
            fatalError("OpenSSL has no SHA256 digest")
        }
        return digest
    }()

    private let context: OpaquePointer
    private var output = [UInt8](repeating: 0, count: 32)

    package init() {
        guard let context = EVP_MD_CTX_new() else { fatalError("OpenSSL could not allocate a digest (out of memory)") }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Starts a new digest.
    package func begin() {
        _ = EVP_DigestInit_ex2(context, Self.algorithm, nil)
    }

    /// Adds bytes.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = EVP_DigestUpdate(context, base, bytes.count)
    }

    /// Adds an integer's bytes (little-endian).
    package func update<Value: FixedWidthInteger>(integer value: Value) {
        withUnsafeBytes(of: value.littleEndian) { update($0) }
    }

    /// The first 128 bits of the digest.
    package func finish() -> UInt128 {
        var length: UInt32 = 0
        output.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        var value: UInt128 = 0
        for index in 0..<16 { value = (value << 8) | UInt128(output[index]) }
        return value
    }
}
