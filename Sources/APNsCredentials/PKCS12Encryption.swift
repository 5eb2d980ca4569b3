import APNsCore

/// How a written PKCS#12 file is protected.
public enum PKCS12Encryption: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// OpenSSL 3's defaults: AES-256-CBC with PBKDF2 (HMAC-SHA-256) for both bags, SHA-256 MAC,
    /// 2048 iterations. Opens with OpenSSL 3, current macOS and iOS; not with OpenSSL 1.0 or old
    /// Java and Windows versions.
    case modern
    /// What Keychain Access exported for years: `pbeWithSHA1And40BitRC2-CBC` for the certificate
    /// bag, `pbeWithSHA1And3-KeyTripleDES-CBC` for the key bag, SHA-1 MAC. Weak, but every old
    /// tool reads it. Writing it needs OpenSSL's legacy provider.
    case legacy

    /// "modern" or "legacy".
    public var description: String { rawValue }
}
