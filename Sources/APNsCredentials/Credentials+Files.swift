import APNsCore

// File conveniences for programs that keep their credentials in files. The credential types
// themselves take bytes (any collection of them, `Data` included); these read a file by its path
// (a `URL`'s `.path`) and name the file in every error, as the command line does:
//
//     let identity = try ClientIdentity(pkcs12File: "Fixtures/certs/push.p12", passphrase: "secret")
//     let trust = try TLSConfiguration.Trust.pem(file: "Fixtures/certs/ca.pem")
//     let key = try SigningKey(pemFile: "Fixtures/certs/AuthKey_ABC123DEFG.p8")
//
// They live here, in the module every client module re-exports (LegacyAPNs, FeedbackClient,
// HTTP2Client, LegacyBridge, GatewaySimulator), so one import of any of them has them. Paths, not
// `URL`s: this module does not import Foundation (nor load it into every program that sends
// through it).

extension ClientIdentity {
    /// Reads a `.p12`/`.pfx` file (see `init(pkcs12:passphrase:)`).
    ///
    /// - Throws: `LegacyAPNsError` `.fileError` when the file cannot be read ("cannot read
    ///   'push.p12': No such file or directory"); the PKCS#12 errors otherwise, their reason
    ///   prefixed with the file's path.
    public init(pkcs12File path: String, passphrase: String?) throws {
        let bytes = try CredentialFile.read(path)
        self = try CredentialFile.naming(path) { try ClientIdentity(pkcs12: bytes, passphrase: passphrase) }
    }

    /// Reads a PEM certificate (plus chain), with the key in the same file or in `keyPath` (see
    /// `init(pem:keyPEM:passphrase:)`).
    ///
    /// - Throws: `LegacyAPNsError` `.fileError` when a file cannot be read; the PEM errors
    ///   otherwise, their reason prefixed with the path.
    public init(pemFile path: String, keyFile keyPath: String? = nil, passphrase: String?) throws {
        let pem = try CredentialFile.read(path)
        let key = try keyPath.map { try CredentialFile.read($0) }
        self = try CredentialFile.naming(keyPath ?? path) {
            try ClientIdentity(pem: pem, keyPEM: key, passphrase: passphrase)
        }
    }
}

extension SigningKey {
    /// Reads an APNs token-signing key file, the `AuthKey_<KEYID>.p8` Apple's developer portal
    /// offers (see ``init(pemRepresentation:)``; ``keyID(fromFileName:)`` reads the key id from
    /// that name).
    ///
    /// ```swift
    /// let path = "keys/AuthKey_ABC123DEFG.p8"
    /// let key = try SigningKey(pemFile: path)
    /// let credentials = ProviderCredentials.token(key, keyID: SigningKey.keyID(fromFileName: path)!, teamID: "DEF123GHIJ")
    /// ```
    ///
    /// - Throws: `LegacyAPNsError` `.fileError` when the file cannot be read ("cannot read
    ///   'AuthKey_ABC123DEFG.p8': No such file or directory"); the key errors otherwise, their
    ///   reason prefixed with the file's path.
    public init(pemFile path: String) throws {
        let bytes = try CredentialFile.read(path)
        self = try CredentialFile.naming(path) { try SigningKey(pemRepresentation: bytes) }
    }
}

extension TLSConfiguration.Trust {
    /// Trusts the CA certificates in a PEM file (see `pem(_:)`).
    ///
    /// - Throws: `LegacyAPNsError` `.fileError` when the file cannot be read,
    ///   `.corruptCredentials` when it holds no certificate.
    public static func pem(file path: String) throws -> Self {
        let bytes = try CredentialFile.read(path)
        return try CredentialFile.naming(path) { try .pem(bytes) }
    }
}

extension Certificate {
    /// Every certificate in a PEM file, in order (empty when it holds none).
    ///
    /// - Throws: `LegacyAPNsError` `.fileError` when the file cannot be read.
    public static func certificates(pemFile path: String) throws -> [Certificate] {
        certificates(pemRepresentation: try CredentialFile.read(path))
    }
}
