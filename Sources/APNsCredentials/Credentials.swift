import APNsCore

/// Whatever a credentials file holds, loaded by content: a PKCS#12 file, PEM (certificates, maybe
/// a key) or a DER `.cer` certificate, optionally with a separate PEM key.
///
/// Unlike ``ClientIdentity`` it may lack a key (a `.cer`, a certificate-only PEM) and keeps a key
/// that does not match, so tools can inspect and convert such files and report the mismatch.
///
/// ```swift
/// let credentials = try Credentials(bytes, passphrase: nil)
/// if let identity = try? credentials.identity() { ... }
/// ```
public struct Credentials: Sendable {
    /// The format the main bytes were in.
    public let format: CredentialFormat
    /// The (leaf) certificate.
    public let certificate: Certificate
    /// Further certificates, leaf-most first.
    public let chain: [Certificate]
    /// The private key, when the bytes or the separate key held one.
    public let privateKey: PrivateKey?

    /// Creates credentials from parts (no checks).
    public init(format: CredentialFormat, certificate: Certificate, chain: [Certificate], privateKey: PrivateKey?) {
        self.format = format
        self.certificate = certificate
        self.chain = chain
        self.privateKey = privateKey
    }

    /// Loads credentials, detecting the format from the bytes (see ``CredentialFormat/detect(_:)``).
    ///
    /// - Parameters:
    ///   - bytes: A PKCS#12 file, PEM text or a DER certificate.
    ///   - keyPEM: A separate PEM private key; it takes precedence over a key inside `bytes`.
    ///   - passphrase: For the PKCS#12 file and for an encrypted key (one passphrase for both).
    /// - Throws: `LegacyAPNsError` `.corruptCredentials` when the bytes are none of the formats,
    ///   or the errors of ``ClientIdentity/init(pkcs12:passphrase:)-([UInt8],_)`` and ``PrivateKey``.
    public init(_ bytes: [UInt8], keyPEM: [UInt8]? = nil, passphrase: String?) throws {
        let loaded: Credentials
        switch CredentialFormat.detect(bytes) {
        case .pkcs12:
            let contents = try PKCS12.parse(bytes, passphrase: passphrase)
            guard let certificate = contents.certificate else {
                throw LegacyAPNsError(.missingCredentials, "the PKCS#12 file holds no certificate")
            }
            loaded = Credentials(
                format: .pkcs12, certificate: certificate, chain: contents.chain, privateKey: contents.privateKey)
        case .pem:
            self = try Credentials(pem: bytes, keyPEM: keyPEM, passphrase: passphrase)
            return
        case .der:
            loaded = Credentials(
                format: .der, certificate: try Certificate(derRepresentation: bytes), chain: [], privateKey: nil)
        case nil:
            throw LegacyAPNsError(
                .corruptCredentials, "not a certificate or PKCS#12 file (expected PKCS#12, PEM or DER contents)")
        }
        guard let keyPEM else {
            self = loaded
            return
        }
        self = loaded.replacingPrivateKey(try PrivateKey(pemRepresentation: keyPEM, passphrase: passphrase))
    }

    /// Loads PEM: certificates plus an optional key (here or in `keyPEM`). The certificate that
    /// matches the key is the leaf; without a matching key, the first certificate that is not a CA
    /// (bundles often put the CA first), else the first. The rest are the chain, in file order.
    init(pem: [UInt8], keyPEM: [UInt8]?, passphrase: String?) throws {
        var certificates = Certificate.certificates(pemRepresentation: pem)
        if certificates.isEmpty {
            // Throws the precise reason: no certificate block, or a damaged one.
            certificates = [try Certificate(pemRepresentation: pem)]
        }
        let key: PrivateKey?
        if let keyPEM {
            key = try PrivateKey(pemRepresentation: keyPEM, passphrase: passphrase)
        } else if PrivateKey.containsKey(pem) {
            key = try PrivateKey(pemRepresentation: pem, passphrase: passphrase)
        } else {
            key = nil
        }
        let leafIndex =
            key.flatMap { key in certificates.firstIndex { key.matches($0) } }
            ?? certificates.firstIndex { !$0.isCertificateAuthority } ?? 0
        let leaf = certificates.remove(at: leafIndex)
        self.init(format: .pem, certificate: leaf, chain: certificates, privateKey: key)
    }

    /// The same certificates with `privateKey` as the key. Among the certificate and the chain, the
    /// one that matches the key becomes the leaf (PEM bundles do not always put it first); when
    /// none matches, the leaf stays and ``keyMatches`` is false.
    public func replacingPrivateKey(_ privateKey: PrivateKey) -> Credentials {
        var certificates = [certificate] + chain
        let leafIndex = certificates.firstIndex { privateKey.matches($0) } ?? 0
        let leaf = certificates.remove(at: leafIndex)
        return Credentials(format: format, certificate: leaf, chain: certificates, privateKey: privateKey)
    }

    /// Whether the private key belongs to the certificate; nil when there is no key.
    public var keyMatches: Bool? { privateKey.map { $0.matches(certificate) } }

    /// The credentials as a ``ClientIdentity``.
    ///
    /// - Throws: `LegacyAPNsError` `.missingCredentials` without a key, `.keyMismatch` when the
    ///   key is not the certificate's.
    public func identity() throws -> ClientIdentity {
        guard let privateKey else {
            throw LegacyAPNsError(.missingCredentials, "there is a certificate but no private key")
        }
        return try ClientIdentity(certificate: certificate, privateKey: privateKey, chain: chain)
    }
}
