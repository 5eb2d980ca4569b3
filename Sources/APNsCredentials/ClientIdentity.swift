import APNsCore

/// A certificate with its private key and the intermediate certificates to send with it: what one
/// side of a mutual-TLS connection presents.
///
/// The same type serves a provider connecting to the gateway or feedback service and the
/// simulator's server side. The key always belongs to the certificate (checked on creation).
///
/// ```swift
/// let identity = try ClientIdentity(pkcs12: p12Bytes, passphrase: "secret")
/// print(identity.certificate.topic ?? "?")
/// ```
public struct ClientIdentity: Sendable {
    /// The leaf certificate presented to the peer.
    public let certificate: Certificate
    /// The private key of ``certificate``.
    public let privateKey: PrivateKey
    /// Intermediate (and possibly root) certificates sent along, leaf-most first.
    public let chain: [Certificate]

    /// Pairs a certificate with its key.
    ///
    /// - Throws: `LegacyAPNsError` `.keyMismatch` when the key is not the certificate's.
    public init(certificate: Certificate, privateKey: PrivateKey, chain: [Certificate] = []) throws {
        guard privateKey.matches(certificate) else {
            throw LegacyAPNsError(.keyMismatch, "private key does not match the certificate")
        }
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
    }

    /// Opens a PKCS#12 (`.p12`/`.pfx`) file: modern (AES/PBKDF2), 3DES, Keychain-style RC2-40,
    /// unencrypted, or protected by the empty passphrase.
    ///
    /// - Parameters:
    ///   - pkcs12: The file's bytes.
    ///   - passphrase: The file's passphrase. Nil or empty tries both the empty passphrase and no
    ///     passphrase at all, which different tools write for "none".
    /// - Throws: `LegacyAPNsError` `.wrongPassphrase` ("wrong passphrase for the PKCS#12 file"),
    ///   `.corruptCredentials` ("not a PKCS#12 file: ..."), `.unsupportedCredentials` (RC2-40 without
    ///   OpenSSL's legacy provider, or a file holding two identities), `.missingCredentials` (no key
    ///   or no certificate inside), `.keyMismatch`. A file with more than one key uses the key that
    ///   belongs to one of its certificates, whatever the order of the bags.
    public init(pkcs12: [UInt8], passphrase: String?) throws {
        let contents = try PKCS12.parse(pkcs12, passphrase: passphrase)
        try self.init(contents: contents, source: "the PKCS#12 file")
    }

    /// Reads a certificate (plus chain) and its key from PEM.
    ///
    /// - Parameters:
    ///   - pem: One or more certificates, possibly followed or preceded by the private key. The
    ///     certificate matching the key is the leaf; the others become the ``chain``, in order.
    ///   - keyPEM: The private key when it is in a separate file; it takes precedence over a key
    ///     inside `pem`.
    ///   - passphrase: Decrypts an encrypted key.
    /// - Throws: `LegacyAPNsError` `.missingCredentials` (no certificate, or no key anywhere),
    ///   `.wrongPassphrase`, `.corruptCredentials`, `.keyMismatch`.
    public init(pem: [UInt8], keyPEM: [UInt8]? = nil, passphrase: String?) throws {
        let credentials = try Credentials(pem: pem, keyPEM: keyPEM, passphrase: passphrase)
        self = try credentials.identity()
    }

    init(contents: PKCS12.Contents, source: String) throws {
        guard let certificate = contents.certificate else {
            throw LegacyAPNsError(.missingCredentials, "\(source) holds no certificate")
        }
        guard let privateKey = contents.privateKey else {
            throw LegacyAPNsError(.missingCredentials, "\(source) holds no private key")
        }
        try self.init(certificate: certificate, privateKey: privateKey, chain: contents.chain)
    }

    /// The identity as PEM text in `openssl pkcs12 -nodes` order: the certificate, the chain, then
    /// the unencrypted PKCS#8 private key. Write it only to a file readable by its owner alone.
    public var pemRepresentation: String {
        certificate.pemRepresentation + chain.map(\.pemRepresentation).joined() + privateKey.pemRepresentation
    }

    /// The identity as a PKCS#12 file (certificate, key and chain).
    ///
    /// - Parameters:
    ///   - passphrase: Protects the file; the empty string is allowed.
    ///   - encryption: ``PKCS12Encryption/modern`` (default) or ``PKCS12Encryption/legacy`` for
    ///     old tools.
    ///   - friendlyName: The name Keychain Access shows, or nil for none.
    /// - Throws: `LegacyAPNsError` `.unsupportedCredentials` when legacy encryption is asked for and
    ///   OpenSSL's legacy provider is missing.
    public func pkcs12Representation(
        passphrase: String, encryption: PKCS12Encryption = .modern, friendlyName: String? = nil
    ) throws -> [UInt8] {
        try PKCS12.create(
            certificate: certificate, privateKey: privateKey, chain: chain, passphrase: passphrase,
            encryption: encryption, friendlyName: friendlyName)
    }
}
