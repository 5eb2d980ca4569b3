import APNsCore
internal import COpenSSL

/// ES256 signatures with OpenSSL's EVP API, and the two encodings of one signature.
///
/// OpenSSL signs and verifies DER (`SEQUENCE { INTEGER r, INTEGER s }`, 70-72 bytes for P-256,
/// minimal integers with a leading 00 when the top bit is set); JWS (RFC 7518 §3.4) carries the
/// fixed 64 bytes `r ‖ s`, each left-padded with zeros to 32 bytes:
///
/// ```
/// DER  30 len 02 rlen <r, minimal> 02 slen <s, minimal>
/// JWS  <r, 32 bytes big-endian> <s, 32 bytes big-endian>
/// ```
enum ECDSASignature {
    /// The byte length of r and of s for P-256.
    static let scalarCount = 32

    /// Signs `message` with SHA-256 and an EC private key; the DER signature, or nil when OpenSSL
    /// fails (its error queue is left for the caller to drain).
    static func sign(_ message: [UInt8], key: OpaquePointer) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit_ex(context, nil, "SHA256", OpenSSLLibrary.shared.context, nil, key, nil) == 1 else {
            return nil
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { return nil }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { return nil }
        return Array(signature.prefix(length))
    }

    /// Whether `der` is a valid signature of `message` (SHA-256) by `key`.
    static func verify(_ der: [UInt8], message: UnsafeRawBufferPointer, key: OpaquePointer) -> Bool {
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit_ex(context, nil, "SHA256", OpenSSLLibrary.shared.context, nil, key, nil) == 1
        else { return false }
        let base = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
        return EVP_DigestVerify(context, der, der.count, base, message.count) == 1
    }

    /// The 64-byte `r ‖ s` of a DER signature (r and s left-padded to 32 bytes), or nil when the
    /// bytes are not exactly one DER ECDSA signature with r and s below 2^256.
    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        defer { ERR_clear_error() }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            guard let cursor, cursor - base == buffer.count else {
                ECDSA_SIG_free(signature)
                return nil
            }
            return signature
        }
        guard let parsed else { return nil }
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(parsed, &r, &s)
        guard let r, let s else { return nil }
        var raw = [UInt8](repeating: 0, count: 2 * scalarCount)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (
                BN_bn2binpad(r, buffer.baseAddress, Int32(scalarCount)),
                BN_bn2binpad(s, buffer.baseAddress! + scalarCount, Int32(scalarCount))
            )
        }
        guard written.0 == Int32(scalarCount), written.1 == Int32(scalarCount) else { return nil }
        return raw
    }

    /// The DER form of a 64-byte `r ‖ s` signature, or nil when it does not have 64 bytes.
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 2 * scalarCount else { return nil }
        defer { ERR_clear_error() }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (
                BN_bin2bn(buffer.baseAddress, Int32(scalarCount), nil),
                BN_bin2bn(buffer.baseAddress! + scalarCount, Int32(scalarCount), nil)
            )
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        // r and s now belong to the signature. DER of two 32-byte integers: at most 72 bytes.
        var der = [UInt8](repeating: 0, count: 80)
        let count = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard count > 0 else { return nil }
        der.removeLast(der.count - Int(count))
        return der
    }
}
