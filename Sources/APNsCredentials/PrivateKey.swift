import APNsCore
internal import COpenSSL

/// A private key (RSA, EC, Ed25519, ...), read from PEM in any of the encodings old push setups
/// left behind.
///
/// Immutable. Accepted PEM forms: PKCS#8 (`BEGIN PRIVATE KEY`), encrypted PKCS#8
/// (`BEGIN ENCRYPTED PRIVATE KEY`), traditional PKCS#1 / SEC1 (`BEGIN RSA PRIVATE KEY`,
/// `BEGIN EC PRIVATE KEY`), also encrypted (`Proc-Type: 4,ENCRYPTED`). Other PEM blocks in the
/// same text (certificates) are skipped.
public final class PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never modified after loading; OpenSSL allows concurrent use of a
    // shared key for signing, comparing and encoding.

    /// The owned `EVP_PKEY*` (one reference, released in `deinit`). It never leaves this module:
    /// the TLS code asks for what it needs (`Credentials+TLS.swift`).
    let pointer: OpaquePointer

    /// Takes over one reference to `pointer`.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Reads the first private key in PEM text.
    ///
    /// - Parameters:
    ///   - pemRepresentation: PEM text; may also hold certificates, which are skipped.
    ///   - passphrase: Decrypts an encrypted key; ignored for an unencrypted one.
    /// - Throws: `LegacyAPNsError` `.wrongPassphrase` when the key is encrypted and the
    ///   passphrase is missing or wrong, `.missingCredentials` when there is no key block,
    ///   `.corruptCredentials` when the key block is damaged.
    public convenience init(pemRepresentation: [UInt8], passphrase: String? = nil) throws {
        let block: KeyBlock
        switch Self.scan(pemRepresentation) {
        case .none: throw LegacyAPNsError(.missingCredentials, "no private key in the PEM data")
        case .damaged:
            throw LegacyAPNsError(.corruptCredentials, "damaged private key in the PEM data (bad base64 or framing)")
        case .found(let found): block = found
        }
        let bio = MemoryBIO(pemRepresentation)
        let parsed: OpaquePointer? = OpenSSLLibrary.shared.withContext {
            ERR_clear_error()
            return Self.withPassphrase(passphrase) { userdata in
                PEM_read_bio_PrivateKey_ex(
                    bio.pointer, nil,
                    { buffer, size, _, userdata in PrivateKey.supplyPassphrase(buffer, size, userdata) },
                    userdata, OpenSSLLibrary.shared.context, nil)
            }
        }
        guard let parsed else {
            let error = OpenSSLError.drain("PEM_read_bio_PrivateKey")
            if block.isEncrypted, passphrase == nil {
                throw LegacyAPNsError(.wrongPassphrase, "the private key is encrypted and no passphrase was given")
            }
            // The block's framing and (for PKCS#8) outer structure are intact, so a failure after
            // decryption started is the passphrase: a wrong one almost always fails the padding
            // check, and in the rare case it does not, the decrypted bytes fail to parse.
            if block.isEncrypted, block.isIntact {
                throw LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the private key")
            }
            let detail = error.shortReason.map { ": \($0)" } ?? ""
            throw LegacyAPNsError(.corruptCredentials, "damaged private key in the PEM data\(detail)")
        }
        self.init(taking: parsed)
    }

    /// What the first private key block of some PEM text looks like before decoding it.
    struct KeyBlock {
        /// `ENCRYPTED PRIVATE KEY`, or a traditional block with `Proc-Type: 4,ENCRYPTED`.
        var isEncrypted: Bool
        /// Whether the decoded bytes have the expected outer shape (a complete DER SEQUENCE for
        /// PKCS#8, whole cipher blocks for traditional encryption).
        var isIntact: Bool
    }

    enum ScanResult {
        case none
        case damaged
        case found(KeyBlock)
    }

    /// Finds the first `... PRIVATE KEY` block with OpenSSL's PEM reader (framing and base64 only).
    static func scan(_ pem: [UInt8]) -> ScanResult {
        let bio = MemoryBIO(pem)
        defer { ERR_clear_error() }
        while true {
            var name: UnsafeMutablePointer<CChar>? = nil
            var header: UnsafeMutablePointer<CChar>? = nil
            var data: UnsafeMutablePointer<UInt8>? = nil
            var length = 0
            guard PEM_read_bio(bio.pointer, &name, &header, &data, &length) == 1 else {
                // The reader stops at the end, or at a damaged block: damaged if a key block
                // header appears in the text at all.
                return containsKey(pem) ? .damaged : .none
            }
            defer {
                COpenSSL_OPENSSL_free(name)
                COpenSSL_OPENSSL_free(header)
                COpenSSL_OPENSSL_free(data)
            }
            let label = name.map { String(cString: $0) } ?? ""
            guard label.hasSuffix("PRIVATE KEY") else { continue }
            let headers = header.map { String(cString: $0) } ?? ""
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
            if label == "ENCRYPTED PRIVATE KEY" || label == "PRIVATE KEY" {
                var reader = DERReader(bytes)
                let intact = reader.next()?.tag == DERReader.Tag.sequence && reader.isAtEnd
                return .found(KeyBlock(isEncrypted: label == "ENCRYPTED PRIVATE KEY", isIntact: intact))
            }
            let encrypted = headers.contains("ENCRYPTED")
            let intact = encrypted ? !bytes.isEmpty && bytes.count % 8 == 0 : true
            return .found(KeyBlock(isEncrypted: encrypted, isIntact: intact))
        }
    }

    /// Whether the PEM text contains a private key block header of any kind.
    static func containsKey(_ pem: [UInt8]) -> Bool {
        let begin = Array("-----BEGIN ".utf8)
        let end = Array("PRIVATE KEY-----".utf8)
        var index = 0
        while index + begin.count <= pem.count {
            if pem[index..<index + begin.count].elementsEqual(begin) {
                let lineStart = index + begin.count
                var lineEnd = lineStart
                while lineEnd < pem.count, pem[lineEnd] != 0x0A, pem[lineEnd] != 0x0D { lineEnd += 1 }
                if pem[lineStart..<lineEnd].reversed().starts(with: end.reversed()) { return true }
                index = lineEnd
            } else {
                index += 1
            }
        }
        return false
    }

    /// Calls `body` with the user data for ``supplyPassphrase(_:_:_:)``: `passphrase` as a C
    /// string, or NULL.
    static func withPassphrase<Result>(_ passphrase: String?, _ body: (UnsafeMutableRawPointer?) -> Result) -> Result {
        guard let passphrase else { return body(nil) }
        return passphrase.withCString { body(UnsafeMutableRawPointer(mutating: $0)) }
    }

    /// The body of the PEM password callback. A callback is always given: with none, OpenSSL would
    /// prompt on the terminal by itself. Without a passphrase (NULL user data) it reports failure,
    /// so encrypted keys fail cleanly instead of prompting.
    static func supplyPassphrase(
        _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int32, _ userdata: UnsafeMutableRawPointer?
    ) -> Int32 {
        guard let buffer, let userdata else { return -1 }
        let source = userdata.assumingMemoryBound(to: CChar.self)
        let length = min(Int(strlen(source)), Int(size))
        buffer.update(from: source, count: length)
        return Int32(length)
    }

    // MARK: Encodings

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as
    /// `openssl pkcs12 -nodes` prints it. Handle with care: this is the secret in the clear.
    public var pemRepresentation: String {
        let bio = MemoryBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            fatalError("OpenSSL could not write a loaded private key as PEM (out of memory)")
        }
        return bio.string
    }

    /// The key as unencrypted PKCS#8 DER.
    public var derRepresentation: [UInt8] {
        let bio = MemoryBIO()
        guard i2d_PKCS8PrivateKey_bio(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            fatalError("OpenSSL could not write a loaded private key as DER (out of memory)")
        }
        return bio.contents
    }

    // MARK: Properties

    /// The key's algorithm and size ("RSA 2048-bit").
    public var keyDescription: KeyDescription { KeyDescription(key: pointer) }

    /// The matching public key as a DER `SubjectPublicKeyInfo`.
    public var publicKeyDERRepresentation: [UInt8] { Certificate.publicKeyDER(pointer) }

    /// Whether this key is the private half of `certificate`'s public key.
    public func matches(_ certificate: Certificate) -> Bool {
        guard let publicKey = X509_get0_pubkey(certificate.pointer) else {
            ERR_clear_error()
            return false
        }
        let result = EVP_PKEY_eq(publicKey, pointer)
        ERR_clear_error()
        return result == 1
    }
}

extension PrivateKey: CustomStringConvertible {
    /// "PrivateKey(RSA 2048-bit)": never the key material.
    public var description: String { "PrivateKey(\(keyDescription))" }
}
