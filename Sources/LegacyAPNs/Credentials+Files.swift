#if canImport(Glibc)
    import Glibc
#endif

// File conveniences for programs that keep their certificates in files. The credential types
// themselves take bytes (any collection of them, `Data` included); these read a file by its path
// (a `URL`'s `.path`) and name the file in every error, as the command line does:
//
//     let identity = try ClientIdentity(pkcs12File: "Fixtures/certs/push.p12", passphrase: "secret")
//     let trust = try TLSConfiguration.Trust.pem(file: "Fixtures/certs/ca.pem")
//
// Paths, not `URL`s: this module does not import Foundation (nor load it into every program that
// sends through it).

extension ClientIdentity {
    /// Reads a `.p12`/`.pfx` file (see `init(pkcs12:passphrase:)`).
    ///
    /// - Throws: ``LegacyAPNsError`` `.fileError` when the file cannot be read; the PKCS#12
    ///   errors otherwise, their reason prefixed with the file's path.
    public init(pkcs12File path: String, passphrase: String?) throws {
        let bytes = try Self.read(path)
        self = try Self.naming(path) { try ClientIdentity(pkcs12: bytes, passphrase: passphrase) }
    }

    /// Reads a PEM certificate (plus chain), with the key in the same file or in `keyPath` (see
    /// `init(pem:keyPEM:passphrase:)`).
    ///
    /// - Throws: ``LegacyAPNsError`` `.fileError` when a file cannot be read; the PEM errors
    ///   otherwise, their reason prefixed with the path.
    public init(pemFile path: String, keyFile keyPath: String? = nil, passphrase: String?) throws {
        let pem = try Self.read(path)
        let key = try keyPath.map { try Self.read($0) }
        self = try Self.naming(keyPath ?? path) { try ClientIdentity(pem: pem, keyPEM: key, passphrase: passphrase) }
    }

    /// The file's bytes (at most 64 MiB), or a `.fileError` naming it ("cannot read 'x.p12': No
    /// such file or directory").
    static func read(_ path: String) throws -> [UInt8] {
        func failure(_ reason: String) -> LegacyAPNsError {
            LegacyAPNsError(.fileError, "cannot read '\(path)': \(reason)")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw failure(String(cString: strerror(errno))) }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > 64 * 1024 * 1024 { throw failure("larger than 64 MiB") }
        }
    }

    /// Runs `body`, prefixing the reason of a thrown ``LegacyAPNsError`` with the file's path.
    static func naming<Result>(_ path: String, _ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let error as LegacyAPNsError {
            throw LegacyAPNsError(error.code, "\(path): \(error.reason)", underlying: error)
        }
    }
}

extension TLSConfiguration.Trust {
    /// Trusts the CA certificates in a PEM file (see `pem(_:)`).
    ///
    /// - Throws: ``LegacyAPNsError`` `.fileError` when the file cannot be read,
    ///   `.corruptCredentials` when it holds no certificate.
    public static func pem(file path: String) throws -> Self {
        let bytes = try ClientIdentity.read(path)
        return try ClientIdentity.naming(path) { try .pem(bytes) }
    }
}

extension Certificate {
    /// Every certificate in a PEM file, in order (empty when it holds none).
    ///
    /// - Throws: ``LegacyAPNsError`` `.fileError` when the file cannot be read.
    public static func certificates(pemFile path: String) throws -> [Certificate] {
        certificates(pemRepresentation: try ClientIdentity.read(path))
    }
}
