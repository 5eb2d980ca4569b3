import APNsCore

// Every loader also takes any collection of bytes, so Foundation's `Data` (a
// `Collection<UInt8>`) works as it is, without this module importing Foundation:
//
//     let identity = try ClientIdentity(pkcs12: Data(contentsOf: url), passphrase: "secret")
//
// The `[UInt8]` originals stay the ones an array picks.

extension ClientIdentity {
    /// `init(pkcs12:passphrase:)` for any bytes (`Data`, a slice).
    public init(pkcs12: some Collection<UInt8>, passphrase: String?) throws {
        try self.init(pkcs12: Array(pkcs12), passphrase: passphrase)
    }

    /// `init(pem:keyPEM:passphrase:)` for any bytes (`Data`, a slice).
    public init<Bytes: Collection<UInt8>>(pem: Bytes, keyPEM: Bytes? = nil, passphrase: String?) throws {
        try self.init(pem: Array(pem), keyPEM: keyPEM.map { Array($0) }, passphrase: passphrase)
    }
}

extension Certificate {
    /// `init(derRepresentation:)` for any bytes (`Data`, a slice).
    public convenience init(derRepresentation: some Collection<UInt8>) throws {
        try self.init(derRepresentation: Array(derRepresentation))
    }

    /// `init(pemRepresentation:)` for any bytes (`Data`, a slice).
    public convenience init(pemRepresentation: some Collection<UInt8>) throws {
        try self.init(pemRepresentation: Array(pemRepresentation))
    }

    /// `certificates(pemRepresentation:)` for any bytes (`Data`, a slice).
    public static func certificates(pemRepresentation: some Collection<UInt8>) -> [Certificate] {
        certificates(pemRepresentation: Array(pemRepresentation))
    }
}

extension PrivateKey {
    /// `init(pemRepresentation:passphrase:)` for any bytes (`Data`, a slice).
    public convenience init(pemRepresentation: some Collection<UInt8>, passphrase: String? = nil) throws {
        try self.init(pemRepresentation: Array(pemRepresentation), passphrase: passphrase)
    }
}

extension Credentials {
    /// `init(_:keyPEM:passphrase:)` for any bytes (`Data`, a slice).
    public init<Bytes: Collection<UInt8>>(_ bytes: Bytes, keyPEM: Bytes? = nil, passphrase: String?) throws {
        try self.init(Array(bytes), keyPEM: keyPEM.map { Array($0) }, passphrase: passphrase)
    }
}

extension TLSConfiguration.Trust {
    /// `pem(_:)` for any bytes (`Data`, a slice).
    public static func pem(_ bytes: some Collection<UInt8>) throws -> Self {
        try pem(Array(bytes))
    }
}
